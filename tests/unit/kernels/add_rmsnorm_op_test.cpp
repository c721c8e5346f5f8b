#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& fwd() { return declared_op("add_rmsnorm", "fwd"); }
const DeclaredOp& inplace() { return declared_op("add_rmsnorm", "fwd_inplace"); }
const DeclaredOp& gemma() { return declared_op("add_rmsnorm", "fwd_gemma"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

bool has_buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return true;
    return false;
}

const double eps = static_cast<double>(1e-6f);

TEST(AddRmsNormOp, HasInputsXResidualWAndOutputsYAndResidualOut) {
    const auto specs = fwd().buffers(problem(Dtype::bf16, {{"M", 3}, {"H", 8}, {"S", 10}}));
    ASSERT_EQ(specs.size(), 5u);
    EXPECT_EQ(buffer(specs, "x").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "x").elements, 30);
    EXPECT_EQ(buffer(specs, "residual").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "residual").elements, 30);
    EXPECT_EQ(buffer(specs, "w").elements, 8);
    EXPECT_EQ(buffer(specs, "w").lo, 0.5);
    EXPECT_EQ(buffer(specs, "y").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "residual_out").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "residual_out").elements, 30);
    EXPECT_EQ(buffer(specs, "residual_out").type, ElemType::bf16);
}

TEST(AddRmsNormOp, InPlaceVariantUpdatesTheResidualAsAnInout) {
    const auto specs = inplace().buffers(problem(Dtype::fp16, {{"M", 3}, {"H", 8}}));
    ASSERT_EQ(specs.size(), 4u);
    EXPECT_EQ(buffer(specs, "residual").role, BufferRole::inout);
    EXPECT_FALSE(has_buffer(specs, "residual_out"));
}

TEST(AddRmsNormOp, GemmaVariantDrawsWeightsAroundZero) {
    const auto specs = gemma().buffers(problem(Dtype::fp32, {{"M", 1}, {"H", 8}}));
    EXPECT_EQ(buffer(specs, "w").lo, -0.5);
    EXPECT_EQ(buffer(specs, "w").hi, 0.5);
}

TEST(AddRmsNormOp, PassesArgumentsInKernelOrder) {
    const auto args = fwd().arguments(problem(Dtype::fp16, {{"M", 5}, {"H", 64}, {"S", 72}}));
    ASSERT_EQ(args.size(), 11u);
    const char* buffers[] = {"y", "residual_out", "x", "residual", "w"};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::buffer);
        EXPECT_EQ(args[i].buffer, buffers[i]);
    }
    EXPECT_EQ(args[5].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[5].integer, 5);
    EXPECT_EQ(args[6].integer, 64);
    for (int i = 7; i < 10; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::i64);
        EXPECT_EQ(args[i].integer, 72);
    }
    EXPECT_EQ(args[10].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[10].real, 1e-6);
}

TEST(AddRmsNormOp, InPlaceVariantPassesTheResidualOnce) {
    const auto args = inplace().arguments(problem(Dtype::fp16, {{"M", 5}, {"H", 64}}));
    ASSERT_EQ(args.size(), 10u);
    const char* buffers[] = {"y", "residual", "x", "w"};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(args[i].buffer, buffers[i]);
    EXPECT_EQ(args[4].integer, 5);
    EXPECT_EQ(args[6].integer, 64);
}

TEST(AddRmsNormOp, CountsTwoReadsTwoWritesAndWOnceAsBytesMoved) {
    const double expected = (4.0 * 32768 * 4096 + 4096) * 2;
    EXPECT_DOUBLE_EQ(fwd().bytes_moved(problem(Dtype::bf16, {{"M", 32768}, {"H", 4096}})), expected);
    EXPECT_DOUBLE_EQ(inplace().bytes_moved(problem(Dtype::bf16, {{"M", 32768}, {"H", 4096}})), expected);
    EXPECT_DOUBLE_EQ(fwd().bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"H", 8}, {"S", 100}})), (4.0 * 4 * 8 + 8) * 4);
}

