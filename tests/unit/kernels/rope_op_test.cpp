#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/rope/fast_divmod.cuh"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& neox() { return declared_op("rope", "neox"); }
const DeclaredOp& gptj() { return declared_op("rope", "gptj"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

// One token, one q head and one k head of D = 4, a one-row cache: hand-checkable.
NamedValues tiny_shape() { return {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 4}, {"P", 1}}; }

TEST(RopeOp, RegistersTheNeoxAndGptjVariants) {
    EXPECT_EQ(neox().name(), "rope");
    EXPECT_EQ(neox().variant(), "neox");
    EXPECT_EQ(gptj().variant(), "gptj");
    EXPECT_FALSE(gptj().summary().empty());
}

TEST(RopeOp, RotatesQAndKInPlaceFromPositionsAndFp32Caches) {
    const auto specs = neox().buffers(problem(Dtype::bf16, {{"M", 3}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"P", 16}}));
    ASSERT_EQ(specs.size(), 5u);
    EXPECT_EQ(buffer(specs, "q").role, BufferRole::inout);
    EXPECT_EQ(buffer(specs, "q").type, ElemType::bf16);
    EXPECT_EQ(buffer(specs, "q").elements, 3 * 4 * 8);
    EXPECT_EQ(buffer(specs, "k").role, BufferRole::inout);
    EXPECT_EQ(buffer(specs, "k").elements, 3 * 2 * 8);
    const BufferSpec& pos = buffer(specs, "positions");
    EXPECT_EQ(pos.type, ElemType::i32);
    EXPECT_EQ(pos.role, BufferRole::input);
    EXPECT_EQ(pos.elements, 3);
    EXPECT_EQ(pos.lo, 0.0);
    EXPECT_EQ(pos.hi, 16.0);
    const BufferSpec& cs = buffer(specs, "cos_cache");
    EXPECT_EQ(cs.type, ElemType::f32);
    EXPECT_EQ(cs.role, BufferRole::input);
    EXPECT_EQ(cs.elements, 16 * 4);  // P rows of R / 2
    EXPECT_EQ(buffer(specs, "sin_cache").elements, 16 * 4);
}

TEST(RopeOp, SizesQAndKByTheirTokenStridesAndTheCacheByTheRotaryDim) {
    const auto specs = neox().buffers(
        problem(Dtype::fp32, {{"M", 2}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"R", 4}, {"P", 10}, {"SQ", 40}, {"SK", 20}}));
    EXPECT_EQ(buffer(specs, "q").elements, 80);
    EXPECT_EQ(buffer(specs, "k").elements, 40);
    EXPECT_EQ(buffer(specs, "cos_cache").elements, 20);
}

TEST(RopeOp, PassesArgumentsInKernelOrder) {
    const auto args = gptj().arguments(
        problem(Dtype::fp16, {{"M", 5}, {"HQ", 32}, {"HK", 8}, {"D", 128}, {"R", 64}, {"SQ", 4200}, {"SK", 1100}}));
    ASSERT_EQ(args.size(), 12u);
    const char* names[] = {"q", "k", "positions", "cos_cache", "sin_cache"};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::buffer);
        EXPECT_EQ(args[i].buffer, names[i]);
    }
    const std::int64_t ints[] = {5, 32, 8, 128, 64};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(args[5 + i].kind, KernelArg::Kind::i32);
        EXPECT_EQ(args[5 + i].integer, ints[i]);
    }
    EXPECT_EQ(args[10].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[10].integer, 4200);
    EXPECT_EQ(args[11].kind, KernelArg::Kind::i64);
    EXPECT_EQ(args[11].integer, 1100);
}

TEST(RopeOp, DefaultsTheRotaryDimToTheHeadDimAndTheStridesToHeadsTimesHeadDim) {
    const auto args = neox().arguments(problem(Dtype::bf16, {{"M", 2}, {"HQ", 32}, {"HK", 8}, {"D", 64}}));
    EXPECT_EQ(args[9].integer, 64);
    EXPECT_EQ(args[10].integer, 32 * 64);
    EXPECT_EQ(args[11].integer, 8 * 64);
}

