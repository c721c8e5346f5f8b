// The bad-input corpus of the ktune command line (tests/data/cli/cases.yaml): every case runs the real binary in a
// directory of its own and must exit with its code, say what its stderr substrings say, and (unless the case writes)
// leave that directory exactly as it was.
#include <dlfcn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ktune_test_config.hpp"
#include "results/store.hpp"
#include "tests/unit/cli/cli_runner.hpp"

namespace ktune::cli_test {
namespace {

using ::testing::HasSubstr;

const fs::path cases_file = fs::path(KTUNE_TEST_DATA) / "cli" / "cases.yaml";

struct Case {
    std::string name;
    std::vector<std::string> args;
    int exit_code = 0;
    std::vector<std::string> stderr_has, stdout_has;
    std::vector<std::string> fixtures;
    std::string db = "{work}/ktune.db", cache = "{work}/cache";
    bool writes = false, no_gpu = false;
    bool no_root = false;    // run outside any checkout with no KTUNE_ROOT
    std::string load_error;  // set on a single placeholder case when cases.yaml itself is broken
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> strings(const YAML::Node& n) {
    std::vector<std::string> out;
    if (n)
        for (const auto& item : n) out.push_back(item.as<std::string>());
    return out;
}

std::vector<Case> load_cases() {
    std::vector<Case> out;
    try {
        const YAML::Node root = YAML::LoadFile(cases_file.string());
        for (const auto& n : root["cases"]) {
            Case c;
            c.name = n["name"].as<std::string>();
            c.args = strings(n["args"]);
            c.exit_code = n["exit"].as<int>();
            c.stderr_has = strings(n["stderr"]);
            c.stdout_has = strings(n["stdout"]);
            c.fixtures = strings(n["fixtures"]);
            if (n["db"]) c.db = n["db"].as<std::string>();
            if (n["cache"]) c.cache = n["cache"].as<std::string>();
            c.writes = n["writes"] && n["writes"].as<bool>();
            c.no_gpu = n["no_gpu"] && n["no_gpu"].as<bool>();
            c.no_root = n["no_root"] && n["no_root"].as<bool>();
            out.push_back(std::move(c));
        }
    } catch (const std::exception& e) {
        Case bad;
        bad.name = "cases_yaml_loads";
        bad.load_error = cases_file.string() + ": " + e.what();
        return {bad};
    }
    return out;
}

std::string expand(std::string s, const fs::path& work) {
    const std::pair<std::string, std::string> vars[] = {
        {"{work}", work.string()},
        {"{data}", KTUNE_TEST_DATA},
        {"{root}", KTUNE_SOURCE_ROOT},
        {"{bad}", std::string(KTUNE_TEST_DATA) + "/spaces/bad"},
    };
    for (const auto& [key, value] : vars)
        for (std::size_t pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + value.size()))
            s.replace(pos, key.size(), value);
    return s;
}

bool gpu_driver_present() {
    void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) ::dlclose(h);
    return h != nullptr;
}

// Makes `path` (a file or a folder) unwritable for this process. Root ignores file modes, so as root it takes the
// immutable attribute, which not every file system (or container) allows: returns why it could not, or "" when done.
std::string make_unwritable(const fs::path& path) {
    ::chmod(path.c_str(), fs::is_directory(path) ? 0555 : 0444);
    if (::geteuid() == 0 && std::system(("chattr +i " + shell_quote(path.string()) + " >/dev/null 2>&1").c_str()) != 0)
        return "running as root, which ignores file modes, and chattr +i is not available here";
    if (::access(path.c_str(), W_OK) == 0) return "the file stays writable for this user";
    return {};
}

class CliCase : public ::testing::TestWithParam<Case> {
protected:
    void TearDown() override {
        // An immutable file would make the sandbox's removal fail: clear the attribute first.
        for (const fs::path& p : m_unwritable) {
            if (::geteuid() == 0) std::system(("chattr -i " + shell_quote(p.string()) + " 2>/dev/null").c_str());
            ::chmod(p.c_str(), 0755);
        }
        m_box.reset();
    }

