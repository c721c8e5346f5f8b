#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "reports/report.hpp"
#include "results/store.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

const std::string k_h100_name = "NVIDIA H100 80GB HBM3";
const Problem k_square{Dtype::bf16, {{"M", 4096}, {"H", 4096}}};
const Problem k_wide{Dtype::bf16, {{"M", 64}, {"H", 8192}}};
const Problem k_fp32{Dtype::fp32, {{"M", 4096}, {"H", 4096}}};

// An H100 with ceilings, two configurations of two problems, and peers on the square problem.
class CollectReport : public TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        m_store.emplace(Store::open(path("r.db")));
        DeviceInfo d;
        d.key = "dev-h100";
        d.name = k_h100_name;
        d.cc_major = 9;
        d.sm_count = 132;
        d.copy_gbps = 3000;
        d.launch_floor_us = 2;
        store().upsert_device(d);
        store().record(result("BLOCK=256", k_square, 12, 5600));
        store().record(result("BLOCK=512", k_square, 10, 6711));  // the best
        store().record(result("BLOCK=128", k_wide, 4, 525));
        store().record_peers({peer("torch_compile", k_square, 15), peer("torch_eager", k_square, 30)});
    }
    Store& store() { return *m_store; }
    ReportData collect(const ReportOptions& o = {}) { return collect_report_data(store(), o); }

private:
    std::optional<Store> m_store;
};

TEST_F(CollectReport, EachProblemGetsItsBestConfiguration) {
    const ReportData d = collect();
    ASSERT_EQ(d.sections.size(), 1u);
    const OpSection& s = d.sections[0];
    EXPECT_EQ(s.op, "rmsnorm");
    EXPECT_EQ(s.variant, "fwd");
    ASSERT_EQ(s.rows.size(), 2u);
    EXPECT_EQ(s.rows[0].problem, k_wide);  // M=64 before M=4096
    EXPECT_EQ(s.rows[1].config_key, "BLOCK=512");
    EXPECT_DOUBLE_EQ(s.rows[1].stats.p50, 10);
    EXPECT_EQ(s.rows[1].samples_us, samples_around(10));
    EXPECT_EQ(s.source_hash, "hash-1");
}

TEST_F(CollectReport, TheDeviceBringsItsCeilings) {
    const ReportData d = collect();
    ASSERT_EQ(d.devices.size(), 1u);
    EXPECT_EQ(d.devices[0].name, k_h100_name);
    EXPECT_EQ(d.devices[0].arch, "sm_90");
    EXPECT_DOUBLE_EQ(d.devices[0].copy_gbps, 3000);
    EXPECT_DOUBLE_EQ(d.devices[0].launch_floor_us, 2);
    EXPECT_EQ(d.database, path("r.db"));
}

TEST_F(CollectReport, BytesMovedAreTheBandwidthTimesTheMedian) {
    const ReportData d = collect();
    const ProblemRow& r = d.sections[0].rows[1];
    EXPECT_DOUBLE_EQ(r.gbps, 6711);
    EXPECT_NEAR(r.bytes_moved, 6711e9 * 10e-6, 1e-3);
    EXPECT_NEAR(r.pct_of_copy, 100.0 * 6711 / 3000, 1e-9);
}

TEST_F(CollectReport, SpeedupIsThePeersMedianOverKtunes) {
    const ReportData d = collect();
    const ProblemRow& r = d.sections[0].rows[1];
    ASSERT_EQ(r.peers.size(), 2u);
    EXPECT_EQ(r.peers[0].label, "torch_compile");
    EXPECT_DOUBLE_EQ(r.peers[0].speedup, 1.5);
    EXPECT_DOUBLE_EQ(r.peers[1].speedup, 3.0);
    EXPECT_EQ(r.peers[0].samples_us, samples_around(15));
    EXPECT_EQ(r.peers[0].source, "peers.json");
}

TEST_F(CollectReport, TheBestPeerIsTheFastestOne) {
    EXPECT_EQ(collect().sections[0].rows[1].best_peer, "torch_compile");
    EXPECT_EQ(collect().sections[0].rows[0].best_peer, "");
}

TEST_F(CollectReport, PeerLabelsListEveryPeerOfTheSection) {
    EXPECT_EQ(collect().sections[0].peer_labels, (std::vector<std::string>{"torch_compile", "torch_eager"}));
}

TEST_F(CollectReport, PeersAreMatchedByDeviceNameWhateverKeyTheyGive) {
    PeerRecord p = peer("liger", k_square, 11);
    p.device_key = "a key with another driver version";
    store().record_peers({p});
    EXPECT_NE(collect().sections[0].rows[1].peer("liger"), nullptr);
}

