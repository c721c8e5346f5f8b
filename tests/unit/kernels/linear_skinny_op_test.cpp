// linear_skinny/fwd (kernels/linear_skinny/): cuBLAS's linear/fwd buffers plus the split-K scratch of the weight-only
// kernels' layout, in the argument order of linear_skinny_fwd, and a CPU reference that is the plain product; the
// SwiGLU variant linear_skinny/fwd_swiglu: gate_up [M, 2K] for x, and x = silu(gate) * up rounded to T first; the
// add + RMSNorm variant linear_skinny/fwd_add_rmsnorm: a, r, nw for x = T(rmsnorm(a + r) * nw), r_out = T(a + r).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& skinny() { return declared_op("linear_skinny", "fwd"); }
const DeclaredOp& skinny_swiglu() { return declared_op("linear_skinny", "fwd_swiglu"); }
const DeclaredOp& skinny_norm() { return declared_op("linear_skinny", "fwd_add_rmsnorm"); }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

TEST(LinearSkinnyOp, TakesYXWScratchThenMNKAndTheSplitBound) {
    const Problem p{Dtype::bf16, {{"M", 3}, {"N", 5}, {"K", 7}}};
    const auto args = skinny().arguments(p);
    ASSERT_EQ(args.size(), 8u);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].buffer, "w");
    EXPECT_EQ(args[3].buffer, "scratch");
    EXPECT_EQ(args[4].integer, 3);
    EXPECT_EQ(args[5].integer, 5);
    EXPECT_EQ(args[6].integer, 7);
    EXPECT_EQ(args[7].integer, quant_linear_layout::max_split_k(3, 5));
    const auto specs = skinny().buffers(p);
    EXPECT_EQ(buffer(specs, "w").elements, 35);  // dense [N, K], no packing
    EXPECT_EQ(buffer(specs, "w").type, ElemType::bf16);
    EXPECT_EQ(buffer(specs, "scratch").elements, quant_linear_layout::scratch_floats(3, 5));
    // As linear/fwd: every weight in T (2 bytes), x and y once; the scratch is not counted.
    EXPECT_DOUBLE_EQ(skinny().bytes_moved(p), 5.0 * 7 * 2 + 3.0 * 7 * 2 + 3.0 * 5 * 2);
}

TEST(LinearSkinnyOp, RefusesMoreThan64Rows) {
    EXPECT_THROW(skinny().buffers(Problem{Dtype::bf16, {{"M", 65}, {"N", 16}, {"K", 16}}}), Error);
}

TEST(LinearSkinnyOp, CpuReferenceIsThePlainProduct) {
    const Problem p{Dtype::bf16, {{"M", 2}, {"N", 3}, {"K", 4}}};
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> u(-1, 1);
    HostBuffers b;
    for (const char* name : {"x", "w"})
        for (int i = 0; i < (name[0] == 'x' ? 8 : 12); ++i) b[name].push_back(u(gen));
    cpu_reference(skinny(), p, b);
    ASSERT_EQ(b["y"].size(), 6u);
    for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 3; ++n) {
            double expected = 0;
            for (int k = 0; k < 4; ++k) expected += b["x"][std::size_t(m * 4 + k)] * b["w"][std::size_t(n * 4 + k)];
            EXPECT_DOUBLE_EQ(b["y"][std::size_t(m * 3 + n)], expected) << m << "," << n;
        }
}

TEST(LinearSkinnySwigluOp, TakesGateUpOfTwiceKColumnsAndTheSkinnyScratch) {
    const Problem p{Dtype::bf16, {{"M", 3}, {"N", 5}, {"K", 7}}};
    const auto args = skinny_swiglu().arguments(p);
    ASSERT_EQ(args.size(), 8u);
    EXPECT_EQ(args[1].buffer, "gate_up");
    EXPECT_EQ(args[6].integer, 7);
    EXPECT_EQ(args[7].integer, quant_linear_layout::max_split_k(3, 5));
    const auto specs = skinny_swiglu().buffers(p);
    EXPECT_EQ(buffer(specs, "gate_up").elements, 42);  // [M, 2K]
    EXPECT_EQ(buffer(specs, "w").elements, 35);
    EXPECT_EQ(buffer(specs, "scratch").elements, quant_linear_layout::scratch_floats(3, 5));
}

