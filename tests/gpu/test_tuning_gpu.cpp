// GPU tests (label gpu): they need an NVIDIA GPU and driver, and skip with a message saying so without one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "results/store.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/devices.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/tuning_session.hpp"
#include "tuner/strategy/transfer.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

class GpuTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_dir = fs::temp_directory_path() / ("ktune-gpu-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        m_root = resolve_root("");
        m_worker = std::string(KTUNE_BINARY_DIR) + "/ktune-worker";
        try {
            CompileService jit({m_root, cache(), "", 0});
            current_device(m_worker, jit, 0);
        } catch (const Error& e) {
            if (e.category() == ErrorCategory::no_gpu) GTEST_SKIP() << "no NVIDIA GPU here: " << e.message();
            throw;
        }
    }
    void TearDown() override { fs::remove_all(m_dir); }

    std::string cache() const { return (m_dir / "cache").string(); }
    std::string db() const { return (m_dir / "results.db").string(); }

    TuneOptions options(const std::string& space) const {
        TuneOptions o;
        o.root = m_root;
        o.space_path = space;
        o.db_path = db();
        o.cache_dir = cache();
        o.worker_path = m_worker;
        o.timing.time_cap_s = 0.5;
        return o;
    }

    fs::path m_dir;
    std::string m_root, m_worker;
};

TEST_F(GpuTest, DevicesReportAPlausibleCopyCeilingAndLaunchFloor) {
    CompileService jit({m_root, cache(), "", 0});
    Store store = Store::open(db());
    const auto devices = probe_devices(m_worker, jit, true, std::size_t{256} << 20, &store);
    ASSERT_FALSE(devices.empty());
    const DeviceInfo& d = devices.front().info;
    EXPECT_GT(d.copy_gbps, 100.0);    // any datacenter GPU copies faster than this
    EXPECT_LT(d.copy_gbps, 20000.0);  // and no GPU copies faster than this
    EXPECT_GT(d.launch_floor_us, 0.0);
    EXPECT_LT(d.launch_floor_us, 50.0);
    ASSERT_TRUE(store.device(d.key).has_value());
    // Several GPUs of one key keep one calibration, any of theirs: it must agree within noise (5 %).
    EXPECT_NEAR(store.device(d.key)->copy_gbps, d.copy_gbps, 0.05 * d.copy_gbps);
}

TEST_F(GpuTest, TuningASmallSpaceValidatesEveryConfigurationAndAResumedRunMeasuresNothing) {
    TuneOptions o = options(resolve_space_path(m_root, "rmsnorm"));
    o.dtypes = {Dtype::bf16};
    o.problem_filters = {{{"M", 256}, {"H", 4096}}, {{"M", 16}, {"H", 8192}}};
    o.strategy = "random";
    o.budget = 6;
    const TuneSummary first = run_tuning(o, nullptr).front();
    ASSERT_FALSE(first.compile_only) << first.no_gpu_reason;
    ASSERT_EQ(first.problems.size(), 2u);
    for (const ProblemOutcome& p : first.problems) {
        EXPECT_EQ(p.measured, 6) << p.problem.key();
        EXPECT_EQ(p.failed, 0) << p.problem.key();
        ASSERT_TRUE(p.best.has_value()) << p.problem.key();
        EXPECT_EQ(p.best->measurement.status, Status::ok);
        EXPECT_GT(p.best->measurement.stats.p50, 0.0);
        // The best was measured again with at least 200 samples (the confirmation replaced it).
        EXPECT_GE(p.best->measurement.stats.n, 200);
        EXPECT_GT(p.best->measurement.gbps, 0.0);
        // Both problems move 4-8 MB: on any GPU of ~1 TB/s or more, decode-size problems ranked by kernel time, the
        // best's from the confirmation's eight pooled rounds (at least 200 CUPTI samples), under its event time.
        const Measurement& m = p.best->measurement;
        EXPECT_EQ(m.ranked_by, RankTimer::kernel) << p.problem.key();
        EXPECT_GE(m.cupti_samples_us.size(), 200u) << p.problem.key();
        EXPECT_GT(m.kernel_us, 0.0);
        EXPECT_LT(m.kernel_us, m.stats.p50);
        EXPECT_EQ(m.rank_us(), m.kernel_us);
    }
    EXPECT_EQ(first.status_counts.at("ok"), 12);
    EXPECT_GE(first.confirmations, 2);

    const TuneSummary second = run_tuning(o, nullptr).front();
    EXPECT_EQ(second.confirmations, 0);
    for (const ProblemOutcome& p : second.problems) {
        EXPECT_EQ(p.measured, 0) << p.problem.key();
        EXPECT_EQ(p.skipped, 6) << p.problem.key();
        ASSERT_TRUE(p.best.has_value());
        EXPECT_EQ(p.best->config_key, first.problems[&p - &second.problems[0]].best->config_key);
    }
}

