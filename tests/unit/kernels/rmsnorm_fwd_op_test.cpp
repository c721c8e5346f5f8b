#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& rmsnorm() { return declared_op("rmsnorm", "fwd"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

TEST(RmsNormFwdOp, HasInputsXAndWAndOutputY) {
    const auto specs = rmsnorm().buffers(problem(Dtype::bf16, {{"M", 3}, {"H", 8}}));
    ASSERT_EQ(specs.size(), 3u);
    const BufferSpec& x = buffer(specs, "x");
    EXPECT_EQ(x.type, ElemType::bf16);
    EXPECT_EQ(x.elements, 24);
    EXPECT_EQ(x.role, BufferRole::input);
    EXPECT_EQ(x.lo, -2.0);
    EXPECT_EQ(x.hi, 2.0);
    const BufferSpec& w = buffer(specs, "w");
    EXPECT_EQ(w.elements, 8);
    EXPECT_EQ(w.role, BufferRole::input);
    EXPECT_EQ(w.lo, 0.5);
    EXPECT_EQ(w.hi, 1.5);
    const BufferSpec& y = buffer(specs, "y");
    EXPECT_EQ(y.elements, 24);
    EXPECT_EQ(y.role, BufferRole::output);
}

TEST(RmsNormFwdOp, SizesStridedBuffersByTheStride) {
    const auto specs = rmsnorm().buffers(problem(Dtype::fp32, {{"M", 3}, {"H", 8}, {"S", 10}}));
    EXPECT_EQ(buffer(specs, "x").elements, 30);
    EXPECT_EQ(buffer(specs, "y").elements, 30);
    EXPECT_EQ(buffer(specs, "w").elements, 8);
}

TEST(RmsNormFwdOp, PassesArgumentsInKernelOrder) {
    const auto args = rmsnorm().arguments(problem(Dtype::fp16, {{"M", 5}, {"H", 64}, {"S", 72}}));
    ASSERT_EQ(args.size(), 8u);
    EXPECT_EQ(args[0].kind, KernelArg::Kind::buffer);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].buffer, "w");
    EXPECT_EQ(args[3].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[3].integer, 5);
    EXPECT_EQ(args[4].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[4].integer, 64);
    EXPECT_EQ(args[5].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[5].integer, 72);
    EXPECT_EQ(args[6].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[6].integer, 72);
    EXPECT_EQ(args[7].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[7].real, 1e-6);
}

TEST(RmsNormFwdOp, DefaultsTheStrideToH) {
    const auto args = rmsnorm().arguments(problem(Dtype::fp32, {{"M", 2}, {"H", 16}}));
    EXPECT_EQ(args[5].integer, 16);
    EXPECT_EQ(args[6].integer, 16);
}

TEST(RmsNormFwdOp, CountsXAndYOnceAndWOnceAsBytesMoved) {
    EXPECT_DOUBLE_EQ(rmsnorm().bytes_moved(problem(Dtype::bf16, {{"M", 32768}, {"H", 4096}})),
                     (32768.0 * 4096 * 2 + 4096) * 2);
    EXPECT_DOUBLE_EQ(rmsnorm().bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"H", 8}, {"S", 100}})),
                     (4.0 * 8 * 2 + 8) * 4);
}

TEST(RmsNormFwdOp, RejectsAStrideSmallerThanTheRow) {
    try {
        rmsnorm().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 16}, {"S", 8}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("S=8"), std::string::npos) << e.what();
    }
}

TEST(RmsNormFwdOp, RejectsAProblemWithoutH) {
    EXPECT_THROW(rmsnorm().arguments(problem(Dtype::fp32, {{"M", 2}})), Error);
}

TEST(RmsNormFwdOp, RejectsAnUnknownAxis) {
    try {
        rmsnorm().bytes_moved(problem(Dtype::fp32, {{"M", 2}, {"H", 8}, {"N", 3}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("N"), std::string::npos) << e.what();
    }
}

TEST(RmsNormFwdOp, RejectsEmptyShapes) {
    EXPECT_THROW(rmsnorm().buffers(problem(Dtype::fp32, {{"M", 0}, {"H", 8}})), Error);
    EXPECT_THROW(rmsnorm().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 0}})), Error);
}

TEST(RmsNormFwdOp, NormalisesAHandCheckableRow) {
    // x = [3, 4]: mean of squares 12.5, so y = x / sqrt(12.5 + eps) * w.
    HostBuffers b{{"x", {3.0, 4.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(rmsnorm(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b);
    const double eps = static_cast<double>(1e-6f);
    ASSERT_EQ(b["y"].size(), 2u);
    EXPECT_NEAR(b["y"][0], 3.0 / std::sqrt(12.5 + eps), 1e-15);
    EXPECT_NEAR(b["y"][1], 4.0 / std::sqrt(12.5 + eps), 1e-15);
    EXPECT_NEAR(b["y"][0], 0.848528137, 1e-7);  // 3 / sqrt(12.5); eps moves it by 3e-8
}

TEST(RmsNormFwdOp, ScalesEachColumnByItsWeight) {
    HostBuffers b{{"x", {1.0, 1.0, 2.0, 2.0}}, {"w", {2.0, 0.5}}};
    cpu_reference(rmsnorm(), problem(Dtype::fp32, {{"M", 2}, {"H", 2}}), b);
    // Every row is constant, so x / rms(x) = 1 (up to eps) and y = w.
    EXPECT_NEAR(b["y"][0], 2.0, 1e-5);
    EXPECT_NEAR(b["y"][1], 0.5, 1e-5);
    EXPECT_NEAR(b["y"][2], 2.0, 1e-6);
    EXPECT_NEAR(b["y"][3], 0.5, 1e-6);
}

TEST(RmsNormFwdOp, LeavesTheStridePaddingOfYUntouched) {
    HostBuffers b{{"x", {3.0, 4.0, 99.0, 6.0, 8.0, 99.0}}, {"w", {1.0, 1.0}}, {"y", {0, 0, -7.0, 0, 0, -7.0}}};
    cpu_reference(rmsnorm(), problem(Dtype::fp32, {{"M", 2}, {"H", 2}, {"S", 3}}), b);
    EXPECT_EQ(b["y"][2], -7.0);
    EXPECT_EQ(b["y"][5], -7.0);
    // Row 1 is row 0 doubled: the same normalised values, and the padding x (99) took no part.
    EXPECT_NEAR(b["y"][3], b["y"][0], 1e-7);
    EXPECT_NEAR(b["y"][4], b["y"][1], 1e-7);
}

TEST(RmsNormFwdOp, CreatesAMissingOutputWithNaNPadding) {
    HostBuffers b{{"x", {3.0, 4.0, 0.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(rmsnorm(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}, {"S", 3}}), b);
    ASSERT_EQ(b["y"].size(), 3u);
    EXPECT_TRUE(std::isnan(b["y"][2]));
    EXPECT_FALSE(std::isnan(b["y"][0]));
}

TEST(RmsNormFwdOp, RejectsAnInputOfTheWrongSize) {
    HostBuffers b{{"x", {3.0, 4.0}}, {"w", {1.0}}};
    EXPECT_THROW(cpu_reference(rmsnorm(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b), Error);
}

}  // namespace
}  // namespace ktune
