#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Two kernels of one op: shared VEC, a constraint for both, each its own kernel, parameters and launch.
const std::string two_kernels =
    "op: bias_act\n"
    "kernel: {reference: \"ref<{T}>\", reference_source: ref.cuh}\n"
    "parameters:\n"
    "  VEC: {values: [1, 2, 4]}\n"
    "constraints: [\"VEC * DTYPE_BYTES <= 8\"]\n"
    "reference_launch: {grid: [\"N\"], block: [\"32\"]}\n"
    "alternatives:\n"
    "  flat:\n"
    "    kernel: {source: flat.cuh, name: \"flat<{T}, {BLOCK}, {VEC}>\"}\n"
    "    parameters: {BLOCK: {pow2: [64, 256]}}\n"
    "    launch: {grid: [\"ceil_div(N, BLOCK * VEC)\"], block: [\"BLOCK\"]}\n"
    "  rows:\n"
    "    kernel: {source: rows.cuh, name: \"rows<{T}, {WARPS}, {VEC}>\"}\n"
    "    parameters: {WARPS: {values: [1, 2]}}\n"
    "    constraints: [\"WARPS * 32 * VEC <= N\"]\n"
    "    launch: {grid: [\"1\"], block: [\"WARPS * 32\"]}\n"
    "problems: {axes: {N: [64, 4096]}, dtypes: [fp16]}\n"
    "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n";

TEST(Alternatives, AFileOfAlternativesGivesOneSpacePerKernelInFileOrder) {
    const std::vector<SearchSpace> k = SearchSpace::load_alternatives_string(two_kernels, "alt.yaml");
    ASSERT_EQ(k.size(), 2u);
    EXPECT_EQ(k[0].alternative(), "flat");
    EXPECT_EQ(k[1].alternative(), "rows");
    EXPECT_EQ(k[0].kernel_source(), "flat.cuh");
    EXPECT_EQ(k[1].kernel_name_template(), "rows<{T}, {WARPS}, {VEC}>");
    EXPECT_EQ(k[0].reference_source(), "ref.cuh");  // the reference is shared
    EXPECT_EQ(k[1].reference_source(), "ref.cuh");
}

TEST(Alternatives, EachKernelHasTheSharedParametersAndItsOwn) {
    const std::vector<SearchSpace> k = SearchSpace::load_alternatives_string(two_kernels, "alt.yaml");
    ASSERT_EQ(k[0].parameters().size(), 2u);
    EXPECT_EQ(k[0].parameters()[0].name, "VEC");
    EXPECT_EQ(k[0].parameters()[1].name, "BLOCK");
    EXPECT_EQ(k[1].parameters()[1].name, "WARPS");
}

TEST(Alternatives, SharedConstraintsApplyToEveryKernelAndOwnOnesToItsOwn) {
    const std::vector<SearchSpace> k = SearchSpace::load_alternatives_string(two_kernels, "alt.yaml");
    const Problem small{Dtype::fp16, {{"N", 64}}};
    // flat: VEC 1, 2, 4 (VEC * 2 <= 8) x BLOCK 64, 128, 256.
    EXPECT_EQ(k[0].valid_configs(small).size(), 9u);
    // rows: WARPS * 32 * VEC <= 64 leaves (1, 1), (1, 2), (2, 1).
    EXPECT_EQ(k[1].valid_configs(small).size(), 3u);
}

TEST(Alternatives, EachKernelLaunchesWithItsOwnGeometry) {
    const std::vector<SearchSpace> k = SearchSpace::load_alternatives_string(two_kernels, "alt.yaml");
    const Problem p{Dtype::fp16, {{"N", 4096}}};
    EXPECT_EQ(k[0].launch(Config{{{"VEC", 4}, {"BLOCK", 128}}}, p, SearchSpace::nominal_sm_count).grid[0], 8u);
    EXPECT_EQ(k[1].launch(Config{{{"VEC", 4}, {"WARPS", 2}}}, p, SearchSpace::nominal_sm_count).block[0], 64u);
}

TEST(Alternatives, AFileOfOneKernelIsOneSpaceWithoutAName) {
    const std::string plain =
        "op: bias_act\nkernel: {source: flat.cuh, name: \"flat<{T}, {BLOCK}>\", reference: \"ref<{T}>\"}\n"
        "parameters: {BLOCK: {values: [64]}}\nlaunch: {grid: [\"N\"], block: [\"BLOCK\"]}\n"
        "reference_launch: {grid: [\"N\"], block: [\"32\"]}\n"
        "problems: {axes: {N: [64]}, dtypes: [fp16]}\ntolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n";
    const std::vector<SearchSpace> k = SearchSpace::load_alternatives_string(plain, "one.yaml");
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].alternative(), "");
}

TEST(Alternatives, LoadingAFileOfAlternativesAsOneSpaceIsRefused) {
    try {
        SearchSpace::load_string(two_kernels, "alt.yaml");
        FAIL() << "a file of two kernels loaded as one space";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), HasSubstr("holds 2 alternative kernels"));
    }
}

TEST(Alternatives, AParameterDeclaredTwiceIsRefusedWithItsLine) {
    std::string yaml = two_kernels;
    const std::string own = "{WARPS: {values: [1, 2]}}";
    yaml.replace(yaml.find(own), own.size(), "{VEC: {values: [1]}}");
    try {
        SearchSpace::load_alternatives_string(yaml, "alt.yaml");
        FAIL() << "VEC declared twice was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.where(), HasSubstr("alt.yaml:14: alternatives.rows.parameters"));
        EXPECT_THAT(e.message(), HasSubstr("parameter VEC is declared at the top level and again here"));
    }
}

TEST(Alternatives, AnErrorInsideAnAlternativeNamesItsLine) {
    std::string yaml = two_kernels;
    const std::string rule = "WARPS * 32 * VEC <= N";
    yaml.replace(yaml.find(rule), rule.size(), "WARPS * 32 * VEC <= Q");
    try {
        SearchSpace::load_alternatives_string(yaml, "alt.yaml");
        FAIL() << "an unknown variable was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.where(), HasSubstr("alt.yaml:15"));
        EXPECT_THAT(e.message(), HasSubstr("unknown variable 'Q'"));
    }
}

TEST(Alternatives, AnAlternativeWithoutAKernelIsRefused) {
    std::string yaml = two_kernels;
    const std::string kernel = "    kernel: {source: rows.cuh, name: \"rows<{T}, {WARPS}, {VEC}>\"}\n";
    yaml.replace(yaml.find(kernel), kernel.size(), "");
    EXPECT_THROW(SearchSpace::load_alternatives_string(yaml, "alt.yaml"), Error);
}

}  // namespace
}  // namespace ktune
