#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "tests/unit/store/store_test_util.hpp"

namespace ktune::test {
namespace {

using StoreConcurrency = StoreTest;

TEST_F(StoreConcurrency, TwoStoresOnOneFileInterleaveWritesAndSeeEachOthersResults) {
    Store a = Store::open(db_path());
    Store b = Store::open(db_path());
    const std::int64_t run_a = a.begin_run(RunInfo{});
    const std::int64_t run_b = b.begin_run(RunInfo{});
    for (int i = 0; i < 50; ++i) {
        ResultRecord ra = make_record("B=" + std::to_string(i), problem({{"M", 16}}), 1.0 + i);
        ra.run_id = run_a;
        a.record(ra);
        ResultRecord rb = make_record("B=" + std::to_string(i), problem({{"M", 32}}), 2.0 + i);
        rb.run_id = run_b;
        b.record(rb);
        // Each sees the other's last write at once.
        EXPECT_TRUE(a.has_result(kernel("hash-1"), rb.config_key, rb.problem.key(), "dev-A"));
        EXPECT_TRUE(b.has_result(kernel("hash-1"), ra.config_key, ra.problem.key(), "dev-A"));
    }
    EXPECT_EQ(a.count_results({}), 100);
    EXPECT_EQ(b.count_results({}), 100);
    EXPECT_EQ(a.best("rmsnorm", "fwd", "dev-A").size(), 2u);
}

TEST_F(StoreConcurrency, TwoThreadsWithTheirOwnStoresWriteAtTheSameTimeWithoutErrors) {
    Store::open(db_path());  // create the schema once; both writers then race on records only
    constexpr int per_thread = 200;
    std::vector<std::string> errors(2);
    auto writer = [&](int t) {
        try {
            Store s = Store::open(db_path());
            for (int i = 0; i < per_thread; ++i)
                s.record(make_record("B=" + std::to_string(i), problem({{"M", 16}, {"T", t}}), 1.0 + i));
        } catch (const Error& e) {
            errors[static_cast<std::size_t>(t)] = e.what();
        }
    };
    std::thread t0(writer, 0);
    std::thread t1(writer, 1);
    t0.join();
    t1.join();

    EXPECT_EQ(errors[0], "");
    EXPECT_EQ(errors[1], "");
    EXPECT_EQ(Store::open(db_path()).count_results({}), 2 * per_thread);
}

TEST_F(StoreConcurrency, TwoProcessesWriteToOneDatabaseAtTheSameTimeWithoutErrors) {
    Store::open(db_path());
    constexpr int per_process = 200;
    auto write_all = [&](int who) {
        Store s = Store::open(db_path());
        for (int i = 0; i < per_process; ++i)
            s.record(make_record("B=" + std::to_string(i), problem({{"M", 16}, {"P", who}}), 1.0 + i));
    };
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        int code = 0;
        try {
            write_all(1);
        } catch (...) {
            code = 1;
        }
        ::_exit(code);  // no gtest teardown in the child
    }
    std::string parent_error;
    try {
        write_all(0);
    } catch (const Error& e) {
        parent_error = e.what();
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_EQ(parent_error, "");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child process failed to write";
    EXPECT_EQ(Store::open(db_path()).count_results({}), 2 * per_process);
}

TEST_F(StoreConcurrency, TwoStoresCreatingTheSameNewDatabaseAtOnceBothSucceed) {
    std::vector<int> versions(2, 0);
    std::vector<std::string> errors(2);
    auto opener = [&](int t) {
        try {
            versions[static_cast<std::size_t>(t)] = Store::open(db_path()).schema_version();
        } catch (const Error& e) {
            errors[static_cast<std::size_t>(t)] = e.what();
        }
    };
    std::thread t0(opener, 0);
    std::thread t1(opener, 1);
    t0.join();
    t1.join();
    EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(versions, (std::vector<int>{6, 6}));
}

TEST_F(StoreConcurrency, IntegrityCheckPassesAfterManyRecords) {
    {
        Store store = Store::open(db_path());
        const std::int64_t run = store.begin_run(RunInfo{});
        for (int i = 0; i < 1000; ++i) {
            ResultRecord r = make_record("B=" + std::to_string(i % 50), problem({{"M", 16 << (i % 7)}}), 1.0 + i,
                                         i % 10 == 0 ? Status::invalid_result : Status::ok,
                                         "dev-" + std::to_string(i % 3), "hash-" + std::to_string(i % 2));
            r.run_id = run;
            r.measurement.samples_us.assign(static_cast<std::size_t>(i % 64), 1.5);
            store.record(r, /*replace=*/i % 4 == 0);
        }
        store.finish_run(run, "finished");
    }
    RawDb raw(db_path());
    EXPECT_EQ(raw.scalar("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(raw.scalar("PRAGMA foreign_key_check"), "");
    // 50 configs x 7 problems x 3 devices x 2 sources leave at most 1000 distinct identities; none is duplicated.
    EXPECT_EQ(raw.scalar("SELECT count(*) FROM (SELECT 1 FROM measurements GROUP BY kernel_id, configuration_id, "
                         "problem_id, device_key HAVING count(*) > 1)"),
              "0");
}

}  // namespace
}  // namespace ktune::test
