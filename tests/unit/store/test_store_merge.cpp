// `ktune db merge` at the store level: duplicates, conflicts, schemas, devices with another calibration, and merges
// that stop half-way.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>

#include "results/merge.hpp"
#include "store_test_util.hpp"

namespace ktune {
namespace {

using test::error_of;
using test::make_record;
using test::problem;
using test::RawDb;
using test::StoreTest;

DeviceInfo device(const std::string& key, double launch_floor_us, const std::string& host) {
    DeviceInfo d;
    d.key = key;
    d.name = "NVIDIA H100 80GB HBM3";
    d.copy_gbps = 3000;
    d.launch_floor_us = launch_floor_us;
    d.host = host;
    d.measured_at = "2026-11-27T00:00:00Z";
    return d;
}

// A database of one run on `host` holding `configs` x two problems, on device `key`.
void fill(const std::string& path, const std::string& host, const std::vector<std::string>& configs,
          double launch_floor_us = 3.2, const std::string& key = "dev-A", double p50 = 5.0) {
    Store s = Store::open(path);
    s.upsert_device(device(key, launch_floor_us, host));
    RunInfo run;
    run.host = host;
    run.device_key = key;
    run.environment_json = "{\"hostname\":\"" + host + "\"}";
    const std::int64_t id = s.begin_run(run);
    for (const std::string& c : configs)
        for (const Problem& p : {problem({{"M", 16}, {"H", 4096}}), problem({{"M", 4096}, {"H", 8192}})}) {
            ResultRecord r = make_record(c, p, p50, Status::ok, key);
            r.run_id = id;
            s.record(r);
        }
    s.finish_run(id, "finished");
}

// Every measurement as text, with its run's uid and host instead of ids: what "the same database" compares.
std::multiset<std::string> rows(const std::string& path) {
    Store s = Store::open(path, Store::Mode::read_only);
    std::multiset<std::string> out;
    for (const ResultRecord& r : s.results({})) {
        const auto run = s.run(r.run_id);
        out.insert(r.kernel.source_hash + "|" + r.config_key + "|" + r.problem.key() + "|" + r.device_key + "|" +
                   std::to_string(r.measurement.stats.p50) + "|" + (run ? run->uid + "@" + run->host : "-"));
    }
    return out;
}

class StoreMerge : public StoreTest {};

TEST_F(StoreMerge, MergedDatabasesHoldEveryMeasurementWithItsRunAndHost) {
    fill(db_path("a.db"), "host-a", {"B=1", "B=2"});
    fill(db_path("b.db"), "host-b", {"B=3"});
    const auto counts = merge_databases({db_path("a.db"), db_path("b.db")}, db_path("m.db"));
    ASSERT_EQ(counts.size(), 2u);
    EXPECT_EQ(counts[0].measurements_added, 4);
    EXPECT_EQ(counts[1].measurements_added, 2);
    EXPECT_EQ(counts[1].runs_added, 1);
    std::multiset<std::string> expected = rows(db_path("a.db"));
    expected.merge(rows(db_path("b.db")));
    EXPECT_EQ(rows(db_path("m.db")), expected);
    RawDb raw(db_path("m.db"));
    EXPECT_EQ(raw.scalar("SELECT group_concat(host, ',') FROM (SELECT host FROM runs ORDER BY host)"), "host-a,host-b");
}

TEST_F(StoreMerge, MergingTheSameDatabasesAgainAddsNothing) {
    fill(db_path("a.db"), "host-a", {"B=1", "B=2"});
    fill(db_path("b.db"), "host-b", {"B=3"});
    merge_databases({db_path("a.db"), db_path("b.db")}, db_path("m.db"));
    const auto once = rows(db_path("m.db"));
    const auto again = merge_databases({db_path("a.db"), db_path("b.db"), db_path("a.db")}, db_path("m.db"));
    for (const MergeCounts& c : again) {
        EXPECT_EQ(c.measurements_added, 0) << c.source;
        EXPECT_EQ(c.runs_added, 0) << c.source;
        EXPECT_EQ(c.conflicts, 0) << c.source;
        EXPECT_GT(c.duplicates, 0) << c.source;
    }
    EXPECT_EQ(rows(db_path("m.db")), once);
}

TEST_F(StoreMerge, AMeasurementOfTheSameIdentityFromAnotherRunIsAConflictAndTheFirstIsKept) {
    fill(db_path("a.db"), "host-a", {"B=1"}, 3.2, "dev-A", 5.0);
    fill(db_path("b.db"), "host-b", {"B=1", "B=2"}, 3.2, "dev-A", 7.0);
    const auto counts = merge_databases({db_path("a.db"), db_path("b.db")}, db_path("m.db"));
    EXPECT_EQ(counts[1].conflicts, 2);
    EXPECT_EQ(counts[1].measurements_added, 2);  // B=2, which a.db does not have
    ASSERT_FALSE(counts[1].conflict_examples.empty());
    EXPECT_NE(counts[1].conflict_examples.front().find("B=1"), std::string::npos);
    RawDb raw(db_path("m.db"));
    EXPECT_EQ(raw.scalar("SELECT count(*) FROM measurements m JOIN configurations c ON c.id = m.configuration_id "
                         "WHERE c.key = 'B=1' AND m.p50_us = 5.0"),
              "2");
}

TEST_F(StoreMerge, ADeviceWithTheSameKeyButAnotherLaunchFloorIsKeptApart) {
    fill(db_path("a.db"), "host-a", {"B=1"}, 3.23);
    fill(db_path("b.db"), "host-b", {"B=1"}, 5.02);
    const auto counts = merge_databases({db_path("a.db"), db_path("b.db")}, db_path("m.db"));
    ASSERT_EQ(counts[1].notices.size(), 1u);
    EXPECT_NE(counts[1].notices.front().find("launch floor"), std::string::npos);
    EXPECT_EQ(counts[1].conflicts, 0);
    Store m = Store::open(db_path("m.db"), Store::Mode::read_only);
    ASSERT_TRUE(m.device("dev-A|host host-b").has_value());
    EXPECT_DOUBLE_EQ(m.device("dev-A|host host-b")->launch_floor_us, 5.02);
    ResultFilter f;
    f.device_key = "dev-A|host host-b";
    EXPECT_EQ(m.count_results(f), 2);
    EXPECT_EQ(m.run(m.results(f).front().run_id)->device_key, "dev-A|host host-b");
    // Merging again files them under the same key, not a third one.
    merge_databases({db_path("b.db")}, db_path("m.db"));
    EXPECT_EQ(Store::open(db_path("m.db"), Store::Mode::read_only).devices().size(), 2u);
}

TEST_F(StoreMerge, ASourceOfANewerSchemaIsRefusedAndNothingIsWritten) {
    fill(db_path("a.db"), "host-a", {"B=1"});
    fill(db_path("newer.db"), "host-b", {"B=1"});
    RawDb(db_path("newer.db")).exec("PRAGMA user_version = 99");
    const Error e = error_of([&] { merge_databases({db_path("a.db"), db_path("newer.db")}, db_path("m.db")); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_NE(e.message().find("newer ktune"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(db_path("m.db")));
}

TEST_F(StoreMerge, AFileThatIsNotAKtuneDatabaseIsRefused) {
    RawDb(db_path("other.db")).exec("CREATE TABLE t (x)");
    EXPECT_EQ(error_of([&] { merge_databases({db_path("other.db")}, db_path("m.db")); }).category(),
              ErrorCategory::store);
    EXPECT_EQ(error_of([&] { merge_databases({db_path("missing.db")}, db_path("m.db")); }).category(),
              ErrorCategory::bad_input);
    EXPECT_FALSE(std::filesystem::exists(db_path("m.db")));
}

TEST_F(StoreMerge, TheOutputAmongTheSourcesIsRefused) {
    fill(db_path("a.db"), "host-a", {"B=1"});
    const Error e = error_of([&] { merge_databases({db_path("a.db")}, db_path("a.db")); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), "--out");
}

TEST_F(StoreMerge, ASourceOfAnOlderSchemaIsMergedFromAMigratedCopyAndLeftAsItWas) {
    fill(db_path("a.db"), "host-a", {"B=1"});
    {
        // Back to schema 5: what a database written before runs had uids looks like.
        RawDb raw(db_path("a.db"));
        raw.exec("DROP INDEX runs_by_uid");
        raw.exec("ALTER TABLE runs DROP COLUMN uid");
        raw.exec("ALTER TABLE runs DROP COLUMN host");
        raw.exec("ALTER TABLE devices DROP COLUMN launch_floor_cupti_us");
        raw.exec("ALTER TABLE devices DROP COLUMN host");
        raw.exec("PRAGMA user_version = 5");
    }
    const auto counts = merge_databases({db_path("a.db")}, db_path("m.db"));
    EXPECT_EQ(counts[0].measurements_added, 2);
    ASSERT_FALSE(counts[0].notices.empty());
    EXPECT_NE(counts[0].notices.back().find("schema 5"), std::string::npos);
    EXPECT_EQ(RawDb(db_path("a.db")).scalar("PRAGMA user_version"), "5");
    // Again: the migrated copy names its runs as the first did, so nothing is added twice.
    EXPECT_EQ(merge_databases({db_path("a.db")}, db_path("m.db"))[0].measurements_added, 0);
    EXPECT_EQ(RawDb(db_path("m.db")).scalar("SELECT count(*) FROM runs"), "1");
}

TEST_F(StoreMerge, AMergeThatFailsHalfWayLeavesTheOutputAsBeforeAndAgainCompletesIt) {
    fill(db_path("a.db"), "host-a", {"B=1"});
    fill(db_path("b.db"), "host-b", {"B=2", "B=3", "B=4"});
    merge_databases({db_path("a.db")}, db_path("expected.db"));
    merge_databases({db_path("b.db")}, db_path("expected.db"));
    // The output refuses its fourth measurement, half-way through b.db.
    merge_databases({db_path("a.db")}, db_path("m.db"));
    RawDb(db_path("m.db"))
        .exec(
            "CREATE TRIGGER half_way BEFORE INSERT ON measurements WHEN (SELECT count(*) FROM measurements) >= 4 "
            "BEGIN SELECT RAISE(ABORT, 'stopped half-way'); END");
    EXPECT_EQ(error_of([&] {
                  merge_databases({db_path("a.db"), db_path("b.db")}, db_path("m.db"));
              }).category(),
              ErrorCategory::store);
    EXPECT_EQ(RawDb(db_path("m.db")).scalar("SELECT count(*) FROM measurements"), "2");
    EXPECT_EQ(RawDb(db_path("m.db")).scalar("SELECT count(*) FROM runs"), "1");
    RawDb(db_path("m.db")).exec("DROP TRIGGER half_way");
    merge_databases({db_path("a.db"), db_path("b.db")}, db_path("m.db"));
    EXPECT_EQ(rows(db_path("m.db")), rows(db_path("expected.db")));
}

TEST_F(StoreMerge, AMergeKilledAtAnyMomentLeavesAConsistentOutputThatAnotherMergeCompletes) {
    std::vector<std::string> configs;
    for (int i = 0; i < 400; ++i) configs.push_back("B=" + std::to_string(i));
    fill(db_path("big.db"), "host-b", configs);
    merge_databases({db_path("big.db")}, db_path("expected.db"));
    for (int delay_ms : {0, 2, 5, 20}) {
        std::filesystem::remove(db_path("m.db"));
        Store::open(db_path("m.db"));  // the output exists, so a kill can land inside the merge's transaction
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            try {
                merge_databases({db_path("big.db")}, db_path("m.db"));
            } catch (...) {
                ::_exit(1);
            }
            ::_exit(0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ::kill(child, SIGKILL);
        int status = 0;
        ::waitpid(child, &status, 0);
        RawDb raw(db_path("m.db"));
        EXPECT_EQ(raw.scalar("PRAGMA integrity_check"), "ok") << delay_ms;
        const std::string n = raw.scalar("SELECT count(*) FROM measurements");
        EXPECT_TRUE(n == "0" || n == "800") << "a killed merge left " << n << " measurements";
        merge_databases({db_path("big.db")}, db_path("m.db"));
        EXPECT_EQ(rows(db_path("m.db")), rows(db_path("expected.db"))) << delay_ms;
    }
}

}  // namespace
}  // namespace ktune
