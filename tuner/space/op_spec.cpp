#include "tuner/space/op_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file.hpp"
#include "tuner/space/located_yaml.hpp"

namespace ktune {
namespace {

using detail::find_field;
using detail::Located;

constexpr const char* dtype_bytes_variable = "DTYPE_BYTES";
// Elements of one buffer: far above any GPU's memory, and exact in the expressions' doubles.
constexpr double max_buffer_elements = 1ull << 44;

bool is_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
    return out.empty() ? "none" : out;
}

Expression read_expression(const Located& node) { return Expression(node.text(), node.where()); }

bool is_integer(ElemType t) {
    return t == ElemType::i32 || t == ElemType::i64 || t == ElemType::i8 || t == ElemType::u8;
}

// Every variable of `e` must be one of the `axes` or the `lets`; the message lists them.
void check_variables(const Expression& e, const std::vector<std::string>& axes, std::string_view what,
                     const std::vector<std::string>& lets = {}) {
    auto known = [](const std::vector<std::string>& names, const std::string& v) {
        return std::find(names.begin(), names.end(), v) != names.end();
    };
    for (const std::string& v : e.variables())
        if (v != dtype_bytes_variable && !known(axes, v) && !known(lets, v))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} '{}' reads '{}', which is not {} of the op (axes: {}{}; and DTYPE_BYTES)", what,
                                    e.text(), v, lets.empty() ? "an axis" : "an axis or a let", join(axes),
                                    lets.empty() ? "" : "; lets: " + join(lets)),
                        e.where());
}

std::int64_t integral(const Expression& e, const std::map<std::string, double>& vars, const std::string& op,
                      const std::string& problem) {
    const double v = e.evaluate(vars);
    if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9007199254740992.0)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{}: '{}' is {} at {}, not an integer", op, e.text(), v, problem), e.where());
    return static_cast<std::int64_t>(v);
}

}  // namespace

