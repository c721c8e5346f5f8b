// glu/swiglu, glu/swiglu_cat, glu/geglu, glu/geglu_cat: out = act(gate) * up, act silu (SwiGLU) or gelu with the
// tanh approximation (GeGLU), from two tensors gate [M, I] and up [M, I] or from one x [M, 2I] (gate first, up second:
// the *_cat variants). Kernels: kernels/glu/*.cuh; search spaces: search_spaces/glu_<variant>.yaml.
//
// Problem axes: M (rows, tokens), I (intermediate size: columns of out), optional S (row stride of the inputs in
// elements: default I, or 2I for the cat layout; >= that), optional SO (row stride of out, default I, >= I).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

struct GluShape {
    std::int64_t m = 0, i = 0, s = 0, so = 0;
};

class GluOp final : public OpDescription {
public:
    GluOp(std::string_view variant, bool gelu, bool cat) : m_variant(variant), m_gelu(gelu), m_cat(cat) {}

    std::string_view name() const override { return "glu"; }
    std::string_view variant() const override { return m_variant; }
    std::string_view summary() const override {
        if (m_gelu)
            return m_cat ? "GeGLU: out = gelu_tanh(x[:, :I]) * x[:, I:] from one [M, 2I] tensor (axes M, I; optional S, SO)"
                         : "GeGLU: out = gelu_tanh(gate) * up from gate, up [M, I] (axes M, I; optional S, SO)";
        return m_cat ? "SwiGLU: out = silu(x[:, :I]) * x[:, I:] from one [M, 2I] tensor (axes M, I; optional S, SO)"
                     : "SwiGLU: out = silu(gate) * up from gate, up [M, I] (axes M, I; optional S, SO)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const GluShape s = shape_of(p);
        const ElemType t = elem_type(p.dtype);
        if (m_cat)
            return {{"x", t, s.m * s.s, BufferRole::input, -4.0, 4.0},
                    {"out", t, s.m * s.so, BufferRole::output, 0.0, 0.0}};
        return {{"gate", t, s.m * s.s, BufferRole::input, -4.0, 4.0},
                {"up", t, s.m * s.s, BufferRole::input, -2.0, 2.0},
                {"out", t, s.m * s.so, BufferRole::output, 0.0, 0.0}};
    }

    // glu_fwd(out, gate, up, rows, cols, gate_row_stride, up_row_stride, out_row_stride); the cat layout passes x as
    // both gate and up (the kernel finds up cols elements into each row).
    std::vector<KernelArg> arguments(const Problem& p) const override {
        const GluShape s = shape_of(p);
        const char* gate = m_cat ? "x" : "gate";
        const char* up = m_cat ? "x" : "up";
        return {KernelArg::buf("out"), KernelArg::buf(gate), KernelArg::buf(up),  KernelArg::i32(s.m),
                KernelArg::i32(s.i),   KernelArg::i64(s.s),  KernelArg::i64(s.s), KernelArg::i64(s.so)};
    }

    // gate and up read once, out written once (valid columns only).
    double bytes_moved(const Problem& p) const override {
        const GluShape s = shape_of(p);
        return 3.0 * static_cast<double>(s.m) * static_cast<double>(s.i) * elem_bytes(elem_type(p.dtype));
    }

    // Per element, counting exp and divide as one each: silu 4 (negate, exp, add, divide) + the product; gelu_tanh
    // 4 more for the cubic polynomial.
    double flops(const Problem& p) const override {
        const GluShape s = shape_of(p);
        return (m_gelu ? 9.0 : 5.0) * static_cast<double>(s.m) * static_cast<double>(s.i);
    }

