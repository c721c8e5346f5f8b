#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

double silu(double g) { return g / (1.0 + std::exp(-g)); }

TEST(GluOp, RegistersSwigluAndGegluWithSplitAndConcatenatedInputs) {
    for (const char* v : {"swiglu", "swiglu_cat", "geglu", "geglu_cat"}) {
        const DeclaredOp& op = declared_op("glu", v);
        EXPECT_EQ(op.variant(), v);
        EXPECT_FALSE(op.summary().empty());
    }
}

TEST(GluOp, SplitLayoutHasInputsGateAndUpAndOutputOut) {
    const auto specs = declared_op("glu", "swiglu").buffers(problem(Dtype::bf16, {{"M", 3}, {"I", 8}}));
    ASSERT_EQ(specs.size(), 3u);
    EXPECT_EQ(buffer(specs, "gate").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "gate").elements, 24);
    EXPECT_EQ(buffer(specs, "gate").type, ElemType::bf16);
    EXPECT_EQ(buffer(specs, "up").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "up").elements, 24);
    EXPECT_EQ(buffer(specs, "out").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "out").elements, 24);
}

TEST(GluOp, ConcatenatedLayoutHasOneInputOfTwiceTheColumns) {
    const auto specs = declared_op("glu", "geglu_cat").buffers(problem(Dtype::fp16, {{"M", 3}, {"I", 8}}));
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(buffer(specs, "x").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "x").elements, 3 * 16);
    EXPECT_EQ(buffer(specs, "out").elements, 3 * 8);
}

TEST(GluOp, PassesArgumentsInKernelOrder) {
    const auto args =
        declared_op("glu", "swiglu").arguments(problem(Dtype::fp32, {{"M", 5}, {"I", 64}, {"S", 72}, {"SO", 80}}));
    ASSERT_EQ(args.size(), 8u);
    EXPECT_EQ(args[0].buffer, "out");
    EXPECT_EQ(args[1].buffer, "gate");
    EXPECT_EQ(args[2].buffer, "up");
    EXPECT_EQ(args[3].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[3].integer, 5);
    EXPECT_EQ(args[4].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[4].integer, 64);
    EXPECT_EQ(args[5].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[5].integer, 72);
    EXPECT_EQ(args[6].integer, 72);
    EXPECT_EQ(args[7].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[7].integer, 80);
}

TEST(GluOp, ConcatenatedLayoutPassesXAsGateAndUpWithATwiceWideDefaultStride) {
    const auto args = declared_op("glu", "swiglu_cat").arguments(problem(Dtype::bf16, {{"M", 2}, {"I", 16}}));
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].buffer, "x");
    EXPECT_EQ(args[5].integer, 32);
    EXPECT_EQ(args[6].integer, 32);
    EXPECT_EQ(args[7].integer, 16);
}

TEST(GluOp, CountsTwoInputsAndOneOutputAsBytesMoved) {
    EXPECT_DOUBLE_EQ(declared_op("glu", "swiglu").bytes_moved(problem(Dtype::bf16, {{"M", 4096}, {"I", 14336}})),
                     3.0 * 4096 * 14336 * 2);
    EXPECT_DOUBLE_EQ(declared_op("glu", "geglu_cat").bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"I", 8}, {"S", 40}})),
                     3.0 * 4 * 8 * 4);
}

TEST(GluOp, SwigluMultipliesSiluOfGateByUp) {
    HostBuffers b{{"gate", {0.0, 1.0, -2.0}}, {"up", {5.0, 2.0, 3.0}}};
    cpu_reference(declared_op("glu", "swiglu"), problem(Dtype::fp32, {{"M", 1}, {"I", 3}}), b);
    ASSERT_EQ(b["out"].size(), 3u);
    EXPECT_EQ(b["out"][0], 0.0);
    EXPECT_NEAR(b["out"][1], 2.0 * 0.7310585786300049, 1e-15);   // silu(1) = 1 / (1 + e^-1)
    EXPECT_NEAR(b["out"][2], 3.0 * -0.2384058440442351, 1e-15);  // silu(-2) = -2 / (1 + e^2)
}

