#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "tuner/space/op_spec.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A space around an inline op spec: a strided row op with an optional axis S (default H).
std::string space_with(const std::string& op_spec, const std::string& axes = "{M: [1, 16], H: [256]}") {
    return "op: scaled_row\n"
           "variant: fwd\n"
           "op_spec:\n" +
           op_spec +
           "kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\", reference: \"r<{T}>\"}\n"
           "parameters:\n  BLOCK: {values: [64, 128]}\n"
           "launch: {grid: [\"M\"], block: [\"BLOCK\"], shared_bytes: \"S * 0\"}\n"
           "reference_launch: {grid: [\"M\"], block: [\"64\"]}\n"
           "problems: {axes: " +
           axes +
           ", dtypes: [bf16]}\n"
           "tolerances: {bf16: {rtol: 1e-2, atol: 1e-2}}\n";
}

const std::string good_spec =
    "  summary: \"y = x * s over M rows of H\"\n"
    "  axes:\n"
    "    M: {doc: rows}\n"
    "    H: {doc: columns}\n"
    "    S: {default: \"H\", doc: row stride}\n"
    "  checks:\n"
    "    - {require: \"S >= H\", message: \"the row stride S is smaller than H\"}\n"
    "  buffers:\n"
    "    x: {type: T, count: \"M * S\", role: input, range: [-2, 2]}\n"
    "    scale: {type: {fp32: f32, bf16: f32}, shape: [\"H\"], role: input}\n"
    "    y: {type: T, shape: [\"M\", \"H\"], strides: [\"S\", \"1\"], role: output}\n"
    "  arguments: [y, x, scale, {i32: \"M\"}, {i32: \"H\"}, {i64: \"S\"}, {f32: \"0.5\"}]\n"
    "  bytes: \"2 * M * H * DTYPE_BYTES + H * 4\"\n"
    "  flops: \"M * H\"\n";

SearchSpace load(const std::string& yaml) { return SearchSpace::load_string(yaml, "test.yaml"); }

std::string load_error(const std::string& yaml) {
    try {
        load(yaml);
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        return e.where() + ": " + e.message();
    }
    ADD_FAILURE() << "the space loaded";
    return "";
}

Problem bf16(std::int64_t m, std::int64_t h) { return Problem{Dtype::bf16, {{"M", m}, {"H", h}}}; }

TEST(OpSpec, ASpaceWithAnInlineOpSpecDeclaresItsOp) {
    const SearchSpace s = load(space_with(good_spec));
    ASSERT_NE(s.declared_op(), nullptr);
    EXPECT_EQ(s.declared_op()->name(), "scaled_row");
    EXPECT_EQ(s.declared_op()->variant(), "fwd");
    EXPECT_EQ(s.declared_op()->summary(), "y = x * s over M rows of H");
}

TEST(OpSpec, BuffersTakeTheirTypesAndSizesFromTheProblem) {
    const SearchSpace s = load(space_with(good_spec));
    const std::vector<BufferSpec> b = s.declared_op()->buffers(bf16(16, 256));
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].name, "x");
    EXPECT_EQ(b[0].type, ElemType::bf16);
    EXPECT_EQ(b[0].elements, 16 * 256);
    EXPECT_EQ(b[0].role, BufferRole::input);
    EXPECT_EQ(b[0].lo, -2.0);
    EXPECT_EQ(b[0].hi, 2.0);
    EXPECT_EQ(b[1].type, ElemType::f32);  // the per-dtype mapping
    EXPECT_EQ(b[1].elements, 256);
    EXPECT_EQ(b[1].lo, -1.0);  // the default range
    EXPECT_EQ(b[2].role, BufferRole::output);
}

TEST(OpSpec, AStridedBufferSpansFromItsFirstElementToItsLast) {
    const SearchSpace s = load(space_with(good_spec));
    Problem p = bf16(4, 100);
    p.shape.emplace_back("S", 128);
    const std::vector<BufferSpec> b = s.declared_op()->buffers(p);
    EXPECT_EQ(b[0].elements, 4 * 128);
    EXPECT_EQ(b[2].elements, 3 * 128 + 100);
}