std::shared_ptr<const DeclaredOp> DeclaredOp::parse(const Located& node, std::string name, std::string variant) {
    auto op = std::shared_ptr<DeclaredOp>(new DeclaredOp());
    op->m_name = std::move(name);
    op->m_variant = std::move(variant);
    op->m_where = node.where();
    if (node.is_null()) node.fail("the op spec is empty: it needs axes, buffers, arguments and bytes");
    auto top =
        node.fields({"op", "variant", "summary", "axes", "checks", "let", "buffers", "arguments", "bytes", "flops"},
                    {"axes", "buffers", "arguments", "bytes"});
    // A file of its own names the op it declares, so a space cannot borrow another op's declaration by mistake.
    for (auto [key, expected] : {std::pair{"op", &op->m_name}, std::pair{"variant", &op->m_variant}})
        if (const Located* f = find_field(top, key); f && f->text() != *expected)
            f->fail(fmt::format("the op spec declares {} '{}', but the search space is for '{}'", key, f->text(),
                                *expected));
    if (const Located* s = find_field(top, "summary")) op->m_summary = s->scalar();
    if (op->m_summary.empty()) op->m_summary = fmt::format("{} (declared in {})", op->key(), node.where());

    // Axes: defaults may read other axes; order them so each reads only axes before it, refusing cycles.
    const Located& axes_node = *find_field(top, "axes");
    std::vector<std::pair<std::string, Located>> axis_entries = axes_node.entries("axis");
    if (axis_entries.empty()) axes_node.fail("an op needs at least one axis");
    std::vector<std::string> axis_names;
    for (const auto& [axis, value] : axis_entries) {
        if (!is_identifier(axis) || axis == dtype_bytes_variable)
            value.fail(fmt::format("axis name '{}' is not an identifier (or is reserved)", axis));
        axis_names.push_back(axis);
    }
    std::vector<OpAxis> declared;
    for (const auto& [axis, value] : axis_entries) {
        OpAxis a{axis, {}, nullptr};
        if (!value.is_null()) {
            auto f = value.fields({"doc", "default"}, {});
            if (const Located* d = find_field(f, "doc")) a.doc = d->scalar();
            if (const Located* d = find_field(f, "default")) {
                a.default_value = std::make_unique<Expression>(read_expression(*d));
                check_variables(*a.default_value, axis_names, "the default");
            }
        }
        declared.push_back(std::move(a));
    }
    std::vector<int> state(declared.size(), 0);  // 0 unvisited, 1 on the path, 2 placed
    std::vector<std::string> path;
    auto index_of = [&](const std::string& n) {
        return static_cast<std::size_t>(std::find(axis_names.begin(), axis_names.end(), n) - axis_names.begin());
    };
    std::vector<std::size_t> order;
    auto visit = [&](auto&& self, std::size_t i) -> void {
        if (state[i] == 2) return;
        path.push_back(declared[i].name);
        if (state[i] == 1) {
            const Located& where = axis_entries[i].second;
            where.fail(fmt::format("the axis defaults form a cycle: {}", fmt::join(path, " -> ")));
        }
        state[i] = 1;
        if (declared[i].default_value)
            for (const std::string& v : declared[i].default_value->variables())
                if (v != dtype_bytes_variable) self(self, index_of(v));
        state[i] = 2;
        path.pop_back();
        order.push_back(i);
    };
    for (std::size_t i = 0; i < declared.size(); ++i) visit(visit, i);
    for (std::size_t i : order) op->m_axes.push_back(std::move(declared[i]));

    if (const Located* checks = find_field(top, "checks"); checks && !checks->is_null()) {
        for (const Located& item : checks->items()) {
            auto f = item.fields({"require", "message"}, {"require", "message"});
            Check c{read_expression(*find_field(f, "require")), find_field(f, "message")->text()};
            check_variables(c.require, axis_names, "the check");
            op->m_checks.push_back(std::move(c));
        }
    }

    // Lets: named values, each reading the axes and the lets before it.
    std::vector<std::string> let_names;
    if (const Located* lets = find_field(top, "let"); lets && !lets->is_null()) {
        for (const auto& [name, value] : lets->entries("let")) {
            if (!is_identifier(name) || name == dtype_bytes_variable ||
                std::find(axis_names.begin(), axis_names.end(), name) != axis_names.end())
                value.fail(fmt::format("let name '{}' is not an identifier, or is an axis or reserved", name));
            std::vector<std::pair<std::string, Located>> sqrt_of;  // {sqrt: expr}
            if (value.node().IsMap()) sqrt_of = value.fields({"sqrt"}, {"sqrt"});
            Let l{name, read_expression(sqrt_of.empty() ? value : sqrt_of.front().second), !sqrt_of.empty()};
            check_variables(l.value, axis_names, "the let", let_names);
            let_names.push_back(name);
            op->m_lets.push_back(std::move(l));
        }
    }

    // Buffers.
    const Located& buffers_node = *find_field(top, "buffers");
    std::vector<std::string> buffer_names;
    for (const auto& [buffer, value] : buffers_node.entries("buffer")) {
        if (!is_identifier(buffer)) value.fail(fmt::format("buffer name '{}' is not an identifier", buffer));
        auto f = value.fields({"type", "count", "shape", "strides", "role", "range", "pad"}, {"type", "role"});
        Buffer b;
        b.name = buffer;
        b.where = value.where();
        const Located& type = *find_field(f, "type");
        auto parse_type = [](const Located& t) {
            const std::string s = t.text();
            const std::optional<ElemType> e = parse_elem_type(s);
            if (!e)
                t.fail(
                    fmt::format("unknown element type '{}' (f32, f16, bf16, i32, i64, i8, u8, or T for the "
                                "problem's dtype)",
                                s));
            return *e;
        };
        if (type.node().IsMap()) {
            for (const auto& [dtype, t] : type.entries("dtype")) {
                const std::optional<Dtype> d = parse_dtype(dtype);
                if (!d) t.fail(fmt::format("unknown dtype '{}' (fp32, fp16, bf16)", dtype));
                b.type.by_dtype.emplace_back(*d, parse_type(t));
            }
        } else if (type.text() == "T") {
            b.type.problem_dtype = true;
        } else {
            b.type.fixed = parse_type(type);
        }
        const Located* count = find_field(f, "count");
        const Located* shape = find_field(f, "shape");
        if ((count == nullptr) == (shape == nullptr))
            value.fail(fmt::format("buffer {} needs exactly one of 'count' (elements) or 'shape' (a list)", buffer));
        if (count != nullptr) {
            b.shape.push_back(read_expression(*count));
        } else {
            for (const Located& item : shape->items()) b.shape.push_back(read_expression(item));
            if (b.shape.empty()) shape->fail(fmt::format("buffer {} has an empty shape", buffer));
        }
        if (const Located* strides = find_field(f, "strides")) {
            if (shape == nullptr) strides->fail("strides go with a shape, not with a count");
            for (const Located& item : strides->items()) b.strides.push_back(read_expression(item));
            if (b.strides.size() != b.shape.size())
                strides->fail(fmt::format("buffer {} has {} strides for {} dimensions", buffer, b.strides.size(),
                                          b.shape.size()));
        }
        for (const auto* list : {&b.shape, &b.strides})
            for (const Expression& e : *list) check_variables(e, axis_names, "the size", let_names);
        const Located& role = *find_field(f, "role");
        const std::optional<BufferRole> r = parse_buffer_role(role.text());
        if (!r) role.fail(fmt::format("unknown role '{}' (input, output, inout, scratch)", role.text()));
        b.role = *r;
        if (const Located* range = find_field(f, "range")) {
            if (b.role != BufferRole::input && b.role != BufferRole::inout)
                range->fail(fmt::format("buffer {} is {}: only inputs and inouts are generated", buffer, role.text()));
            const std::vector<Located> items = range->items();
            if (items.size() != 2) range->fail("range takes [lo, hi]");
            for (const Located& item : items) {
                b.range.push_back(read_expression(item));
                check_variables(b.range.back(), axis_names, "the range", let_names);
            }
            if (b.range[0].variables().empty() && b.range[1].variables().empty()) {
                const double lo = b.range[0].evaluate({}), hi = b.range[1].evaluate({});
                if (!(lo <= hi)) range->fail(fmt::format("range [{}, {}] is empty: lo is above hi", lo, hi));
            }
        }
        if (const Located* pad = find_field(f, "pad")) {
            if (b.role != BufferRole::input && b.role != BufferRole::inout)
                pad->fail(fmt::format("buffer {} is {}: only inputs and inouts are generated, so only they are padded",
                                      buffer, role.text()));
            if (!b.strides.empty())
                pad->fail(
                    fmt::format("buffer {} has strides: a pad lays out a dense buffer (a count, or a shape "
                                "without strides)",
                                buffer));
            std::vector<ElemType> types;  // T is a floating-point type at every dtype
            if (!b.type.problem_dtype && b.type.by_dtype.empty()) types.push_back(b.type.fixed);
            for (const auto& [d, e] : b.type.by_dtype) types.push_back(e);
            for (const ElemType e : types)
                if (is_integer(e))
                    pad->fail(
                        fmt::format("buffer {} holds {}: a pad sets rows to NaN, which integers have no value for",
                                    buffer, elem_wire_name(e)));
            auto pf =
                pad->fields({"lengths", "heads", "tokens", "token_elements"}, {"lengths", "tokens", "token_elements"});
            const Located* heads = find_field(pf, "heads");
            Pad p{find_field(pf, "lengths")->text(),
                  heads != nullptr ? read_expression(*heads) : Expression("1", pad->where()),
                  read_expression(*find_field(pf, "tokens")),
                  read_expression(*find_field(pf, "token_elements")),
                  pad->where(),
                  find_field(pf, "lengths")->where()};
            for (const Expression* e : {&p.heads, &p.tokens, &p.token_elements})
                check_variables(*e, axis_names, "the pad", let_names);
            b.pad = std::move(p);
        }
        buffer_names.push_back(buffer);
        op->m_buffers.push_back(std::move(b));
    }
    if (op->m_buffers.empty()) buffers_node.fail("an op needs at least one buffer");
    // A pad's lengths: an i32 input of the op (declared before or after the buffer it pads), read on the device.
    for (const Buffer& b : op->m_buffers) {
        if (!b.pad) continue;
        const auto lengths = std::find_if(op->m_buffers.begin(), op->m_buffers.end(),
                                          [&](const Buffer& x) { return x.name == b.pad->lengths; });
        if (lengths == op->m_buffers.end())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("buffer {} is padded by the lengths in '{}', which is not a buffer of the op "
                                    "(buffers: {})",
                                    b.name, b.pad->lengths, join(buffer_names)),
                        b.pad->lengths_where);
        const bool i32 =
            !lengths->type.problem_dtype && lengths->type.by_dtype.empty() && lengths->type.fixed == ElemType::i32;
        if (!i32 || lengths->role != BufferRole::input)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("buffer {} is padded by the lengths in {}, which must be an i32 input (type: i32, "
                                    "role: input): it is {} {}",
                                    b.name, lengths->name,
                                    lengths->type.problem_dtype || !lengths->type.by_dtype.empty()
                                        ? std::string("a per-dtype")
                                        : std::string(elem_wire_name(lengths->type.fixed)),
                                    buffer_role_name(lengths->role)),
                        b.pad->lengths_where);
    }
    if (std::none_of(op->m_buffers.begin(), op->m_buffers.end(),
                     [](const Buffer& b) { return b.role == BufferRole::output || b.role == BufferRole::inout; }))
        buffers_node.fail("an op needs an output or inout buffer: there would be nothing to validate");

    // Arguments, in the kernel's order.
    const Located& args_node = *find_field(top, "arguments");
    std::set<std::string> passed;
    for (const Located& item : args_node.items()) {
        Argument a;
        if (!item.node().IsMap()) {
            a.buffer = item.text();
            if (std::find(buffer_names.begin(), buffer_names.end(), a.buffer) == buffer_names.end())
                item.fail(
                    fmt::format("unknown buffer '{}' (buffers: {}; a scalar is written {{i32: \"expr\"}}, "
                                "{{i64: ...}} or {{f32: ...}})",
                                a.buffer, join(buffer_names)));
            passed.insert(a.buffer);
        } else {
            auto f = item.fields({"i32", "i64", "f32"}, {});
            if (f.size() != 1) item.fail("a scalar argument is one of {i32: expr}, {i64: expr} or {f32: expr}");
            const auto& [kind, value] = f.front();
            a.kind = kind == "i32" ? KernelArg::Kind::i32 : kind == "i64" ? KernelArg::Kind::i64 : KernelArg::Kind::f32;
            if (std::find(buffer_names.begin(), buffer_names.end(), value.text()) != buffer_names.end())
                value.fail(fmt::format("'{}' is a buffer, not a {} scalar: list it by name ({})", value.text(), kind,
                                       value.text()));
            // An f32 argument is real arithmetic ("1 / sqrt(H)"); the integer ones divide as C++ integers do.
            a.value = std::make_unique<Expression>(
                value.text(), value.where(), a.kind == KernelArg::Kind::f32 ? Arithmetic::real : Arithmetic::integer);
            check_variables(*a.value, axis_names, "the argument", let_names);
        }
        op->m_arguments.push_back(std::move(a));
    }
    if (op->m_arguments.empty()) args_node.fail("the kernel needs at least one argument");
    for (const Buffer& b : op->m_buffers)
        if (!passed.count(b.name))
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("buffer {} is never passed to the kernel (add it to arguments, or remove it)", b.name),
                b.where);

    op->m_bytes = std::make_unique<Expression>(read_expression(*find_field(top, "bytes")));
    check_variables(*op->m_bytes, axis_names, "bytes", let_names);
    if (const Located* fl = find_field(top, "flops")) {
        op->m_flops = std::make_unique<Expression>(read_expression(*fl));
        check_variables(*op->m_flops, axis_names, "flops", let_names);
    }
    return op;
}

