#pragma once
// An op declared as data: the `op_spec` section of a search space (inline, or a file of its own that several spaces
// share). Everything the tuner, the worker and reports need of an op (its problem axes, buffers, kernel arguments,
// bytes moved, flops and shape checks) comes from it, so a new op is a kernel file plus YAML: no C++, no rebuild.
//
//   op_spec:
//     summary: "y = x * sigmoid(x) over N elements"
//     axes:                                # required axes, and optional ones with a default (an expression)
//       N: {doc: "elements"}
//       S: {default: "N", doc: "row stride"}
//     checks:                              # shapes the kernels cannot take, refused before any work, in order
//       - {require: "N >= 1 && N <= 2147483647", message: "needs 1 <= N < 2^31: the kernels take N as int"}
//       - {require: "N % 2 == 0", message: "N must be even: the kernels read pairs"}
//     let:                                 # named values over the axes, in order, each reading the ones before it
//       PAIRS: "N / 2"
//       ROOT_N: {sqrt: "N"}                # a square root, which expressions lack
//     buffers:                             # in the order the worker allocates them
//       x: {type: T, count: "N", role: input, range: [-4, 4]}     # T: the problem's dtype
//       w: {type: f32, shape: ["H"], role: input}                 # shape: elements are the product
//       p: {type: T, shape: ["M", "H"], strides: ["S", "1"], role: output}   # strided: elements span the last one
//       y: {type: {fp32: f32, fp16: f16, bf16: f32}, count: "N", role: output}   # a type per dtype
//       i: {type: i32, count: "PAIRS", role: input, range: [0, "N"]}  # range bounds may be expressions
//       q: {type: T, count: "B * L * H * D", role: input,              # a padded batch: tokens past a length are NaN
//           pad: {lengths: lens, tokens: "L", token_elements: "H * D"}}
//       lens: {type: i32, count: "B", role: input, range: [1, "L + 1"]}
//     arguments: [y, x, {i32: "N"}, {f32: "1 / ROOT_N"}]   # buffers by name (one may be passed twice); scalars i32 /
//                                                         # i64 / f32 of an expression
//     bytes: "2 * N * DTYPE_BYTES"         # the fewest bytes the op must move: the roofline numerator
//     flops: "4 * N"                       # optional
//
// Types: f32 f16 bf16 i32 i64 i8 u8, or T for the problem's dtype, or a mapping from dtype to type. Roles: input
// (filled by the seeded generator in `range` [lo, hi), default [-1, 1); lo == hi fills every element with lo), output
// (poisoned, compared with the reference's), inout (generated as an input, restored before each run, compared),
// scratch (zeroed, never compared). Outputs and scratch take no range (theirs reads [0, 0]). A padded batch (`pad`,
// floating-point inputs and inouts): the buffer starts with [n, heads, tokens, token_elements] elements (heads
// optional, default 1), n the element count of `lengths` (an i32 input of the op, one length per sequence); once every
// input is generated, each token t >= clamp(lengths[b], 0, tokens) of sequence b is set to NaN, so a kernel that lets
// the rows past a length reach its result fails validation (core/op.hpp: BufferPad). Expressions see the axes
// (optional ones at their value or default) and DTYPE_BYTES; checks see only those, and everything after them sees the
// lets too, which may therefore rely on what the checks promise (no division by zero). A problem's axes and
// DTYPE_BYTES, not the lets, are what a search space's own expressions see. Every error names the file, line and field.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/op.hpp"
#include "core/types.hpp"
#include "tuner/space/expression.hpp"

namespace ktune {

namespace detail {
class Located;
}

struct OpAxis {
    std::string name;
    std::string doc;
    std::unique_ptr<Expression> default_value;  // null: a required axis
};

class DeclaredOp final : public OpDescription {
public:
    // Parses and validates an op_spec mapping for op `name`/`variant`. Throws Error(bad_input) naming file, line and
    // field.
    static std::shared_ptr<const DeclaredOp> parse(const detail::Located& node, std::string name, std::string variant);
    // An op spec file of its own, which names the op and variant it declares. Throws Error(bad_input) as parse() does.
    static std::shared_ptr<const DeclaredOp> load_file(const std::string& path);
    // Every op spec file (*.op.yaml) under `folder`, recursively, in path order: the built-in ops under kernels/.
    // Throws Error(bad_input) naming the first file that does not load.
    static std::vector<std::shared_ptr<const DeclaredOp>> load_folder(const std::string& folder);

