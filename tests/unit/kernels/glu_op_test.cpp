#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

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

TEST(GluOp, RegistersSwigluAndGegluWithSplitAndConcatenatedInputsAndSwigluBackward) {
    for (const char* v : {"swiglu", "swiglu_cat", "geglu", "geglu_cat", "swiglu_bwd"}) {
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

// ---- glu/swiglu_bwd: dgate, dup of out = silu(gate) * up from dy

const DeclaredOp& swiglu_bwd() { return declared_op("glu", "swiglu_bwd"); }

TEST(GluSwigluBwdOp, HasInputsGateUpDyAndOutputsDgateDupWithTheirOwnRowStrides) {
    // S = 2I: gate, up, dgate, dup rows of 2I elements (halves of one [M, 2I] tensor); dy its own SO.
    const auto specs = swiglu_bwd().buffers(problem(Dtype::bf16, {{"M", 3}, {"I", 8}, {"S", 16}, {"SO", 10}}));
    ASSERT_EQ(specs.size(), 5u);
    for (const char* name : {"gate", "up", "dy"}) {
        EXPECT_EQ(buffer(specs, name).role, BufferRole::input) << name;
        EXPECT_EQ(buffer(specs, name).type, ElemType::bf16) << name;
    }
    for (const char* name : {"dgate", "dup"}) {
        EXPECT_EQ(buffer(specs, name).role, BufferRole::output) << name;
        EXPECT_EQ(buffer(specs, name).type, ElemType::bf16) << name;
        EXPECT_EQ(buffer(specs, name).elements, 3 * 16) << name;
    }
    EXPECT_EQ(buffer(specs, "gate").elements, 3 * 16);
    EXPECT_EQ(buffer(specs, "up").elements, 3 * 16);
    EXPECT_EQ(buffer(specs, "dy").elements, 3 * 10);
    // The strides default to I.
    const auto dense = swiglu_bwd().buffers(problem(Dtype::fp16, {{"M", 3}, {"I", 8}}));
    EXPECT_EQ(buffer(dense, "dup").elements, 24);
    EXPECT_EQ(buffer(dense, "dy").elements, 24);
}

TEST(GluSwigluBwdOp, PassesOutputsThenInputsThenSizesThenFiveStrides) {
    const auto args = swiglu_bwd().arguments(problem(Dtype::fp32, {{"M", 5}, {"I", 64}, {"S", 128}, {"SO", 72}}));
    ASSERT_EQ(args.size(), 12u);
    const char* buffers[] = {"dgate", "dup", "gate", "up", "dy"};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(args[std::size_t(i)].buffer, buffers[i]) << i;
    EXPECT_EQ(args[5].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[5].integer, 5);
    EXPECT_EQ(args[6].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[6].integer, 64);
    // gate, up, dy, dgate, dup row strides
    const long long strides[] = {128, 128, 72, 128, 128};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(args[std::size_t(7 + i)].kind, KernelArg::Kind::i64) << i;
        EXPECT_EQ(args[std::size_t(7 + i)].integer, strides[i]) << i;
    }
}

TEST(GluSwigluBwdOp, CountsThreeInputsAndTwoOutputsAsBytesMoved) {
    EXPECT_DOUBLE_EQ(swiglu_bwd().bytes_moved(problem(Dtype::bf16, {{"M", 4096}, {"I", 8192}, {"S", 16384}})),
                     5.0 * 4096 * 8192 * 2);
    EXPECT_DOUBLE_EQ(swiglu_bwd().bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"I", 8}})), 5.0 * 4 * 8 * 4);
}

TEST(GluSwigluBwdOp, CpuReferenceIsTheDerivativeOfSiluTimesUp) {
    // s = sigmoid(g); dup = dy g s, dgate = dy u s (1 + g (1 - s)): by hand, s(1) = 0.7310585786300049, s(-2) =
    // 0.11920292202211755, s(0) = 1/2, so silu'(1) = 0.9276705118714869, silu'(-2) = -0.09078424878489547.
    HostBuffers b{{"gate", {1.0, -2.0, 0.0}}, {"up", {2.0, 0.5, 4.0}}, {"dy", {3.0, -1.0, 0.25}}};
    cpu_reference(swiglu_bwd(), problem(Dtype::fp32, {{"M", 1}, {"I", 3}}), b);
    ASSERT_EQ(b["dup"].size(), 3u);
    ASSERT_EQ(b["dgate"].size(), 3u);
    EXPECT_NEAR(b["dup"][0], 3.0 * 0.7310585786300049, 1e-15);
    EXPECT_NEAR(b["dup"][1], -1.0 * -2.0 * 0.11920292202211755, 1e-15);
    EXPECT_EQ(b["dup"][2], 0.0);
    EXPECT_NEAR(b["dgate"][0], 3.0 * 2.0 * 0.9276705118714869, 1e-14);
    EXPECT_NEAR(b["dgate"][1], -1.0 * 0.5 * -0.09078424878489547, 1e-15);
    EXPECT_EQ(b["dgate"][2], 0.25 * 4.0 * 0.5);
}

