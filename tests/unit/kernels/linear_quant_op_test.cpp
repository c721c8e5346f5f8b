#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "core/error.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"
#include "kernels/quant_linear/quant_linear_pack.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

namespace layout = quant_linear_layout;

const DeclaredOp& int4() { return declared_op("linear_int4", "fwd"); }
const DeclaredOp& int8() { return declared_op("linear_int8", "fwd"); }
const DeclaredOp& dense() { return declared_op("linear", "fwd"); }

Problem problem(NamedValues shape, Dtype d = Dtype::bf16) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

std::vector<std::uint8_t> random_int4_plain(std::int64_t n, std::int64_t k, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<std::uint8_t> plain(static_cast<std::size_t>(n * ((k + 1) / 2)));
    for (auto& b : plain) b = static_cast<std::uint8_t>(gen() & 0xFF);
    if (k % 2)  // the padding nibble of odd K is 0 in the plain layout
        for (std::int64_t r = 0; r < n; ++r) plain[static_cast<std::size_t>(r * ((k + 1) / 2) + k / 2)] &= 0x0F;
    return plain;
}

std::vector<double> random_doubles(std::size_t n, double lo, double hi, unsigned seed, bool integers = false) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (auto& x : v) x = integers ? std::floor(d(gen)) : d(gen);
    return v;
}

TEST(QuantLinearPack, Int4PackingThenUnpackingGivesThePlainWeightsBack) {
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{16, 64}, {37, 131}, {5, 200}, {33, 1}}) {
        const auto plain = random_int4_plain(n, k, 7);
        const auto packed = pack_int4(plain, n, k);
        EXPECT_EQ(static_cast<std::int64_t>(packed.size()), layout::int4_weight_bytes(n, k));
        EXPECT_EQ(unpack_int4(packed, n, k), plain) << "N=" << n << " K=" << k;
    }
}

TEST(QuantLinearPack, Int8PackingThenUnpackingGivesThePlainWeightsBack) {
    std::mt19937 gen(3);
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{16, 32}, {21, 77}, {3, 1}}) {
        std::vector<std::int8_t> plain(static_cast<std::size_t>(n * k));
        for (auto& q : plain) q = static_cast<std::int8_t>(static_cast<int>(gen() % 256) - 128);
        const auto packed = pack_int8(plain, n, k);
        EXPECT_EQ(static_cast<std::int64_t>(packed.size()), layout::int8_weight_bytes(n, k));
        EXPECT_EQ(unpack_int8(packed, n, k), plain) << "N=" << n << " K=" << k;
    }
}

TEST(QuantLinearPack, PlacesEveryInt4WeightInItsOwnNibble) {
    const std::int64_t n = 32, k = 128;
    std::set<std::pair<long long, int>> seen;
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) {
            const auto p = layout::int4_position(r, c, k);
            ASSERT_LT(p.byte, layout::int4_weight_bytes(n, k));
            seen.insert({p.byte, p.shift});
        }
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n * k);  // a bijection onto the 2 * bytes nibbles
}

TEST(QuantLinearPack, PutsALanesFragmentOfOneMmaStepInOneWord) {
    // Lane 4g + t of tile 0, chunk 0, step j: word j holds rows g and g + 8 at k = 16t + 4j + 0..3; nibbles p and
    // p + 4 form fragment register p: (row g, k 0, 1), (row g + 8, k 0, 1), (row g, k 2, 3), (row g + 8, k 2, 3).
    const int g = 3, t = 2, j = 1;
    const long long word = (4 * g + t) * 16 + 4 * j;
    const long long k0 = 16 * t + 4 * j;
    auto nibble = [&](long long r, long long c) {
        const auto p = layout::int4_position(r, c, 64);
        EXPECT_EQ(p.byte / 4 * 4, word);
        return (p.byte - word) * 2 + p.shift / 4;
    };
    EXPECT_EQ(nibble(g, k0), 0);
    EXPECT_EQ(nibble(g, k0 + 1), 4);
    EXPECT_EQ(nibble(g + 8, k0), 1);
    EXPECT_EQ(nibble(g + 8, k0 + 1), 5);
    EXPECT_EQ(nibble(g, k0 + 2), 2);
    EXPECT_EQ(nibble(g, k0 + 3), 6);
    EXPECT_EQ(nibble(g + 8, k0 + 2), 3);
    EXPECT_EQ(nibble(g + 8, k0 + 3), 7);
}

