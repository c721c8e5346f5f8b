#include <gtest/gtest.h>

#include <limits>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

Problem copy_problem(Dtype d, std::int64_t n) { return Problem{d, {{"N", n}}}; }

// The variant's buffers at N = 1000 bf16: input x of 1000 elements, output y of `y_elements`.
void expect_x_and_y(std::string_view variant, std::int64_t y_elements) {
    const auto specs = declared_op("copy", variant).buffers(copy_problem(Dtype::bf16, 1000));
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].name, "x");
    EXPECT_EQ(specs[0].role, BufferRole::input);
    EXPECT_EQ(specs[0].elements, 1000);
    EXPECT_EQ(specs[1].name, "y");
    EXPECT_EQ(specs[1].role, BufferRole::output);
    EXPECT_EQ(specs[1].elements, y_elements);
}

TEST(CopyOp, HasInputXAndOutputYOfNElements) { expect_x_and_y("fwd", 1000); }

TEST(CopyOp, MovesEveryElementReadAndWritten) {
    EXPECT_DOUBLE_EQ(declared_op("copy", "fwd").bytes_moved(copy_problem(Dtype::bf16, 1 << 20)), 4.0 * (1 << 20));
    EXPECT_DOUBLE_EQ(declared_op("copy", "fwd").bytes_moved(copy_problem(Dtype::fp32, 10)), 80.0);
}

// The variant's kernel arguments: y, x and the element count as 64 bits.
void expect_y_x_and_64_bit_count(std::string_view variant, Dtype dtype) {
    const auto args = declared_op("copy", variant).arguments(copy_problem(dtype, 1LL << 33));
    ASSERT_EQ(args.size(), 3u);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[2].integer, 1LL << 33);
}

TEST(CopyOp, PassesYXAndTheCountAs64Bits) { expect_y_x_and_64_bit_count("fwd", Dtype::fp16); }

TEST(CopyOp, CpuReferenceCopiesX) {
    HostBuffers b;
    b["x"] = {1.5, -2.0, 3.25};
    cpu_reference(declared_op("copy", "fwd"), copy_problem(Dtype::fp32, 3), b);
    EXPECT_EQ(b["y"], b["x"]);
}

TEST(CopyOp, RefusesUnknownAxesAndEmptyProblems) {
    const DeclaredOp& op = declared_op("copy", "fwd");
    EXPECT_THROW(op.buffers(Problem{Dtype::bf16, {{"M", 4}}}), Error);
    EXPECT_THROW(op.buffers(Problem{Dtype::bf16, {{"N", 4}, {"H", 2}}}), Error);
    EXPECT_THROW(op.buffers(copy_problem(Dtype::bf16, 0)), Error);
}

TEST(CopyReadOp, WritesOneValuePer512ByteChunkOfX) {
    expect_x_and_y("read", 4);  // 256 bf16 per chunk: 3 whole chunks and a partial one
    EXPECT_EQ(declared_op("copy", "read").buffers(copy_problem(Dtype::fp32, 256)).at(1).elements, 2);
}

TEST(CopyReadOp, MovesXReadOnceAndTheChunkMaximaWritten) {
    EXPECT_DOUBLE_EQ(declared_op("copy", "read").bytes_moved(copy_problem(Dtype::bf16, 1 << 20)),
                     2.0 * ((1 << 20) + (1 << 12)));
    EXPECT_DOUBLE_EQ(declared_op("copy", "read").bytes_moved(copy_problem(Dtype::fp32, 129)), 4.0 * (129 + 2));
}

TEST(CopyReadOp, CpuReferenceTakesTheMaximumOfEachChunkIncludingThePartialLast) {
    const std::int64_t n = 300;  // fp32: chunks of 128, the last one 44 long
    HostBuffers b;
    std::vector<double> x(n, -1.0);
    x[5] = 2.0;    // chunk 0
    x[200] = 0.5;  // chunk 1
    x[299] = 3.0;  // chunk 2, its last element
    b["x"] = x;
    cpu_reference(declared_op("copy", "read"), copy_problem(Dtype::fp32, n), b);
    EXPECT_EQ(b["y"], (std::vector<double>{2.0, 0.5, 3.0}));
}

TEST(CopyReadOp, PassesYXAndTheCountAs64Bits) { expect_y_x_and_64_bit_count("read", Dtype::bf16); }

TEST(CopyReadOp, CpuReferenceTakesBf16ChunksOf256AndSkipsNaNAsTheKernelsFmaxDoes) {
    const std::int64_t n = 512;  // two bf16 chunks
    HostBuffers b;
    std::vector<double> x(n, -3.0);
    x[0] = 1.0;                                         // chunk 0: its first element is its maximum
    x[256] = std::numeric_limits<double>::quiet_NaN();  // chunk 1: a NaN first, then the maximum at its end
    x[511] = 2.5;
    b["x"] = x;
    cpu_reference(declared_op("copy", "read"), copy_problem(Dtype::bf16, n), b);
    EXPECT_EQ(b["y"], (std::vector<double>{1.0, 2.5}));
}

TEST(CopyReadOp, RefusesWhatCopyRefuses) {
    const DeclaredOp& op = declared_op("copy", "read");
    EXPECT_THROW(op.buffers(Problem{Dtype::bf16, {{"M", 4}}}), Error);
    EXPECT_THROW(op.buffers(copy_problem(Dtype::bf16, 0)), Error);
    try {
        op.arguments(Problem{Dtype::bf16, {{"N", 4}, {"H", 2}}});
        FAIL() << "an unknown axis was taken";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("copy/read"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace ktune