TEST(OpSpec, ArgumentsAreBuffersAndTypedScalarsInOrder) {
    const SearchSpace s = load(space_with(good_spec));
    const std::vector<KernelArg> a = s.declared_op()->arguments(bf16(16, 256));
    ASSERT_EQ(a.size(), 7u);
    EXPECT_EQ(a[0].kind, KernelArg::Kind::buffer);
    EXPECT_EQ(a[0].buffer, "y");
    EXPECT_EQ(a[3].kind, KernelArg::Kind::i32);
    EXPECT_EQ(a[3].integer, 16);
    EXPECT_EQ(a[5].kind, KernelArg::Kind::i64);
    EXPECT_EQ(a[5].integer, 256);  // S at its default, H
    EXPECT_EQ(a[6].kind, KernelArg::Kind::f32);
    EXPECT_EQ(a[6].real, 0.5);
}

TEST(OpSpec, BytesAndFlopsAreExpressionsOverTheAxes) {
    const SearchSpace s = load(space_with(good_spec));
    EXPECT_EQ(s.declared_op()->bytes_moved(bf16(16, 256)), 2.0 * 16 * 256 * 2 + 256 * 4);
    EXPECT_EQ(s.declared_op()->flops(bf16(16, 256)), 16.0 * 256);
}

TEST(OpSpec, AFailedCheckRefusesTheShapeWithItsMessage) {
    const SearchSpace s = load(space_with(good_spec));
    Problem p = bf16(4, 100);
    p.shape.emplace_back("S", 50);
    try {
        s.declared_op()->buffers(p);
        FAIL() << "S < H was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), HasSubstr("the row stride S is smaller than H"));
        EXPECT_THAT(e.where(), HasSubstr("S=50"));
    }
}

TEST(OpSpec, AnAxisTheOpDoesNotHaveIsRefusedNamingTheAxes) {
    const SearchSpace s = load(space_with(good_spec));
    Problem p = bf16(4, 100);
    p.shape.emplace_back("Q", 3);
    try {
        s.declared_op()->buffers(p);
        FAIL() << "an unknown axis was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), AllOf(HasSubstr("unknown axis Q"), HasSubstr("optionally S")));
    }
}

TEST(OpSpec, LaunchExpressionsSeeOptionalAxesAtTheirDefaults) {
    const SearchSpace s = load(space_with(good_spec));
    EXPECT_EQ(s.launch(Config{{{"BLOCK", 64}}}, bf16(16, 256), SearchSpace::nominal_sm_count).grid[0], 16u);
}

TEST(OpSpec, ACppOpHasNoDeclaredOp) {
    const SearchSpace s = load(
        "op: t\nkernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\", reference: \"r<{T}>\"}\n"
        "parameters:\n  BLOCK: {values: [32]}\nlaunch: {grid: [\"M\"], block: [\"32\"]}\n"
        "problems: {axes: {M: [1]}, dtypes: [fp16]}\ntolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n");
    EXPECT_EQ(s.declared_op(), nullptr);
}

std::string with_line_replaced(const std::string& spec, const std::string& from, const std::string& to) {
    std::string s = spec;
    const std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
}

// A gathered row op: lets derive sizes and a scale, a range reads the axes.
const std::string let_spec =
    "  axes:\n"
    "    M: {doc: rows}\n"
    "    H: {doc: columns}\n"
    "    S: {default: \"H\"}\n"
    "  checks:\n"
    "    - {require: \"H >= 1\", message: \"H must be at least 1\"}\n"
    "  let:\n"
    "    HALF: \"ceil_div(H, 2)\"\n"
    "    WORDS: \"align_up(HALF, 4)\"\n"
    "    ROOT_H: {sqrt: \"H\"}\n"
    "  buffers:\n"
    "    idx: {type: i32, count: \"M\", role: input, range: [\"M == 1 ? H : 0\", \"H\"]}\n"
    "    y: {type: T, count: \"M * WORDS\", role: output}\n"
    "  arguments: [y, idx, idx, {i32: \"HALF\"}, {f32: \"1 / ROOT_H\"}]\n"
    "  bytes: \"M * WORDS * DTYPE_BYTES\"\n"
    "  flops: \"M * HALF\"\n";