bool DeclaredOp::has_axis(const std::string& name) const {
    return std::any_of(m_axes.begin(), m_axes.end(), [&](const OpAxis& a) { return a.name == name; });
}

std::map<std::string, double> DeclaredOp::variables(const Problem& p) const {
    std::vector<std::string> required, optional;
    for (const OpAxis& a : m_axes) (a.default_value ? optional : required).push_back(a.name);
    for (const auto& [n, v] : p.shape)
        if (!has_axis(n))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} has axes {}{}; unknown axis {}", key(), join(required),
                                    optional.empty() ? "" : " and optionally " + join(optional), n),
                        p.key());
    std::map<std::string, double> vars;
    vars[dtype_bytes_variable] = dtype_bytes(p.dtype);
    for (const OpAxis& a : m_axes) {
        if (const std::optional<std::int64_t> v = lookup(p.shape, a.name)) {
            vars[a.name] = static_cast<double>(*v);
        } else if (a.default_value) {
            vars[a.name] = static_cast<double>(integral(*a.default_value, vars, key(), p.key()));
        } else {
            throw Error(ErrorCategory::bad_input, fmt::format("{} needs axis {}", key(), a.name), p.key());
        }
    }
    for (const Check& c : m_checks)
        if (!c.require.evaluate_bool(vars))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}: {} ({} does not hold)", key(), c.message, c.require.text()), p.key());
    return vars;
}