// A later run's new problem starts from the stored fastest of an earlier run's (the tuning history), and resuming that
// run measures nothing again: it sees the history as it stood when the problem was first measured.
TEST_F(GpuTest, ASearchStartsFromAnEarlierRunsWinnerAndAResumedOneMeasuresNothing) {
    TuneOptions o = options(resolve_space_path(m_root, "rmsnorm"));
    o.dtypes = {Dtype::bf16};
    o.strategy = "random";
    o.budget = 6;
    o.problem_filters = {{{"M", 256}, {"H", 4096}}};
    const TuneSummary earlier = run_tuning(o, nullptr).front();
    ASSERT_FALSE(earlier.compile_only) << earlier.no_gpu_reason;
    ASSERT_TRUE(earlier.problems.at(0).best.has_value());
    EXPECT_EQ(earlier.problems[0].hints, 0);  // nothing stored, nothing before it in the run

    // The same H: the same rules hold at M=16, so what the earlier run measured are candidates there.
    o.problem_filters = {{{"M", 16}, {"H", 4096}}};
    const TuneSummary next = run_tuning(o, nullptr).front();
    ASSERT_EQ(next.problems.size(), 1u);
    // Its three fastest (kTransferDepth), all stored by the earlier run.
    EXPECT_EQ(next.problems[0].hints, 3);
    EXPECT_EQ(next.problems[0].stored_hints, 3);
    EXPECT_EQ(next.problems[0].measured, 6);
    Store store = Store::open(db(), Store::Mode::read_only);
    ResultFilter f;
    f.problem_key = next.problems[0].problem.key();
    f.device_key = next.device->key;
    bool tried_the_winner = false;
    for (const ResultRecord& r : store.results(f))
        tried_the_winner |= r.config_key == earlier.problems[0].best->config_key;
    EXPECT_TRUE(tried_the_winner);

    const TuneSummary resumed = run_tuning(o, nullptr).front();
    EXPECT_EQ(resumed.problems[0].measured, 0);
    EXPECT_EQ(resumed.problems[0].skipped, 6);
    EXPECT_EQ(resumed.problems[0].stored_hints, 3);
}

// forest's model learns from the results of the run's problems finished before a search starts (in-run), and the
// outcome says from how many: in an empty database the run's first problem from none, the second from the first's.
TEST_F(GpuTest, AForestSearchLearnsFromTheRunsFinishedProblemAndSaysSo) {
    TuneOptions o = options(resolve_space_path(m_root, "rmsnorm"));
    o.dtypes = {Dtype::bf16};
    o.strategy = "forest";
    o.budget = 24;  // past the model's 20 rows
    o.problem_filters = {{{"M", 256}, {"H", 4096}}, {{"M", 16}, {"H", 4096}}};
    const TuneSummary s = run_tuning(o, nullptr).front();
    ASSERT_FALSE(s.compile_only) << s.no_gpu_reason;
    ASSERT_EQ(s.problems.size(), 2u);
    EXPECT_EQ(s.problems[0].learned_searches, 0) << s.problems[0].problem.key();
    EXPECT_EQ(s.problems[1].learned_searches, 1) << s.problems[1].problem.key();
    EXPECT_EQ(s.problems[1].learned_problems, 1);
    EXPECT_GE(s.problems[1].learned_results, 20);
    EXPECT_LE(s.problems[1].learned_results, s.problems[0].measured);
}

