#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>

#include "tests/unit/store/store_test_util.hpp"

namespace ktune::test {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using StoreOpen = StoreTest;

TEST_F(StoreOpen, CreatesANewDatabaseAtSchemaVersionFive) {
    Store store = Store::open(db_path());
    EXPECT_EQ(store.schema_version(), 6);
    EXPECT_EQ(store.path(), db_path());
    EXPECT_TRUE(std::filesystem::exists(db_path()));
    RawDb raw(db_path());
    EXPECT_EQ(raw.scalar("PRAGMA user_version"), "6");
}

TEST_F(StoreOpen, PutsTheDatabaseInWalMode) {
    Store store = Store::open(db_path());
    RawDb raw(db_path());
    EXPECT_EQ(raw.scalar("PRAGMA journal_mode"), "wal");
}

TEST_F(StoreOpen, ReopeningAnUpToDateDatabaseKeepsItsData) {
    Store::open(db_path()).begin_run(RunInfo{});
    Store again = Store::open(db_path());
    EXPECT_EQ(again.schema_version(), 6);
    EXPECT_TRUE(again.run(1).has_value());
}

TEST_F(StoreOpen, StoresCanBeMoved) {
    Store a = Store::open(db_path());
    Store b = std::move(a);
    b.begin_run(RunInfo{});
    Store c = Store::open(db_path("other.db"));
    c = std::move(b);
    EXPECT_EQ(c.path(), db_path());
    EXPECT_TRUE(c.run(1).has_value());
}

TEST_F(StoreOpen, ReadOnlyOpenOfAMissingFileSaysThereIsNoDatabase) {
    const std::string path = db_path("missing.db");
    const Error e = error_of([&] { Store::open(path, Store::Mode::read_only); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_EQ(e.message(), "no results database at " + path);
    EXPECT_EQ(e.where(), path);
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(StoreOpen, OpeningInADirectoryThatDoesNotExistNamesTheDirectory) {
    const std::string path = (dir() / "no_such_dir" / "results.db").string();
    const Error e = error_of([&] { Store::open(path); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_EQ(e.where(), path);
    EXPECT_TRUE(contains(e.message(), (dir() / "no_such_dir").string())) << e.message();
    EXPECT_TRUE(contains(e.message(), "does not exist")) << e.message();
}

TEST_F(StoreOpen, OpeningInADirectoryThatIsNotWritableSaysSo) {
    if (::geteuid() == 0) GTEST_SKIP() << "root can write to any directory; permissions cannot be tested";
    const auto locked = dir() / "locked";
    std::filesystem::create_directories(locked);
    std::filesystem::permissions(locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const std::string path = (locked / "results.db").string();
    const Error e = error_of([&] { Store::open(path); });
    std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_TRUE(contains(e.message(), "not writable")) << e.message();
    EXPECT_TRUE(contains(e.message(), locked.string())) << e.message();
}

TEST_F(StoreOpen, OpeningADirectoryAsTheDatabaseIsRefused) {
    const Error e = error_of([&] { Store::open(dir().string()); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_TRUE(contains(e.message(), "is a directory")) << e.message();
}

TEST_F(StoreOpen, ADatabaseFromANewerKtuneIsRefusedAndLeftUntouched) {
    const std::string path = db_path();
    {
        RawDb raw(path);
        raw.exec("CREATE TABLE future_things (x INTEGER)");
        raw.exec("PRAGMA user_version = 99");
    }
    const std::string before = read_file(path);

    const Error e = error_of([&] { Store::open(path); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_EQ(e.where(), path);
    EXPECT_EQ(e.message(), path + " was written by a newer ktune (schema 99); this ktune reads schema 6");

    EXPECT_EQ(read_file(path), before);
    RawDb raw(path);
    EXPECT_EQ(raw.scalar("PRAGMA user_version"), "99");
    EXPECT_EQ(raw.scalar("PRAGMA journal_mode"), "delete");  // not switched to WAL either
}

TEST_F(StoreOpen, ADatabaseFromANewerKtuneIsRefusedReadOnlyToo) {
    {
        RawDb raw(db_path());
        raw.exec("PRAGMA user_version = 99");
    }
    const Error e = error_of([&] { Store::open(db_path(), Store::Mode::read_only); });
    EXPECT_TRUE(contains(e.message(), "newer ktune (schema 99)")) << e.message();
}

TEST_F(StoreOpen, AFileThatIsNotADatabaseIsRefused) {
    const std::string path = db_path("notes.db");
    {
        std::ofstream out(path);
        for (int i = 0; i < 100; ++i) out << "this is a text file, not a SQLite database\n";
    }
    const std::string before = read_file(path);
    const Error e = error_of([&] { Store::open(path); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_EQ(e.where(), path);
    EXPECT_EQ(e.message(), path + " is not a SQLite database");
    EXPECT_EQ(read_file(path), before);
}

TEST_F(StoreOpen, ASqliteDatabaseOfAnotherProgramIsRefused) {
    {
        RawDb raw(db_path());
        raw.exec("CREATE TABLE customers (name TEXT)");
    }
    const Error e = error_of([&] { Store::open(db_path()); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_TRUE(contains(e.message(), "not a ktune results database")) << e.message();
}

TEST_F(StoreOpen, AnEmptyPathIsRefused) {
    const Error e = error_of([] { Store::open(""); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
}

TEST_F(StoreOpen, ReadOnlyOpenOfAnEmptyFileSaysItHasNoSchema) {
    { std::ofstream out(db_path()); }
    const Error e = error_of([&] { Store::open(db_path(), Store::Mode::read_only); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_TRUE(contains(e.message(), "no ktune results schema")) << e.message();
}

TEST_F(StoreOpen, AnEmptyFileOpenedReadWriteGetsTheSchema) {
    { std::ofstream out(db_path()); }
    EXPECT_EQ(Store::open(db_path()).schema_version(), 6);
}

}  // namespace
}  // namespace ktune::test

namespace ktune::test {
namespace {

using StoreReadOnly = StoreTest;

bool has_side_files(const std::string& path) {
    return std::filesystem::exists(path + "-wal") || std::filesystem::exists(path + "-shm");
}

TEST_F(StoreReadOnly, ReadingLeavesNoWalOrShmFileBehind) {
    Store::open(db_path()).begin_run(RunInfo{});
    ASSERT_FALSE(has_side_files(db_path()));
    {
        const Store store = Store::open(db_path(), Store::Mode::read_only);
        EXPECT_TRUE(store.run(1).has_value());
    }
    EXPECT_FALSE(has_side_files(db_path()));
}

TEST_F(StoreReadOnly, ReadsADatabaseInAFolderThatCannotBeWritten) {
    const auto folder = dir() / "sealed";
    std::filesystem::create_directories(folder);
    const std::string path = (folder / "results.db").string();
    Store::open(path).begin_run(RunInfo{});
    // Root ignores file modes; the immutable attribute binds root too.
    std::filesystem::permissions(folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    if (::geteuid() == 0) std::system(("chattr +i '" + folder.string() + "' 2>/dev/null").c_str());
    if (::access(folder.c_str(), W_OK) == 0) {
        std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
        GTEST_SKIP() << "cannot make a folder unwritable here";
    }
    std::optional<RunInfo> run;
    try {
        run = Store::open(path, Store::Mode::read_only).run(1);
    } catch (const Error& e) {
        ADD_FAILURE() << e.what();
    }
    if (::geteuid() == 0) std::system(("chattr -i '" + folder.string() + "' 2>/dev/null").c_str());
    std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
    EXPECT_TRUE(run.has_value());
    EXPECT_FALSE(has_side_files(path));
}

TEST_F(StoreReadOnly, RefusesToWrite) {
    Store::open(db_path());
    Store store = Store::open(db_path(), Store::Mode::read_only);
    const Error e = error_of([&] { store.begin_run(RunInfo{}); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_TRUE(contains(e.message(), "opened read-only")) << e.message();
}

}  // namespace
}  // namespace ktune::test