TEST_F(CollectReport, PeersOfAnotherDeviceNameAreLeftOut) {
    store().record_peers({peer("liger", k_square, 11, "NVIDIA A100-SXM4-80GB")});
    EXPECT_EQ(collect().sections[0].rows[1].peer("liger"), nullptr);
}

TEST_F(CollectReport, PeersWithTheAxesInAnotherOrderStillMatch) {
    store().record_peers({peer("liger", Problem{Dtype::bf16, {{"H", 8192}, {"M", 64}}}, 5)});
    const ReportData d = collect();
    const ProblemRow& r = d.sections[0].rows[0];
    ASSERT_NE(r.peer("liger"), nullptr);
    EXPECT_DOUBLE_EQ(r.peer("liger")->speedup, 1.25);
}

TEST_F(CollectReport, PeerTimingsOfProblemsKtuneDidNotTuneAreCountedAndListed) {
    store().record_peers({peer("liger", k_fp32, 5), peer("liger", Problem{Dtype::bf16, {{"M", 1}, {"H", 1}}}, 5)});
    const ReportData d = collect();
    EXPECT_EQ(d.sections[0].unmatched_peers, 2u);
    ASSERT_EQ(d.unmatched_peers.size(), 2u);
    EXPECT_EQ(d.unmatched_peers[0].problem.key(), "bf16:M=1,H=1");
    EXPECT_EQ(d.unmatched_peers[1].problem.key(), k_fp32.key());
    EXPECT_EQ(d.unmatched_peers[0].impl, "liger");
}

TEST_F(CollectReport, PeersOfAnOpOrDeviceWithoutKtuneResultsAreListedAndFiltered) {
    store().record_peers({peer("liger", k_square, 11, "NVIDIA A100-SXM4-80GB")});
    EXPECT_EQ(collect().unmatched_peers.size(), 1u);
    ReportOptions o;
    o.devices = {"H100"};
    EXPECT_TRUE(collect_report_data(store(), o).unmatched_peers.empty());
}

TEST_F(CollectReport, AnImplTimedWithTwoMethodsGetsALabelPerMethod) {
    store().record_peers({peer("torch_compile", k_square, 13, k_h100_name, "cuda_graph")});
    const OpSection s = collect().sections[0];
    EXPECT_EQ(s.peer_labels,
              (std::vector<std::string>{"torch_compile@cold_l2_events", "torch_compile@cuda_graph", "torch_eager"}));
}

TEST_F(CollectReport, FlopsFromTheCallerGiveTflops) {
    ReportOptions o;
    o.flops = [](const std::string& op, const std::string&, const Problem& p) {
        return op == "rmsnorm" ? 4.0 * static_cast<double>(p.at("M") * p.at("H")) : 0.0;
    };
    const ReportData d = collect(o);
    const ProblemRow& r = d.sections[0].rows[1];
    EXPECT_DOUBLE_EQ(r.flops, 4.0 * 4096 * 4096);
    EXPECT_NEAR(r.tflops, 4.0 * 4096 * 4096 / 10e-6 / 1e12, 1e-12);
}

TEST_F(CollectReport, TheOpsFilterTakesAnOpOrAnOpAndVariant) {
    store().record(result("BLOCK=64", k_square, 7, 100, "dev-h100", "softmax", "fwd"));
    ReportOptions o;
    o.ops = {"softmax"};
    ASSERT_EQ(collect(o).sections.size(), 1u);
    EXPECT_EQ(collect(o).sections[0].op, "softmax");
    o.ops = {"rmsnorm/fwd", "softmax/fwd"};
    EXPECT_EQ(collect(o).sections.size(), 2u);
}