TEST_F(GpuTest, ASearchOfAlternativesGivesAKernelTheHistoryFindsFarBehindAProbeAndTheOtherItsBudget) {
    TuneOptions o = options(resolve_space_path(m_root, "softmax"));
    o.dtypes = {Dtype::fp16};  // far from the problem below (weight 4^-9): its kernels' ratio does not count there
    o.strategy = "random";
    o.budget = 4;
    o.shapes = {{{"M", 256}, {"N", 4096}}};
    const TuneSummary first = run_tuning(o, nullptr).front();
    ASSERT_FALSE(first.compile_only) << first.no_gpu_reason;
    ASSERT_EQ(first.problems.size(), 1u);
    EXPECT_TRUE(first.problems[0].triage.empty());  // no history: each kernel its 4

    // An earlier run's results at a near problem (N doubled), staged 5x behind registers there.
    {
        Store store = Store::open(db());
        const std::int64_t run = store.begin_run({});
        for (const auto& [alternative, us] : {std::pair<std::string, double>{"registers", 1.0}, {"staged", 5.0}}) {
            ResultRecord r = *first.problems[0].best;
            r.kernel.alternative = alternative;
            r.kernel.source_hash = "earlier-" + alternative;
            r.problem = Problem{Dtype::bf16, {{"M", 1}, {"N", 8192}}};  // weight 1/4
            r.run_id = run;
            r.measurement.stats.p50 = r.measurement.kernel_us = r.measurement.cupti_p50_us = us;  // what ranks it
            r.measurement.samples_us = {us};
            store.record(r);
        }
    }
    o.dtypes = {Dtype::bf16};
    o.shapes = {{{"M", 1}, {"N", 4096}}};  // kernels registers (30 configurations here) and staged (6)
    const TuneSummary next = run_tuning(o, nullptr).front();
    ASSERT_EQ(next.problems.size(), 1u);
    ASSERT_EQ(next.problems[0].triage.size(), 2u);
    const auto& t = next.problems[0].triage;
    EXPECT_EQ(t[0].kernel, "registers");
    EXPECT_EQ(t[0].budget, 4 + 4 - kTriageProbe);
    EXPECT_EQ(t[1].kernel, "staged");
    EXPECT_EQ(t[1].budget, kTriageProbe);
    EXPECT_NEAR(t[1].expected_slowdown, 5.0, 0.01);
    EXPECT_EQ(next.problems[0].measured, 8);  // the same evaluations in all
}

TEST_F(GpuTest, TuningOnEveryGpuMeasuresEachConfigurationOnceAndAResumedRunMeasuresNothing) {
    TuneOptions o = options(resolve_space_path(m_root, "rmsnorm"));
    o.dtypes = {Dtype::bf16};
    o.problem_filters = {{{"M", 16}, {"H", 4096}}, {{"M", 4096}, {"H", 8192}}};
    o.config_filters = {{{"ROWS_PER_BLOCK", 1}, {"UNROLL", 2}}};
    o.all_gpus = true;
    const std::vector<TuneSummary> devices = run_tuning(o, nullptr);
    ASSERT_FALSE(devices.front().compile_only) << devices.front().no_gpu_reason;
    std::int64_t gpus = 0;
    for (const TuneSummary& s : devices) {
        gpus += std::int64_t(s.gpus.size());
        EXPECT_TRUE(s.dropped_gpus.empty());
        ASSERT_EQ(s.problems.size(), 2u);
        for (const ProblemOutcome& p : s.problems) {
            // Each device tunes the whole space, its GPUs sharing it: every configuration exactly once.
            EXPECT_EQ(p.measured, p.valid_configs) << p.problem.key();
            EXPECT_TRUE(p.best.has_value()) << p.problem.key();
        }
    }
    EXPECT_GE(gpus, 1);
    Store store = Store::open(db(), Store::Mode::read_only);
    for (const TuneSummary& s : devices) {
        ResultFilter f;
        f.device_key = s.device->key;
        std::int64_t valid = 0;
        for (const ProblemOutcome& p : s.problems) valid += p.valid_configs;
        EXPECT_EQ(store.count_results(f), valid);
        EXPECT_GT(store.device(s.device->key)->launch_floor_us, 0.0);
        EXPECT_FALSE(store.device(s.device->key)->host.empty());
    }
    for (const TuneSummary& s : run_tuning(o, nullptr))
        for (const ProblemOutcome& p : s.problems) EXPECT_EQ(p.measured, 0) << p.problem.key();
}