TEST(OpSpecLet, LetsAreSeenByBuffersArgumentsBytesAndFlops) {
    const SearchSpace s = load(space_with(let_spec));
    const DeclaredOp& op = *s.declared_op();
    const Problem p = bf16(3, 9);  // HALF 5, WORDS 8
    EXPECT_EQ(op.buffers(p).at(1).elements, 3 * 8);
    const std::vector<KernelArg> a = op.arguments(p);
    ASSERT_EQ(a.size(), 5u);
    EXPECT_EQ(a[2].buffer, "idx");  // a buffer may be passed twice
    EXPECT_EQ(a[3].integer, 5);
    EXPECT_EQ(a[4].real, 1.0 / 3.0);
    EXPECT_EQ(op.bytes_moved(p), 3.0 * 8 * 2);
    EXPECT_EQ(op.flops(p), 3.0 * 5);
}

TEST(OpSpecLet, ASquareRootLetIsTheDoubleSquareRoot) {
    const SearchSpace s = load(space_with(let_spec));
    EXPECT_EQ(s.declared_op()->arguments(bf16(1, 128)).at(4).real, 1.0 / std::sqrt(128.0));
}

TEST(OpSpecLet, ARangeMayReadTheAxesAndBeASingleValue) {
    const SearchSpace s = load(space_with(let_spec));
    const BufferSpec one = s.declared_op()->buffers(bf16(1, 64)).at(0);
    EXPECT_EQ(one.lo, 64.0);
    EXPECT_EQ(one.hi, 64.0);
    const BufferSpec many = s.declared_op()->buffers(bf16(4, 64)).at(0);
    EXPECT_EQ(many.lo, 0.0);
    EXPECT_EQ(many.hi, 64.0);
}

TEST(OpSpecLet, ARangeWhoseLowBoundIsAboveItsHighOneAtAProblemIsRefused) {
    const std::string spec = with_line_replaced(let_spec, "[\"M == 1 ? H : 0\", \"H\"]", "[\"M\", \"H\"]");
    const SearchSpace s = load(space_with(spec));
    try {
        s.declared_op()->buffers(bf16(16, 8));
        FAIL() << "a range [16, 8] was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), AllOf(HasSubstr("buffer idx"), HasSubstr("lo is above hi")));
    }
}

TEST(OpSpecLet, AConstantRangeWithItsBoundsReversedIsRefusedAtLoad) {
    const std::string spec = with_line_replaced(let_spec, "[\"M == 1 ? H : 0\", \"H\"]", "[2, 1]");
    EXPECT_THAT(load_error(space_with(spec)),
                AllOf(HasSubstr("op_spec.buffers.idx.range"), HasSubstr("lo is above hi")));
}

TEST(OpSpecLet, ALetMayNotShadowAnAxis) {
    const std::string spec = with_line_replaced(let_spec, "HALF: \"ceil_div(H, 2)\"", "S: \"H\"");
    EXPECT_THAT(load_error(space_with(spec)), AllOf(HasSubstr("op_spec.let.S"), HasSubstr("is an axis")));
}

TEST(OpSpecLet, ALetReadsOnlyTheAxesAndTheLetsBeforeIt) {
    const std::string spec = with_line_replaced(let_spec, "HALF: \"ceil_div(H, 2)\"", "HALF: \"WORDS / 2\"");
    EXPECT_THAT(load_error(space_with(spec)), AllOf(HasSubstr("op_spec.let.HALF"), HasSubstr("reads 'WORDS'")));
}

