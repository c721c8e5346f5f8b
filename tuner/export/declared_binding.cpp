// The dispatcher of an op declared as data, derived from its op spec (op_binding.hpp: derive_op_binding).
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/export/cpp_expression.hpp"
#include "tuner/export/op_binding.hpp"
#include "tuner/space/op_spec.hpp"

namespace ktune {
namespace {

constexpr Dtype k_dtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};

// Names a buffer or axis cannot take as a parameter of the dispatcher: C++ keywords, and the names its body uses.
// Generated locals start with ktune_, which op names may not.
bool reserved_name(const std::string& n) {
    static const std::set<std::string> names = {
        // C++20 keywords and alternative tokens
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
        "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
        "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
        "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
        "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
        "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
        "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
        // what the dispatcher's signature and body name
        "device", "dtype", "stream", "choice", "elem_bytes", "shape", "c", "g", "grid", "block", "err", "kernel",
        "supports", "geometry", "failed_check", "axis_count", "detail", "std", "Status", "Choice", "Dtype",
        "DeviceProps", "dim3", "cudaStream_t", "cudaError_t", "cudaSuccess", "ktune_tuned", "DTYPE_BYTES"};
    return names.count(n) > 0 || n.rfind("ktune_", 0) == 0 || n.rfind("__", 0) == 0 ||
           (n.size() > 1 && n[0] == '_' && std::isupper(static_cast<unsigned char>(n[1])));
}

std::string elem_cpp(ElemType t) {
    switch (t) {
        case ElemType::f32:
            return "float";
        case ElemType::f16:
            return "__half";
        case ElemType::bf16:
            return "__nv_bfloat16";
        case ElemType::i32:
            return "std::int32_t";
        case ElemType::i64:
            return "std::int64_t";
        case ElemType::i8:
            return "std::int8_t";
        case ElemType::u8:
            return "std::uint8_t";
    }
    return "void";
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
    return out;
}

std::string trimmed(const std::string& s) {
    const std::size_t a = s.find_first_not_of(" \t");
    const std::size_t b = s.find_last_not_of(" \t");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// What a caller needs to allocate and fill one buffer: its element count and generator range as C++ over the
// table's `shape`, `elem_bytes` and `lets`.
OpBinding::Buffer buffer_of(const DeclaredOp::BufferDeclaration& d, const CppExpressionNames& names) {
    OpBinding::Buffer out;
    out.name = d.name;
    out.role = d.role;
    out.types = d.types;
    std::vector<std::string> extents, strides;
    for (const std::string& e : d.shape) extents.push_back(expression_to_cpp(e, names, d.where));
    for (const std::string& e : d.strides) strides.push_back(expression_to_cpp(e, names, d.where));
    if (strides.empty()) {
        out.elements = join(extents, " * ");
    } else {
        // A strided view spans from its first element to its last: 1 + sum (extent - 1) * stride, 0 when empty.
        std::vector<std::string> empty, span;
        for (std::size_t i = 0; i < extents.size(); ++i) {
            empty.push_back(fmt::format("detail::ex_eq({}, 0.0)", extents[i]));
            span.push_back(fmt::format("({} - 1.0) * {}", extents[i], strides[i]));
        }
        out.elements = fmt::format("detail::ex_select({}, 0.0, 1.0 + {})", join(empty, " + "), join(span, " + "));
    }
    const bool generated = d.role == BufferRole::input || d.role == BufferRole::inout;
    out.lo = d.range.empty() ? (generated ? "-1.0" : "0.0") : expression_to_cpp(d.range[0], names, d.where);
    out.hi = d.range.empty() ? (generated ? "1.0" : "0.0") : expression_to_cpp(d.range[1], names, d.where);
    if (!d.pad_lengths.empty()) {
        out.pad_heads = expression_to_cpp(d.pad_heads, names, d.where);
        out.pad_tokens = expression_to_cpp(d.pad_tokens, names, d.where);
        out.pad_token_elements = expression_to_cpp(d.pad_token_elements, names, d.where);
    }
    return out;
}

}  // namespace

OpBinding derive_op_binding(const DeclaredOp& op, const std::string& where) {
    OpBinding b;
    b.op = std::string(op.name());
    b.variants = {std::string(op.variant())};

    std::set<std::string> used;
    const auto claim = [&](const std::string& name, std::string_view what) {
        if (reserved_name(name) || !used.insert(name).second)
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("{} {}/{}: {} '{}' cannot be a parameter of the exported dispatcher (a C++ keyword, "
                            "a name the dispatcher uses, or a name given twice): rename it",
                            what, op.name(), op.variant(), what, name),
                where);
    };