TEST(RopeOp, CountsRotatedDimsPositionsAndOneCacheRowPerTokenAsBytesMoved) {
    // q and k rotary dims read and written, 4-byte positions, cos + sin rows of R / 2 floats each.
    EXPECT_DOUBLE_EQ(neox().bytes_moved(problem(Dtype::bf16, {{"M", 4096}, {"HQ", 32}, {"HK", 8}, {"D", 128}})),
                     2.0 * 4096 * 40 * 128 * 2 + 4.0 * 4096 + 4096.0 * 128 * 4);
    // Partial rotary moves only R dims; more tokens than cache rows read each row once.
    EXPECT_DOUBLE_EQ(
        neox().bytes_moved(problem(Dtype::fp32, {{"M", 100}, {"HQ", 2}, {"HK", 1}, {"D", 8}, {"R", 4}, {"P", 10}})),
        2.0 * 100 * 3 * 4 * 4 + 4.0 * 100 + 10.0 * 4 * 4);
}

TEST(RopeOp, NeoxRotatesElementIWithElementIPlusHalf) {
    HostBuffers b{{"q", {1.0, 2.0, 3.0, 4.0}},
                  {"k", {0.5, 0.0, 0.0, 0.5}},
                  {"positions", {0.0}},
                  {"cos_cache", {0.6, 0.0}},
                  {"sin_cache", {0.8, 1.0}}};
    cpu_reference(neox(), problem(Dtype::fp32, tiny_shape()), b);
    // Pair 0 is (q0, q2) by (0.6, 0.8): (1*0.6 - 3*0.8, 3*0.6 + 1*0.8); pair 1 is (q1, q3) by 90 degrees.
    EXPECT_NEAR(b["q"][0], -1.8, 1e-12);
    EXPECT_NEAR(b["q"][2], 2.6, 1e-12);
    EXPECT_NEAR(b["q"][1], -4.0, 1e-12);
    EXPECT_NEAR(b["q"][3], 2.0, 1e-12);
    EXPECT_NEAR(b["k"][0], 0.3, 1e-12);
    EXPECT_NEAR(b["k"][2], 0.4, 1e-12);
    EXPECT_NEAR(b["k"][1], -0.5, 1e-12);
    EXPECT_NEAR(b["k"][3], 0.0, 1e-12);
}

TEST(RopeOp, GptjRotatesAdjacentElements) {
    HostBuffers b{{"q", {1.0, 2.0, 3.0, 4.0}},
                  {"k", {1.0, 0.0, 0.0, 1.0}},
                  {"positions", {0.0}},
                  {"cos_cache", {0.6, 0.0}},
                  {"sin_cache", {0.8, 1.0}}};
    cpu_reference(gptj(), problem(Dtype::fp32, tiny_shape()), b);
    // Pair 0 is (q0, q1) by (0.6, 0.8); pair 1 is (q2, q3) by 90 degrees.
    EXPECT_NEAR(b["q"][0], 1.0 * 0.6 - 2.0 * 0.8, 1e-12);
    EXPECT_NEAR(b["q"][1], 2.0 * 0.6 + 1.0 * 0.8, 1e-12);
    EXPECT_NEAR(b["q"][2], -4.0, 1e-12);
    EXPECT_NEAR(b["q"][3], 3.0, 1e-12);
    EXPECT_NEAR(b["k"][0], 0.6, 1e-12);
    EXPECT_NEAR(b["k"][1], 0.8, 1e-12);
}

TEST(RopeOp, LeavesTheDimsPastTheRotaryDimUntouched) {
    // D = 6, R = 2: only (x0, x1) rotates, by 90 degrees.
    HostBuffers b{{"q", {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}},
                  {"k", {7.0, 8.0, 9.0, 10.0, 11.0, 12.0}},
                  {"positions", {0.0}},
                  {"cos_cache", {0.0}},
                  {"sin_cache", {1.0}}};
    const Problem p = problem(Dtype::fp32, {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 6}, {"R", 2}, {"P", 1}});
    for (const DeclaredOp* op : {&neox(), &gptj()}) {
        HostBuffers c = b;
        cpu_reference(*op, p, c);
        EXPECT_NEAR(c["q"][0], -2.0, 1e-12) << op->variant();
        EXPECT_NEAR(c["q"][1], 1.0, 1e-12) << op->variant();
        for (int i = 2; i < 6; ++i) {
            EXPECT_EQ(c["q"][i], b["q"][i]) << op->variant() << " q dim " << i;
            EXPECT_EQ(c["k"][i], b["k"][i]) << op->variant() << " k dim " << i;
        }
    }
}

