// Store::record_peers / peers / tuned_ops and the schema migration to version 2 (results/peers.hpp).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "results/store.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

using PeersStore = TempDirTest;

const Problem k_square{Dtype::bf16, {{"M", 4096}, {"H", 4096}}};
const Problem k_wide{Dtype::bf16, {{"M", 64}, {"H", 8192}}};

std::string scalar(const std::string& db, const std::string& sql) {
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    sqlite3_stmt* s = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW &&
        sqlite3_column_text(s, 0))
        out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(h);
    return out;
}

// What schemas 4, 5 and 6 added (results/schema.cpp): dropped to make a database of an earlier version.
const std::string k_drop_v4 =
    "DROP INDEX runs_by_uid; ALTER TABLE runs DROP COLUMN uid; ALTER TABLE runs DROP COLUMN host; "
    "ALTER TABLE devices DROP COLUMN launch_floor_cupti_us; ALTER TABLE devices DROP COLUMN host; "
    "ALTER TABLE kernels DROP COLUMN alternative; "
    "ALTER TABLE measurements DROP COLUMN cupti_samples; "
    "ALTER TABLE measurements DROP COLUMN kernel_us; "
    "ALTER TABLE measurements DROP COLUMN ranked_by; ";

void exec(const std::string& db, const std::string& sql) {
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
    sqlite3_close(h);
}

TEST_F(PeersStore, ANewDatabaseHasSchemaVersionSixWithThePeerTable) {
    Store store = Store::open(path("r.db"));
    EXPECT_EQ(store.schema_version(), 6);
    EXPECT_EQ(scalar(path("r.db"), "SELECT count(*) FROM sqlite_schema WHERE name = 'peer_measurements'"), "1");
}

TEST_F(PeersStore, AVersionOneDatabaseIsMigratedAndKeepsItsResults) {
    {
        Store store = Store::open(path("r.db"));
        store.record(result("BLOCK=256", k_square, 10, 2000));
    }
    // What a version-1 ktune left: no peer table, no kernels.l2_state, user_version 1.
    exec(path("r.db"), k_drop_v4 +
                           "DROP TABLE peer_measurements; ALTER TABLE kernels DROP COLUMN l2_state; "
                           "PRAGMA user_version = 1;");
    Store store = Store::open(path("r.db"));
    EXPECT_EQ(store.schema_version(), 6);
    EXPECT_EQ(store.count_results({}), 1);
    store.record_peers({peer("torch_compile", k_square, 15)});
    EXPECT_EQ(store.peers({}).size(), 1u);
}

TEST_F(PeersStore, AVersionOneDatabaseOpenedReadOnlyReadsAsHavingNoPeersAndStaysVersionOne) {
    { Store::open(path("r.db")); }
    exec(path("r.db"), k_drop_v4 +
                           "DROP TABLE peer_measurements; ALTER TABLE kernels DROP COLUMN l2_state; "
                           "PRAGMA user_version = 1;");
    {
        Store store = Store::open(path("r.db"), Store::Mode::read_only);
        EXPECT_EQ(store.schema_version(), 1);
        EXPECT_TRUE(store.peers({}).empty());
    }
    EXPECT_EQ(Store::open(path("r.db"), Store::Mode::read_write).schema_version(), 6);  // upgraded on a write open
}

TEST_F(PeersStore, AVersionTwoDatabaseReadsItsBestReadOnlyAndGainsTheL2StateOnAWriteOpen) {
    {
        Store store = Store::open(path("r.db"));
        store.record(result("BLOCK=256", k_square, 10, 2000));
    }
    // What a version-2 ktune left: no kernels.l2_state.
    exec(path("r.db"), k_drop_v4 + "ALTER TABLE kernels DROP COLUMN l2_state; PRAGMA user_version = 2;");
    {
        Store store = Store::open(path("r.db"), Store::Mode::read_only);
        EXPECT_EQ(store.schema_version(), 2);
        EXPECT_EQ(store.best("rmsnorm", "fwd", "dev-h100").size(), 1u);
    }
    Store store = Store::open(path("r.db"));
    EXPECT_EQ(store.schema_version(), 6);
    EXPECT_EQ(scalar(path("r.db"), "SELECT l2_state FROM kernels"), "");  // measured before the state was kept
    EXPECT_EQ(store.best("rmsnorm", "fwd", "dev-h100").size(), 1u);
}