TEST_F(GpuTest, TheCublasBaselineIsValidatedAndTimedByEventsAndCupti) {
    TuneOptions o = options(resolve_space_path(m_root, "linear_cublas"));
    o.dtypes = {Dtype::bf16};
    // N != K and an odd M: a swapped leading dimension or m/n would not validate.
    o.shapes = {{{"M", 3}, {"N", 1000}, {"K", 4160}}};
    const TuneSummary s = run_tuning(o, nullptr).front();
    ASSERT_FALSE(s.compile_only) << s.no_gpu_reason;
    ASSERT_EQ(s.problems.size(), 1u);
    // cublasGemmEx and cuBLASLt's first algorithm always exist; the heuristic may offer fewer than eight,
    // and those missing are launch errors that say so.
    EXPECT_GE(s.status_counts.at("ok"), 2);
    EXPECT_EQ(s.status_counts.count("invalid_result"), 0u);
    ASSERT_TRUE(s.problems[0].best.has_value());
    const Measurement& best = s.problems[0].best->measurement;
    EXPECT_GT(best.stats.p50, 0.0);
    // Kernel time from CUPTI: the library's kernels (every kernel it launched), not the flush's, so well under the
    // event time and over nothing.
    EXPECT_GT(best.cupti_p50_us, 0.0);
    EXPECT_LT(best.cupti_p50_us, best.stats.p50);
    Store store = Store::open(db(), Store::Mode::read_only);
    ResultFilter failed;
    failed.status = Status::launch_error;
    for (const auto& r : store.results(failed))
        EXPECT_NE(r.measurement.message.find("cuBLASLt's heuristic offers"), std::string::npos)
            << r.measurement.message;
}

