// The worker's own kernels (tuner/session/gpu_worker.cpp: flush, discard, generator, poison, pad, compare) compile for
// every architecture the worker may meet; without a GPU this is the only place they are compiled.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "ktune_test_config.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/gpu_worker.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

class UtilityKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(UtilityKernels, CompileWithOneKernelPerRole) {
    const auto cache = fs::path(KTUNE_BINARY_DIR) / "nvrtc-test-cache";
    fs::create_directories(cache);
    CompileService jit{{KTUNE_SOURCE_ROOT, cache.string(), "", 0}};
    std::vector<std::string> roles;
    const CompileRequest req = utility_compile_request(GetParam(), roles);
    ASSERT_EQ(roles.size(), req.name_expressions.size());
    EXPECT_EQ(std::set<std::string>(roles.begin(), roles.end()).size(), roles.size()) << "roles must be unique";
    for (const char* role : {"flush", "flush_evict_last", "discard", "spin", "empty", "pad.f32", "pad.f16", "pad.bf16"})
        EXPECT_EQ(std::count(roles.begin(), roles.end(), role), 1) << role;
    const CompileResult r = jit.compile(req);
    ASSERT_TRUE(r.ok) << r.log;
    ASSERT_EQ(r.kernels.size(), roles.size());
    for (const CompiledKernel& k : r.kernels) EXPECT_FALSE(k.lowered_name.empty()) << k.name_expression;
}

// sm_90: the H100 this is tuned on; sm_80: the first with L2 cache hints and discard; sm_75: the fallbacks without.
INSTANTIATE_TEST_SUITE_P(Archs, UtilityKernels, ::testing::Values("sm_75", "sm_80", "sm_90"));

}  // namespace
}  // namespace ktune