std::map<std::string, double> DeclaredOp::values(const Problem& p) const {
    std::map<std::string, double> vars = variables(p);
    for (const Let& l : m_lets) {
        const double v = l.value.evaluate(vars);
        if (l.sqrt && !(v >= 0))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}: the square root of '{}' = {} at {}", key(), l.value.text(), v, p.key()),
                        l.value.where());
        vars[l.name] = l.sqrt ? std::sqrt(v) : v;
    }
    return vars;
}

Problem DeclaredOp::resolved(const Problem& p) const {
    const std::map<std::string, double> vars = variables(p);
    Problem out{p.dtype, {}};
    for (const OpAxis& a : m_axes) out.shape.emplace_back(a.name, static_cast<std::int64_t>(vars.at(a.name)));
    return out;
}

ElemType DeclaredOp::elem_type_of(const TypeRule& t, const Problem& p, const std::string& where) const {
    if (t.problem_dtype) return elem_type(p.dtype);
    if (t.by_dtype.empty()) return t.fixed;
    for (const auto& [d, e] : t.by_dtype)
        if (d == p.dtype) return e;
    throw Error(ErrorCategory::bad_input,
                fmt::format("{}: the buffer's type names no element type for dtype {}", key(), dtype_name(p.dtype)),
                where);
}