TEST(OpSpecLet, ACheckCannotReadALet) {
    const std::string spec = with_line_replaced(let_spec, "require: \"H >= 1\"", "require: \"HALF >= 1\"");
    EXPECT_THAT(load_error(space_with(spec)), AllOf(HasSubstr("op_spec.checks[0].require"), HasSubstr("reads 'HALF'")));
}

TEST(OpSpecLet, TheLetsAreNotTheSearchSpacesVariables) {
    const SearchSpace s = load(space_with(let_spec));
    EXPECT_EQ(s.declared_op()->variables(bf16(1, 8)).count("HALF"), 0u);
}

TEST(OpSpecResolved, TheResolvedProblemHasEveryAxisWithItsDefault) {
    const SearchSpace s = load(space_with(good_spec));
    const Problem r = s.declared_op()->resolved(bf16(2, 100));
    EXPECT_EQ(r.dtype, Dtype::bf16);
    EXPECT_EQ(lookup(r.shape, "M"), 2);
    EXPECT_EQ(lookup(r.shape, "H"), 100);
    EXPECT_EQ(lookup(r.shape, "S"), 100);
}

TEST(OpSpecResolved, AProblemFailingACheckHasNoResolvedShape) {
    const SearchSpace s = load(space_with(good_spec));
    Problem p = bf16(4, 100);
    p.shape.emplace_back("S", 50);
    EXPECT_THROW(s.declared_op()->resolved(p), Error);
}

// Bad specs: each message names the file, the line and the field.
TEST(OpSpecErrors, AnUnknownBufferInTheArgumentsIsNamedWithItsLine) {
    const std::string e = load_error(space_with(with_line_replaced(good_spec, "[y, x, scale,", "[y, x, scales,")));
    EXPECT_THAT(e, AllOf(HasSubstr("test.yaml:15: op_spec.arguments[2]"), HasSubstr("unknown buffer 'scales'"),
                         HasSubstr("buffers: x, scale, y")));
}

TEST(OpSpecErrors, AShapeExpressionNamingAnUnknownAxisIsRefused) {
    const std::string e = load_error(space_with(with_line_replaced(good_spec, "count: \"M * S\"", "count: \"M * W\"")));
    EXPECT_THAT(e, AllOf(HasSubstr("test.yaml:12: op_spec.buffers.x.count"), HasSubstr("reads 'W'"),
                         HasSubstr("axes: M, H, S")));
}

TEST(OpSpecErrors, ABufferPassedAsAScalarIsATypeMismatch) {
    const std::string e = load_error(space_with(with_line_replaced(good_spec, "{i32: \"M\"}", "{i32: x}")));
    EXPECT_THAT(e, AllOf(HasSubstr("op_spec.arguments[3].i32"), HasSubstr("'x' is a buffer, not a i32 scalar")));
}

TEST(OpSpecErrors, AnUnknownElementTypeIsRefused) {
    const std::string e = load_error(space_with(with_line_replaced(good_spec, "x: {type: T,", "x: {type: float,")));
    EXPECT_THAT(e, AllOf(HasSubstr("op_spec.buffers.x.type"), HasSubstr("unknown element type 'float'")));
}

TEST(OpSpecErrors, AxisDefaultsThatFormACycleAreRefused) {
    const std::string spec = with_line_replaced(good_spec, "H: {doc: columns}", "H: {default: \"S\"}");
    const std::string e = load_error(space_with(spec, "{M: [1]}"));
    EXPECT_THAT(e, AllOf(HasSubstr("op_spec.axes"), HasSubstr("cycle"), HasSubstr("H -> S -> H")));
}

