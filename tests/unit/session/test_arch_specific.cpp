// kernel.arch_specific: the space loader reads it (per alternative), and the tuned kernel's compile request targets
// the arch-specific architecture (sm_90 -> sm_90a) while the reference keeps the device's plain one.
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/space_measurer.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

const char* space_yaml(const char* flag) {
    static std::string text;
    text = std::string(
               "op: t\n"
               "kernel: {reference: \"r<{T}>\", reference_source: k.cuh}\n"
               "parameters: {BLOCK: {values: [32]}}\n"
               "launch: {grid: [\"1\"], block: [\"32\"]}\n"
               "alternatives:\n"
               "  mma: {kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\"") +
           flag +
           "}}\n"
           "  plain: {kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\"}}\n"
           "problems: {axes: {M: [1]}, dtypes: [bf16]}\n"
           "tolerances: {bf16: {rtol: 1e-2, atol: 1e-2}}\n";
    return text.c_str();
}

TEST(ArchSpecific, TheLoaderReadsItPerAlternativeAndTargetsTheAVariant) {
    const auto kernels = SearchSpace::load_alternatives_string(space_yaml(", arch_specific: true"), "t.yaml");
    ASSERT_EQ(kernels.size(), 2u);
    EXPECT_TRUE(kernels[0].arch_specific());
    EXPECT_EQ(kernels[0].target_arch("sm_90"), "sm_90a");
    EXPECT_EQ(kernels[0].target_arch("sm_90a"), "sm_90a");  // already a variant: kept
    EXPECT_FALSE(kernels[1].arch_specific());
    EXPECT_EQ(kernels[1].target_arch("sm_90"), "sm_90");
}

TEST(ArchSpecific, OnlyTrueOrFalseIsAccepted) {
    EXPECT_THROW(SearchSpace::load_alternatives_string(space_yaml(", arch_specific: yes please"), "t.yaml"), Error);
}

// kernel.programmatic_launch: read per alternative like arch_specific; the exporter launches such a kernel with the
// programmatic stream serialization attribute (tests/unit/export/test_generated_header_nvcc.cpp).
TEST(ArchSpecific, TheLoaderReadsProgrammaticLaunchPerAlternative) {
    const auto kernels = SearchSpace::load_alternatives_string(space_yaml(", programmatic_launch: true"), "t.yaml");
    ASSERT_EQ(kernels.size(), 2u);
    EXPECT_TRUE(kernels[0].programmatic_launch());
    EXPECT_FALSE(kernels[1].programmatic_launch());
    EXPECT_FALSE(kernels[0].arch_specific());
    EXPECT_THROW(SearchSpace::load_alternatives_string(space_yaml(", programmatic_launch: 1"), "t.yaml"), Error);
}

TEST(ArchSpecific, TheCompileKeyTellsTheArchitecturesApart) {
    EXPECT_NE(compile_key("k.cuh", "k<1>", {}, "sm_90a"), compile_key("k.cuh", "k<1>", {}, "sm_90"));
    EXPECT_EQ(compile_key("k.cuh", "k<1>", {}), compile_key("k.cuh", "k<1>", {}, ""));
}

// wgmma.fence exists only in sm_90a: the request compiles only if it really targets sm_90a.
TEST(ArchSpecific, TheKernelIsCompiledForSm90aAndTheReferenceForSm90) {
    test::TempDir root, cache;
    root.write("k.cuh",
               "template <int N> __global__ void k(float* p) {\n"
               "#if defined(USE_WGMMA)\n"
               "    asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
               "#endif\n"
               "    p[0] = N;\n}\n");
    CompileService jit({root.path().string(), (cache.path() / "cache").string(), {}, 1});
    SharedCompiles compiles(jit, "sm_90");
    const auto kernels = SearchSpace::load_alternatives_string(space_yaml(", arch_specific: true"), "t.yaml");
    const std::string target = kernels[0].target_arch(compiles.arch());
    const CompileResult specific = compiles.submit("k.cuh", "k<1>", {"-DUSE_WGMMA"}, target).get();
    EXPECT_TRUE(specific.ok) << specific.log;
    const CompileResult plain = compiles.submit("k.cuh", "k<1>", {"-DUSE_WGMMA"}).get();  // the device's sm_90
    EXPECT_FALSE(plain.ok);
    const CompileResult reference = compiles.submit("k.cuh", "k<2>", {}).get();
    EXPECT_TRUE(reference.ok) << reference.log;
}

}  // namespace
}  // namespace ktune