std::vector<BufferSpec> DeclaredOp::buffers(const Problem& p) const {
    const std::map<std::string, double> vars = values(p);
    std::vector<BufferSpec> out;
    for (const Buffer& b : m_buffers) {
        double elements = 1;
        if (b.strides.empty()) {
            for (const Expression& e : b.shape) elements *= static_cast<double>(integral(e, vars, key(), p.key()));
        } else {
            // A strided view spans from its first element to its last.
            double last = 0;
            bool empty = false;
            for (std::size_t i = 0; i < b.shape.size(); ++i) {
                const std::int64_t extent = integral(b.shape[i], vars, key(), p.key());
                empty = empty || extent == 0;
                last +=
                    static_cast<double>(extent - 1) * static_cast<double>(integral(b.strides[i], vars, key(), p.key()));
            }
            elements = empty ? 0 : last + 1;
        }
        if (elements < 0 || elements > max_buffer_elements)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}: buffer {} would have {} elements at {}", key(), b.name, elements, p.key()),
                        b.where);
        const bool generated = b.role == BufferRole::input || b.role == BufferRole::inout;
        double lo = generated ? -1 : 0, hi = generated ? 1 : 0;  // outputs and scratch have no generator: [0, 0]
        if (!b.range.empty()) {
            lo = b.range[0].evaluate(vars);
            hi = b.range[1].evaluate(vars);
            if (!(lo <= hi))
                throw Error(ErrorCategory::bad_input,
                            fmt::format("{}: buffer {} has the range [{}, {}] at {}: lo is above hi", key(), b.name, lo,
                                        hi, p.key()),
                            b.where);
        }
        out.push_back(BufferSpec{b.name, elem_type_of(b.type, p, b.where), static_cast<std::int64_t>(elements), b.role,
                                 lo, hi, std::nullopt});  // the pad below, once every buffer's elements are known
    }
    for (std::size_t i = 0; i < m_buffers.size(); ++i) {
        const Buffer& b = m_buffers[i];
        if (!b.pad) continue;
        BufferPad pad;
        pad.lengths = b.pad->lengths;
        for (const BufferSpec& l : out)
            if (l.name == pad.lengths) pad.sequences = l.elements;
        pad.heads = integral(b.pad->heads, vars, key(), p.key());
        pad.tokens = integral(b.pad->tokens, vars, key(), p.key());
        pad.token_elements = integral(b.pad->token_elements, vars, key(), p.key());
        if (pad.heads < 0 || pad.tokens < 0 || pad.token_elements < 0)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}: buffer {}'s pad has {} heads, {} tokens and {} token_elements at {}: none may "
                                    "be negative",
                                    key(), b.name, pad.heads, pad.tokens, pad.token_elements, p.key()),
                        b.pad->where);
        const double covered = static_cast<double>(pad.sequences) * static_cast<double>(pad.heads) *
                               static_cast<double>(pad.tokens) * static_cast<double>(pad.token_elements);
        if (covered > static_cast<double>(out[i].elements))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}: buffer {}'s pad covers {} sequences ({}'s elements) x {} heads x {} tokens x "
                                    "{} token_elements = {} elements at {}, more than the buffer's {}",
                                    key(), b.name, pad.sequences, pad.lengths, pad.heads, pad.tokens,
                                    pad.token_elements, covered, p.key(), out[i].elements),
                        b.pad->where);
        out[i].pad = std::move(pad);
    }
    return out;
}

