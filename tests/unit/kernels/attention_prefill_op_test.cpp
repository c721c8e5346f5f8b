// prefill_attention/causal and /full as declared (kernels/attention/prefill_attention_*.op.yaml): buffers, arguments,
// counts, and the CPU reference's semantics on hand-made inputs ([B, L, H, D] layouts, D = 8: the op takes 16-byte
// rows).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& causal() { return declared_op("prefill_attention", "causal"); }
const DeclaredOp& full() { return declared_op("prefill_attention", "full"); }

Problem problem(std::int64_t b, std::int64_t l, std::int64_t hq, std::int64_t hk, std::int64_t d) {
    return Problem{Dtype::bf16, {{"B", b}, {"L", l}, {"HQ", hq}, {"HK", hk}, {"D", d}}};
}

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

// Rows of D = 8 whose first element is given and the rest 0.
std::vector<double> rows(const std::vector<double>& first) {
    std::vector<double> out(first.size() * 8, 0.0);
    for (std::size_t r = 0; r < first.size(); ++r) out[r * 8] = first[r];
    return out;
}

TEST(PrefillAttentionOp, HasTokenMajorBuffersOfTheProblemSizes) {
    const auto specs = causal().buffers(problem(2, 100, 32, 8, 128));
    ASSERT_EQ(specs.size(), 5u);
    EXPECT_EQ(buffer(specs, "q").elements, 2 * 100 * 32 * 128);
    EXPECT_EQ(buffer(specs, "k").elements, 2 * 100 * 8 * 128);
    EXPECT_EQ(buffer(specs, "out").elements, 2 * 100 * 32 * 128);
    EXPECT_EQ(buffer(specs, "out").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "seq_lens").type, ElemType::i32);
    EXPECT_EQ(buffer(specs, "seq_lens").lo, 100.0);
    EXPECT_EQ(buffer(specs, "seq_lens").hi, 100.0);
    Problem uneven = problem(2, 100, 32, 8, 128);
    uneven.shape.emplace_back("U", 2);
    EXPECT_EQ(buffer(causal().buffers(uneven), "seq_lens").lo, 50.0);
    EXPECT_EQ(buffer(causal().buffers(uneven), "seq_lens").hi, 101.0);
}

TEST(PrefillAttentionOp, PassesArgumentsInKernelOrder) {
    const auto args = full().arguments(problem(4, 2048, 32, 8, 64));
    ASSERT_EQ(args.size(), 11u);
    EXPECT_EQ(args[0].buffer, "out");
    EXPECT_EQ(args[4].buffer, "seq_lens");
    EXPECT_EQ(args[5].integer, 4);
    EXPECT_EQ(args[6].integer, 32);
    EXPECT_EQ(args[7].integer, 8);
    EXPECT_EQ(args[8].integer, 64);
    EXPECT_EQ(args[9].integer, 2048);
    EXPECT_DOUBLE_EQ(args[10].real, 1.0 / 8.0);
}

TEST(PrefillAttentionOp, CountsHalfTheFlopsWhenCausal) {
    const Problem p = problem(1, 2048, 32, 8, 128);
    EXPECT_DOUBLE_EQ(full().flops(p), 4.0 * 32 * 2048.0 * 2048 * 128);
    EXPECT_DOUBLE_EQ(causal().flops(p), 2.0 * 32 * 2048.0 * 2048 * 128);
    EXPECT_DOUBLE_EQ(causal().bytes_moved(p), 2.0 * 2048 * (32 + 8) * 128 * 2 + 4);
}

TEST(PrefillAttentionOp, CausalRowsSeeOnlyEarlierKeysAndFullRowsSeeAll) {
    // L = 2, one head, scale 1 / sqrt(8); q row 1 scores key 1 higher: weights of softmax(0, 2 / sqrt(8)).
    HostBuffers c{{"q", rows({1.0, 1.0})}, {"k", rows({0.0, 2.0})}, {"v", rows({3.0, 7.0})}, {"seq_lens", {2.0}}};
    HostBuffers f = c;
    cpu_reference(causal(), problem(1, 2, 1, 1, 8), c);
    cpu_reference(full(), problem(1, 2, 1, 1, 8), f);
    const double scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(8.0)));
    const double w1 = std::exp(2.0 * scale) / (1.0 + std::exp(2.0 * scale));
    EXPECT_NEAR(c["out"][0], 3.0, 1e-12);  // row 0 sees key 0 only
    EXPECT_NEAR(c["out"][8], 3.0 * (1 - w1) + 7.0 * w1, 1e-12);
    EXPECT_NEAR(f["out"][0], 3.0 * (1 - w1) + 7.0 * w1, 1e-12);  // q rows are equal: both see both keys
    EXPECT_NEAR(f["out"][8], f["out"][0], 1e-12);
}

TEST(PrefillAttentionOp, LeavesRowsPastTheLengthAndLetsHeadsShareKv) {
    // B 2, L 2, HQ 2, HK 1: sequence 0 has 1 token, sequence 1 has 2; both q heads read the one kv head.
    HostBuffers b{{"q", std::vector<double>(2 * 2 * 2 * 8, 0.0)},
                  {"k", std::vector<double>(2 * 2 * 8, 0.0)},
                  {"v", rows({1.0, 9.0, 2.0, 4.0})},
                  {"seq_lens", {1.0, 2.0}}};
    cpu_reference(full(), problem(2, 2, 2, 1, 8), b);
    const std::vector<double>& o = b["out"];
    EXPECT_NEAR(o[0], 1.0, 1e-12);       // b 0, row 0, head 0: token 1 lies past the length
    EXPECT_NEAR(o[8], 1.0, 1e-12);       // head 1, the same kv head
    EXPECT_EQ(o[16], 0.0);               // b 0, row 1: past the length, not written
    EXPECT_NEAR(o[32], 3.0, 1e-12);      // b 1, row 0: the mean of 2 and 4 (equal scores)
    EXPECT_NEAR(o[48 + 8], 3.0, 1e-12);  // b 1, row 1, head 1
}

TEST(PrefillAttentionOp, RejectsHeadsThatDoNotGroupAndRowsThatAreNot16Bytes) {
    EXPECT_THROW(causal().buffers(problem(1, 16, 32, 5, 128)), Error);
    EXPECT_THROW(causal().buffers(problem(1, 16, 32, 8, 100)), Error);
    EXPECT_THROW(full().buffers(problem(1, 16, 32, 8, 512)), Error);
    Problem u = problem(1, 16, 8, 8, 64);
    u.shape.emplace_back("U", 3);
    EXPECT_THROW(causal().buffers(u), Error);
}

}  // namespace
}  // namespace ktune
