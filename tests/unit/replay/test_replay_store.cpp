#include <gtest/gtest.h>

#include <algorithm>

#include "tests/common/temp_dir.hpp"
#include "tuner/replay/replay.hpp"

namespace ktune {
namespace {

ResultRecord record(const std::string& config_key, const Problem& p, double p50, Status status,
                    const std::string& source_hash = "hash-1", const std::string& device_key = "dev-A",
                    const std::string& measured_at = "2025-01-01T00:00:00Z") {
    ResultRecord r;
    r.kernel = KernelInfo{"rmsnorm", "fwd", "kernels/rmsnorm/rmsnorm.cuh", source_hash, "", ""};
    r.config_key = config_key;
    r.problem = p;
    r.device_key = device_key;
    r.measured_at = measured_at;
    r.measurement.status = status;
    if (status == Status::ok) {
        r.measurement.stats.n = 2;
        r.measurement.stats.p50 = p50;
        r.measurement.samples_us = {p50, p50};
    }
    r.measurement.compile.compile_seconds = 0.5;
    return r;
}

TEST(ReplayFromStore, MakesOneSpacePerProblemCostingCompileTimePlusSamples) {
    test::TempDir dir;
    Store store = Store::open((dir.path() / "results.db").string());
    const Problem a{Dtype::bf16, {{"M", 16}}}, b{Dtype::bf16, {{"M", 4096}}};
    store.record(record("BLOCK=128", a, 4.0, Status::ok));
    store.record(record("BLOCK=256", a, 3.0, Status::ok));
    store.record(record("BLOCK=512", a, 0, Status::compile_error));
    store.record(record("BLOCK=128", b, 40.0, Status::ok));
    store.record(record("BLOCK=256", a, 9.0, Status::ok, "an-older-source"));  // the source with fewer results

    const auto spaces = replay_spaces_from_store(store, "rmsnorm", {"dev-A"});
    ASSERT_EQ(spaces.size(), 2u);
    const ReplaySpace& s = spaces[0];  // bf16:M=16
    ASSERT_EQ(s.entries.size(), 3u);
    EXPECT_EQ(s.unit, "us");
    double best = 1e9;
    for (const ReplayEntry& e : s.entries) {
        if (e.status == Status::ok) best = std::min(best, e.value);
        if (e.config.key() == "BLOCK=256") {
            EXPECT_DOUBLE_EQ(e.cost_s, 0.5 + 6e-6);
        }
        if (e.config.key() == "BLOCK=512") {
            EXPECT_EQ(e.status, Status::compile_error);
        }
    }
    EXPECT_DOUBLE_EQ(best, 3.0);
    EXPECT_EQ(replay_spaces_from_store(store, "rmsnorm", {"dev-A"}, b.key()).size(), 1u);
}

// One GPU model on two hosts whose calibrations differ (a tuning sharded over them, merged): each problem is read
// from the device holding the most of its replayed results (the kernel source replayed, not an older one), ties to the
// first named, and the problems come in the order they were first measured, whichever device measured them.
TEST(ReplayFromStore, ReadsSeveralDevicesAsOneEachProblemFromTheDeviceWithMostOfIt) {
    test::TempDir dir;
    Store store = Store::open((dir.path() / "results.db").string());
    const Problem a{Dtype::bf16, {{"M", 16}}}, b{Dtype::bf16, {{"M", 4096}}}, c{Dtype::bf16, {{"M", 64}}};
    const std::string t0 = "2025-01-01T00:00:00Z", t1 = "2025-01-01T01:00:00Z", t2 = "2025-01-01T02:00:00Z";
    store.record(record("BLOCK=128", a, 4.0, Status::ok, "hash-1", "dev-A", t1));
    store.record(record("BLOCK=256", a, 3.0, Status::ok, "hash-1", "dev-A", t1));
    store.record(record("BLOCK=512", a, 5.0, Status::ok, "hash-1", "dev-A", t1));
    // dev-A holds more of b, but of an older source, which the replay passes over.
    for (const char* config : {"BLOCK=128", "BLOCK=256", "BLOCK=512"})
        store.record(record(config, b, 50.0, Status::ok, "an-older-source", "dev-A", t1));
    store.record(record("BLOCK=128", b, 40.0, Status::ok, "hash-1", "dev-B", t0));
    store.record(record("BLOCK=256", b, 30.0, Status::ok, "hash-1", "dev-B", t0));
    store.record(record("BLOCK=128", c, 7.0, Status::ok, "hash-1", "dev-A", t2));  // one each: a tie
    store.record(record("BLOCK=128", c, 8.0, Status::ok, "hash-1", "dev-B", t2));

    const auto spaces = replay_spaces_from_store(store, "rmsnorm", {"dev-A", "dev-B"});
    ASSERT_EQ(spaces.size(), 3u);
    EXPECT_EQ(spaces[0].name, "rmsnorm " + b.key() + " on dev-B");  // measured first
    EXPECT_EQ(spaces[1].name, "rmsnorm " + a.key() + " on dev-A");
    EXPECT_EQ(spaces[2].name, "rmsnorm " + c.key() + " on dev-A");
    ASSERT_EQ(spaces[0].entries.size(), 2u);
    for (const ReplayEntry& e : spaces[0].entries) EXPECT_LE(e.value, 40.0);  // dev-B's, not dev-A's 50
    ASSERT_EQ(spaces[2].entries.size(), 1u);
    EXPECT_DOUBLE_EQ(spaces[2].entries[0].value, 7.0);
    const auto b_first = replay_spaces_from_store(store, "rmsnorm", {"dev-B", "dev-A"});
    ASSERT_EQ(b_first.size(), 3u);
    EXPECT_EQ(b_first[2].name, "rmsnorm " + c.key() + " on dev-B");
    // One device alone: its own results only.
    EXPECT_EQ(replay_spaces_from_store(store, "rmsnorm", {"dev-A"}).size(), 2u);  // b's there are the older source's
    EXPECT_EQ(replay_spaces_from_store(store, "rmsnorm", {"dev-B"}).size(), 2u);
}

}  // namespace
}  // namespace ktune