std::vector<KernelArg> DeclaredOp::arguments(const Problem& p) const {
    const std::map<std::string, double> vars = values(p);
    std::vector<KernelArg> out;
    for (const Argument& a : m_arguments) {
        switch (a.kind) {
            case KernelArg::Kind::buffer:
                out.push_back(KernelArg::buf(a.buffer));
                break;
            case KernelArg::Kind::i32: {
                const std::int64_t v = integral(*a.value, vars, key(), p.key());
                if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
                    throw Error(ErrorCategory::bad_input,
                                fmt::format("{}: i32 argument '{}' is {} at {}, outside the int range", key(),
                                            a.value->text(), v, p.key()),
                                a.value->where());
                out.push_back(KernelArg::i32(v));
                break;
            }
            case KernelArg::Kind::i64:
                out.push_back(KernelArg::i64(integral(*a.value, vars, key(), p.key())));
                break;
            case KernelArg::Kind::f32:
                out.push_back(KernelArg::f32(a.value->evaluate(vars)));
                break;
        }
    }
    return out;
}

double DeclaredOp::bytes_moved(const Problem& p) const { return m_bytes->evaluate(values(p)); }

double DeclaredOp::flops(const Problem& p) const { return m_flops ? m_flops->evaluate(values(p)) : 0.0; }

