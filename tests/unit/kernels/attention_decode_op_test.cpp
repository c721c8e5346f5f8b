#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "kernels/attention/decode_attention_layout.cuh"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& attention() { return declared_op("decode_attention", "fwd"); }

Problem problem(NamedValues shape, Dtype d = Dtype::bf16) { return Problem{d, std::move(shape)}; }

NamedValues shape(std::int64_t b, std::int64_t l, std::int64_t hq, std::int64_t hk, std::int64_t d) {
    return {{"B", b}, {"L", l}, {"HQ", hq}, {"HK", hk}, {"D", d}};
}

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

TEST(DecodeAttentionOp, HasQKvLengthsOutputAndScratchOfTheProblemSizes) {
    const auto specs = attention().buffers(problem(shape(2, 100, 32, 8, 128)));
    ASSERT_EQ(specs.size(), 6u);
    EXPECT_EQ(buffer(specs, "q").elements, 2 * 32 * 128);
    EXPECT_EQ(buffer(specs, "k").elements, 2 * 8 * 100 * 128);
    EXPECT_EQ(buffer(specs, "v").elements, 2 * 8 * 100 * 128);
    EXPECT_EQ(buffer(specs, "v").type, ElemType::bf16);
    EXPECT_EQ(buffer(specs, "seq_lens").type, ElemType::i32);
    EXPECT_EQ(buffer(specs, "seq_lens").elements, 2);
    EXPECT_EQ(buffer(specs, "out").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "out").elements, 2 * 32 * 128);
    EXPECT_EQ(buffer(specs, "scratch").role, BufferRole::scratch);
    EXPECT_EQ(buffer(specs, "scratch").elements, decode_attention_layout::scratch_floats(2, 8, 4, 128));
}

TEST(DecodeAttentionOp, GivesEverySequenceExactlyLTokensByDefault) {
    const BufferSpec lens = buffer(attention().buffers(problem(shape(8, 8192, 32, 8, 128))), "seq_lens");
    EXPECT_EQ(lens.lo, 8192.0);
    EXPECT_EQ(lens.hi, 8192.0);  // lo + 0 * u is exactly L
}

TEST(DecodeAttentionOp, DrawsUnevenLengthsBetweenLOverUAndL) {
    NamedValues s = shape(8, 8192, 32, 8, 128);
    s.emplace_back("U", 16);
    const BufferSpec lens = buffer(attention().buffers(problem(s)), "seq_lens");
    EXPECT_EQ(lens.lo, 512.0);
    EXPECT_EQ(lens.hi, 8193.0);
}

TEST(DecodeAttentionOp, PassesArgumentsInKernelOrderWithTheScaleAndTheSplitBound) {
    const auto args = attention().arguments(problem(shape(64, 1024, 32, 8, 128)));
    ASSERT_EQ(args.size(), 13u);
    EXPECT_EQ(args[0].buffer, "out");
    EXPECT_EQ(args[1].buffer, "q");
    EXPECT_EQ(args[2].buffer, "k");
    EXPECT_EQ(args[3].buffer, "v");
    EXPECT_EQ(args[4].buffer, "seq_lens");
    EXPECT_EQ(args[5].buffer, "scratch");
    EXPECT_EQ(args[6].integer, 64);
    EXPECT_EQ(args[7].integer, 32);
    EXPECT_EQ(args[8].integer, 8);
    EXPECT_EQ(args[9].integer, 128);
    EXPECT_EQ(args[10].integer, 1024);
    EXPECT_EQ(args[11].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[11].real, 1.0 / std::sqrt(128.0));
    EXPECT_EQ(args[12].integer, 16);  // 8192 partials / (64 * 8)
}

TEST(DecodeAttentionOp, CountsTheKvCacheOnceAsBytesMoved) {
    const double kv = 2.0 * 8 * 8 * 8192 * 128 * 2;
    const double q_out = 2.0 * 8 * 32 * 128 * 2;
    EXPECT_DOUBLE_EQ(attention().bytes_moved(problem(shape(8, 8192, 32, 8, 128))), kv + q_out + 4 * 8);
}

TEST(DecodeAttentionOp, CountsUnevenLengthsAtTheirMean) {
    NamedValues s = shape(1, 1000, 1, 1, 2);
    s.emplace_back("U", 4);
    // Lengths in [250, 1000]: mean 625 tokens of K and V, 2 elements of 2 bytes each.
    EXPECT_DOUBLE_EQ(attention().bytes_moved(problem(s)), 2.0 * 625 * 2 * 2 + 2.0 * 2 * 2 + 4);
}