TEST(QuantLinearPack, Int4ScalesAndZeroPointsPackAndUnpackLosslessly) {
    for (auto [n, k, g] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{16, 64, 64},
                           {37, 200, 64},
                           {5, 4096, 128},
                           {33, 1, 128}}) {
        const std::int64_t groups = layout::groups(k, g);
        std::vector<std::uint16_t> plain(static_cast<std::size_t>(groups * n));
        for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<std::uint16_t>(1 + i);  // all distinct
        const auto packed = pack_int4_params(plain, n, k, g);
        EXPECT_EQ(static_cast<std::int64_t>(packed.size()), layout::int4_params(n, k, g));
        EXPECT_EQ(unpack_int4_params(packed, n, k, g), plain) << "N=" << n << " K=" << k << " G=" << g;
        // Every plain value appears once; the rest is padding (0).
        EXPECT_EQ(std::count(packed.begin(), packed.end(), std::uint16_t{0}),
                  static_cast<std::ptrdiff_t>(packed.size() - plain.size()));
    }
}

TEST(QuantLinearPack, PutsALanesTwoRowsOfAGroupSideBySide) {
    // Lane 4g + t reads rows g and g + 8 of its tile as one pair: index 2g and 2g + 1 of the group's 16 values; a
    // tile's groups are contiguous, tiles follow each other.
    const std::int64_t groups = 5;
    for (int r = 0; r < 8; ++r) {
        EXPECT_EQ(layout::int4_param_index(r, 0, groups), 2 * r);
        EXPECT_EQ(layout::int4_param_index(r + 8, 0, groups), 2 * r + 1);
        EXPECT_EQ(layout::int4_param_index(16 + r, 3, groups), (1 * groups + 3) * 16 + 2 * r);
    }
    EXPECT_EQ(layout::int4_param_index(0, 1, groups), 16);
}

TEST(QuantLinearPack, RejectsPlainWeightsOfTheWrongSize) {
    EXPECT_THROW(pack_int4_params(std::vector<std::uint8_t>(10), 4, 128, 128), Error);  // 1 group x 4 rows
    EXPECT_THROW(pack_int4_params(std::vector<std::uint8_t>(4), 4, 128, 0), Error);
    EXPECT_THROW(pack_int4(std::vector<std::uint8_t>(10), 4, 4), Error);
    EXPECT_THROW(pack_int8(std::vector<std::int8_t>(15), 4, 4), Error);
    EXPECT_THROW(unpack_int4(std::vector<std::uint8_t>(10), 4, 4), Error);
}

TEST(LinearInt4Op, DequantizesWithTheZeroPointAndScaleOfTheGroup) {
    // N = 1, K = 2, G = 64: w = (q - 1) * 0.5 with q = 3, 5; y = 1 * 1 + 2 * 2 = 5.
    const std::vector<std::uint8_t> plain{static_cast<std::uint8_t>(3 | (5 << 4))};
    const auto packed = pack_int4(plain, 1, 2);
    HostBuffers b{{"x", {1.0, 2.0}},
                  {"w", std::vector<double>(packed.begin(), packed.end())},
                  {"scales", pack_int4_params(std::vector<double>{0.5}, 1, 2, 64)},
                  {"zeros", pack_int4_params(std::vector<double>{1.0}, 1, 2, 64)}};
    cpu_reference(int4(), problem({{"M", 1}, {"N", 1}, {"K", 2}, {"G", 64}}), b);
    ASSERT_EQ(b["y"].size(), 1u);
    EXPECT_DOUBLE_EQ(b["y"][0], 5.0);
}

