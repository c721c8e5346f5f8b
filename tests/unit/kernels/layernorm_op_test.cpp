#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& with_bias() { return declared_op("layernorm", "fwd"); }
const DeclaredOp& no_bias() { return declared_op("layernorm", "fwd_nobias"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

const double eps = static_cast<double>(1e-5f);

TEST(LayerNormOp, HasInputsXWBAndOutputY) {
    const auto specs = with_bias().buffers(problem(Dtype::bf16, {{"M", 3}, {"H", 8}, {"S", 10}}));
    ASSERT_EQ(specs.size(), 4u);
    EXPECT_EQ(buffer(specs, "x").elements, 30);
    EXPECT_EQ(buffer(specs, "x").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "w").elements, 8);
    EXPECT_EQ(buffer(specs, "b").elements, 8);
    EXPECT_EQ(buffer(specs, "b").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "y").elements, 30);
    EXPECT_EQ(buffer(specs, "y").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "y").type, ElemType::bf16);
}

TEST(LayerNormOp, DrawsXWithANonZeroMean) {
    const auto specs = with_bias().buffers(problem(Dtype::fp32, {{"M", 1}, {"H", 8}}));
    EXPECT_GT(buffer(specs, "x").lo + buffer(specs, "x").hi, 0.0);
}

TEST(LayerNormOp, NoBiasVariantHasNoB) {
    const auto specs = no_bias().buffers(problem(Dtype::fp16, {{"M", 3}, {"H", 8}}));
    ASSERT_EQ(specs.size(), 3u);
    EXPECT_THROW(buffer(specs, "b"), std::runtime_error);
}

TEST(LayerNormOp, PassesArgumentsInKernelOrder) {
    const auto args = with_bias().arguments(problem(Dtype::fp16, {{"M", 5}, {"H", 64}, {"S", 72}}));
    ASSERT_EQ(args.size(), 9u);
    const char* buffers[] = {"y", "x", "w", "b"};
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::buffer);
        EXPECT_EQ(args[i].buffer, buffers[i]);
    }
    EXPECT_EQ(args[4].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[4].integer, 5);
    EXPECT_EQ(args[5].integer, 64);
    EXPECT_EQ(args[6].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[6].integer, 72);
    EXPECT_EQ(args[7].integer, 72);
    EXPECT_EQ(args[8].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[8].real, 1e-5);
}

TEST(LayerNormOp, NoBiasVariantPassesNoB) {
    const auto args = no_bias().arguments(problem(Dtype::fp16, {{"M", 5}, {"H", 64}}));
    ASSERT_EQ(args.size(), 8u);
    EXPECT_EQ(args[2].buffer, "w");
    EXPECT_EQ(args[3].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[5].integer, 64);
}

TEST(LayerNormOp, CountsXYAndTheParametersOnceAsBytesMoved) {
    EXPECT_DOUBLE_EQ(with_bias().bytes_moved(problem(Dtype::bf16, {{"M", 4096}, {"H", 8192}})),
                     (2.0 * 4096 * 8192 + 2 * 8192) * 2);
    EXPECT_DOUBLE_EQ(no_bias().bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"H", 8}, {"S", 100}})),
                     (2.0 * 4 * 8 + 8) * 4);
}

TEST(LayerNormOp, NormalisesAHandCheckableRow) {
    // x = [1, 2, 3, 4]: mean 2.5, variance 1.25.
    HostBuffers b{{"x", {1.0, 2.0, 3.0, 4.0}}, {"w", {1.0, 1.0, 2.0, 1.0}}, {"b", {0.0, 0.5, 0.0, 0.0}}};
    cpu_reference(with_bias(), problem(Dtype::fp32, {{"M", 1}, {"H", 4}}), b);
    const double rstd = 1.0 / std::sqrt(1.25 + eps);
    ASSERT_EQ(b["y"].size(), 4u);
    EXPECT_NEAR(b["y"][0], -1.5 * rstd, 1e-15);
    EXPECT_NEAR(b["y"][1], -0.5 * rstd + 0.5, 1e-15);
    EXPECT_NEAR(b["y"][2], 2.0 * 0.5 * rstd, 1e-15);
    EXPECT_NEAR(b["y"][3], 1.5 * rstd, 1e-15);
}

TEST(LayerNormOp, KeepsItsAccuracyForARowFarFromZero) {
    // E[x^2] - E[x]^2 loses every digit here; two passes do not.
    HostBuffers b{{"x", {1e8 - 1.0, 1e8 + 1.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(no_bias(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b);
    EXPECT_NEAR(b["y"][0], -1.0 / std::sqrt(1.0 + eps), 1e-12);
    EXPECT_NEAR(b["y"][1], 1.0 / std::sqrt(1.0 + eps), 1e-12);
}

TEST(LayerNormOp, LeavesTheStridePaddingOfYUntouched) {
    HostBuffers b{{"x", {1.0, 3.0, 99.0, 5.0, 9.0, 99.0}}, {"w", {1.0, 1.0}}, {"y", {0, 0, -7.0, 0, 0, -7.0}}};
    cpu_reference(no_bias(), problem(Dtype::fp32, {{"M", 2}, {"H", 2}, {"S", 3}}), b);
    EXPECT_EQ(b["y"][2], -7.0);
    EXPECT_EQ(b["y"][5], -7.0);
    // Both rows are a mean plus and minus a deviation: the same normalised values up to eps, padding ignored.
    EXPECT_NEAR(b["y"][0], -1.0, 1e-4);
    EXPECT_NEAR(b["y"][4], 1.0, 1e-5);
}

TEST(LayerNormOp, RejectsBadShapesNamingTheVariant) {
    try {
        no_bias().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 16}, {"S", 8}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("layernorm/fwd_nobias"), std::string::npos) << e.what();
    }
    EXPECT_THROW(with_bias().arguments(problem(Dtype::fp32, {{"H", 2}})), Error);
    EXPECT_THROW(with_bias().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 0}})), Error);
    EXPECT_THROW(with_bias().flops(problem(Dtype::fp32, {{"M", 2}, {"H", 8}, {"B", 1}})), Error);
}

TEST(LayerNormOp, RejectsAMissingBias) {
    HostBuffers b{{"x", {1.0, 2.0}}, {"w", {1.0, 1.0}}};
    EXPECT_THROW(cpu_reference(with_bias(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b), Error);
}

}  // namespace
}  // namespace ktune
