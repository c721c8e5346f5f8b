#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& softmax() { return declared_op("softmax", "fwd"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

TEST(SoftmaxFwdOp, HasInputXAndOutputOutOfTheStridedSize) {
    const auto specs = softmax().buffers(problem(Dtype::bf16, {{"M", 3}, {"N", 8}, {"S", 10}}));
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(buffer(specs, "x").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "x").type, ElemType::bf16);
    EXPECT_EQ(buffer(specs, "x").elements, 30);
    EXPECT_EQ(buffer(specs, "out").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "out").elements, 30);
}

TEST(SoftmaxFwdOp, PassesArgumentsInKernelOrderWithTheScaleLast) {
    const auto args = softmax().arguments(problem(Dtype::fp16, {{"M", 5}, {"N", 128256}}));
    ASSERT_EQ(args.size(), 7u);
    EXPECT_EQ(args[0].buffer, "out");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[2].integer, 5);
    EXPECT_EQ(args[3].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[3].integer, 128256);
    EXPECT_EQ(args[4].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[4].integer, 128256);
    EXPECT_EQ(args[5].integer, 128256);
    EXPECT_EQ(args[6].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[6].real, 0.5);
}

TEST(SoftmaxFwdOp, CountsXAndOutOnceAsBytesMoved) {
    EXPECT_DOUBLE_EQ(softmax().bytes_moved(problem(Dtype::bf16, {{"M", 4096}, {"N", 128256}})),
                     2.0 * 4096 * 128256 * 2);
    EXPECT_DOUBLE_EQ(softmax().bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"N", 8}, {"S", 100}})), 2.0 * 4 * 8 * 4);
}

TEST(SoftmaxFwdOp, AppliesTheScaleBeforeTheExponential) {
    // scale 0.5: softmax([0, ln 3]) = [1/4, 3/4].
    HostBuffers b{{"x", {0.0, 2.0 * std::log(3.0)}}};
    cpu_reference(softmax(), problem(Dtype::fp32, {{"M", 1}, {"N", 2}}), b);
    ASSERT_EQ(b["out"].size(), 2u);
    EXPECT_NEAR(b["out"][0], 0.25, 1e-15);
    EXPECT_NEAR(b["out"][1], 0.75, 1e-15);
}

TEST(SoftmaxFwdOp, NormalisesEveryRowToOne) {
    HostBuffers b{{"x", {-8.0, 1.0, 7.5, 2.0, 0.0, 0.0, 0.0, 0.0}}};
    cpu_reference(softmax(), problem(Dtype::fp32, {{"M", 2}, {"N", 4}}), b);
    EXPECT_NEAR(b["out"][0] + b["out"][1] + b["out"][2] + b["out"][3], 1.0, 1e-15);
    for (int c = 4; c < 8; ++c) EXPECT_NEAR(b["out"][c], 0.25, 1e-15);  // a constant row is uniform
}

TEST(SoftmaxFwdOp, StaysFiniteForLogitsWhoseExponentialOverflows) {
    HostBuffers b{{"x", {3000.0, 3000.0, 2998.0}}};  // exp(1500) overflows a double; the max is subtracted first
    cpu_reference(softmax(), problem(Dtype::fp32, {{"M", 1}, {"N", 3}}), b);
    const double e = std::exp(-1.0);
    EXPECT_NEAR(b["out"][0], 1.0 / (2.0 + e), 1e-15);
    EXPECT_NEAR(b["out"][2], e / (2.0 + e), 1e-15);
}

TEST(SoftmaxFwdOp, LeavesTheStridePaddingOfOutUntouched) {
    HostBuffers b{{"x", {0.0, 0.0, 99.0, 1.0, 1.0, 99.0}}, {"out", {0, 0, -7.0, 0, 0, -7.0}}};
    cpu_reference(softmax(), problem(Dtype::fp32, {{"M", 2}, {"N", 2}, {"S", 3}}), b);
    EXPECT_EQ(b["out"][2], -7.0);
    EXPECT_EQ(b["out"][5], -7.0);
    EXPECT_NEAR(b["out"][3], 0.5, 1e-15);  // the padding 99 took no part in row 1
}

TEST(SoftmaxFwdOp, CreatesAMissingOutputWithNaNPadding) {
    HostBuffers b{{"x", {1.0, 2.0, 0.0}}};
    cpu_reference(softmax(), problem(Dtype::fp32, {{"M", 1}, {"N", 2}, {"S", 3}}), b);
    ASSERT_EQ(b["out"].size(), 3u);
    EXPECT_TRUE(std::isnan(b["out"][2]));
}

TEST(SoftmaxFwdOp, RejectsAStrideSmallerThanTheRow) {
    try {
        softmax().buffers(problem(Dtype::fp32, {{"M", 2}, {"N", 16}, {"S", 8}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("S=8"), std::string::npos) << e.what();
    }
}

TEST(SoftmaxFwdOp, RejectsMissingUnknownAndEmptyAxes) {
    EXPECT_THROW(softmax().arguments(problem(Dtype::fp32, {{"M", 2}})), Error);
    EXPECT_THROW(softmax().arguments(problem(Dtype::fp32, {{"M", 2}, {"N", 8}, {"H", 8}})), Error);
    EXPECT_THROW(softmax().buffers(problem(Dtype::fp32, {{"M", 0}, {"N", 8}})), Error);
}

TEST(SoftmaxFwdOp, RejectsAnInputOfTheWrongSize) {
    HostBuffers b{{"x", {1.0, 2.0, 3.0}}};
    EXPECT_THROW(cpu_reference(softmax(), problem(Dtype::fp32, {{"M", 1}, {"N", 2}}), b), Error);
}

}  // namespace
}  // namespace ktune