TEST(DecodeAttentionOp, ReturnsTheOnlyValueRowForOneToken) {
    HostBuffers b{{"q", {1.0, 2.0}}, {"k", {0.5, -1.0, 9.0, 9.0}}, {"v", {3.0, -4.0, 7.0, 7.0}}, {"seq_lens", {1.0}}};
    cpu_reference(attention(), problem(shape(1, 2, 1, 1, 2)), b);
    ASSERT_EQ(b["out"].size(), 2u);
    EXPECT_NEAR(b["out"][0], 3.0, 1e-12);  // token 1 lies past the length and takes no part
    EXPECT_NEAR(b["out"][1], -4.0, 1e-12);
}

TEST(DecodeAttentionOp, WeightsTokensBySoftmaxOfTheScaledScores) {
    // D = 1, scale 1: scores 0 and ln 3, weights 1/4 and 3/4.
    HostBuffers b{{"q", {1.0}}, {"k", {0.0, std::log(3.0)}}, {"v", {4.0, 8.0}}, {"seq_lens", {2.0}}};
    cpu_reference(attention(), problem(shape(1, 2, 1, 1, 1)), b);
    EXPECT_NEAR(b["out"][0], 0.25 * 4.0 + 0.75 * 8.0, 1e-12);
}

TEST(DecodeAttentionOp, LetsEachGroupOfQueryHeadsShareOneKvHead) {
    // HQ 4, HK 2: q heads 0, 1 read kv head 0 (v = 1), heads 2, 3 read kv head 1 (v = 2).
    HostBuffers b{{"q", {1.0, 1.0, 1.0, 1.0}}, {"k", {0.0, 0.0}}, {"v", {1.0, 2.0}}, {"seq_lens", {1.0}}};
    cpu_reference(attention(), problem(shape(1, 1, 4, 2, 1)), b);
    EXPECT_DOUBLE_EQ(b["out"][0], 1.0);
    EXPECT_DOUBLE_EQ(b["out"][1], 1.0);
    EXPECT_DOUBLE_EQ(b["out"][2], 2.0);
    EXPECT_DOUBLE_EQ(b["out"][3], 2.0);
}

TEST(DecodeAttentionOp, GivesZeroForAnEmptySequenceAndClampsLengthsToTheCache) {
    HostBuffers b{
        {"q", {1.0, 1.0}}, {"k", {0.0, 0.0, 0.0, 0.0}}, {"v", {5.0, 5.0, 2.0, 4.0}}, {"seq_lens", {0.0, 7.0}}};
    cpu_reference(attention(), problem(shape(2, 2, 1, 1, 1)), b);
    EXPECT_EQ(b["out"][0], 0.0);
    EXPECT_NEAR(b["out"][1], 3.0, 1e-12);  // length 7 clamped to L = 2: the mean of 2 and 4
}

TEST(DecodeAttentionOp, RejectsHeadsThatDoNotGroupAndBadAxes) {
    EXPECT_THROW(attention().buffers(problem(shape(1, 16, 32, 5, 128))), Error);
    EXPECT_THROW(attention().buffers(problem(shape(1, 16, 32, 8, 512))), Error);
    EXPECT_THROW(attention().buffers(problem({{"B", 1}, {"L", 16}, {"HQ", 8}, {"HK", 8}})), Error);
    NamedValues s = shape(1, 16, 8, 8, 64);
    s.emplace_back("X", 1);
    EXPECT_THROW(attention().arguments(problem(s)), Error);
    try {
        NamedValues u = shape(1, 16, 8, 8, 64);
        u.emplace_back("U", 0);
        attention().buffers(problem(u));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("U"), std::string::npos) << e.what();
    }
}

TEST(DecodeAttentionOp, RejectsAnInputOfTheWrongSize) {
    HostBuffers b{{"q", {1.0}}, {"k", {0.0}}, {"v", {1.0, 2.0}}, {"seq_lens", {1.0}}};
    EXPECT_THROW(cpu_reference(attention(), problem(shape(1, 1, 1, 1, 1)), b), Error);
}

TEST(DecodeAttentionLayout, BoundsSplitsSoThatScratchHoldsAtMost8192Partials) {
    using namespace decode_attention_layout;
    EXPECT_EQ(max_splits(1, 8), 128);
    EXPECT_EQ(max_splits(8, 8), 128);
    EXPECT_EQ(max_splits(64, 8), 16);
    EXPECT_EQ(max_splits(4096, 8), 1);
    EXPECT_EQ(partial_floats(4, 128), 4 * 132);
    EXPECT_EQ(counter_words(3, 1), 4);
    EXPECT_EQ(scratch_floats(1, 8, 4, 128), 8 + 8 * 128 * 4 * 132);
}

}  // namespace
}  // namespace ktune
