// kernel.tensor_maps: TMA descriptors a kernel takes after the op's arguments, read from the space and checked
// against the op spec's buffers and TMA's limits before anything runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// x [M, K] and w [N, K] through tensor maps; boxes of ROWS rows (a parameter) by 64 elements, 128-byte swizzle.
std::string space(const std::string& maps, const std::string& axes = "{M: [100, 256], N: [64], K: [4096]}") {
    return "op: mm\n"
           "op_spec:\n"
           "  axes: {M: {doc: rows}, N: {doc: columns}, K: {doc: depth}}\n"
           "  buffers:\n"
           "    x: {type: T, count: \"M * K\", role: input}\n"
           "    w: {type: T, count: \"N * K\", role: input}\n"
           "    y: {type: T, count: \"M * N\", role: output}\n"
           "  arguments: [y, x, w, {i32: \"M\"}, {i32: \"N\"}, {i32: \"K\"}]\n"
           "  bytes: \"(M * K + N * K + M * N) * DTYPE_BYTES\"\n"
           "kernel:\n"
           "  source: k.cuh\n"
           "  name: \"k<{T}, {ROWS}>\"\n"
           "  reference: \"r<{T}>\"\n"
           "  tensor_maps:\n" +
           maps +
           "parameters:\n  ROWS: {values: [64, 128]}\n"
           "launch: {grid: [\"ceil_div(M, ROWS)\"], block: [\"128\"]}\n"
           "reference_launch: {grid: [\"M\"], block: [\"64\"]}\n"
           "problems: {axes: " +
           axes +
           ", dtypes: [bf16]}\n"
           "tolerances: {bf16: {rtol: 1e-2, atol: 1e-2}}\n";
}

const std::string two_maps =
    "    - {buffer: x, shape: [M, K], box: [ROWS, 64], swizzle: 128}\n"
    "    - {buffer: w, shape: [N, K], box: [\"N\", 64]}\n";

Problem problem(std::int64_t m) { return Problem{Dtype::bf16, {{"M", m}, {"N", 64}, {"K", 4096}}}; }

std::string load_error(const std::string& yaml) {
    try {
        SearchSpace::load_string(yaml, "tm.yaml").check_launches();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        return e.where() + ": " + e.message();
    }
    ADD_FAILURE() << "the space loaded and its launches passed";
    return "";
}

TEST(TensorMaps, EachMapIsEvaluatedForTheConfigurationAndProblemInOrder) {
    const SearchSpace s = SearchSpace::load_string(space(two_maps), "tm.yaml");
    s.check_launches();
    ASSERT_EQ(s.tensor_maps().size(), 2u);
    const Config c = s.parse_config("ROWS=128", "test");
    const std::vector<TensorMapValue> v = s.tensor_map_values(c, problem(100));
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].buffer, "x");
    EXPECT_EQ(v[0].shape, (std::vector<std::int64_t>{100, 4096}));
    EXPECT_EQ(v[0].box, (std::vector<std::int64_t>{128, 64}));  // a box past M: TMA reads those rows as zeros
    EXPECT_EQ(v[0].swizzle, 128);
    EXPECT_EQ(v[1].buffer, "w");
    EXPECT_EQ(v[1].box, (std::vector<std::int64_t>{64, 64}));
    EXPECT_EQ(v[1].swizzle, 0);  // no swizzle unless asked
}

TEST(TensorMaps, TheMapsArePartOfTheKernelsIdentityAndAPlainSpaceHasNone) {
    const SearchSpace s = SearchSpace::load_string(space(two_maps), "tm.yaml");
    EXPECT_THAT(s.launch_text(), HasSubstr("; tensor_map: x [M, K] box [ROWS, 64] swizzle 128; tensor_map: w"));
    const std::string one = "    - {buffer: x, shape: [M, K], box: [ROWS, 64], swizzle: 128}\n";
    EXPECT_NE(SearchSpace::load_string(space(one), "tm.yaml").launch_text(), s.launch_text());
}

TEST(TensorMaps, AMapOfAnUnknownBufferOrWithoutAnOpSpecIsRefusedWithItsLine) {
    EXPECT_THAT(load_error(space("    - {buffer: z, shape: [M, K], box: [ROWS, 64]}\n")),
                AllOf(HasSubstr("tm.yaml:"), HasSubstr("unknown buffer 'z'"), HasSubstr("x, w, y")));
    std::string no_spec = space(two_maps);
    no_spec.erase(no_spec.find("op_spec:"), no_spec.find("kernel:") - no_spec.find("op_spec:"));
    EXPECT_THAT(load_error(no_spec), HasSubstr("the space needs an op_spec"));
}

TEST(TensorMaps, ShapeBoxAndSwizzleAreCheckedOnLoad) {
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [M, K], box: [64]}\n")),
                HasSubstr("box has 1 dimensions, shape 2"));
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [M, K], box: [64, 64], swizzle: 48}\n")),
                HasSubstr("0, 32, 64 or 128, not '48'"));
    // The shape is the problem's: a parameter there would make the view differ between configurations.
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [ROWS, K], box: [64, 64]}\n")),
                HasSubstr("the shape reads parameter ROWS"));
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [M, K, 1, 1, 1, 1], box: [1, 1, 1, 1, 1, 1]}\n")),
                HasSubstr("1 to 5 dimensions"));
}

TEST(TensorMaps, WhatTmaCannotCopyIsRefusedBeforeAnythingRunsNamingConfigurationAndProblem) {
    // 128 elements of bf16 are 256 bytes a row: beyond the 128-byte swizzle span.
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [M, K], box: [64, 128], swizzle: 128}\n")),
                AllOf(HasSubstr("tm.yaml:"), HasSubstr("256 bytes, beyond the 128-byte swizzle span"),
                      HasSubstr("configuration ROWS=64")));
    // A box of more than 256 rows.
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [M, K], box: [\"ROWS * 4\", 64]}\n")),
                HasSubstr("TMA moves 1 to 256 elements a dimension"));
    // A view past the end of the buffer would let TMA read memory the op does not own.
    EXPECT_THAT(load_error(space("    - {buffer: x, shape: [\"M + 1\", K], box: [64, 64]}\n")),
                HasSubstr("larger than the buffer's"));
    // Rows of 4100 bf16 are 8200 bytes: not a multiple of 16.
    EXPECT_THAT(load_error(space(two_maps, "{M: [100], N: [64], K: [4100]}")),
                AllOf(HasSubstr("rows of 8200 bytes"), HasSubstr("problem")));
}

}  // namespace
}  // namespace ktune