TEST(AddRmsNormOp, NormalisesTheSumAndWritesItAsTheNewResidual) {
    // x + residual = [3, 4]: mean of squares 12.5.
    HostBuffers b{{"x", {1.0, 2.0}}, {"residual", {2.0, 2.0}}, {"w", {1.0, 2.0}}};
    cpu_reference(fwd(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b);
    EXPECT_EQ(b["residual_out"], (std::vector<double>{3.0, 4.0}));
    EXPECT_EQ(b["residual"], (std::vector<double>{2.0, 2.0}));
    EXPECT_NEAR(b["y"][0], 3.0 / std::sqrt(12.5 + eps), 1e-15);
    EXPECT_NEAR(b["y"][1], 2.0 * 4.0 / std::sqrt(12.5 + eps), 1e-15);
}

TEST(AddRmsNormOp, InPlaceVariantOverwritesTheResidual) {
    HostBuffers b{{"x", {1.0, 2.0}}, {"residual", {2.0, 2.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(inplace(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b);
    EXPECT_EQ(b["residual"], (std::vector<double>{3.0, 4.0}));
    EXPECT_EQ(b.count("residual_out"), 0u);
    EXPECT_NEAR(b["y"][1], 4.0 / std::sqrt(12.5 + eps), 1e-15);
}

TEST(AddRmsNormOp, GemmaVariantScalesByOnePlusW) {
    HostBuffers plain{{"x", {1.0, 2.0}}, {"residual", {2.0, 2.0}}, {"w", {1.0, 1.5}}};
    HostBuffers offset{{"x", {1.0, 2.0}}, {"residual", {2.0, 2.0}}, {"w", {0.0, 0.5}}};
    cpu_reference(fwd(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), plain);
    cpu_reference(gemma(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), offset);
    EXPECT_DOUBLE_EQ(offset["y"][0], plain["y"][0]);
    EXPECT_DOUBLE_EQ(offset["y"][1], plain["y"][1]);
}

TEST(AddRmsNormOp, LeavesTheStridePaddingOfItsOutputsUntouched) {
    HostBuffers b{{"x", {1.0, 2.0, 99.0, 2.0, 4.0, 99.0}},
                  {"residual", {2.0, 2.0, 99.0, 4.0, 4.0, 99.0}},
                  {"w", {1.0, 1.0}},
                  {"y", {0, 0, -7.0, 0, 0, -7.0}},
                  {"residual_out", {0, 0, -5.0, 0, 0, -5.0}}};
    cpu_reference(fwd(), problem(Dtype::fp32, {{"M", 2}, {"H", 2}, {"S", 3}}), b);
    EXPECT_EQ(b["y"][2], -7.0);
    EXPECT_EQ(b["y"][5], -7.0);
    EXPECT_EQ(b["residual_out"][2], -5.0);
    EXPECT_EQ(b["residual_out"][5], -5.0);
    // Row 1's sum is row 0's doubled: the same normalised values, the padding (99) took no part.
    EXPECT_NEAR(b["y"][3], b["y"][0], 1e-7);
    EXPECT_NEAR(b["y"][4], b["y"][1], 1e-7);
    EXPECT_EQ(b["residual_out"][3], 6.0);
}

TEST(AddRmsNormOp, InPlaceVariantKeepsTheResidualPadding) {
    HostBuffers b{{"x", {1.0, 2.0, 99.0}}, {"residual", {2.0, 2.0, 42.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(inplace(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}, {"S", 3}}), b);
    EXPECT_EQ(b["residual"][2], 42.0);
    EXPECT_TRUE(std::isnan(b["y"][2]));
}

TEST(AddRmsNormOp, RejectsBadShapesNamingTheVariant) {
    try {
        inplace().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 16}, {"S", 8}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("add_rmsnorm/fwd_inplace"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("S=8"), std::string::npos) << e.what();
    }
    EXPECT_THROW(fwd().arguments(problem(Dtype::fp32, {{"M", 2}})), Error);
    EXPECT_THROW(fwd().buffers(problem(Dtype::fp32, {{"M", 0}, {"H", 8}})), Error);
    EXPECT_THROW(fwd().bytes_moved(problem(Dtype::fp32, {{"M", 2}, {"H", 8}, {"K", 1}})), Error);
}

TEST(AddRmsNormOp, RejectsAMissingResidual) {
    HostBuffers b{{"x", {1.0, 2.0}}, {"w", {1.0, 1.0}}};
    EXPECT_THROW(cpu_reference(fwd(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b), Error);
}

}  // namespace
}  // namespace ktune