TEST(LinearSkinnySwigluOp, CpuReferenceRoundsTheSwigluToTBeforeTheProduct) {
    // silu(1) * 1 = 0.7310585786...: bf16 keeps 8 significant bits (187 / 256), fp16 11 (1497 / 2048).
    for (const auto& [dtype, rounded] : {std::pair{Dtype::bf16, 187.0 / 256}, std::pair{Dtype::fp16, 1497.0 / 2048}}) {
        HostBuffers b;
        b["gate_up"] = {1.0, 1.0};  // M = 1, K = 1: gate 1, up 1
        b["w"] = {3.0};
        cpu_reference(skinny_swiglu(), Problem{dtype, {{"M", 1}, {"N", 1}, {"K", 1}}}, b);
        ASSERT_EQ(b["y"].size(), 1u);
        EXPECT_DOUBLE_EQ(b["y"][0], 3.0 * rounded);
    }
}

TEST(LinearSkinnySwigluOp, CpuReferenceTakesGateFromTheFirstHalfAndUpFromTheSecond) {
    const Problem p{Dtype::bf16, {{"M", 2}, {"N", 3}, {"K", 4}}};
    std::mt19937 gen(11);
    std::uniform_real_distribution<double> u(-2, 2);
    HostBuffers b;
    for (int i = 0; i < 16; ++i) b["gate_up"].push_back(u(gen));
    for (int i = 0; i < 12; ++i) b["w"].push_back(u(gen));
    cpu_reference(skinny_swiglu(), p, b);
    ASSERT_EQ(b["y"].size(), 6u);
    for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 3; ++n) {
            double expected = 0;
            for (int k = 0; k < 4; ++k) {
                const double g = b["gate_up"][std::size_t(m * 8 + k)], up = b["gate_up"][std::size_t(m * 8 + 4 + k)];
                expected += g / (1 + std::exp(-g)) * up * b["w"][std::size_t(n * 4 + k)];
            }
            // a rounded to bf16: at most 2^-9 of |a| <= 3.6 per term, times |w| <= 2, 4 terms
            EXPECT_NEAR(b["y"][std::size_t(m * 3 + n)], expected, 4 * 3.6 / 512 * 2) << m << "," << n;
        }
}

TEST(LinearSkinnyAddRmsnormOp, TakesOutputsThenInputsThenTheSkinnyScratchAndEpsLast) {
    const Problem p{Dtype::bf16, {{"M", 3}, {"N", 5}, {"K", 7}}};  // EPS_E9 defaults to 1000: eps 1e-6
    const auto args = skinny_norm().arguments(p);
    ASSERT_EQ(args.size(), 12u);
    const char* names[] = {"y", "r_out", "a", "r", "nw", "w", "scratch"};
    for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(args[i].buffer, names[i]) << i;
    EXPECT_EQ(args[7].integer, 3);
    EXPECT_EQ(args[8].integer, 5);
    EXPECT_EQ(args[9].integer, 7);
    EXPECT_EQ(args[10].integer, quant_linear_layout::max_split_k(3, 5));
    EXPECT_EQ(args[11].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[11].real, 1e-6);
    const Problem llama{Dtype::bf16, {{"M", 3}, {"N", 5}, {"K", 7}, {"EPS_E9", 10000}}};
    EXPECT_DOUBLE_EQ(skinny_norm().arguments(llama)[11].real, 1e-5);
    const auto specs = skinny_norm().buffers(p);
    for (const char* name : {"a", "r", "r_out"}) EXPECT_EQ(buffer(specs, name).elements, 21) << name;
    EXPECT_EQ(buffer(specs, "nw").elements, 7);
    EXPECT_EQ(buffer(specs, "w").elements, 35);
    EXPECT_EQ(buffer(specs, "scratch").elements, quant_linear_layout::scratch_floats(3, 5));
    // W, a and r read, r_out written, nw and y, 2 bytes each.
    EXPECT_DOUBLE_EQ(skinny_norm().bytes_moved(p), 5.0 * 7 * 2 + 3 * 3.0 * 7 * 2 + 7.0 * 2 + 3.0 * 5 * 2);
}

TEST(LinearSkinnyAddRmsnormOp, RefusesMoreThan64RowsAndANegativeEps) {
    EXPECT_THROW(skinny_norm().buffers(Problem{Dtype::bf16, {{"M", 65}, {"N", 16}, {"K", 16}}}), Error);
    EXPECT_THROW(skinny_norm().buffers(Problem{Dtype::bf16, {{"M", 1}, {"N", 16}, {"K", 16}, {"EPS_E9", -1}}}), Error);
}