    // Axes: every one, in the op's order, as long long; an optional axis whose default is another axis counts by its
    // ratio to it in the selection (AxisBinding::default_axis).
    std::vector<std::string> axis_names, axis_params, axis_docs;
    for (const OpAxis& a : op.axes()) {
        claim(a.name, "axis");
        std::string default_axis;
        if (a.default_value && op.has_axis(trimmed(a.default_value->text())))
            default_axis = trimmed(a.default_value->text());
        b.axes.push_back({a.name, a.name, default_axis});
        axis_names.push_back(a.name);
        axis_params.push_back("long long " + a.name);
        std::string d = a.name + (a.doc.empty() ? "" : ": " + a.doc);
        if (a.default_value) d += fmt::format(" (the op's default: {})", a.default_value->text());
        axis_docs.push_back(d);
    }

    // The expressions of checks see the axes and DTYPE_BYTES; those of lets the lets before them too; those of
    // buffers and arguments every let.
    CppExpressionNames in_dispatcher, in_table;
    in_dispatcher.helper_prefix = in_table.helper_prefix = "detail::";
    in_dispatcher.variables["DTYPE_BYTES"] = "static_cast<double>(elem_bytes)";
    in_table.variables["DTYPE_BYTES"] = "static_cast<double>(elem_bytes)";
    for (std::size_t i = 0; i < axis_names.size(); ++i) {
        in_dispatcher.variables[axis_names[i]] = "static_cast<double>(" + axis_names[i] + ")";
        in_table.variables[axis_names[i]] = fmt::format("static_cast<double>(shape[{}])", i);
    }
    const std::vector<DeclaredOp::LetDeclaration> lets = op.let_declarations();
    CppExpressionNames in_lets = in_table;
    for (std::size_t i = 0; i < lets.size(); ++i) {
        const std::string cpp = expression_to_cpp(lets[i].value, in_lets, lets[i].where);
        b.lets.push_back({lets[i].name, lets[i].sqrt ? "detail::ex_sqrt(" + cpp + ")" : cpp});
        in_lets.variables[lets[i].name] = fmt::format("out[{}]", i);
        in_table.variables[lets[i].name] = fmt::format("lets[{}]", i);
        in_dispatcher.variables[lets[i].name] = fmt::format("ktune_lets[{}]", i);
    }