TEST(LinearInt4Op, ReferenceOnPackedWeightsEqualsTheReferenceOnPlainWeights) {
    const std::int64_t m = 3, n = 21, k = 200, g = 64;  // K = 3.125 groups, N not a multiple of 16
    const std::int64_t groups = layout::groups(k, g);
    const auto plain = random_int4_plain(n, k, 11);
    const auto packed = pack_int4(plain, n, k);
    const auto x = random_doubles(static_cast<std::size_t>(m * k), -1, 1, 1);
    const auto scale = random_doubles(static_cast<std::size_t>(groups * n), 0.005, 0.02, 2);
    const auto zero = random_doubles(static_cast<std::size_t>(groups * n), 0, 16, 3, true);
    HostBuffers b{{"x", x},
                  {"w", std::vector<double>(packed.begin(), packed.end())},
                  {"scales", pack_int4_params(scale, n, k, g)},
                  {"zeros", pack_int4_params(zero, n, k, g)}};
    cpu_reference(int4(), problem({{"M", m}, {"N", n}, {"K", k}, {"G", g}}), b);
    const auto expected = linear_int4_plain_reference(x, plain, scale, zero, m, n, k, g);
    ASSERT_EQ(b["y"].size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(b["y"][i], expected[i], 1e-12) << i;
}

TEST(LinearInt8Op, ReferenceOnPackedWeightsEqualsTheReferenceOnPlainWeights) {
    const std::int64_t m = 2, n = 19, k = 77;
    std::mt19937 gen(5);
    std::vector<std::int8_t> plain(static_cast<std::size_t>(n * k));
    for (auto& q : plain) q = static_cast<std::int8_t>(static_cast<int>(gen() % 256) - 128);
    const auto packed = pack_int8(plain, n, k);
    const auto x = random_doubles(static_cast<std::size_t>(m * k), -1, 1, 6);
    const auto scale = random_doubles(static_cast<std::size_t>(n), 0.0005, 0.002, 7);
    HostBuffers b{{"x", x}, {"w", std::vector<double>(packed.begin(), packed.end())}, {"scales", scale}};
    cpu_reference(int8(), problem({{"M", m}, {"N", n}, {"K", k}}), b);
    const auto expected = linear_int8_plain_reference(x, plain, scale, m, n, k);
    ASSERT_EQ(b["y"].size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(b["y"][i], expected[i], 1e-12) << i;
}

TEST(LinearInt8Op, MultipliesSignedWeightsByThePerChannelScale) {
    const std::vector<std::int8_t> plain{-3, 4, 100, -128};  // N = 2, K = 2
    const auto packed = pack_int8(plain, 2, 2);
    HostBuffers b{{"x", {1.0, 0.5}}, {"w", std::vector<double>(packed.begin(), packed.end())}, {"scales", {2.0, 0.25}}};
    cpu_reference(int8(), problem({{"M", 1}, {"N", 2}, {"K", 2}}), b);
    EXPECT_DOUBLE_EQ(b["y"][0], (-3.0 + 4.0 * 0.5) * 2.0);
    EXPECT_DOUBLE_EQ(b["y"][1], (100.0 - 128.0 * 0.5) * 0.25);
}

TEST(LinearInt4Op, HasPackedWeightsGroupScalesZeroPointsAndScratch) {
    const auto specs = int4().buffers(problem({{"M", 4}, {"N", 4100}, {"K", 4160}, {"G", 128}}));
    EXPECT_EQ(buffer(specs, "x").elements, 4 * 4160);
    EXPECT_EQ(buffer(specs, "w").type, ElemType::u8);
    EXPECT_EQ(buffer(specs, "w").elements, 4112 * 4160 / 2);  // N padded to 16, K a multiple of 64
    EXPECT_EQ(buffer(specs, "w").hi, 256.0);
    EXPECT_EQ(buffer(specs, "scales").elements, 33 * 4112);  // 32.5 groups round up, N padded to 16
    EXPECT_EQ(buffer(specs, "zeros").elements, 33 * 4112);
    EXPECT_EQ(buffer(specs, "zeros").type, ElemType::u8);
    EXPECT_EQ(buffer(specs, "zeros").hi, 16.0);
    EXPECT_EQ(buffer(specs, "y").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "scratch").elements, layout::scratch_floats(4, 4100));
}

TEST(LinearInt8Op, HasSignedPackedWeightsAndPerChannelScales) {
    const auto specs = int8().buffers(problem({{"M", 1}, {"N", 4096}, {"K", 4100}}, Dtype::fp16));
    EXPECT_EQ(buffer(specs, "w").type, ElemType::i8);
    EXPECT_EQ(buffer(specs, "w").elements, 4096ll * 4128);
    EXPECT_EQ(buffer(specs, "w").lo, -128.0);
    EXPECT_EQ(buffer(specs, "scales").elements, 4096);
    EXPECT_EQ(buffer(specs, "scales").type, ElemType::f16);
}

TEST(LinearInt4Op, PassesArgumentsInKernelOrder) {
    const auto args = int4().arguments(problem({{"M", 16}, {"N", 14336}, {"K", 4096}, {"G", 64}}));
    ASSERT_EQ(args.size(), 11u);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].buffer, "w");
    EXPECT_EQ(args[3].buffer, "scales");
    EXPECT_EQ(args[4].buffer, "zeros");
    EXPECT_EQ(args[5].buffer, "scratch");
    EXPECT_EQ(args[6].integer, 16);
    EXPECT_EQ(args[7].integer, 14336);
    EXPECT_EQ(args[8].integer, 4096);
    EXPECT_EQ(args[9].integer, 64);
    EXPECT_EQ(args[10].integer, layout::max_split_k(16, 14336));
}

TEST(LinearInt8Op, PassesArgumentsInKernelOrder) {
    const auto args = int8().arguments(problem({{"M", 1}, {"N", 4096}, {"K", 4096}}));
    ASSERT_EQ(args.size(), 9u);
    EXPECT_EQ(args[3].buffer, "scales");
    EXPECT_EQ(args[4].buffer, "scratch");
    EXPECT_EQ(args[8].integer, 16);
}