TEST(RopeOp, RotatesEachTokenByTheCacheRowOfItsPosition) {
    // Two tokens at positions 1 and 0; row 0 is the identity, row 1 a 90-degree turn. D = R = 2, one q and one k head.
    HostBuffers b{{"q", {1.0, 0.0, 1.0, 0.0}},
                  {"k", {0.0, 1.0, 0.0, 1.0}},
                  {"positions", {1.0, 0.0}},
                  {"cos_cache", {1.0, 0.0}},
                  {"sin_cache", {0.0, 1.0}}};
    cpu_reference(neox(), problem(Dtype::fp32, {{"M", 2}, {"HQ", 1}, {"HK", 1}, {"D", 2}, {"P", 2}}), b);
    EXPECT_NEAR(b["q"][0], 0.0, 1e-12);  // token 0 turned
    EXPECT_NEAR(b["q"][1], 1.0, 1e-12);
    EXPECT_NEAR(b["q"][2], 1.0, 1e-12);  // token 1 unchanged
    EXPECT_NEAR(b["q"][3], 0.0, 1e-12);
    EXPECT_NEAR(b["k"][0], -1.0, 1e-12);
    EXPECT_NEAR(b["k"][1], 0.0, 1e-12);
}

TEST(RopeOp, RotatesEveryQHeadAndEveryKHeadOfAGroupedQueryLayout) {
    // HQ = 2, HK = 1, D = R = 2, a 90-degree turn: (a, b) -> (-b, a) in all three heads.
    HostBuffers b{{"q", {1.0, 2.0, 3.0, 4.0}},
                  {"k", {5.0, 6.0}},
                  {"positions", {0.0}},
                  {"cos_cache", {0.0}},
                  {"sin_cache", {1.0}}};
    cpu_reference(neox(), problem(Dtype::fp32, {{"M", 1}, {"HQ", 2}, {"HK", 1}, {"D", 2}, {"P", 1}}), b);
    EXPECT_EQ(b["q"], (std::vector<double>{-2.0, 1.0, -4.0, 3.0}));
    EXPECT_EQ(b["k"], (std::vector<double>{-6.0, 5.0}));
}

TEST(RopeOp, LeavesTheTokenStridePaddingUntouched) {
    // SQ = 3 > HQ * D = 2: element 2 of each token row is padding.
    HostBuffers b{{"q", {1.0, 0.0, -7.0, 1.0, 0.0, -7.0}},
                  {"k", {1.0, 0.0, 1.0, 0.0}},
                  {"positions", {0.0, 0.0}},
                  {"cos_cache", {0.0}},
                  {"sin_cache", {1.0}}};
    cpu_reference(neox(), problem(Dtype::fp32, {{"M", 2}, {"HQ", 1}, {"HK", 1}, {"D", 2}, {"P", 1}, {"SQ", 3}}), b);
    EXPECT_EQ(b["q"][2], -7.0);
    EXPECT_EQ(b["q"][5], -7.0);
    EXPECT_NEAR(b["q"][3], 0.0, 1e-12);
    EXPECT_NEAR(b["q"][4], 1.0, 1e-12);
}

TEST(RopeOp, RejectsAPositionOutsideTheCache) {
    HostBuffers b{{"q", {1.0, 2.0, 3.0, 4.0}},
                  {"k", {1.0, 2.0, 3.0, 4.0}},
                  {"positions", {1.0}},
                  {"cos_cache", {1.0, 1.0}},
                  {"sin_cache", {0.0, 0.0}}};
    EXPECT_THROW(cpu_reference(neox(), problem(Dtype::fp32, tiny_shape()), b), Error);
}

void expect_bad_input(const OpDescription& op, NamedValues shape, const std::string& mentions) {
    try {
        op.buffers(problem(Dtype::fp32, std::move(shape)));
        FAIL() << "expected an Error mentioning " << mentions;
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
}

TEST(RopeOp, RejectsAnOddOrOversizedRotaryDim) {
    expect_bad_input(neox(), {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 8}, {"R", 3}}, "R=3");
    expect_bad_input(neox(), {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 8}, {"R", 10}}, "R=10");
    expect_bad_input(gptj(), {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 8}, {"R", 0}}, "R=0");
}