TEST_F(CollectReport, AnOpsFilterThatMatchesNothingIsBadInputListingTheOps) {
    ReportOptions o;
    o.ops = {"layernorm"};
    const Error e = error_of([&] { collect(o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), "--op");
    EXPECT_TRUE(contains(e.message(), "(ops with results: rmsnorm/fwd)")) << e.message();
}

TEST_F(CollectReport, TheDeviceFilterMatchesPartOfTheNameOrKey) {
    store().record(result("BLOCK=64", k_square, 7, 100, "dev-other"));
    ReportOptions o;
    o.devices = {"H100"};
    const ReportData d = collect(o);
    ASSERT_EQ(d.devices.size(), 1u);
    EXPECT_EQ(d.devices[0].key, "dev-h100");
    EXPECT_EQ(collect().devices.size(), 2u);
}

TEST_F(CollectReport, ADeviceFilterThatMatchesNothingIsBadInput) {
    ReportOptions o;
    o.devices = {"MI300"};
    const Error e = error_of([&] { collect(o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), "--device");
}

TEST_F(CollectReport, ADeviceNeverDescribedHasNoCeilingAndNoPeers) {
    store().record(result("BLOCK=64", k_square, 7, 100, "dev-bare"));
    const ReportData d = collect();
    ASSERT_EQ(d.sections.size(), 2u);
    const OpSection& bare = d.sections[0];  // "dev-bare" < "dev-h100"
    EXPECT_EQ(d.devices[bare.device].key, "dev-bare");
    EXPECT_DOUBLE_EQ(d.devices[bare.device].copy_gbps, 0);
    EXPECT_TRUE(std::isnan(bare.rows[0].pct_of_copy));
    EXPECT_TRUE(bare.peer_labels.empty());
}

TEST_F(CollectReport, EveryFormatRendersACollectedReport) {
    const ReportData d = collect();
    for (const ReportFormat f : {ReportFormat::markdown, ReportFormat::html, ReportFormat::csv, ReportFormat::json})
        EXPECT_TRUE(contains(render_report(d, f), "BLOCK=512")) << report_format_name(f);
}

// A tuned roofline op (op copy, variant fwd or read) moving `bytes` in `p50` us; the store keeps the bandwidth.
ResultRecord copy_result(const std::string& variant, double bytes, double p50, const std::string& device_key) {
    const Problem p{Dtype::bf16, {{"N", static_cast<std::int64_t>(bytes / 2)}}};
    return result("BLOCK=256", p, p50, bytes / (p50 * 1e-6) / 1e9, device_key, "copy", variant);
}

// log-log between (b0, t0) and (b1, t1): t0 * (b / b0)^(log(t1 / t0) / log(b1 / b0)).
double log_log(double b0, double t0, double b1, double t1, double b) {
    return t0 * std::pow(b / b0, std::log(t1 / t0) / std::log(b1 / b0));
}

const OpSection& section_of(const ReportData& d, const std::string& op, const std::string& device_key) {
    for (const OpSection& s : d.sections)
        if (s.op == op && d.devices[s.device].key == device_key) return s;
    throw std::runtime_error("no section " + op + " on " + device_key);
}

// The square problem moves 6711 GB/s x 10 us = 67.11 MB: between the 32 and 128 MB copies recorded here.
class CollectFloors : public CollectReport {
protected:
    void record_copies(const std::string& device_key, double scale = 1) {
        store().record(copy_result("fwd", 32e6, 7 * scale, device_key));
        store().record(copy_result("fwd", 128e6, 20 * scale, device_key));
        store().record(copy_result("read", 32e6, 5 * scale, device_key));
        store().record(copy_result("read", 128e6, 13 * scale, device_key));
    }
    static constexpr double k_square_bytes = 6711e9 * 10e-6;
};

TEST_F(CollectFloors, RowsGetTheSameSizeCopyAndReadOfTheirDevice) {
    record_copies("dev-h100");
    record_copies("dev-other", 3);  // another device's copies never count
    store().record(result("BLOCK=64", k_square, 12, 5600, "dev-other"));
    const ReportData d = collect();
    const ProblemRow& r = section_of(d, "rmsnorm", "dev-h100").rows[1];
    ASSERT_EQ(r.problem, k_square);
    EXPECT_NEAR(r.copy_floor_us, log_log(32e6, 7, 128e6, 20, k_square_bytes), 1e-9);
    EXPECT_NEAR(r.read_floor_us, log_log(32e6, 5, 128e6, 13, k_square_bytes), 1e-9);
    EXPECT_NEAR(r.pct_of_copy_floor, 100 * r.copy_floor_us / 10, 1e-9);
    const ProblemRow& other = section_of(d, "rmsnorm", "dev-other").rows[0];
    EXPECT_NEAR(other.copy_floor_us, log_log(32e6, 21, 128e6, 60, 5600e9 * 12e-6), 1e-9);
}

TEST_F(CollectFloors, ARowOutsideTheCopiedSizesHasNoFloor) {
    record_copies("dev-h100");
    const ReportData d = collect();
    const ProblemRow& wide = d.sections.back().rows[0];  // 525 GB/s x 4 us = 2.1 MB, under 32 MB
    ASSERT_EQ(wide.problem, k_wide);
    EXPECT_TRUE(std::isnan(wide.copy_floor_us));
    EXPECT_TRUE(std::isnan(wide.read_floor_us));
    EXPECT_TRUE(std::isnan(wide.pct_of_copy_floor));
}

TEST_F(CollectFloors, WithoutCopiesOnTheDeviceTheFloorsAreUnknown) {
    const auto floors_unknown = [&] {
        const ReportData d = collect();
        const ProblemRow& r = section_of(d, "rmsnorm", "dev-h100").rows[1];
        return std::isnan(r.copy_floor_us) && std::isnan(r.read_floor_us) && std::isnan(r.pct_of_copy_floor);
    };
    EXPECT_TRUE(floors_unknown());  // no copy at all
    record_copies("dev-other");
    store().record(copy_result("fwd", 64e6, 12, "dev-h100"));  // one size is no curve
    EXPECT_TRUE(floors_unknown());
}

TEST_F(CollectFloors, OnlyCopyReadResultsGiveAReadFloorAndNoCopyFloor) {
    store().record(copy_result("read", 32e6, 5, "dev-h100"));
    store().record(copy_result("read", 128e6, 13, "dev-h100"));
    const ReportData d = collect();
    const ProblemRow& r = d.sections.back().rows[1];
    EXPECT_TRUE(std::isnan(r.copy_floor_us));
    EXPECT_TRUE(std::isnan(r.pct_of_copy_floor));
    EXPECT_NEAR(r.read_floor_us, log_log(32e6, 5, 128e6, 13, k_square_bytes), 1e-9);
}

TEST_F(CollectFloors, AnOpFilterLeavingOutCopyStillFindsTheCopies) {
    record_copies("dev-h100");
    ReportOptions o;
    o.ops = {"rmsnorm/fwd"};
    const ReportData d = collect(o);
    ASSERT_EQ(d.sections.size(), 1u);
    EXPECT_EQ(d.sections[0].op, "rmsnorm");
    EXPECT_NEAR(d.sections[0].rows[1].copy_floor_us, log_log(32e6, 7, 128e6, 20, k_square_bytes), 1e-9);
}

TEST_F(CollectFloors, CopyRowsAreNotMeasuredAgainstThemselves) {
    record_copies("dev-h100");
    const ReportData d = collect();
    for (const OpSection& s : d.sections) {
        if (s.op != "copy") continue;
        for (const ProblemRow& r : s.rows) {
            EXPECT_TRUE(std::isnan(r.copy_floor_us)) << s.variant << " " << r.problem.key();
            EXPECT_TRUE(std::isnan(r.read_floor_us));
            EXPECT_TRUE(std::isnan(r.pct_of_copy_floor));
        }
    }
    EXPECT_EQ(d.sections.size(), 3u);  // copy fwd, copy read, rmsnorm fwd
}

using CollectEmptyReport = TempDirTest;

TEST_F(CollectEmptyReport, AStoreWithoutResultsGivesAnEmptyReport) {
    Store store = Store::open(path("r.db"));
    const ReportData d = collect_report_data(store, {});
    EXPECT_TRUE(d.sections.empty());
    EXPECT_TRUE(d.devices.empty());
}

}  // namespace
}  // namespace ktune::test

