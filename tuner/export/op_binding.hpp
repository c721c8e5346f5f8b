#pragma once
// What a generated dispatcher looks like for one op: its parameters, how the problem's shape axes map onto them, how
// it validates them, and the tuned kernel's argument list. The tables, the selection and the launch geometry are
// generic (export_header.cpp); only this part knows the kernel's signature. One entry per exportable op
// (op_binding.cpp).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/op.hpp"
#include "core/types.hpp"

namespace ktune {

class DeclaredOp;

struct AxisBinding {
    std::string axis;          // the problem axis: "M"
    std::string cpp;           // the dispatcher's C++ expression for it: "rows"
    std::string default_axis;  // for an optional axis: the axis whose value it takes when a problem lacks it
};

struct OpBinding {
    std::string op;
    std::vector<std::string> variants;  // variants with this kernel signature ("fwd", "fwd_gemma")
    std::vector<AxisBinding> axes;      // in the order of the header's shape arrays; required axes first
    // The dispatcher's parameters between (const DeviceProps& device, Dtype dtype, ...) and (cudaStream_t, Choice*).
    std::string parameters;
    // The selection overload's shape parameters (a subset of `parameters`, those the axes read).
    std::string shape_parameters;
    // Statements that validate the arguments and `return Status::...;` on bad input. In scope: the parameters and
    // `const int elem_bytes` (the dtype's element size, > 0).
    std::vector<std::string> checks;
    // The kernel's arguments; "{T}" stands for the element type of the instance.
    std::string call_arguments;
    std::vector<std::string> doc;  // comment lines above the dispatcher

    // What a binding derived from an op spec adds (derive_op_binding); empty for a hand-written one.
    struct ShapeCheck {
        std::string cpp;      // true when the check holds; in scope: `shape` (the axes' values) and `elem_bytes`
        std::string message;  // the op spec's message, as written (the renderer escapes it)
    };
    std::vector<ShapeCheck> shape_checks;                  // rendered as <table>::failed_check()
    std::map<Dtype, std::string> call_arguments_by_dtype;  // replaces call_arguments when not empty
    std::string host_header;                               // a host header to include (weight packing), or ""

    // The op spec's named values (let:), rendered as <table>::let_values(): C++ over `shape`, `elem_bytes` and the
    // earlier values `out[i]`. The dispatcher computes them before its scalar arguments, which read them.
    struct Let {
        std::string name, cpp;
    };
    std::vector<Let> lets;
    // The op spec's buffers, in the order of the dispatcher's pointer parameters: what <table>::buffer_elements(),
    // buffer_range() and buffer_pad() compute for a caller that allocates and fills them (C++ over `shape`,
    // `elem_bytes`, `lets`).
    struct Buffer {
        std::string name;
        BufferRole role = BufferRole::input;
        std::map<Dtype, ElemType> types;  // the dtypes the op spec gives it an element type for
        std::string elements;             // its element count (a strided view spans first to last element)
        std::string lo, hi;               // the tuner's generator range [lo, hi)
        // The op spec's pad: the index of the lengths buffer in this list (-1: no pad) and C++ for the layout
        // [sequences, heads, tokens, token_elements] whose tokens past a length the tuner sets to NaN.
        int pad_lengths = -1;
        std::string pad_heads, pad_tokens, pad_token_elements;
    };
    std::vector<Buffer> buffers;
    // The dispatcher's arguments between (device, dtype, ...) and (stream, choice), from `void* const* buffers` (in
    // the order above) and `const long long* shape` (the axes' order): what <op>_<variant>_launch() passes on.
    std::string generic_call;
};

// The hand-written binding of op/variant, or nullptr: then the binding is derived from the op spec.
const OpBinding* find_op_binding(std::string_view op, std::string_view variant);

// "rmsnorm/fwd", ...: the ops with a hand-written binding, for messages.
std::vector<std::string> exportable_ops();

// The dispatcher of an op declared as data (tuner/space/op_spec.hpp): buffers by role and element type (a pointer to
// the element type, const for inputs; void pointers for a buffer whose type follows the dtype), then every axis as a
// long long; the op spec's checks; the kernel's arguments in its order, scalars computed from their expressions and
// refused (Status::bad_argument) when not representable, after the op spec's named values (let:) they may read.
// Throws Error(bad_input, where) when a buffer or axis name cannot be a C++ parameter name or an expression cannot be
// translated (the message names the op spec's file, line and field).
OpBinding derive_op_binding(const DeclaredOp& op, const std::string& where);

// The host header of an op whose callers must prepare data on the host (linear_int4 and linear_int8: weight
// packing, kernels/quant_linear/quant_linear_pack.hpp), with the comment lines that say what it offers; "" when none.
struct HostHeader {
    std::string path;
    std::vector<std::string> doc;
};
HostHeader host_header_of(std::string_view op);

}  // namespace ktune