    // Buffers in the order the kernel first takes them.
    const std::vector<DeclaredOp::BufferDeclaration> buffers = op.buffer_declarations();
    const std::vector<DeclaredOp::ArgumentDeclaration> arguments = op.argument_declarations();
    std::vector<const DeclaredOp::BufferDeclaration*> order;
    for (const auto& a : arguments) {
        if (a.kind != KernelArg::Kind::buffer) continue;
        const auto it = std::find_if(buffers.begin(), buffers.end(), [&](const auto& d) { return d.name == a.buffer; });
        if (it != buffers.end() && std::find(order.begin(), order.end(), &*it) == order.end()) order.push_back(&*it);
    }
    std::vector<std::string> params, nulls, aligned, buffer_docs, generic;
    for (const auto* d : order) {
        claim(d->name, "buffer");
        const bool in = d->role == BufferRole::input;
        const std::string type = d->per_dtype ? "void" : elem_cpp(d->types.begin()->second);
        params.push_back(fmt::format("{}{}* {}", in ? "const " : "", type, d->name));
        generic.push_back(
            d->per_dtype ? fmt::format("buffers[{}]", generic.size())
                         : fmt::format("static_cast<{}{}*>(buffers[{}])", in ? "const " : "", type, generic.size()));
        b.buffers.push_back(buffer_of(*d, in_table));
        if (!d->pad_lengths.empty()) {
            const auto lengths =
                std::find_if(order.begin(), order.end(), [&](const auto* x) { return x->name == d->pad_lengths; });
            if (lengths == order.end())  // the op spec passes every buffer to the kernel
                throw Error(
                    ErrorCategory::internal,
                    fmt::format("buffer {} is padded by {}, which the kernel does not take", d->name, d->pad_lengths),
                    d->where);
            b.buffers.back().pad_lengths = static_cast<int>(lengths - order.begin());
        }
        nulls.push_back(d->name + " == nullptr");
        std::string bytes;
        if (!d->per_dtype) {
            bytes = std::to_string(elem_bytes(d->types.begin()->second));
        } else if (std::all_of(k_dtypes, std::end(k_dtypes), [&](Dtype dt) {
                       auto it = d->types.find(dt);
                       return it != d->types.end() && it->second == elem_type(dt);
                   })) {
            bytes = "elem_bytes";
        } else {
            // A type per dtype: its size for the dtype (1, no requirement, for a dtype the op spec does not name).
            const auto size = [&](Dtype dt) {
                auto it = d->types.find(dt);
                return it == d->types.end() ? 1 : elem_bytes(it->second);
            };
            bytes = fmt::format("(dtype == Dtype::fp32 ? {} : dtype == Dtype::fp16 ? {} : {})", size(Dtype::fp32),
                                size(Dtype::fp16), size(Dtype::bf16));
        }
        aligned.push_back(fmt::format("!detail::aligned({}, {})", d->name, bytes));
        std::string types;
        if (!d->per_dtype) {
            types = elem_cpp(d->types.begin()->second);
        } else if (bytes == "elem_bytes") {
            types = "the dtype's element type";
        } else {
            for (const auto& [dt, e] : d->types)
                types += fmt::format("{}{} {}", types.empty() ? "" : ", ", dtype_name(dt), elem_cpp(e));
        }
        const std::string extent =
            d->strides.empty() ? join(d->shape, " x ")
                               : fmt::format("[{}] with strides [{}]", join(d->shape, ", "), join(d->strides, ", "));
        buffer_docs.push_back(
            fmt::format("{} ({}): {}, {} elements", d->name, buffer_role_name(d->role), types, extent));
    }