TEST(GluSwigluBwdOp, CpuReferenceMatchesCentralDifferencesOfTheForwardReference) {
    // sum(dy * out) perturbed in one gate or up element, through glu/swiglu's own CPU reference.
    const std::vector<double> gate{-3.5, -1.2785, 0.3, 2.5}, up{1.5, -2.0, 0.7, -0.4}, dy{0.9, -0.6, 0.2, -1.0};
    const auto loss = [&](const std::vector<double>& g, const std::vector<double>& u) {
        HostBuffers f{{"gate", g}, {"up", u}};
        cpu_reference(declared_op("glu", "swiglu"), problem(Dtype::fp32, {{"M", 2}, {"I", 2}}), f);
        double l = 0.0;
        for (std::size_t i = 0; i < dy.size(); ++i) l += dy[i] * f["out"][i];
        return l;
    };
    HostBuffers b{{"gate", gate}, {"up", up}, {"dy", dy}};
    cpu_reference(swiglu_bwd(), problem(Dtype::fp32, {{"M", 2}, {"I", 2}}), b);
    const double h = 1e-5;
    for (std::size_t i = 0; i < gate.size(); ++i) {
        std::vector<double> gp = gate, gm = gate, upp = up, um = up;
        gp[i] += h, gm[i] -= h, upp[i] += h, um[i] -= h;
        EXPECT_NEAR(b["dgate"][i], (loss(gp, up) - loss(gm, up)) / (2 * h), 1e-8) << i;
        EXPECT_NEAR(b["dup"][i], (loss(gate, upp) - loss(gate, um)) / (2 * h), 1e-8) << i;
    }
}

TEST(GluSwigluBwdOp, ReadsOnlyTheRowsValidColumnsAndLeavesTheGradientsPaddingUntouched) {
    // I = 2, S = 4 (the halves of [M, 2I] rows: columns 2, 3 belong to the other half), SO = 3.
    HostBuffers b{{"gate", {1.0, 0.0, 99.0, 99.0, 0.0, 1.0, 99.0, 99.0}},
                  {"up", {2.0, 4.0, 99.0, 99.0, 8.0, 2.0, 99.0, 99.0}},
                  {"dy", {3.0, 1.0, 99.0, 1.0, 3.0, 99.0}},
                  {"dgate", std::vector<double>(8, -7.0)},
                  {"dup", std::vector<double>(8, -7.0)}};
    cpu_reference(swiglu_bwd(), problem(Dtype::fp32, {{"M", 2}, {"I", 2}, {"S", 4}, {"SO", 3}}), b);
    for (std::size_t i : {2, 3, 6, 7}) {
        EXPECT_EQ(b["dgate"][i], -7.0) << i;
        EXPECT_EQ(b["dup"][i], -7.0) << i;
    }
    EXPECT_NEAR(b["dgate"][0], 3.0 * 2.0 * 0.9276705118714869, 1e-14);  // row 0 column 0
    EXPECT_EQ(b["dgate"][4], 1.0 * 8.0 * 0.5);                          // row 1 column 0: dy[3], up[4], g 0
    EXPECT_NEAR(b["dup"][5], 3.0 * 0.7310585786300049, 1e-15);          // row 1 column 1: dy[4], g 1
}

TEST(GluSwigluBwdOp, RejectsStridesSmallerThanTheRowsNamingTheProblem) {
    expect_bad_input("swiglu_bwd", {{"M", 2}, {"I", 8}, {"S", 7}}, "S=7");
    expect_bad_input("swiglu_bwd", {{"M", 2}, {"I", 8}, {"SO", 4}}, "SO=4");
    expect_bad_input("swiglu_bwd", {{"M", 0}, {"I", 8}}, "M=0");
    expect_bad_input("swiglu_bwd", {{"M", 2}}, "I");
}

TEST(GluSwigluBwdOp, RejectsADyOfTheWrongSize) {
    HostBuffers b{{"gate", {1.0, 2.0}}, {"up", {1.0, 2.0}}, {"dy", {1.0}}};
    EXPECT_THROW(cpu_reference(swiglu_bwd(), problem(Dtype::fp32, {{"M", 1}, {"I", 2}}), b), Error);
}

}  // namespace
}  // namespace ktune