TEST(OpSpecErrors, ABufferNeverPassedToTheKernelIsRefused) {
    const std::string spec = with_line_replaced(good_spec, "[y, x, scale,", "[y, x,");
    EXPECT_THAT(load_error(space_with(spec)), AllOf(HasSubstr("op_spec.buffers.scale"), HasSubstr("never passed")));
}

TEST(OpSpecErrors, AnOpWithoutAnOutputIsRefused) {
    const std::string spec = with_line_replaced(good_spec, "role: output}", "role: input}");
    EXPECT_THAT(load_error(space_with(spec)), HasSubstr("needs an output or inout buffer"));
}

TEST(OpSpecErrors, AProblemAxisTheOpDoesNotDeclareIsRefused) {
    EXPECT_THAT(load_error(space_with(good_spec, "{M: [1], H: [8], K: [2]}")),
                AllOf(HasSubstr("op_spec"), HasSubstr("problems.axes has K")));
}

TEST(OpSpecErrors, ARequiredAxisMissingFromTheProblemsIsRefused) {
    EXPECT_THAT(load_error(space_with(good_spec, "{M: [1]}")), HasSubstr("needs axis H, which problems.axes lacks"));
}

TEST(OpSpecErrors, AMissingReferenceIsRefused) {
    std::string yaml = space_with(good_spec);
    yaml = with_line_replaced(yaml, ", reference: \"r<{T}>\"", "");
    EXPECT_THAT(load_error(yaml), HasSubstr("reference"));
}

// A padded batch: q token-major ([B, L, H, 8]), k head-major ([B, H, L, 8], four elements more), one length per
// sequence in lens.
const std::string pad_spec =
    "  axes:\n"
    "    B: {doc: sequences}\n"
    "    L: {doc: tokens}\n"
    "    H: {doc: heads}\n"
    "  let:\n"
    "    ROW: \"H * 8\"\n"
    "  buffers:\n"
    "    q: {type: T, count: \"B * L * H * 8\", role: input,\n"
    "        pad: {lengths: lens, tokens: \"L\", token_elements: \"ROW\"}}\n"
    "    k: {type: {fp32: f32, bf16: f16}, count: \"B * H * L * 8 + 4\", role: inout,\n"
    "        pad: {lengths: lens, heads: \"H\", tokens: \"L\", token_elements: \"8\"}}\n"
    "    lens: {type: i32, count: \"B\", role: input, range: [1, \"L + 1\"]}\n"
    "    o: {type: T, count: \"B * L * H * 8\", role: output}\n"
    "  arguments: [o, q, k, lens]\n"
    "  bytes: \"B * L * H * 8\"\n";

std::string padded_space(const std::string& op_spec) {
    return "op: padded\n"
           "variant: fwd\n"
           "op_spec:\n" +
           op_spec +
           "kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\", reference: \"r<{T}>\"}\n"
           "parameters:\n  BLOCK: {values: [64]}\n"
           "launch: {grid: [\"B\"], block: [\"BLOCK\"]}\n"
           "reference_launch: {grid: [\"B\"], block: [\"64\"]}\n"
           "problems: {axes: {B: [2], L: [16], H: [4]}, dtypes: [bf16]}\n"
           "tolerances: {bf16: {rtol: 1e-2, atol: 1e-2}}\n";
}

Problem padded(std::int64_t b, std::int64_t l, std::int64_t h) {
    return Problem{Dtype::bf16, {{"B", b}, {"L", l}, {"H", h}}};
}

TEST(OpSpecPad, APaddedBufferCarriesItsLayoutAndItsLengthsAtAProblem) {
    const SearchSpace s = load(padded_space(pad_spec));
    const std::vector<BufferSpec> b = s.declared_op()->buffers(padded(3, 16, 4));
    ASSERT_EQ(b.size(), 4u);
    ASSERT_TRUE(b[0].pad.has_value());
    EXPECT_EQ(b[0].pad->lengths, "lens");
    EXPECT_EQ(b[0].pad->sequences, 3);  // lens's elements
    EXPECT_EQ(b[0].pad->heads, 1);      // the default
    EXPECT_EQ(b[0].pad->tokens, 16);
    EXPECT_EQ(b[0].pad->token_elements, 4 * 8);  // a let
    ASSERT_TRUE(b[1].pad.has_value());
    EXPECT_EQ(b[1].pad->heads, 4);
    EXPECT_EQ(b[1].pad->tokens, 16);
    EXPECT_EQ(b[1].pad->token_elements, 8);
    EXPECT_FALSE(b[2].pad.has_value());
    EXPECT_FALSE(b[3].pad.has_value());
}

