#include <gtest/gtest.h>

#include "kernels/op.hpp"
#include "tuner/core/error.hpp"

namespace ktune {
namespace {

Problem copy_problem(Dtype d, std::int64_t n) { return Problem{d, {{"N", n}}}; }

TEST(CopyOp, HasInputXAndOutputYOfNElements) {
    const auto specs = find_op("copy", "fwd").buffers(copy_problem(Dtype::bf16, 1000));
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].name, "x");
    EXPECT_EQ(specs[0].role, BufferRole::input);
    EXPECT_EQ(specs[0].elements, 1000);
    EXPECT_EQ(specs[1].name, "y");
    EXPECT_EQ(specs[1].role, BufferRole::output);
    EXPECT_EQ(specs[1].elements, 1000);
}

TEST(CopyOp, MovesEveryElementReadAndWritten) {
    EXPECT_DOUBLE_EQ(find_op("copy", "fwd").bytes_moved(copy_problem(Dtype::bf16, 1 << 20)), 4.0 * (1 << 20));
    EXPECT_DOUBLE_EQ(find_op("copy", "fwd").bytes_moved(copy_problem(Dtype::fp32, 10)), 80.0);
}

TEST(CopyOp, PassesYXAndTheCountAs64Bits) {
    const auto args = find_op("copy", "fwd").arguments(copy_problem(Dtype::fp16, 1LL << 33));
    ASSERT_EQ(args.size(), 3u);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[2].integer, 1LL << 33);
}

TEST(CopyOp, CpuReferenceCopiesX) {
    HostBuffers b;
    b["x"] = {1.5, -2.0, 3.25};
    find_op("copy", "fwd").cpu_reference(copy_problem(Dtype::fp32, 3), b);
    EXPECT_EQ(b["y"], b["x"]);
}

TEST(CopyOp, RefusesUnknownAxesAndEmptyProblems) {
    const OpDescription& op = find_op("copy", "fwd");
    EXPECT_THROW(op.buffers(Problem{Dtype::bf16, {{"M", 4}}}), Error);
    EXPECT_THROW(op.buffers(Problem{Dtype::bf16, {{"N", 4}, {"H", 2}}}), Error);
    EXPECT_THROW(op.buffers(copy_problem(Dtype::bf16, 0)), Error);
}

}  // namespace
}  // namespace ktune
