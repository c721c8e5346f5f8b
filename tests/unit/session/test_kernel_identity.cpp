// A measurement's kernel identity covers the L2 state its samples found and the timer that ranks them, so that a tuning
// with another flush (or hot, or without CUPTI) never resumes from, or ranks against, results of another method.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "ktune_test_config.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/session/space_measurer.hpp"

namespace ktune {
namespace {

TEST(KernelIdentity, DiffersByL2StateAndIsStableOtherwise) {
    test::TempDir cache;
    CompileService jit{{KTUNE_SOURCE_ROOT, cache.path().string(), "", 0}};
    const SearchSpace space = SearchSpace::load_file(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/rmsnorm.yaml");
    wire::TimingOptions clean, dirty, hot;
    dirty.clean_flush = false;
    hot.cold_l2 = false;
    EXPECT_EQ(wire::l2_state(clean), "cold");
    EXPECT_EQ(wire::l2_state(dirty), "cold-dirty");
    EXPECT_EQ(wire::l2_state(hot), "hot");

    const KernelInfo a = kernel_identity(space, jit, clean);
    EXPECT_EQ(a.op, "rmsnorm");
    EXPECT_EQ(a.source_hash, kernel_identity(space, jit, clean).source_hash);
    wire::TimingOptions more_samples = clean;  // sampling settings are not part of it: resuming keeps those results
    more_samples.min_samples = 50;
    EXPECT_EQ(a.source_hash, kernel_identity(space, jit, more_samples).source_hash);
    EXPECT_NE(a.source_hash, kernel_identity(space, jit, dirty).source_hash);
    EXPECT_NE(a.source_hash, kernel_identity(space, jit, hot).source_hash);
    EXPECT_NE(kernel_identity(space, jit, dirty).source_hash, kernel_identity(space, jit, hot).source_hash);
    wire::TimingOptions hot_dirty = hot;  // with the L2 warm the flush mode means nothing
    hot_dirty.clean_flush = false;
    EXPECT_EQ(kernel_identity(space, jit, hot).source_hash, kernel_identity(space, jit, hot_dirty).source_hash);
    EXPECT_EQ(a.l2_state, "cold");
    wire::TimingOptions no_cupti = clean;  // every problem ranked by events then
    no_cupti.cupti_samples = 0;
    EXPECT_NE(a.source_hash, kernel_identity(space, jit, no_cupti).source_hash);
}

TEST(RankTimer, KernelTimeWhereTheNominalDramTimeIsUnderTheThresholdAndCuptiIsOn) {
    wire::DeviceProps h100;
    h100.memory_clock_khz = 2619000;  // x2 (double data rate) x 5120 bits / 8 = 3.35 TB/s
    h100.memory_bus_bits = 5120;
    const double nominal = 2.0 * 2619e6 * 5120 / 8;
    const double at_threshold = nominal * kKernelTimeRankingUs * 1e-6;
    wire::TimingOptions t;
    EXPECT_EQ(rank_timer(2.0 * 16 * 4096 * 2, h100, t), RankTimer::kernel);  // bf16 M=16 H=4096 RMSNorm
    EXPECT_EQ(rank_timer(0.99 * at_threshold, h100, t), RankTimer::kernel);
    EXPECT_EQ(rank_timer(1.01 * at_threshold, h100, t), RankTimer::event);
    EXPECT_EQ(rank_timer(2.0 * 32768 * 4096 * 2, h100, t), RankTimer::event);
    wire::TimingOptions no_cupti = t;
    no_cupti.cupti_samples = 0;
    EXPECT_EQ(rank_timer(1024, h100, no_cupti), RankTimer::event);
    EXPECT_EQ(rank_timer(1024, wire::DeviceProps{}, t), RankTimer::event);  // bandwidth unknown
}

TEST(KernelIdentity, DiffersByLaunchGeometryExpressions) {
    test::TempDir cache;
    CompileService jit{{KTUNE_SOURCE_ROOT, cache.path().string(), "", 0}};
    const std::string path = std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/rmsnorm.yaml";
    std::ifstream in(path);
    const std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string::size_type at = yaml.find("block: [\"BLOCK\"]");
    ASSERT_NE(at, std::string::npos) << "rmsnorm.yaml's launch block changed: update this test";
    std::string other = yaml;
    other.replace(at, std::string("block: [\"BLOCK\"]").size(), "block: [\"BLOCK * 1\"]");
    const SearchSpace a = SearchSpace::load_string(yaml, path);
    const SearchSpace b = SearchSpace::load_string(other, path);
    wire::TimingOptions t;
    // The same kernel, configuration and problem launched by another expression is not resumed from the first's rows.
    EXPECT_NE(kernel_identity(a, jit, t).source_hash, kernel_identity(b, jit, t).source_hash);
    EXPECT_EQ(kernel_identity(a, jit, t).source_hash,
              kernel_identity(SearchSpace::load_string(yaml, path), jit, t).source_hash);
}

TEST(KernelIdentity, ALibraryBaselineIsIdentifiedByItsName) {
    test::TempDir cache;
    CompileService jit{{KTUNE_SOURCE_ROOT, cache.path().string(), "", 0}};
    const SearchSpace space =
        SearchSpace::load_file(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/linear_cublas.yaml");
    const KernelInfo k = kernel_identity(space, jit, wire::TimingOptions{});
    EXPECT_EQ(k.op, "linear");
    EXPECT_EQ(k.source_path, "library:cublas_gemm");
    EXPECT_EQ(k.source_hash.size(), 16u);
}

}  // namespace
}  // namespace ktune
