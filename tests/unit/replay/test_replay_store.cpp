#include <gtest/gtest.h>

#include <algorithm>

#include "tests/common/temp_dir.hpp"
#include "tuner/replay/replay.hpp"

namespace ktune {
namespace {

ResultRecord record(const std::string& config_key, const Problem& p, double p50, Status status,
                    const std::string& source_hash = "hash-1", const std::string& device_key = "dev-A") {
    ResultRecord r;
    r.kernel = KernelInfo{"rmsnorm", "fwd", "kernels/rmsnorm/rmsnorm.cuh", source_hash, "", ""};
    r.config_key = config_key;
    r.problem = p;
    r.device_key = device_key;
    r.measured_at = "2025-01-01T00:00:00Z";
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
// from the device that measured the most of it, and the history spans both.
TEST(ReplayFromStore, ReadsSeveralDevicesAsOneEachProblemFromTheDeviceWithMostOfIt) {
    test::TempDir dir;
    Store store = Store::open((dir.path() / "results.db").string());
    const Problem a{Dtype::bf16, {{"M", 16}}}, b{Dtype::bf16, {{"M", 4096}}};
    store.record(record("BLOCK=128", a, 4.0, Status::ok));
    store.record(record("BLOCK=256", a, 3.0, Status::ok));
    store.record(record("BLOCK=128", b, 50.0, Status::ok));  // the first host's part of b, left unfinished
    store.record(record("BLOCK=128", b, 40.0, Status::ok, "hash-1", "dev-B"));
    store.record(record("BLOCK=256", b, 30.0, Status::ok, "hash-1", "dev-B"));

    const auto spaces = replay_spaces_from_store(store, "rmsnorm", {"dev-A", "dev-B"});
    ASSERT_EQ(spaces.size(), 2u);
    ASSERT_TRUE(spaces[0].problem && spaces[1].problem);
    EXPECT_EQ(spaces[0].problem->key(), a.key());
    EXPECT_EQ(spaces[0].name, "rmsnorm " + a.key() + " on dev-A");
    EXPECT_EQ(spaces[1].name, "rmsnorm " + b.key() + " on dev-B");
    ASSERT_EQ(spaces[1].entries.size(), 2u);
    for (const ReplayEntry& e : spaces[1].entries) EXPECT_LE(e.value, 40.0);  // dev-B's, not dev-A's 50
    // One device alone: its own results only.
    const auto first = replay_spaces_from_store(store, "rmsnorm", {"dev-A"});
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(first[1].entries.size(), 1u);
    EXPECT_EQ(replay_spaces_from_store(store, "rmsnorm", {"dev-B"}).size(), 1u);
}

}  // namespace
}  // namespace ktune