TEST(GluOp, GegluMultipliesTanhGeluOfGateByUp) {
    HostBuffers b{{"gate", {0.0, 1.0, -3.0}}, {"up", {5.0, 2.0, 1.0}}};
    cpu_reference(declared_op("glu", "geglu"), problem(Dtype::fp32, {{"M", 1}, {"I", 3}}), b);
    EXPECT_EQ(b["out"][0], 0.0);
    // gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.841191990...
    EXPECT_NEAR(b["out"][1], 2.0 * 0.8411919906082768, 1e-12);
    // gelu_tanh(-3) = -1.5 (1 - tanh(sqrt(2/pi) * 4.207305)) = -0.00363739...
    EXPECT_NEAR(b["out"][2], -0.0036373920817729943, 1e-12);
}

TEST(GluOp, ConcatenatedLayoutTakesGateFromTheFirstHalfAndUpFromTheSecond) {
    // Rows of x: [g0 g1 | u0 u1].
    HostBuffers b{{"x", {1.0, 0.0, 3.0, 9.0, -2.0, 1.0, 4.0, 2.0}}};
    cpu_reference(declared_op("glu", "swiglu_cat"), problem(Dtype::fp32, {{"M", 2}, {"I", 2}}), b);
    ASSERT_EQ(b["out"].size(), 4u);
    EXPECT_NEAR(b["out"][0], silu(1.0) * 3.0, 1e-15);
    EXPECT_EQ(b["out"][1], 0.0);
    EXPECT_NEAR(b["out"][2], silu(-2.0) * 4.0, 1e-15);
    EXPECT_NEAR(b["out"][3], silu(1.0) * 2.0, 1e-15);
}

TEST(GluOp, ReadsOnlyTheRowsValidColumnsAndLeavesOutPaddingUntouched) {
    // S = 3, SO = 3 for I = 2: column 2 of every row is padding in every buffer.
    HostBuffers b{{"gate", {1.0, 1.0, 99.0, 1.0, 1.0, 99.0}},
                  {"up", {1.0, 2.0, 99.0, 3.0, 4.0, 99.0}},
                  {"out", {0.0, 0.0, -7.0, 0.0, 0.0, -7.0}}};
    cpu_reference(declared_op("glu", "swiglu"), problem(Dtype::fp32, {{"M", 2}, {"I", 2}, {"S", 3}, {"SO", 3}}), b);
    EXPECT_EQ(b["out"][2], -7.0);
    EXPECT_EQ(b["out"][5], -7.0);
    EXPECT_NEAR(b["out"][4], silu(1.0) * 4.0, 1e-15);
}

TEST(GluOp, CreatesAMissingOutputWithNaNPadding) {
    HostBuffers b{{"gate", {1.0, 2.0, 0.0}}, {"up", {1.0, 1.0, 0.0}}};
    cpu_reference(declared_op("glu", "geglu"), problem(Dtype::fp32, {{"M", 1}, {"I", 2}, {"S", 3}, {"SO", 3}}), b);
    ASSERT_EQ(b["out"].size(), 3u);
    EXPECT_TRUE(std::isnan(b["out"][2]));
    EXPECT_FALSE(std::isnan(b["out"][1]));
}

void expect_bad_input(const char* variant, NamedValues shape, const std::string& mentions) {
    try {
        declared_op("glu", variant).buffers(problem(Dtype::fp32, std::move(shape)));
        FAIL() << "expected an Error mentioning " << mentions;
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
}

TEST(GluOp, RejectsStridesSmallerThanTheRows) {
    expect_bad_input("swiglu", {{"M", 2}, {"I", 8}, {"S", 7}}, "S=7");
    expect_bad_input("swiglu_cat", {{"M", 2}, {"I", 8}, {"S", 15}}, "S=15");
    expect_bad_input("geglu", {{"M", 2}, {"I", 8}, {"SO", 4}}, "SO=4");
}

TEST(GluOp, RejectsMissingUnknownAndEmptyAxes) {
    expect_bad_input("geglu", {{"M", 2}}, "I");
    expect_bad_input("geglu", {{"M", 2}, {"I", 8}, {"N", 8}}, "N");
    expect_bad_input("swiglu", {{"M", 2}, {"I", 0}}, "I=0");
}

TEST(GluOp, RejectsAnInputOfTheWrongSize) {
    HostBuffers b{{"gate", {1.0}}, {"up", {1.0, 2.0}}};
    EXPECT_THROW(cpu_reference(declared_op("glu", "swiglu"), problem(Dtype::fp32, {{"M", 1}, {"I", 2}}), b), Error);
}

}  // namespace
}  // namespace ktune