std::shared_ptr<const DeclaredOp> DeclaredOp::load_file(const std::string& path) {
    const std::string text = read_file(path, "the op spec file");
    const Located root = Located::parse(text, &path);
    std::string names[2];
    for (int i = 0; i < 2; ++i) {
        const char* key = i == 0 ? "op" : "variant";
        const YAML::Node n = root.node().IsMap() ? root.node()[key] : YAML::Node();
        if (!n || !n.IsScalar() || n.Scalar().empty())
            root.fail(fmt::format("an op spec file names the op it declares: it needs '{}'", key));
        names[i] = n.Scalar();
    }
    return parse(root, names[0], names[1]);
}

std::vector<std::shared_ptr<const DeclaredOp>> DeclaredOp::load_folder(const std::string& folder) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file() && it->path().filename().string().ends_with(".op.yaml")) files.push_back(it->path());
    if (ec) throw Error(ErrorCategory::bad_input, "cannot list the op spec files: " + ec.message(), folder);
    std::sort(files.begin(), files.end());
    std::vector<std::shared_ptr<const DeclaredOp>> ops;
    for (const fs::path& f : files) {
        ops.push_back(load_file(f.string()));
        for (std::size_t i = 0; i + 1 < ops.size(); ++i)
            if (ops[i]->key() == ops.back()->key())
                throw Error(ErrorCategory::bad_input,
                            fmt::format("op {} is declared twice: in {} and here", ops.back()->key(), ops[i]->where()),
                            ops.back()->where());
    }
    return ops;
}

std::vector<DeclaredOp::BufferDeclaration> DeclaredOp::buffer_declarations() const {
    std::vector<BufferDeclaration> out;
    for (const Buffer& b : m_buffers) {
        BufferDeclaration d;
        d.name = b.name;
        d.role = b.role;
        d.per_dtype = b.type.problem_dtype || !b.type.by_dtype.empty();
        for (const Dtype dt : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
            if (b.type.problem_dtype)
                d.types[dt] = elem_type(dt);
            else if (b.type.by_dtype.empty())
                d.types[dt] = b.type.fixed;
        }
        for (const auto& [dt, e] : b.type.by_dtype) d.types[dt] = e;
        for (const Expression& e : b.shape) d.shape.push_back(e.text());
        for (const Expression& e : b.strides) d.strides.push_back(e.text());
        for (const Expression& e : b.range) d.range.push_back(e.text());
        if (b.pad) {
            d.pad_lengths = b.pad->lengths;
            d.pad_heads = b.pad->heads.text();
            d.pad_tokens = b.pad->tokens.text();
            d.pad_token_elements = b.pad->token_elements.text();
        }
        d.where = b.where;
        out.push_back(std::move(d));
    }
    return out;
}

std::vector<DeclaredOp::ArgumentDeclaration> DeclaredOp::argument_declarations() const {
    std::vector<ArgumentDeclaration> out;
    for (const Argument& a : m_arguments)
        out.push_back({a.kind, a.buffer, a.value ? a.value->text() : "", a.value ? a.value->where() : m_where});
    return out;
}

std::vector<DeclaredOp::CheckDeclaration> DeclaredOp::check_declarations() const {
    std::vector<CheckDeclaration> out;
    for (const Check& c : m_checks) out.push_back({c.require.text(), c.message, c.require.where()});
    return out;
}

std::vector<DeclaredOp::LetDeclaration> DeclaredOp::let_declarations() const {
    std::vector<LetDeclaration> out;
    for (const Let& l : m_lets) out.push_back({l.name, l.value.text(), l.value.where(), l.sqrt});
    return out;
}

}  // namespace ktune