TEST_F(GpuTest, KernelsFedByTensorMapsValidateAtShapesThatAreNotMultiplesOfTheirTiles) {
    // The TMA-fed GEMM, gated FFN, dense skinny linear and prefill attention (kernel.tensor_maps): the descriptors'
    // zero fill past M, N and K (attention: L) is what keeps the tails right, and a gated FFN reads its up rows
    // through the same map as its gate rows. The GEMM and FFN: per space a block of 128 rows and one of 256, both
    // partly past M; then blocks of several tiles (TPB), whose outputs TMA stores clip, the consumers sharing each
    // tile or taking turns (PINGPONG), alone or in pairs sharing the w tile (wgmma_tma_pair). The others: as their
    // comments say.
    struct Case {
        const char* space;
        NamedValues shape;
        std::vector<std::string> configs;
        const char* kernel = "wgmma_tma";
    };
    for (
        const Case& c :
        {Case{"gemm_act_gelu",
              {{"M", 200}, {"N", 1000}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=1,TPB=1", "MT=2,BN=128,STAGES=3,GROUP_M=1,TPB=1"}},
         Case{"ffn_gated_swiglu",
              {{"M", 200}, {"I", 1000}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=1,TPB=1", "MT=2,BN=64,STAGES=3,GROUP_M=1,TPB=1"}},
         Case{"gemm_act_gelu",
              {{"M", 2000}, {"N", 1000}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=8,TPB=4,PINGPONG=0", "MT=1,BN=128,STAGES=4,GROUP_M=1,TPB=2,PINGPONG=0"}},
         Case{"ffn_gated_swiglu",
              {{"M", 2000}, {"I", 1000}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=8,TPB=4,PINGPONG=0", "MT=2,BN=64,STAGES=3,GROUP_M=1,TPB=2,PINGPONG=0"}},
         // Pingpong, the consumers taking turns: 561 and 153 tiles, so that some blocks have an
         // odd number of tiles (3 of 4, 1 of 2) and a consumer one tile fewer, or none; TPB 0: one
         // block per SM (SMS), each striding over the tiles.
         Case{"gemm_act_gelu",
              {{"M", 2050}, {"N", 1032}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=8,TPB=4,PINGPONG=1", "MT=2,BN=128,STAGES=5,GROUP_M=1,TPB=2,PINGPONG=1",
               "MT=1,BN=128,STAGES=4,GROUP_M=8,TPB=0,PINGPONG=1", "MT=1,BN=256,STAGES=3,GROUP_M=8,TPB=0,PINGPONG=0",
               // The output staged through a ring of two panels a consumer (the whole tile would not fit beside the
               // stages): 1 x 256 with four stages, 2 x 128 in turns with six.
               "MT=1,BN=256,STAGES=4,GROUP_M=8,TPB=0,PINGPONG=0", "MT=2,BN=128,STAGES=6,GROUP_M=1,TPB=2,PINGPONG=1"}},
         Case{"ffn_gated_swiglu",
              {{"M", 2050}, {"I", 1032}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=8,TPB=4,PINGPONG=1", "MT=1,BN=128,STAGES=4,GROUP_M=1,TPB=2,PINGPONG=1",
               "MT=1,BN=128,STAGES=4,GROUP_M=8,TPB=0,PINGPONG=0"}},
         // Pairs of blocks sharing the w tile by multicast (wgmma_tma_pair): 17 and 33 row tiles, so that the last
         // pair's second tile lies past M (or partly), the second block's part of w past N (or I) in the last column
         // tile.
         Case{"gemm_act_gelu",
              {{"M", 2050}, {"N", 1032}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=8,TPB=4,PINGPONG=1", "MT=2,BN=128,STAGES=5,GROUP_M=1,TPB=2,PINGPONG=1",
               "MT=1,BN=128,STAGES=4,GROUP_M=8,TPB=0,PINGPONG=0", "MT=1,BN=192,STAGES=3,GROUP_M=8,TPB=0,PINGPONG=0",
               "MT=1,BN=256,STAGES=4,GROUP_M=8,TPB=0,PINGPONG=0"},
              "wgmma_tma_pair"},
         Case{"ffn_gated_swiglu",
              {{"M", 2050}, {"I", 1032}, {"K", 4104}},
              {"MT=1,BN=64,STAGES=4,GROUP_M=8,TPB=4,PINGPONG=1", "MT=1,BN=128,STAGES=4,GROUP_M=8,TPB=0,PINGPONG=0"},
              "wgmma_tma_pair"},
         // gemm_act's wgmma skinny kernel, k split over a cluster whose partials meet in the first block's shared
         // memory: 65 k tiles over 2 and 4 blocks, x's rows past M (3, 37) and W's past N (4100) read as zeros.
         Case{"gemm_act_gelu",
              {{"M", 37}, {"N", 4100}, {"K", 4104}},
              {"WG=1,MT=1,XN=64,CLUSTER_K=2,STAGES=6", "WG=1,MT=1,XN=64,CLUSTER_K=4,STAGES=6"},
              "skinny_wgmma"},
         Case{"gemm_act_gelu",
              {{"M", 3}, {"N", 4100}, {"K", 4104}},
              {"WG=2,MT=1,XN=8,CLUSTER_K=4,STAGES=8"},
              "skinny_wgmma"},
         // The dense skinny linear fed by TMA: x's rows past M and W's past N (4100) read as zeros, k split unevenly
         // (65 tiles of 64 over 4 splits).
         Case{"linear_skinny_tails",
              {{"M", 3}, {"N", 4100}, {"K", 4136}},
              {"WG=1,MT=1,XN=8,SPLIT_K=4,STAGES=6", "WG=2,MT=1,XN=8,SPLIT_K=4,STAGES=8"}},
         Case{"linear_skinny_tails",
              {{"M", 63}, {"N", 4100}, {"K", 4136}},
              {"WG=1,MT=2,XN=64,SPLIT_K=4,STAGES=6", "WG=1,MT=1,XN=64,SPLIT_K=2,STAGES=4"}},
         // Prefill attention's warp-specialized kernel: uneven sequence lengths (U 2) in [500, 1000], the last query
         // block and K/V tile of a sequence partly past it, one consumer or two, in turns or not, two blocks an SM;
         // O stored by TMA through shared memory (O_SMEM; rows partly past the sequence from registers) or not.
         Case{
             "prefill_attention",
             {{"B", 3}, {"L", 1000}, {"HQ", 8}, {"HK", 2}, {"D", 128}, {"U", 2}},
             {"BLOCK_M=128,BLOCK_N=128,STAGES=2,OVERLAP=true,PINGPONG=1,CTAS_PER_SM=1,PERSISTENT=0,Q_STAGES=1,O_SMEM=1",
              "BLOCK_M=64,BLOCK_N=176,STAGES=2,OVERLAP=false,PINGPONG=0,CTAS_PER_SM=1,PERSISTENT=0,Q_STAGES=1,O_SMEM=0",
              "BLOCK_M=64,BLOCK_N=64,STAGES=2,OVERLAP=true,PINGPONG=0,CTAS_PER_SM=2,PERSISTENT=0,Q_STAGES=1,O_SMEM=0"},
             "wgmma_ws"},
         Case{
             "prefill_attention_full",
             {{"B", 3}, {"L", 1000}, {"HQ", 8}, {"HK", 2}, {"D", 128}, {"U", 2}},
             {"BLOCK_M=128,BLOCK_N=176,STAGES=2,OVERLAP=false,PINGPONG=1,CTAS_PER_SM=1,PERSISTENT=0,Q_STAGES=1,O_SMEM="
              "1",
              "BLOCK_M=128,BLOCK_N=64,STAGES=4,OVERLAP=true,PINGPONG=0,CTAS_PER_SM=1,PERSISTENT=0,Q_STAGES=1,O_SMEM=0",
              "BLOCK_M=64,BLOCK_N=64,STAGES=2,OVERLAP=false,PINGPONG=0,CTAS_PER_SM=2,PERSISTENT=0,Q_STAGES=1,O_SMEM=0"},
             "wgmma_ws"},
         // The same as persistent grids: 32 q heads make 768 and 1,536 blocks of rows, several for every block of
         // the grid (SMS or 2 SMS of them), among them blocks of rows past their sequence's length; the stages, q (in
         // one buffer or two) and the V tails' barrier handed on from one item to the next.
         Case{
             "prefill_attention",
             {{"B", 3}, {"L", 1000}, {"HQ", 32}, {"HK", 8}, {"D", 128}, {"U", 2}},
             {"BLOCK_M=128,BLOCK_N=128,STAGES=2,OVERLAP=true,PINGPONG=1,CTAS_PER_SM=1,PERSISTENT=1,Q_STAGES=2,O_SMEM=1",
              "BLOCK_M=64,BLOCK_N=176,STAGES=2,OVERLAP=false,PINGPONG=0,CTAS_PER_SM=1,PERSISTENT=1,Q_STAGES=1,O_SMEM=0",
              "BLOCK_M=64,BLOCK_N=64,STAGES=2,OVERLAP=true,PINGPONG=0,CTAS_PER_SM=2,PERSISTENT=1,Q_STAGES=2,O_SMEM=1"},
             "wgmma_ws"},
         Case{
             "prefill_attention_full",
             {{"B", 3}, {"L", 1000}, {"HQ", 32}, {"HK", 8}, {"D", 128}, {"U", 2}},
             {"BLOCK_M=128,BLOCK_N=176,STAGES=2,OVERLAP=false,PINGPONG=1,CTAS_PER_SM=1,PERSISTENT=1,Q_STAGES=1,O_SMEM="
              "1",
              "BLOCK_M=128,BLOCK_N=64,STAGES=4,OVERLAP=true,PINGPONG=0,CTAS_PER_SM=1,PERSISTENT=1,Q_STAGES=2,O_SMEM=0",
              "BLOCK_M=64,BLOCK_N=64,STAGES=2,OVERLAP=false,PINGPONG=0,CTAS_PER_SM=2,PERSISTENT=1,Q_STAGES=2,O_SMEM=1"},
             "wgmma_ws"}}) {
        TuneOptions o = options(resolve_space_path(m_root, c.space));
        o.dtypes = {Dtype::bf16};
        o.shapes = {c.shape};
        o.alternatives = {c.kernel};
        o.config_filter_texts = c.configs;
        const TuneSummary s = run_tuning(o, nullptr).front();
        ASSERT_FALSE(s.compile_only) << s.no_gpu_reason;
        EXPECT_EQ(s.status_counts.count("ok") ? s.status_counts.at("ok") : 0, int(c.configs.size())) << c.space;
        EXPECT_EQ(s.status_counts.size(), 1u) << c.space << ": every configuration ok";
    }
}

TEST_F(GpuTest, TheGatedFfnsSkinnyKernelPairsEachGateRowWithItsUpRowPastItsTiles) {
    // ffn_gated's small-M kernel streams the gate's rows and the up's side by side: I = 4104 ends inside a 16-row tile
    // (the up's rows of that tile start 4104 rows on, not 4112), K = 4104 inside a 32-k chunk, M = 37 inside the
    // second block's rows; weights in registers and through the ring, one tile a block or two.
    struct Case {
        const char* space;
        NamedValues shape;
        std::vector<std::string> configs;
    };
    for (const Case& c :
         {Case{"ffn_gated_swiglu",
               {{"M", 3}, {"I", 4104}, {"K", 4104}},
               {"WARPS=4,TILES_N=1,UNROLL=2,M_FRAGS=1,STAGES=1", "WARPS=8,TILES_N=2,UNROLL=1,M_FRAGS=1,STAGES=1",
                "WARPS=4,TILES_N=1,UNROLL=1,M_FRAGS=1,STAGES=4"}},
          Case{"ffn_gated_swiglu",
               {{"M", 37}, {"I", 4104}, {"K", 4104}},
               {"WARPS=4,TILES_N=1,UNROLL=1,M_FRAGS=4,STAGES=2"}},
          Case{"ffn_gated_geglu",
               {{"M", 3}, {"I", 4104}, {"K", 4104}},
               {"WARPS=8,TILES_N=2,UNROLL=1,M_FRAGS=1,STAGES=1", "WARPS=4,TILES_N=1,UNROLL=1,M_FRAGS=1,STAGES=4"}}}) {
        TuneOptions o = options(resolve_space_path(m_root, c.space));
        o.dtypes = {Dtype::bf16};
        o.shapes = {c.shape};
        o.alternatives = {"skinny"};
        o.config_filter_texts = c.configs;
        const TuneSummary s = run_tuning(o, nullptr).front();
        ASSERT_FALSE(s.compile_only) << s.no_gpu_reason;
        EXPECT_EQ(s.status_counts.count("ok") ? s.status_counts.at("ok") : 0, int(c.configs.size())) << c.space;
        EXPECT_EQ(s.status_counts.size(), 1u) << c.space << ": every configuration ok";
    }
}

TEST_F(GpuTest, WrongFaultingAndHangingKernelsAreRecordedAndTheRunPicksACorrectOne) {
    TuneOptions o = options(std::string(KTUNE_TEST_DATA) + "/gpu/faulty_rmsnorm.yaml");
    o.timeout_floor_s = 3;
    const TuneSummary s = run_tuning(o, nullptr).front();
    ASSERT_FALSE(s.compile_only) << s.no_gpu_reason;
    ASSERT_EQ(s.problems.size(), 1u);
    EXPECT_EQ(s.status_counts.at("ok"), 2);
    EXPECT_EQ(s.status_counts.at("invalid_result"), 2);
    EXPECT_EQ(s.status_counts.at("launch_error"), 2);
    EXPECT_EQ(s.status_counts.at("timeout"), 2);
    EXPECT_GE(s.worker_restarts, 4);
    ASSERT_TRUE(s.problems[0].best.has_value());
    EXPECT_NE(s.problems[0].best->config_key.find("MODE=1"), std::string::npos) << s.problems[0].best->config_key;

    Store store = Store::open(db(), Store::Mode::read_only);
    ResultFilter invalid;
    invalid.status = Status::invalid_result;
    const auto wrong = store.results(invalid);
    ASSERT_EQ(wrong.size(), 2u);
    for (const auto& r : wrong) {
        EXPECT_NE(r.config_key.find("MODE=2"), std::string::npos);
        EXPECT_GT(r.measurement.mismatches, 0);
        EXPECT_NE(r.measurement.message.find("differ"), std::string::npos) << r.measurement.message;
    }
    ResultFilter faulted;
    faulted.status = Status::launch_error;
    for (const auto& r : store.results(faulted))
        EXPECT_NE(r.measurement.message.find("ILLEGAL_ADDRESS"), std::string::npos) << r.measurement.message;
}

// An op over a padded batch (the op spec's pad): the worker writes NaN into its input rows past each sequence's length,
// so a kernel that reads them, even only to weigh them by 0, fails validation, and one that skips them validates.
TEST_F(GpuTest, AKernelReadingAPaddedBatchsRowsPastALengthIsInvalidAndOneSkippingThemIsOk) {
    const TuneSummary s = run_tuning(options(std::string(KTUNE_TEST_DATA) + "/gpu/padded_rows.yaml"), nullptr).front();
    ASSERT_FALSE(s.compile_only) << s.no_gpu_reason;
    ASSERT_EQ(s.problems.size(), 1u);
    EXPECT_EQ(s.status_counts.at("ok"), 1);
    EXPECT_EQ(s.status_counts.at("invalid_result"), 1);
    ASSERT_TRUE(s.problems[0].best.has_value());
    EXPECT_EQ(s.problems[0].best->config_key, "MODE=1");

    Store store = Store::open(db(), Store::Mode::read_only);
    ResultFilter invalid;
    invalid.status = Status::invalid_result;
    const auto wrong = store.results(invalid);
    ASSERT_EQ(wrong.size(), 1u);
    EXPECT_EQ(wrong[0].config_key, "MODE=2");
    EXPECT_EQ(wrong[0].measurement.mismatches, 8 * 32);  // every output: every length is below L (range [1, L))
}

}  // namespace
}  // namespace ktune