TEST(OpSpecPad, TheDeclarationKeepsThePadsExpressions) {
    const SearchSpace s = load(padded_space(pad_spec));
    const std::vector<DeclaredOp::BufferDeclaration> d = s.declared_op()->buffer_declarations();
    EXPECT_EQ(d[0].pad_lengths, "lens");
    EXPECT_EQ(d[0].pad_heads, "1");
    EXPECT_EQ(d[0].pad_tokens, "L");
    EXPECT_EQ(d[0].pad_token_elements, "ROW");
    EXPECT_EQ(d[1].pad_heads, "H");
    EXPECT_EQ(d[2].pad_lengths, "");
}

TEST(OpSpecPad, APadCoveringMoreThanItsBufferIsRefusedAtAProblem) {
    const std::string spec = with_line_replaced(pad_spec, "count: \"B * L * H * 8\", role: input",
                                                "count: \"B * L * H * 8 - 1\", role: input");
    const SearchSpace s = load(padded_space(spec));
    try {
        s.declared_op()->buffers(padded(2, 16, 4));
        FAIL() << "a pad of 1024 elements over 1023 was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.where(), HasSubstr("test.yaml:12: op_spec.buffers.q.pad"));
        EXPECT_THAT(e.message(), AllOf(HasSubstr("buffer q's pad covers 2 sequences (lens's elements) x 1 heads x 16 "
                                                 "tokens x 32 token_elements = 1024 elements"),
                                       HasSubstr("more than the buffer's 1023")));
    }
}

TEST(OpSpecPad, APadOfNegativeTokensIsRefusedAtAProblem) {
    const SearchSpace s = load(padded_space(with_line_replaced(pad_spec, "tokens: \"L\", token_elements: \"ROW\"",
                                                               "tokens: \"L - 20\", token_elements: \"ROW\"")));
    try {
        s.declared_op()->buffers(padded(2, 16, 4));
        FAIL() << "a pad of -4 tokens was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), AllOf(HasSubstr("buffer q's pad has 1 heads, -4 tokens"), HasSubstr("negative")));
    }
}

TEST(OpSpecPadErrors, AnUnknownLengthsBufferIsNamedWithTheBuffers) {
    const std::string spec = with_line_replaced(pad_spec, "pad: {lengths: lens, tokens", "pad: {lengths: len, tokens");
    EXPECT_THAT(load_error(padded_space(spec)),
                AllOf(HasSubstr("test.yaml:12: op_spec.buffers.q.pad.lengths"),
                      HasSubstr("padded by the lengths in 'len', which is not a buffer of the op"),
                      HasSubstr("buffers: q, k, lens, o")));
}

TEST(OpSpecPadErrors, LengthsThatAreNotAnI32InputAreRefused) {
    const std::string i64 = with_line_replaced(pad_spec, "lens: {type: i32", "lens: {type: i64");
    EXPECT_THAT(load_error(padded_space(i64)), AllOf(HasSubstr("op_spec.buffers.q.pad.lengths"),
                                                     HasSubstr("must be an i32 input"), HasSubstr("it is i64 input")));
    const std::string inout = with_line_replaced(pad_spec, "count: \"B\", role: input", "count: \"B\", role: inout");
    EXPECT_THAT(load_error(padded_space(inout)),
                AllOf(HasSubstr("must be an i32 input"), HasSubstr("it is i32 inout")));
    const std::string output = with_line_replaced(pad_spec, "pad: {lengths: lens, tokens", "pad: {lengths: o, tokens");
    EXPECT_THAT(load_error(padded_space(output)),
                AllOf(HasSubstr("must be an i32 input"), HasSubstr("it is a per-dtype output")));
}