TEST(RopeOp, RejectsATokenStrideSmallerThanTheHeads) {
    expect_bad_input(neox(), {{"M", 2}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"SQ", 31}}, "SQ=31");
    expect_bad_input(neox(), {{"M", 2}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"SK", 15}}, "SK=15");
}

TEST(RopeOp, RejectsMissingUnknownAndEmptyAxes) {
    expect_bad_input(neox(), {{"M", 2}, {"HQ", 4}, {"D", 8}}, "HK");
    expect_bad_input(neox(), {{"M", 2}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"H", 1}}, "H");
    expect_bad_input(neox(), {{"M", 0}, {"HQ", 4}, {"HK", 2}, {"D", 8}}, "M=0");
}

// ---- rope/neox_cache: RoPE and the KV-cache write of a decode step

const DeclaredOp& neox_cache() { return declared_op("rope", "neox_cache"); }

TEST(RopeCacheOp, TakesQInPlaceKAndVAsInputsAndBothCachesAsInouts) {
    const auto specs =
        neox_cache().buffers(problem(Dtype::bf16, {{"M", 3}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"P", 16}, {"L", 10}}));
    ASSERT_EQ(specs.size(), 8u);
    EXPECT_EQ(buffer(specs, "q").role, BufferRole::inout);
    EXPECT_EQ(buffer(specs, "q").elements, 3 * 4 * 8);
    EXPECT_EQ(buffer(specs, "k").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "v").role, BufferRole::input);
    EXPECT_EQ(buffer(specs, "v").elements, 3 * 2 * 8);
    for (const char* cache : {"k_cache", "v_cache"}) {
        EXPECT_EQ(buffer(specs, cache).role, BufferRole::inout) << cache;
        EXPECT_EQ(buffer(specs, cache).type, ElemType::bf16) << cache;
        EXPECT_EQ(buffer(specs, cache).elements, 3 * 2 * 10 * 8) << cache;
    }
    // positions must address a row of both the cos/sin caches and the KV caches: [0, min(L, P))
    EXPECT_EQ(buffer(specs, "positions").lo, 0.0);
    EXPECT_EQ(buffer(specs, "positions").hi, 10.0);
    EXPECT_EQ(buffer(specs, "cos_cache").elements, 16 * 4);
}

TEST(RopeCacheOp, PassesArgumentsInKernelOrder) {
    // the strides differ, to tell them apart
    NamedValues shape{{"M", 5}, {"HQ", 24}, {"HK", 8}, {"D", 128}, {"R", 64}, {"L", 300}};
    shape.insert(shape.end(), {{"SQ", 5120}, {"SK", 5121}, {"SV", 5122}});
    const auto args = neox_cache().arguments(problem(Dtype::fp16, shape));
    ASSERT_EQ(args.size(), 17u);
    const char* names[] = {"q", "k", "v", "k_cache", "v_cache", "positions", "cos_cache", "sin_cache"};
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::buffer);
        EXPECT_EQ(args[i].buffer, names[i]);
    }
    const std::int64_t ints[] = {5, 24, 8, 128, 64, 300};
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(args[8 + i].kind, KernelArg::Kind::i32);
        EXPECT_EQ(args[8 + i].integer, ints[i]);
    }
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(args[14 + i].kind, KernelArg::Kind::i64);
        EXPECT_EQ(args[14 + i].integer, 5120 + i);
    }
}

TEST(RopeCacheOp, CountsQTwiceAndKAndVReadAndWrittenOnceAsBytesMoved) {
    EXPECT_DOUBLE_EQ(neox_cache().bytes_moved(problem(Dtype::bf16, {{"M", 8}, {"HQ", 24}, {"HK", 8}, {"D", 128}})),
                     2.0 * 8 * 24 * 128 * 2 + 4.0 * 8 * 8 * 128 * 2 + 4.0 * 8 + 8.0 * 128 * 4);
}