TEST(LinearInt4Op, CountsWeightsScalesZeroPointsXAndYAsBytesMoved) {
    const double n = 14336, k = 4096;
    const double expected = n * k / 2 + 32 * n * 3 + 1 * k * 2 + 1 * n * 2;
    EXPECT_DOUBLE_EQ(int4().bytes_moved(problem({{"M", 1}, {"N", 14336}, {"K", 4096}, {"G", 128}})), expected);
    EXPECT_DOUBLE_EQ(int8().bytes_moved(problem({{"M", 1}, {"N", 14336}, {"K", 4096}})), n * k + n * 2 + k * 2 + n * 2);
}

TEST(LinearInt4Op, RejectsGroupSizesThatAreNotMultiplesOf64AndBadAxes) {
    EXPECT_THROW(int4().buffers(problem({{"M", 1}, {"N", 64}, {"K", 64}, {"G", 96}})), Error);
    EXPECT_THROW(int4().buffers(problem({{"M", 5000}, {"N", 64}, {"K", 64}})), Error);
    EXPECT_THROW(int4().buffers(problem({{"M", 1}, {"N", 64}})), Error);
    EXPECT_THROW(int8().buffers(problem({{"M", 1}, {"N", 64}, {"K", 64}, {"G", 128}})), Error);  // no groups in INT8
    try {
        int4().arguments(problem({{"M", 1}, {"N", 0}, {"K", 64}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    }
}

// linear/fwd: the dense op the cuBLAS library baseline runs (core/library.cpp names its argument order).
TEST(LinearDenseOp, TakesYXWThenMNKAsTheCublasBaselineExpects) {
    const Problem p = problem({{"M", 3}, {"N", 5}, {"K", 7}}, Dtype::fp16);
    const auto args = dense().arguments(p);
    ASSERT_EQ(args.size(), 6u);
    EXPECT_EQ(args[0].buffer, "y");
    EXPECT_EQ(args[1].buffer, "x");
    EXPECT_EQ(args[2].buffer, "w");
    EXPECT_EQ(args[3].integer, 3);
    EXPECT_EQ(args[4].integer, 5);
    EXPECT_EQ(args[5].integer, 7);
    const auto specs = dense().buffers(p);
    EXPECT_EQ(buffer(specs, "w").elements, 35);
    EXPECT_EQ(buffer(specs, "w").type, ElemType::f16);
    EXPECT_EQ(buffer(specs, "y").role, BufferRole::output);
    EXPECT_EQ(specs.size(), 3u);  // no scales, no scratch
    // Every weight in T (2 bytes), x and y once.
    EXPECT_DOUBLE_EQ(dense().bytes_moved(p), 5.0 * 7 * 2 + 3.0 * 7 * 2 + 3.0 * 5 * 2);
}

TEST(LinearDenseOp, TakesPrefillSizesAsCublasDoesAndRefusesIndexOverflow) {
    EXPECT_NO_THROW(dense().buffers(problem({{"M", 8192}, {"N", 14336}, {"K", 4096}})));
    EXPECT_NO_THROW(dense().buffers(problem({{"M", 65536}, {"N", 4096}, {"K", 4096}})));
    EXPECT_THROW(dense().buffers(problem({{"M", 1 << 20}, {"N", 14336}, {"K", 4096}})), Error);  // M N > 2^32
    EXPECT_THROW(dense().buffers(problem({{"M", 1ll << 31}, {"N", 1}, {"K", 1}})), Error);
}

TEST(LinearDenseOp, CpuReferenceIsThePlainProduct) {
    const Problem p = problem({{"M", 2}, {"N", 3}, {"K", 4}});
    HostBuffers b;
    b["x"] = random_doubles(8, -1, 1, 3);
    b["w"] = random_doubles(12, -1, 1, 4);
    cpu_reference(dense(), p, b);
    ASSERT_EQ(b["y"].size(), 6u);
    for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 3; ++n) {
            double expected = 0;
            for (int k = 0; k < 4; ++k) expected += b["x"][std::size_t(m * 4 + k)] * b["w"][std::size_t(n * 4 + k)];
            EXPECT_DOUBLE_EQ(b["y"][std::size_t(m * 3 + n)], expected) << m << "," << n;
        }
}

TEST(QuantLinearLayout, BoundsSplitKSoThatPartialsFitIn64MiB) {
    EXPECT_EQ(layout::max_split_k(1, 4096), 16);
    EXPECT_EQ(layout::max_split_k(64, 14336), 16);
    EXPECT_EQ(layout::max_split_k(64, 128256), 2);
    EXPECT_EQ(layout::counter_words(1, 4100), 260);  // 257 tiles, one m block, rounded to 4
}

}  // namespace
}  // namespace ktune