    // out in double from the textbook activation; out's padding columns are left as they are (out is created,
    // filled with NaN, when absent or of the wrong size).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const GluShape s = shape_of(p);
        const std::vector<double>& gate = input_of(buffers, m_cat ? "x" : "gate", s.m * s.s);
        const std::vector<double>& up = input_of(buffers, m_cat ? "x" : "up", s.m * s.s);
        const std::int64_t up_offset = m_cat ? s.i : 0;
        std::vector<double>& out = buffers["out"];
        if (static_cast<std::int64_t>(out.size()) != s.m * s.so)
            out.assign(static_cast<std::size_t>(s.m * s.so), std::numeric_limits<double>::quiet_NaN());
        for (std::int64_t r = 0; r < s.m; ++r)
            for (std::int64_t c = 0; c < s.i; ++c) {
                const double g = gate[static_cast<std::size_t>(r * s.s + c)];
                const double u = up[static_cast<std::size_t>(r * s.s + up_offset + c)];
                const double a = m_gelu ? 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))
                                        : g / (1.0 + std::exp(-g));
                out[static_cast<std::size_t>(r * s.so + c)] = a * u;
            }
    }

private:
    GluShape shape_of(const Problem& p) const {
        const std::string where = fmt::format("glu/{} {}", m_variant, p.key());
        for (const auto& [name, value] : p.shape)
            if (name != "M" && name != "I" && name != "S" && name != "SO")
                throw Error(ErrorCategory::bad_input,
                            fmt::format("glu has axes M, I and optionally S, SO; unknown axis {}", name), where);
        auto required = [&](std::string_view name) {
            if (auto v = lookup(p.shape, name)) return *v;
            throw Error(ErrorCategory::bad_input, fmt::format("glu needs axis {}", name), where);
        };
        GluShape s;
        s.m = required("M");
        s.i = required("I");
        if (s.m < 1 || s.i < 1)
            throw Error(ErrorCategory::bad_input, fmt::format("glu needs M >= 1 and I >= 1, got M={} I={}", s.m, s.i),
                        where);
        constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
        if (s.m > int_max || 2 * s.i > int_max)  // the kernels take rows and columns (and cat rows of 2I) as int
            throw Error(ErrorCategory::bad_input, fmt::format("glu needs M <= {} and 2I <= {}", int_max, int_max),
                        where);
        const std::int64_t row = m_cat ? 2 * s.i : s.i;
        s.s = lookup(p.shape, "S").value_or(row);
        s.so = lookup(p.shape, "SO").value_or(s.i);
        if (s.s < row)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("glu input row stride S={} is smaller than the input row {}", s.s, row), where);
        if (s.so < s.i)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("glu output row stride SO={} is smaller than the row length I={}", s.so, s.i),
                        where);
        if (s.s > std::numeric_limits<std::int64_t>::max() / s.m || s.so > std::numeric_limits<std::int64_t>::max() / s.m)
            throw Error(ErrorCategory::bad_input, "glu buffer sizes overflow", where);
        return s;
    }

    const std::vector<double>& input_of(const HostBuffers& buffers, const std::string& name,
                                        std::int64_t elements) const {
        auto it = buffers.find(name);
        if (it == buffers.end())
            throw Error(ErrorCategory::bad_input, fmt::format("cpu_reference needs buffer {}", name),
                        fmt::format("glu/{}", m_variant));
        if (static_cast<std::int64_t>(it->second.size()) != elements)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("buffer {} has {} elements, the problem needs {}", name, it->second.size(),
                                    elements),
                        fmt::format("glu/{}", m_variant));
        return it->second;
    }

    std::string_view m_variant;
    bool m_gelu, m_cat;
};

}  // namespace

const OpDescription& glu_swiglu_op() {
    static const GluOp op("swiglu", false, false);
    return op;
}

const OpDescription& glu_swiglu_cat_op() {
    static const GluOp op("swiglu_cat", false, true);
    return op;
}

const OpDescription& glu_geglu_op() {
    static const GluOp op("geglu", true, false);
    return op;
}

const OpDescription& glu_geglu_cat_op() {
    static const GluOp op("geglu_cat", true, true);
    return op;
}

}  // namespace ktune