    // Creates a fixture in `work`; returns why the case must be skipped, or "".
    std::string create_fixture(const std::string& name, const fs::path& work) {
        const fs::path path = work / name;
        if (name == "results.db") {
            Store::open(path.string());
        } else if (name == "readonly.db") {
            Store::open(path.string());
            m_unwritable.push_back(path);
            return make_unwritable(path);
        } else if (name == "readonly_dir") {
            fs::create_directories(path);
            Store::open((path / "results.db").string());
            m_unwritable.push_back(path);
            return make_unwritable(path);
        } else if (name == "newer.db") {
            sqlite3* db = nullptr;
            EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
            EXPECT_EQ(sqlite3_exec(db, "CREATE TABLE future(x); PRAGMA user_version = 99;", nullptr, nullptr, nullptr),
                      SQLITE_OK);
            sqlite3_close(db);
        } else if (name == "not_a_database.db") {
            write_text(path, "these are not the results you are looking for\n");
        } else if (name == "a_directory.db") {
            fs::create_directories(path);
        } else if (name == "a_file") {
            write_text(path, "a file, not a directory\n");
        } else {
            ADD_FAILURE() << "unknown fixture '" << name << "' in " << cases_file;
        }
        return {};
    }

    std::optional<Sandbox> m_box;
    std::vector<fs::path> m_unwritable;
};

TEST_P(CliCase, ExitsWithItsCodeSaysWhatIsWrongAndWritesNothing) {
    const Case& c = GetParam();
    ASSERT_TRUE(c.load_error.empty()) << c.load_error;
    if (c.no_gpu && gpu_driver_present())
        GTEST_SKIP() << "an NVIDIA driver is present: this case needs a machine without";
    if (c.no_gpu && !fs::exists(fs::path(KTUNE_BINARY_DIR) / "ktune-worker"))
        GTEST_SKIP() << "ktune-worker is not built in " << KTUNE_BINARY_DIR << " (build it to run this case)";

    const Sandbox& box = m_box.emplace(c.name);
    for (const auto& f : c.fixtures)
        if (const std::string why = create_fixture(f, box.work()); !why.empty())
            GTEST_SKIP() << "cannot create fixture " << f << ": " << why;

    std::vector<std::string> args;
    if (!c.db.empty()) args.insert(args.end(), {"--db", expand(c.db, box.work())});
    if (!c.cache.empty()) args.insert(args.end(), {"--cache-dir", expand(c.cache, box.work())});
    for (const auto& a : c.args) args.push_back(expand(a, box.work()));

    const auto before = snapshot(box.work());
    const RunResult r = run_ktune(box, args, !c.no_root);
    const std::string shown = "\nstderr:\n" + r.err + "stdout:\n" + r.out.substr(0, 2000);

    EXPECT_EQ(r.signal, 0) << "ktune died of signal " << r.signal << shown;
    EXPECT_EQ(r.exit_code, c.exit_code) << shown;
    for (const auto& s : c.stderr_has) EXPECT_THAT(r.err, HasSubstr(expand(s, box.work()))) << shown;
    for (const auto& s : c.stdout_has) EXPECT_THAT(r.out, HasSubstr(expand(s, box.work()))) << shown;
    if (c.exit_code != 0) {
        EXPECT_THAT(r.err, ::testing::Not(HasSubstr("internal error"))) << "bad input is not a bug in ktune" << shown;
    }
    if (!c.writes) {
        const std::string changed = changes(before, snapshot(box.work()), box.work());
        EXPECT_TRUE(changed.empty()) << "ktune must write nothing here, but:\n" << changed << shown;
    }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CliCase, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(CliCorpus, ExitCodesCoverBadInputStoreAndNoGpu) {
    std::set<int> codes;
    for (const Case& c : load_cases()) codes.insert(c.exit_code);
    EXPECT_TRUE(codes.count(2) && codes.count(3) && codes.count(4)) << "the corpus must exercise exit codes 2, 3, 4";
}

}  // namespace
}  // namespace ktune::cli_test