TEST(LinearSkinnyAddRmsnormOp, CpuReferenceNormalisesTheSumRoundsXToTAndKeepsTheSum) {
    // s = (2, 2): mean(s^2) = 4, eps 0, rstd 1/2; x = s / 2 * nw = (1, 1 + 2^-9): bf16 (8 significant bits) rounds
    // the second to 1, fp16 (11) keeps it. y = 3 x0 + 5 x1.
    for (const auto& [dtype, x1] : {std::pair{Dtype::bf16, 1.0}, std::pair{Dtype::fp16, 1.0 + 1.0 / 512}}) {
        HostBuffers b;
        b["a"] = {1.0, 2.0};
        b["r"] = {1.0, 0.0};
        b["nw"] = {1.0, 1.0 + 1.0 / 512};
        b["w"] = {3.0, 5.0};
        cpu_reference(skinny_norm(), Problem{dtype, {{"M", 1}, {"N", 1}, {"K", 2}, {"EPS_E9", 0}}}, b);
        ASSERT_EQ(b["y"].size(), 1u);
        EXPECT_DOUBLE_EQ(b["y"][0], 3.0 + 5.0 * x1);
        EXPECT_EQ(b["r_out"], (std::vector<double>{2.0, 2.0}));
    }
    // eps from EPS_E9: s = (0.5, 0.5), mean(s^2) = 0.25, eps 0.75: rstd 1, x = s, y = 0.5 + 0.5.
    HostBuffers b;
    b["a"] = {0.5, 0.25};
    b["r"] = {0.0, 0.25};
    b["nw"] = {1.0, 1.0};
    b["w"] = {1.0, 1.0};
    cpu_reference(skinny_norm(), Problem{Dtype::bf16, {{"M", 1}, {"N", 1}, {"K", 2}, {"EPS_E9", 750000000}}}, b);
    EXPECT_DOUBLE_EQ(b["y"][0], 1.0);
    EXPECT_EQ(b["r_out"], (std::vector<double>{0.5, 0.5}));
}

TEST(LinearSkinnyAddRmsnormOp, CpuReferenceNormalisesEachRowOnItsOwn) {
    const Problem p{Dtype::bf16, {{"M", 2}, {"N", 3}, {"K", 4}, {"EPS_E9", 10000}}};
    std::mt19937 gen(13);
    std::uniform_real_distribution<double> u(-2, 2);
    HostBuffers b;
    for (const char* name : {"a", "r"})
        for (int i = 0; i < 8; ++i) b[name].push_back(u(gen));
    for (int i = 0; i < 4; ++i) b["nw"].push_back(1 + u(gen) / 4);
    for (int i = 0; i < 12; ++i) b["w"].push_back(u(gen));
    cpu_reference(skinny_norm(), p, b);
    ASSERT_EQ(b["y"].size(), 6u);
    ASSERT_EQ(b["r_out"].size(), 8u);
    for (int m = 0; m < 2; ++m) {
        double mean_sq = 0;
        for (int k = 0; k < 4; ++k) {
            const double s = b["a"][std::size_t(m * 4 + k)] + b["r"][std::size_t(m * 4 + k)];
            mean_sq += s * s / 4;
            // r_out: the sum rounded to bf16, within half an ulp (at most 2^-8 of |s|)
            EXPECT_NEAR(b["r_out"][std::size_t(m * 4 + k)], s, std::abs(s) / 256 + 1e-12) << m << "," << k;
        }
        const double rstd = 1 / std::sqrt(mean_sq + 1e-5);
        for (int n = 0; n < 3; ++n) {
            double expected = 0, bound = 0;
            for (int k = 0; k < 4; ++k) {
                const double s = b["a"][std::size_t(m * 4 + k)] + b["r"][std::size_t(m * 4 + k)];
                const double x = s * rstd * b["nw"][std::size_t(k)], wk = b["w"][std::size_t(n * 4 + k)];
                expected += x * wk;
                bound += std::abs(x) / 128 * std::abs(wk);  // x rounded to bf16: at most 2^-8 of |x| (twice to spare)
            }
            EXPECT_NEAR(b["y"][std::size_t(m * 3 + n)], expected, bound) << m << "," << n;
        }
    }
}

}  // namespace
}  // namespace ktune
