#pragma once
// What a generated dispatcher looks like for one op: its parameters, how the problem's shape axes map onto them, how
// it validates them, and the tuned kernel's argument list. The tables, the selection and the launch geometry are
// generic (export_header.cpp); only this part knows the kernel's signature. One entry per exportable op
// (op_binding.cpp).
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

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
};

// The binding of op/variant, or nullptr when the op cannot be exported.
const OpBinding* find_op_binding(std::string_view op, std::string_view variant);

// "rmsnorm/fwd", ...: for messages.
std::vector<std::string> exportable_ops();

}  // namespace ktune