    // Scalars: computed once, before the launch, and refused when the kernel's type cannot hold them.
    std::vector<std::string> scalar_statements;
    std::vector<std::string> call;  // per argument; "{buffer:NAME}" for a buffer, cast per dtype below
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        const auto& a = arguments[i];
        if (a.kind == KernelArg::Kind::buffer) {
            call.push_back("");
            continue;
        }
        const std::string local = fmt::format("ktune_arg{}", i);
        CppExpressionNames names = in_dispatcher;
        names.real_division = a.kind == KernelArg::Kind::f32;  // as the op spec evaluates it (Arithmetic::real)
        scalar_statements.push_back(
            fmt::format("const double {} = {};", local, expression_to_cpp(a.value, names, a.where)));
        switch (a.kind) {
            case KernelArg::Kind::i32:
                scalar_statements.push_back(
                    fmt::format("if (!detail::ex_integral({0}) || {0} < -2147483648.0 || {0} > "
                                "2147483647.0) return Status::bad_argument;",
                                local));
                call.push_back(fmt::format("static_cast<int>({})", local));
                break;
            case KernelArg::Kind::i64:
                scalar_statements.push_back(
                    fmt::format("if (!detail::ex_integral({0})) return Status::bad_argument;", local));
                call.push_back(fmt::format("static_cast<long long>({})", local));
                break;
            default:
                scalar_statements.push_back(fmt::format("if (std::isnan({})) return Status::bad_argument;", local));
                call.push_back(fmt::format("static_cast<float>({})", local));
                break;
        }
    }
    for (const Dtype dt : k_dtypes) {
        std::vector<std::string> args;
        bool typed = true;
        for (std::size_t i = 0; i < arguments.size() && typed; ++i) {
            if (arguments[i].kind != KernelArg::Kind::buffer) {
                args.push_back(call[i]);
                continue;
            }
            const auto d = std::find_if(buffers.begin(), buffers.end(),
                                        [&](const auto& x) { return x.name == arguments[i].buffer; });
            const auto t = d->types.find(dt);
            typed = t != d->types.end();
            if (!typed) break;
            if (!d->per_dtype)
                args.push_back(d->name);
            else
                args.push_back(fmt::format("static_cast<{}{}*>({})", d->role == BufferRole::input ? "const " : "",
                                           elem_cpp(t->second), d->name));
        }
        if (typed) b.call_arguments_by_dtype[dt] = join(args, ", ");
    }

    for (const auto& c : op.check_declarations())
        b.shape_checks.push_back({expression_to_cpp(c.require, in_table, c.where), c.message});

    b.parameters = join(params, ", ") + ", " + join(axis_params, ", ");
    b.shape_parameters = join(axis_params, ", ");
    for (std::size_t i = 0; i < axis_names.size(); ++i) generic.push_back(fmt::format("shape[{}]", i));
    b.generic_call = join(generic, ", ");
    b.checks.push_back(fmt::format("if ({}) return Status::null_pointer;", join(nulls, " || ")));
    std::vector<std::string> small;
    for (const std::string& a : axis_names) small.push_back(a + " < 1");
    b.checks.push_back(fmt::format("if ({}) return Status::bad_size;", join(small, " || ")));
    if (!b.shape_checks.empty() || !b.lets.empty())
        b.checks.push_back(fmt::format("const long long ktune_shape[] = {{{}}};", join(axis_names, ", ")));
    if (!b.shape_checks.empty())
        b.checks.push_back("if (failed_check(ktune_shape, elem_bytes) != nullptr) return Status::bad_size;");
    if (!b.lets.empty()) {
        // A value that is not a number (a square root of a negative) means a shape the op cannot take.
        b.checks.push_back("double ktune_lets[let_count];");
        b.checks.push_back("if (!let_values(ktune_shape, elem_bytes, ktune_lets)) return Status::bad_size;");
    }
    b.checks.push_back(fmt::format("if ({}) return Status::misaligned;", join(aligned, " || ")));
    for (std::string& s : scalar_statements) b.checks.push_back(std::move(s));

    const HostHeader host = host_header_of(op.name());
    b.host_header = host.path;
    b.doc.push_back(std::string(op.summary()));
    for (const std::string& d : buffer_docs) b.doc.push_back(d);
    b.doc.push_back("Axes: " + join(axis_docs, "; ") + ".");
    if (!b.shape_checks.empty())
        b.doc.push_back("The op's checks (failed_check() says which fails) return Status::bad_size; so do axes < 1.");
    for (const std::string& d : host.doc) b.doc.push_back(d);
    if (std::any_of(order.begin(), order.end(), [](const auto* d) { return d->role == BufferRole::scratch; }))
        b.doc.push_back(
            "Scratch buffers: <table>::buffer_elements() elements, zero-filled before a shape's first call. The "
            "kernels reset their arrival counters but leave partial results, where another shape's counters may lie: "
            "keep one scratch per shape (or zero it again when the shape changes).");
    b.doc.push_back(
        "A void pointer's element type follows `dtype` (float, __half, __nv_bfloat16). Pointers need their");
    b.doc.push_back("element's alignment. Asynchronous on `stream`; the status covers validation and the launch only.");
    return b;
}

}  // namespace ktune