namespace ktune::test {
namespace {

class LikeForLike : public TempDirTest {};

TEST_F(LikeForLike, KernelDurationPeersCompareWithKtunesCuptiTimeAndEventPeersWithItsEventTime) {
    Store store = Store::open(path("r.db"));
    DeviceInfo d;
    d.key = "dev-h100";
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    store.upsert_device(d);
    const Problem p{Dtype::bf16, {{"M", 16}, {"H", 4096}}};
    ResultRecord r = result("BLOCK=256", p, 5.0, 50);  // event p50 5 us
    r.measurement.cupti_p50_us = 2.0;                  // the kernel itself: 2 us
    store.record(r);
    store.record_peers({peer("torch_compile", p, 4.0, d.name, "cold_l2_events"),
                        peer("torch_compile", p, 1.4, d.name, "cupti_kernel_sum")});
    const ReportData data = collect_report_data(store, {});
    ASSERT_EQ(data.sections.size(), 1u);
    const ProblemRow& row = data.sections[0].rows.at(0);
    const PeerTiming* events = row.peer("torch_compile@cold_l2_events");
    const PeerTiming* kernel = row.peer("torch_compile@cupti_kernel_sum");
    ASSERT_NE(events, nullptr);
    ASSERT_NE(kernel, nullptr);
    EXPECT_DOUBLE_EQ(events->speedup, 4.0 / 5.0);
    EXPECT_DOUBLE_EQ(kernel->speedup, 1.4 / 2.0);
    // The best peer is the one ktune trails most like for like (0.7 against 0.8).
    EXPECT_EQ(row.best_peer, "torch_compile@cupti_kernel_sum");
}

}  // namespace
}  // namespace ktune::test