    std::string_view name() const override { return m_name; }
    std::string_view variant() const override { return m_variant; }
    std::string_view summary() const override { return m_summary; }

    std::vector<BufferSpec> buffers(const Problem& p) const override;
    std::vector<KernelArg> arguments(const Problem& p) const override;
    double bytes_moved(const Problem& p) const override;
    double flops(const Problem& p) const override;

    const std::vector<OpAxis>& axes() const { return m_axes; }
    bool has_axis(const std::string& name) const;
    // The problem's axes with every optional one at its default, and DTYPE_BYTES: what the checks and a search
    // space's expressions see. Throws Error(bad_input) for an unknown or missing axis, or a failed check, naming the
    // op and the problem.
    std::map<std::string, double> variables(const Problem& p) const;
    // The problem with every axis of the op, optional ones at their defaults, once its checks hold: the shape a
    // CPU reference works on. Throws as variables() does.
    Problem resolved(const Problem& p) const;
    const std::string& where() const { return m_where; }

    // The declaration itself, independent of any problem: what a code generator (tuner/export) translates.
    struct BufferDeclaration {
        std::string name;
        BufferRole role = BufferRole::input;
        bool per_dtype = false;            // T or a mapping: the element type follows the problem's dtype
        std::map<Dtype, ElemType> types;   // per dtype; every dtype for T and a fixed type, those named for a map
        std::vector<std::string> shape;    // expression texts (count: one entry)
        std::vector<std::string> strides;  // empty: dense
        std::vector<std::string> range;    // [lo, hi] expression texts; empty: the role's default
        // pad: the lengths buffer's name ("": no pad) and the expression texts of heads ("1" when not given), tokens
        // and token_elements.
        std::string pad_lengths, pad_heads, pad_tokens, pad_token_elements;
        std::string where;
    };
    struct ArgumentDeclaration {
        KernelArg::Kind kind = KernelArg::Kind::buffer;
        std::string buffer;  // Kind::buffer
        std::string value;   // a scalar: its expression's text
        std::string where;
    };
    struct CheckDeclaration {
        std::string require, message, where;
    };
    struct LetDeclaration {
        std::string name, value, where;
        bool sqrt = false;  // {sqrt: value}
    };
    // Buffers in declaration order, arguments in the kernel's order, checks in order.
    std::vector<BufferDeclaration> buffer_declarations() const;
    std::vector<ArgumentDeclaration> argument_declarations() const;
    std::vector<CheckDeclaration> check_declarations() const;
    std::vector<LetDeclaration> let_declarations() const;  // in order: each reads only the ones before it

private:
    struct TypeRule {
        bool problem_dtype = false;  // T
        ElemType fixed = ElemType::f32;
        std::vector<std::pair<Dtype, ElemType>> by_dtype;  // a mapping: one type per dtype
    };
    struct Pad {
        std::string lengths;  // an i32 input buffer of the op
        Expression heads, tokens, token_elements;
        std::string where, lengths_where;
    };
    struct Buffer {
        std::string name;
        TypeRule type;
        std::vector<Expression> shape;    // count: one entry
        std::vector<Expression> strides;  // empty: dense
        BufferRole role = BufferRole::input;
        std::vector<Expression> range;  // [lo, hi]; empty: [-1, 1)
        std::optional<Pad> pad;
        std::string where;
    };
    struct Argument {
        KernelArg::Kind kind = KernelArg::Kind::buffer;
        std::string buffer;
        std::unique_ptr<Expression> value;
    };
    struct Check {
        Expression require;
        std::string message;
    };
    struct Let {
        std::string name;
        Expression value;
        bool sqrt = false;  // {sqrt: expr}
    };

    ElemType elem_type_of(const TypeRule& t, const Problem& p, const std::string& where) const;
    // variables() and the lets: what buffers, arguments, bytes and flops see.
    std::map<std::string, double> values(const Problem& p) const;
    std::string key() const { return m_name + "/" + m_variant; }

    std::string m_name, m_variant, m_summary, m_where;
    std::vector<OpAxis> m_axes;  // optional axes in an order where each default reads only axes before it
    std::vector<Buffer> m_buffers;
    std::vector<Argument> m_arguments;
    std::unique_ptr<Expression> m_bytes, m_flops;
    std::vector<Check> m_checks;
    std::vector<Let> m_lets;
};

}  // namespace ktune
