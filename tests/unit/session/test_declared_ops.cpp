// The built-in ops as the search spaces declare them (kernels/<op>/*.op.yaml): every op has one declaration, shared
// by its spaces, and a CPU reference; each refuses the shapes its kernels cannot take; and the sizes some of them
// repeat from a layout header the kernels use (scratch buffers, packed weights, split bounds) agree with it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/attention/decode_attention_layout.cuh"
#include "kernels/op.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"
#include "kernels/rmsnorm/rmsnorm_bwd_layout.cuh"
#include "ktune_test_config.hpp"
#include "tuner/session/op_lookup.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

std::vector<SearchSpace> load_spaces() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(KTUNE_SOURCE_ROOT) / "search_spaces"))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    // One space per file: the alternative kernels of a file share its op and problems.
    std::vector<SearchSpace> out;
    for (const fs::path& f : files) out.push_back(std::move(SearchSpace::load_alternatives(f.string()).front()));
    return out;
}

const std::vector<SearchSpace>& spaces() {
    static const std::vector<SearchSpace> s = load_spaces();
    return s;
}

std::string key_of(const OpDescription& op) { return fmt::format("{}/{}", op.name(), op.variant()); }

const DeclaredOp& builtin(std::string_view name, std::string_view variant) {
    for (const auto& op : builtin_ops(KTUNE_SOURCE_ROOT))
        if (op->name() == name && op->variant() == variant) return *op;
    throw Error(ErrorCategory::bad_input, fmt::format("no built-in op {}/{}", name, variant), "test");
}

Problem with_axis(Problem p, const std::string& axis, std::int64_t value) {
    for (auto& [name, v] : p.shape)
        if (name == axis) {
            v = value;
            return p;
        }
    p.shape.emplace_back(axis, value);
    return p;
}

Problem without_axis(Problem p, const std::string& axis) {
    std::erase_if(p.shape, [&](const auto& a) { return a.first == axis; });
    return p;
}

TEST(DeclaredOps, EveryBuiltInOpIsDeclaredOnceTunedByASpaceAndHasACpuReference) {
    std::set<std::string> builtins, tuned, referenced;
    for (const auto& op : builtin_ops(KTUNE_SOURCE_ROOT)) builtins.insert(key_of(*op));
    for (const SearchSpace& s : spaces()) {
        ASSERT_NE(s.declared_op(), nullptr) << s.file() << " declares no op";
        tuned.insert(key_of(*s.declared_op()));
    }
    for (const CpuReference& r : cpu_references()) referenced.insert(fmt::format("{}/{}", r.op, r.variant));
    EXPECT_GE(builtins.size(), 29u);  // at least the ops of this writing; the sets below must be the same
    EXPECT_EQ(tuned, builtins);
    EXPECT_EQ(referenced, builtins);
}

TEST(DeclaredOps, EverySpaceUsesTheBuiltInDeclarationOfItsOp) {
    for (const SearchSpace& s : spaces()) {
        const DeclaredOp& op = *s.declared_op();
        EXPECT_EQ(op.where(), builtin(op.name(), op.variant()).where()) << s.file();
    }
}

TEST(DeclaredOps, EveryProblemOfEverySpaceIsTakenByItsOp) {
    for (const SearchSpace& s : spaces())
        for (const Problem& p : s.problems()) {
            EXPECT_NO_THROW(s.declared_op()->buffers(p)) << s.file() << " " << p.key();
            EXPECT_NO_THROW(s.declared_op()->arguments(p)) << s.file() << " " << p.key();
            EXPECT_GT(s.declared_op()->bytes_moved(p), 0) << s.file() << " " << p.key();
        }
}

// A shape the op refuses in every method.
void expect_refused(const SearchSpace& s, const Problem& problem, const std::string& what) {
    SCOPED_TRACE(fmt::format("{} {}: {}", s.file(), what, problem.key()));
    const DeclaredOp& op = *s.declared_op();
    EXPECT_THROW(op.buffers(problem), Error);
    EXPECT_THROW(op.arguments(problem), Error);
    EXPECT_THROW(op.bytes_moved(problem), Error);
}