TEST(OpSpecPadErrors, APadOnAnOutputIsRefused) {
    const std::string spec = with_line_replaced(pad_spec, "o: {type: T, count: \"B * L * H * 8\", role: output}",
                                                "o: {type: T, count: \"B * L * H * 8\", role: output, "
                                                "pad: {lengths: lens, tokens: L, token_elements: ROW}}");
    EXPECT_THAT(load_error(padded_space(spec)),
                AllOf(HasSubstr("op_spec.buffers.o.pad"), HasSubstr("buffer o is output: only inputs and inouts")));
}

TEST(OpSpecPadErrors, APadOnAnIntegerBufferIsRefused) {
    const std::string spec = with_line_replaced(pad_spec, "range: [1, \"L + 1\"]}",
                                                "range: [1, \"L + 1\"], pad: {lengths: lens, tokens: 1, "
                                                "token_elements: 1}}");
    EXPECT_THAT(load_error(padded_space(spec)),
                AllOf(HasSubstr("op_spec.buffers.lens.pad"), HasSubstr("buffer lens holds i32"), HasSubstr("NaN")));
    // A type per dtype with an integer one.
    const std::string per_dtype = with_line_replaced(pad_spec, "{fp32: f32, bf16: f16}", "{fp32: f32, bf16: i8}");
    EXPECT_THAT(load_error(padded_space(per_dtype)),
                AllOf(HasSubstr("op_spec.buffers.k.pad"), HasSubstr("buffer k holds i8")));
}

TEST(OpSpecPadErrors, APadOnAStridedBufferIsRefused) {
    std::string spec = with_line_replaced(pad_spec, "q: {type: T, count: \"B * L * H * 8\", role: input,",
                                          "q: {type: T, shape: [\"B * L\", \"ROW\"], strides: [\"ROW + 8\", \"1\"], "
                                          "role: input,");
    EXPECT_THAT(load_error(padded_space(spec)), AllOf(HasSubstr("op_spec.buffers.q.pad"), HasSubstr("has strides")));
}

TEST(OpSpecPadErrors, APadNeedsItsLengthsTokensAndTokenElementsAndNothingElse) {
    const std::string missing = with_line_replaced(pad_spec, ", token_elements: \"ROW\"}", "}");
    EXPECT_THAT(load_error(padded_space(missing)),
                AllOf(HasSubstr("op_spec.buffers.q.pad"), HasSubstr("token_elements")));
    const std::string unknown = with_line_replaced(pad_spec, "tokens: \"L\", token_elements: \"ROW\"}",
                                                   "tokens: \"L\", token_elements: \"ROW\", rows: 2}");
    EXPECT_THAT(load_error(padded_space(unknown)), AllOf(HasSubstr("op_spec.buffers.q.pad"), HasSubstr("rows")));
}

TEST(OpSpecPadErrors, APadExpressionReadsOnlyTheAxesAndTheLets) {
    const std::string spec = with_line_replaced(pad_spec, "heads: \"H\"", "heads: \"HK\"");
    EXPECT_THAT(load_error(padded_space(spec)),
                AllOf(HasSubstr("op_spec.buffers.k.pad.heads"), HasSubstr("the pad 'HK' reads 'HK'")));
}

