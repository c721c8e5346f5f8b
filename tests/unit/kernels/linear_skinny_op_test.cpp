// linear_skinny/fwd (kernels/linear_skinny/): cuBLAS's linear/fwd buffers plus the split-K scratch of the weight-only
// kernels' layout, in the argument order of linear_skinny_fwd, and a CPU reference that is the plain product.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& skinny() { return declared_op("linear_skinny", "fwd"); }

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

}  // namespace
}  // namespace ktune