TEST_F(PeersStore, AVersionThreeDatabaseReadsEventRankedAndKeepsItsCuptiP50AsTheKernelTime) {
    {
        Store store = Store::open(path("r.db"));
        ResultRecord fast_kernel = result("BLOCK=128", k_wide, 4.0, 100);
        fast_kernel.measurement.cupti_p50_us = 1.9;
        ResultRecord slow_kernel = result("BLOCK=256", k_wide, 4.0, 100);
        slow_kernel.measurement.cupti_p50_us = 2.1;
        store.record(slow_kernel);
        store.record(fast_kernel);
    }
    exec(path("r.db"), k_drop_v4 + "PRAGMA user_version = 3;");
    auto check = [](const Store& store) {
        const auto best = store.best("rmsnorm", "fwd", "dev-h100");
        ASSERT_EQ(best.size(), 1u);
        EXPECT_EQ(best[0].config_key, "BLOCK=128");  // the tie on the event p50 broken by the kernel time
        EXPECT_EQ(best[0].measurement.ranked_by, RankTimer::event);
        EXPECT_DOUBLE_EQ(best[0].measurement.kernel_us, 1.9);
        EXPECT_TRUE(best[0].measurement.cupti_samples_us.empty());
    };
    {
        Store store = Store::open(path("r.db"), Store::Mode::read_only);
        EXPECT_EQ(store.schema_version(), 3);
        check(store);
    }
    Store store = Store::open(path("r.db"));
    EXPECT_EQ(store.schema_version(), 6);
    check(store);
}