TEST(DeclaredOps, EveryOpRefusesAZeroOrHugeSizeOnEveryRequiredAxis) {
    for (const SearchSpace& s : spaces())
        for (const OpAxis& axis : s.declared_op()->axes())
            if (!axis.default_value)
                for (std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1} << 62})
                    expect_refused(s, with_axis(s.problems().front(), axis.name, v),
                                   fmt::format("{}={}", axis.name, v));
}

TEST(DeclaredOps, EveryOpRefusesAProblemMissingARequiredAxisOrWithAnUnknownOne) {
    for (const SearchSpace& s : spaces()) {
        for (const OpAxis& axis : s.declared_op()->axes())
            if (!axis.default_value)
                expect_refused(s, without_axis(s.problems().front(), axis.name), "no " + axis.name);
        expect_refused(s, with_axis(s.problems().front(), "Q", 4), "unknown axis Q");
    }
}

TEST(DeclaredOps, EveryStrideShorterThanItsRowIsRefused) {
    int checked = 0;
    for (const SearchSpace& s : spaces()) {
        const DeclaredOp& op = *s.declared_op();
        for (const char* stride : {"S", "SO", "SQ", "SK", "SV"})
            if (op.has_axis(stride)) {
                const Problem base = s.problems().front();
                const std::int64_t row = *lookup(op.resolved(base).shape, stride);
                expect_refused(s, with_axis(base, stride, row - 1), std::string(stride) + " below the row");
                ++checked;
            }
    }
    EXPECT_GE(checked, 20);
}

std::int64_t elements(const DeclaredOp& op, const Problem& p, const std::string& buffer) {
    for (const BufferSpec& b : op.buffers(p))
        if (b.name == buffer) return b.elements;
    throw Error(ErrorCategory::bad_input, "no buffer " + buffer, key_of(op));
}

std::int64_t last_argument(const DeclaredOp& op, const Problem& p) { return op.arguments(p).back().integer; }

const std::vector<std::int64_t> sizes = {1,   2,    3,    7,    8,    9,    15,   16,   17,    63,
                                         64,  65,   127,  128,  129,  255,  256,  257,  511,   512,
                                         513, 1000, 1024, 2048, 4095, 4096, 4100, 8192, 14336, 32768};

TEST(DeclaredOps, RmsNormBackwardSizesItsScratchAsTheLayoutDoes) {
    const DeclaredOp& op = builtin("rmsnorm", "bwd");
    for (std::int64_t m : sizes)
        for (std::int64_t h : sizes)
            EXPECT_EQ(elements(op, Problem{Dtype::bf16, {{"M", m}, {"H", h}}}, "scratch"),
                      rmsnorm_bwd_layout::dw_scratch_floats(m, h))
                << "M=" << m << " H=" << h;
}

TEST(DeclaredOps, DecodeAttentionSizesItsScratchAndSplitsAsTheLayoutDoes) {
    const DeclaredOp& op = builtin("decode_attention", "fwd");
    for (std::int64_t b : {1, 2, 3, 7, 8, 64, 65, 1000, 8192, 65535})
        for (std::int64_t hk : {1, 2, 3, 8})
            for (std::int64_t group : {1, 4, 8})
                for (std::int64_t d : {1, 64, 100, 128, 256}) {
                    const Problem p{Dtype::fp16, {{"B", b}, {"L", 16}, {"HQ", hk * group}, {"HK", hk}, {"D", d}}};
                    EXPECT_EQ(elements(op, p, "scratch"), decode_attention_layout::scratch_floats(b, hk, group, d))
                        << p.key();
                    EXPECT_EQ(last_argument(op, p), decode_attention_layout::max_splits(b, hk)) << p.key();
                }
}