// Two tokens (sequences) at positions 1 and 0, one q head and one kv head, D = 4, R = 2, caches of L = 2 rows. Row 0
// of the cos/sin caches is the identity, row 1 a 90-degree turn: (a, b) -> (-b, a).
HostBuffers two_sequences() {
    return {{"q", {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}},
            {"k", {10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0}},
            {"v", {-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0}},
            {"k_cache", std::vector<double>(16, 9.0)},
            {"v_cache", std::vector<double>(16, 9.0)},
            {"positions", {1.0, 0.0}},
            {"cos_cache", {1.0, 0.0}},
            {"sin_cache", {0.0, 1.0}}};
}
const Problem two_sequences_shape =
    problem(Dtype::fp32, {{"M", 2}, {"HQ", 1}, {"HK", 1}, {"D", 4}, {"R", 2}, {"P", 2}, {"L", 2}});

TEST(RopeCacheOp, RotatesQInPlaceLeavingItsDimsPastTheRotaryDim) {
    HostBuffers b = two_sequences();
    cpu_reference(neox_cache(), two_sequences_shape, b);
    EXPECT_EQ(b["q"], (std::vector<double>{-2.0, 1.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}));
}

TEST(RopeCacheOp, WritesRotatedKAndCopiedVIntoTheCacheRowOfEachSequencesPosition) {
    HostBuffers b = two_sequences();
    const HostBuffers before = b;
    cpu_reference(neox_cache(), two_sequences_shape, b);
    // Sequence 0 at position 1 (its rows 2..3 of [M, HK, L, D] = elements 4..7), sequence 1 at position 0 (8..11);
    // k's dims R.. copied unrotated.
    const std::vector<double> k_cache{9, 9, 9, 9, -20, 10, 30, 40, 50, 60, 70, 80, 9, 9, 9, 9};
    const std::vector<double> v_cache{9, 9, 9, 9, -1, -2, -3, -4, -5, -6, -7, -8, 9, 9, 9, 9};
    EXPECT_EQ(b["k_cache"], k_cache);
    EXPECT_EQ(b["v_cache"], v_cache);
    EXPECT_EQ(b["k"], before.at("k"));  // k itself is not rotated
}

TEST(RopeCacheOp, RejectsAPositionPastTheKvCache) {
    HostBuffers b = two_sequences();
    b["positions"] = {2.0, 0.0};  // L = 2 rows; P = 3 would allow it
    b["cos_cache"] = {1.0, 0.0, 1.0};
    b["sin_cache"] = {0.0, 1.0, 0.0};
    const Problem p = problem(Dtype::fp32, {{"M", 2}, {"HQ", 1}, {"HK", 1}, {"D", 4}, {"R", 2}, {"P", 3}, {"L", 2}});
    EXPECT_THROW(cpu_reference(neox_cache(), p, b), Error);
}

TEST(RopeCacheOp, RejectsATokenStrideSmallerThanTheHeadsAndAnOddRotaryDim) {
    expect_bad_input(neox_cache(), {{"M", 2}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"SV", 15}}, "SV=15");
    expect_bad_input(neox_cache(), {{"M", 2}, {"HQ", 4}, {"HK", 2}, {"D", 8}, {"SK", 15}}, "SK=15");
    expect_bad_input(neox_cache(), {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 8}, {"R", 5}}, "R=5");
    expect_bad_input(neox_cache(), {{"M", 1}, {"HQ", 1}, {"HK", 1}, {"D", 8}, {"L", 0}}, "L=0");
}

TEST(FastDivmod, MatchesIntegerDivisionForSmallAndLargeDivisorsAndDividends) {
    const unsigned divisors[] = {1, 2, 3, 5, 7, 8, 10, 40, 64, 96, 127, 1000, 65537, 1u << 20, 2147483647u};
    const unsigned dividends[] = {0, 1, 2, 3, 39, 40, 41, 1279, 1280, 65535, 65536, 1000000, 2147483646u, 2147483647u};
    for (unsigned d : divisors) {
        const ktune::dev::FastDivmod f(d);
        for (unsigned n : dividends) {
            unsigned rem = 0;
            EXPECT_EQ(f.divmod(n, rem), n / d) << n << " / " << d;
            EXPECT_EQ(rem, n % d) << n << " % " << d;
        }
        for (unsigned n = 0; n < 5000; ++n) ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
    }
}

}  // namespace
}  // namespace ktune