TEST(OpSpecFile, ASpecInAFileOfItsOwnResolvesRelativeToTheSpace) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "ktune_op_spec_file_test";
    fs::create_directories(dir / "ops");
    std::ofstream(dir / "ops" / "scaled_row.op.yaml")
        << "op: scaled_row\nvariant: fwd\n"
        << [] {
               std::string s;  // the inline spec, one level less indented
               for (std::size_t i = 0; i < good_spec.size(); ++i)
                   if (!(good_spec.compare(i, 2, "  ") == 0 && (i == 0 || good_spec[i - 1] == '\n')))
                       s += good_spec[i];
                   else
                       ++i;
               return s;
           }();
    std::string yaml = space_with("");
    yaml = with_line_replaced(yaml, "op_spec:\n", "op_spec: ops/scaled_row.op.yaml\n");
    std::ofstream(dir / "space.yaml") << yaml;
    const SearchSpace s = SearchSpace::load_file((dir / "space.yaml").string());
    ASSERT_NE(s.declared_op(), nullptr);
    EXPECT_EQ(s.declared_op()->buffers(bf16(2, 8)).size(), 3u);
    fs::remove_all(dir);
}

TEST(OpSpecFile, ASpecFileDeclaringAnotherOpIsRefused) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "ktune_op_spec_other_test";
    fs::create_directories(dir);
    std::ofstream(dir / "other.op.yaml")
        << "op: other\naxes: {M: {}}\nbuffers: {y: {type: T, count: M, role: output}}\n"
           "arguments: [y]\nbytes: M\n";
    std::string yaml = with_line_replaced(space_with(""), "op_spec:\n", "op_spec: other.op.yaml\n");
    std::ofstream(dir / "space.yaml") << yaml;
    try {
        SearchSpace::load_file((dir / "space.yaml").string());
        ADD_FAILURE() << "another op's spec was accepted";
    } catch (const Error& e) {
        EXPECT_THAT(e.where(), HasSubstr("other.op.yaml:1: op"));
        EXPECT_THAT(e.message(), HasSubstr("the search space is for 'scaled_row'"));
    }
    fs::remove_all(dir);
}

TEST(OpSpecFile, AFileOfItsOwnLoadsAloneNamingItsOp) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "ktune_op_spec_load_file_test";
    fs::create_directories(dir / "a");
    std::ofstream(dir / "a" / "one.op.yaml") << "op: one\nvariant: fwd\naxes: {N: {}}\n"
                                                "buffers: {y: {type: T, count: N, role: output}}\narguments: [y]\n"
                                                "bytes: N\n";
    std::ofstream(dir / "two.op.yaml") << "op: two\naxes: {N: {}}\n"
                                          "buffers: {y: {type: T, count: N, role: output}}\narguments: [y]\nbytes: N\n";
    const auto one = DeclaredOp::load_file((dir / "a" / "one.op.yaml").string());
    EXPECT_EQ(one->name(), "one");
    EXPECT_EQ(one->variant(), "fwd");
    try {
        DeclaredOp::load_folder(dir.string());
        ADD_FAILURE() << "a file without its variant was loaded";
    } catch (const Error& e) {
        EXPECT_THAT(e.where(), HasSubstr("two.op.yaml"));
        EXPECT_THAT(e.message(), HasSubstr("it needs 'variant'"));
    }
    fs::remove(dir / "two.op.yaml");
    const auto all = DeclaredOp::load_folder(dir.string());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0]->name(), "one");
    fs::remove_all(dir);
}

TEST(OpSpecFile, TwoFilesDeclaringOneOpAreRefused) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "ktune_op_spec_twice_test";
    fs::create_directories(dir);
    for (const char* name : {"a.op.yaml", "b.op.yaml"})
        std::ofstream(dir / name) << "op: one\nvariant: fwd\naxes: {N: {}}\n"
                                     "buffers: {y: {type: T, count: N, role: output}}\narguments: [y]\nbytes: N\n";
    try {
        DeclaredOp::load_folder(dir.string());
        ADD_FAILURE() << "an op declared twice was loaded";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), AllOf(HasSubstr("one/fwd is declared twice"), HasSubstr("a.op.yaml")));
        EXPECT_THAT(e.where(), HasSubstr("b.op.yaml"));
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ktune
