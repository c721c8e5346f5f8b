// A kernel whose template parameters are a bool, an enumerator and a type named by choices, and a signed int compiles
// with NVRTC for every valid configuration of its space (tests/data/spaces/good/tunables.yaml).
#include <gtest/gtest.h>

#include <filesystem>

#include "ktune_test_config.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

TEST(TunablesKernel, CompilesEveryValidConfigurationOfABoolAChoiceAndASignedInt) {
    const SearchSpace space = SearchSpace::load_file(std::string(KTUNE_TEST_DATA) + "/spaces/good/tunables.yaml");
    const auto cache = fs::path(KTUNE_BINARY_DIR) / "nvrtc-test-cache";
    fs::create_directories(cache);
    CompileService jit{{std::string(KTUNE_TEST_DATA) + "/jit", cache.string(), "", 0}};
    CompileRequest req;
    req.source_path = space.kernel_source();
    for (const Problem& p : space.problems())
        for (const Config& c : space.valid_configs(p)) req.name_expressions.push_back(space.kernel_name(c, p.dtype));
    ASSERT_EQ(req.name_expressions.size(), 2u * 15);  // fp32 and bf16
    const CompileResult r = jit.compile(req);
    ASSERT_TRUE(r.ok) << r.log;
    ASSERT_EQ(r.kernels.size(), req.name_expressions.size());
    EXPECT_EQ(r.kernels[0].name_expression, "tunables<float, false, Engine::simt, float4, -1>");
    for (const CompiledKernel& k : r.kernels) EXPECT_FALSE(k.lowered_name.empty()) << k.name_expression;
}

}  // namespace
}  // namespace ktune