TEST(DeclaredOps, QuantizedLinearsSizeTheirPackedWeightsAndScratchAsTheLayoutDoes) {
    namespace layout = quant_linear_layout;
    const DeclaredOp& int4 = builtin("linear_int4", "fwd");
    const DeclaredOp& int8 = builtin("linear_int8", "fwd");
    for (std::int64_t m : {1, 3, 4, 8, 9, 16, 64, 4096})
        for (std::int64_t n : sizes)
            for (std::int64_t k : {1, 31, 32, 33, 63, 64, 65, 4096, 4100, 4160, 14336}) {
                const Problem p8{Dtype::bf16, {{"M", m}, {"N", n}, {"K", k}}};
                EXPECT_EQ(elements(int8, p8, "w"), layout::int8_weight_bytes(n, k)) << p8.key();
                EXPECT_EQ(elements(int8, p8, "scratch"), layout::scratch_floats(m, n)) << p8.key();
                EXPECT_EQ(last_argument(int8, p8), layout::max_split_k(m, n)) << p8.key();
                for (std::int64_t g : {64, 128, 192}) {
                    const Problem p4{Dtype::fp16, {{"M", m}, {"N", n}, {"K", k}, {"G", g}}};
                    EXPECT_EQ(elements(int4, p4, "w"), layout::int4_weight_bytes(n, k)) << p4.key();
                    EXPECT_EQ(elements(int4, p4, "scales"), layout::int4_params(n, k, g)) << p4.key();
                    EXPECT_EQ(elements(int4, p4, "scratch"), layout::scratch_floats(m, n)) << p4.key();
                    EXPECT_EQ(last_argument(int4, p4), layout::max_split_k(m, n)) << p4.key();
                }
            }
}

TEST(DeclaredOps, DenseSkinnyLinearSizesItsScratchAsTheQuantizedLayoutDoes) {
    namespace layout = quant_linear_layout;
    const DeclaredOp& op = builtin("linear_skinny", "fwd");
    for (std::int64_t m : {1, 3, 4, 8, 9, 16, 32, 63, 64})
        for (std::int64_t n : sizes)
            for (std::int64_t k : {1, 7, 31, 32, 33, 4096, 4100, 14336}) {
                const Problem p{Dtype::bf16, {{"M", m}, {"N", n}, {"K", k}}};
                EXPECT_EQ(elements(op, p, "w"), n * k) << p.key();
                EXPECT_EQ(elements(op, p, "scratch"), layout::scratch_floats(m, n)) << p.key();
                EXPECT_EQ(last_argument(op, p), layout::max_split_k(m, n)) << p.key();
            }
}

TEST(OpOf, ASpaceWithoutAnOpSpecTakesTheBuiltInOpOfItsName) {
    const SearchSpace s = SearchSpace::load_file(std::string(KTUNE_TEST_DATA) + "/cli/spaces/no_valid_config.yaml");
    ASSERT_EQ(s.declared_op(), nullptr);
    EXPECT_EQ(op_of(s).summary(), builtin("rmsnorm", "fwd").summary());
}

TEST(OpOf, AnOpNeitherDeclaredNorBuiltInIsRefusedNamingTheKnownOnes) {
    const SearchSpace s = SearchSpace::load_file(std::string(KTUNE_TEST_DATA) + "/cli/spaces/unregistered_op.yaml");
    try {
        op_of(s);
        FAIL() << "an unknown op was found";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(),
                    ::testing::AllOf(::testing::HasSubstr("unknown op nosuchop/fwd"),
                                     ::testing::HasSubstr("rmsnorm/fwd"), ::testing::HasSubstr("op_spec")));
        EXPECT_THAT(e.where(), ::testing::HasSubstr("unregistered_op.yaml: op"));
    }
}

TEST(OpFlops, ComeFromTheBuiltInDeclaration) {
    EXPECT_EQ(op_flops(KTUNE_SOURCE_ROOT, "rmsnorm", "fwd", Problem{Dtype::bf16, {{"M", 2}, {"H", 8}}}), 4.0 * 2 * 8);
    EXPECT_EQ(op_flops(KTUNE_SOURCE_ROOT, "nosuchop", "fwd", Problem{Dtype::bf16, {{"M", 2}}}), 0.0);
}

}  // namespace
}  // namespace ktune
