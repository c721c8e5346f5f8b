// gemm_act and ffn_gated as their search spaces declare them (kernels/gemm/*.op.yaml): the arguments the tuned kernels
// and the cuBLASLt baseline take, the shapes they refuse, and the CPU references' semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

Problem gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
    return Problem{Dtype::bf16, {{"M", m}, {"N", n}, {"K", k}}};
}
Problem ffn(std::int64_t m, std::int64_t i, std::int64_t k) {
    return Problem{Dtype::bf16, {{"M", m}, {"I", i}, {"K", k}}};
}

std::vector<double> random_doubles(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> d(-1, 1);
    std::vector<double> v(n);
    for (double& x : v) x = d(rng);
    return v;
}

double gelu_tanh(double z) { return 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z))); }
double silu(double z) { return z / (1 + std::exp(-z)); }

TEST(GemmActOp, TakesYXWBThenMNKAsTheCublasLtBaselineExpects) {
    for (const char* variant : {"none", "gelu", "silu"}) {
        const DeclaredOp& op = declared_op("gemm_act", variant);
        const auto args = op.arguments(gemm(3, 5, 8));
        ASSERT_EQ(args.size(), 7u) << variant;
        EXPECT_EQ(args[0].buffer, "y");
        EXPECT_EQ(args[1].buffer, "x");
        EXPECT_EQ(args[2].buffer, "w");
        EXPECT_EQ(args[3].buffer, "b");
        EXPECT_EQ(args[4].integer, 3);
        EXPECT_EQ(args[5].integer, 5);
        EXPECT_EQ(args[6].integer, 8);
        // W, x and b read once, y written once, 2 bytes each.
        EXPECT_DOUBLE_EQ(op.bytes_moved(gemm(3, 5, 8)), 2.0 * (5 * 8 + 3 * 8 + 5 + 3 * 5)) << variant;
    }
}

TEST(GemmActOp, RefusesAKThatLeavesRowsUnalignedToSixteenBytes) {
    EXPECT_NO_THROW(declared_op("gemm_act", "gelu").buffers(gemm(1, 4096, 4096)));
    EXPECT_NO_THROW(declared_op("gemm_act", "gelu").buffers(gemm(8192, 14336, 4096)));
    EXPECT_THROW(declared_op("gemm_act", "gelu").buffers(gemm(1, 4096, 4100)), Error);
    EXPECT_THROW(declared_op("ffn_gated", "swiglu").buffers(ffn(1, 4096, 12)), Error);
}

TEST(GemmActOp, CpuReferenceAddsTheBiasThenAppliesTheActivation) {
    const Problem p = gemm(2, 3, 8);
    for (const char* variant : {"none", "gelu", "silu"}) {
        HostBuffers b;
        b["x"] = random_doubles(16, 1);
        b["w"] = random_doubles(24, 2);
        b["b"] = random_doubles(3, 3);
        cpu_reference(declared_op("gemm_act", variant), p, b);
        ASSERT_EQ(b["y"].size(), 6u);
        for (int m = 0; m < 2; ++m)
            for (int n = 0; n < 3; ++n) {
                double z = b["b"][std::size_t(n)];
                for (int k = 0; k < 8; ++k) z += b["x"][std::size_t(m * 8 + k)] * b["w"][std::size_t(n * 8 + k)];
                const double expected = std::string(variant) == "gelu"   ? gelu_tanh(z)
                                        : std::string(variant) == "silu" ? silu(z)
                                                                         : z;
                EXPECT_NEAR(b["y"][std::size_t(m * 3 + n)], expected, 1e-12) << variant << " " << m << "," << n;
            }
    }
}

TEST(FfnGatedOp, TakesOneWeightBufferOfTwoIRowsAndYXWThenMIK) {
    const DeclaredOp& op = declared_op("ffn_gated", "swiglu");
    const auto args = op.arguments(ffn(3, 5, 8));
    ASSERT_EQ(args.size(), 6u);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].buffer, "w");
    EXPECT_EQ(args[3].integer, 3);
    EXPECT_EQ(args[4].integer, 5);
    EXPECT_EQ(args[5].integer, 8);
    for (const BufferSpec& b : op.buffers(ffn(3, 5, 8)))
        if (b.name == "w") EXPECT_EQ(b.elements, 2 * 5 * 8);
}

TEST(FfnGatedOp, CpuReferenceGatesTheUpRowsWithTheActivatedGateRows) {
    const Problem p = ffn(2, 3, 8);
    for (const char* variant : {"swiglu", "geglu"}) {
        HostBuffers b;
        b["x"] = random_doubles(16, 4);
        b["w"] = random_doubles(48, 5);  // [Wg; Wu]: 2I = 6 rows of 8
        cpu_reference(declared_op("ffn_gated", variant), p, b);
        ASSERT_EQ(b["y"].size(), 6u);
        for (int m = 0; m < 2; ++m)
            for (int i = 0; i < 3; ++i) {
                double g = 0, u = 0;
                for (int k = 0; k < 8; ++k) {
                    g += b["x"][std::size_t(m * 8 + k)] * b["w"][std::size_t(i * 8 + k)];
                    u += b["x"][std::size_t(m * 8 + k)] * b["w"][std::size_t((3 + i) * 8 + k)];
                }
                const double expected = (std::string(variant) == "geglu" ? gelu_tanh(g) : silu(g)) * u;
                EXPECT_NEAR(b["y"][std::size_t(m * 3 + i)], expected, 1e-12) << variant << " " << m << "," << i;
            }
    }
}

}  // namespace
}  // namespace ktune