TEST_F(PeersStore, RecordedPeersReadBackWithEveryField) {
    Store store = Store::open(path("r.db"));
    PeerRecord p = peer("torch_compile", k_square, 15);
    p.device_key = "some key";
    p.mean_us = 15.1;
    p.environment_json = R"({"torch":"2.5.1"})";
    p.imported_at = "2025-06-01T00:00:00Z";
    store.record_peers({p});
    const auto back = store.peers({});
    ASSERT_EQ(back.size(), 1u);
    const PeerRecord& b = back[0];
    EXPECT_EQ(b.op, "rmsnorm");
    EXPECT_EQ(b.variant, "fwd");
    EXPECT_EQ(b.problem, k_square);
    EXPECT_EQ(b.device_name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(b.device_key, "some key");
    EXPECT_EQ(b.impl, "torch_compile");
    EXPECT_EQ(b.method, "cold_l2_events");
    EXPECT_DOUBLE_EQ(b.p50_us, 15);
    EXPECT_DOUBLE_EQ(b.p95_us, 15 * 1.02);
    EXPECT_DOUBLE_EQ(b.p99_us, 15 * 1.05);
    EXPECT_DOUBLE_EQ(b.mean_us, 15.1);
    EXPECT_EQ(b.n, 20);
    EXPECT_EQ(b.samples_us, p.samples_us);
    EXPECT_EQ(b.environment_json, p.environment_json);
    EXPECT_EQ(b.source, "peers.json");
    EXPECT_EQ(b.imported_at, "2025-06-01T00:00:00Z");
}

TEST_F(PeersStore, UnknownTimesReadBackAsNanAndAnUnsetImportTimeIsNow) {
    Store store = Store::open(path("r.db"));
    PeerRecord p = peer("liger", k_square, 15);
    p.mean_us = k_report_nan;
    store.record_peers({p});
    const PeerRecord b = store.peers({}).at(0);
    EXPECT_TRUE(std::isnan(b.mean_us));
    EXPECT_EQ(b.imported_at.size(), std::string("2025-06-01T00:00:00Z").size());
}

TEST_F(PeersStore, RecordingTheSameIdentityAgainReplacesIt) {
    Store store = Store::open(path("r.db"));
    EXPECT_EQ(store.record_peers({peer("liger", k_square, 15)}).inserted, 1u);
    const PeerWriteCounts again = store.record_peers({peer("liger", k_square, 12)});
    EXPECT_EQ(again.inserted, 0u);
    EXPECT_EQ(again.replaced, 1u);
    const auto back = store.peers({});
    ASSERT_EQ(back.size(), 1u);
    EXPECT_DOUBLE_EQ(back[0].p50_us, 12);
}

TEST_F(PeersStore, AnotherMethodOrDeviceNameIsAnotherRow) {
    Store store = Store::open(path("r.db"));
    store.record_peers({peer("liger", k_square, 15), peer("liger", k_square, 14, "NVIDIA H100 80GB HBM3", "hot"),
                        peer("liger", k_square, 20, "NVIDIA A100-SXM4-80GB")});
    EXPECT_EQ(store.peers({}).size(), 3u);
}

TEST_F(PeersStore, PeersCanBeFilteredByOpVariantDeviceNameAndImpl) {
    Store store = Store::open(path("r.db"));
    store.record_peers({peer("liger", k_square, 15), peer("torch_eager", k_square, 30),
                        peer("liger", k_wide, 5, "NVIDIA A100-SXM4-80GB"),
                        peer("liger", k_square, 9, "NVIDIA H100 80GB HBM3", "cold_l2_events", "softmax", "fwd")});
    EXPECT_EQ(store.peers(PeerFilter{"rmsnorm", std::nullopt, std::nullopt, std::nullopt}).size(), 3u);
    EXPECT_EQ(store.peers(PeerFilter{"rmsnorm", "fwd", "NVIDIA H100 80GB HBM3", std::nullopt}).size(), 2u);
    EXPECT_EQ(store.peers(PeerFilter{std::nullopt, std::nullopt, std::nullopt, "liger"}).size(), 3u);
    EXPECT_EQ(store.peers(PeerFilter{"rmsnorm", "bwd", std::nullopt, std::nullopt}).size(), 0u);
}

TEST_F(PeersStore, ABatchWithABadRecordWritesNothing) {
    Store store = Store::open(path("r.db"));
    PeerRecord bad = peer("", k_wide, 5);
    const Error e = error_of([&] { store.record_peers({peer("liger", k_square, 15), bad}); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_TRUE(store.peers({}).empty());
}

TEST_F(PeersStore, AReadOnlyStoreRefusesToRecordPeers) {
    { Store::open(path("r.db")); }
    Store store = Store::open(path("r.db"), Store::Mode::read_only);
    const Error e = error_of([&] { store.record_peers({peer("liger", k_square, 15)}); });
    EXPECT_TRUE(contains(e.message(), "opened read-only")) << e.message();
}

TEST_F(PeersStore, TunedOpsListsEveryOpVariantAndDeviceWithATimedOkResult) {
    Store store = Store::open(path("r.db"));
    store.record(result("BLOCK=256", k_square, 10, 2000, "dev-b"));
    store.record(result("BLOCK=256", k_square, 10, 2000, "dev-a"));
    store.record(result("BLOCK=256", k_square, 10, 2000, "dev-a", "softmax", "fwd"));
    ResultRecord failed = result("BLOCK=256", k_square, 10, 2000, "dev-a", "layernorm", "fwd");
    failed.measurement.status = Status::compile_error;
    store.record(failed);
    const auto ops = store.tuned_ops();
    ASSERT_EQ(ops.size(), 3u);
    EXPECT_EQ(ops[0].op + "/" + ops[0].variant + "@" + ops[0].device_key, "rmsnorm/fwd@dev-a");
    EXPECT_EQ(ops[1].device_key, "dev-b");
    EXPECT_EQ(ops[2].op, "softmax");
}

}  // namespace
}  // namespace ktune::test
