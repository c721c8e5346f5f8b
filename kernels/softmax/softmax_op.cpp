// softmax/fwd: out[r, :] = softmax(scale * x[r, :]) over rows of N elements. Kernels: kernels/softmax/*.cuh; search
// space: search_spaces/softmax.yaml.
//
// Problem axes: M (rows), N (columns: up to vocabulary sizes, 128256 and beyond), optional S (row stride of x and out
// in elements, default N, >= N). The scale is a kernel argument; the op passes 0.5 (not 1, so that validation
// exercises it; the kernels' time does not depend on it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

constexpr double softmax_scale = 0.5;

struct SoftmaxShape {
    std::int64_t m = 0, n = 0, s = 0;
};

SoftmaxShape shape_of(const Problem& p) {
    const std::string where = fmt::format("softmax/fwd {}", p.key());
    for (const auto& [name, value] : p.shape)
        if (name != "M" && name != "N" && name != "S")
            throw Error(ErrorCategory::bad_input,
                        fmt::format("softmax/fwd has axes M, N and optionally S; unknown axis {}", name), where);
    auto required = [&](std::string_view name) {
        if (auto v = lookup(p.shape, name)) return *v;
        throw Error(ErrorCategory::bad_input, fmt::format("softmax/fwd needs axis {}", name), where);
    };
    SoftmaxShape s;
    s.m = required("M");
    s.n = required("N");
    s.s = lookup(p.shape, "S").value_or(s.n);
    constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
    if (s.m < 1 || s.n < 1)
        throw Error(ErrorCategory::bad_input, fmt::format("softmax/fwd needs M >= 1 and N >= 1, got M={} N={}", s.m, s.n),
                    where);
    if (s.m > int_max || s.n > int_max)  // the kernels take rows and columns as int
        throw Error(ErrorCategory::bad_input, fmt::format("softmax/fwd needs M and N <= {}", int_max), where);
    if (s.s < s.n)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("softmax/fwd row stride S={} is smaller than the row length N={}", s.s, s.n), where);
    if (s.s > std::numeric_limits<std::int64_t>::max() / s.m)
        throw Error(ErrorCategory::bad_input, fmt::format("softmax/fwd M*S overflows: M={} S={}", s.m, s.s), where);
    return s;
}

class SoftmaxFwdOp final : public OpDescription {
public:
    std::string_view name() const override { return "softmax"; }
    std::string_view variant() const override { return "fwd"; }
    std::string_view summary() const override {
        return "Row softmax: out = softmax(scale * x) over rows of N elements (axes M, N, optional stride S)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const SoftmaxShape s = shape_of(p);
        const ElemType t = elem_type(p.dtype);
        // Logits in [-8, 8): scaled by 0.5, exp spans e^8 ~ 3000 between the largest and smallest term.
        return {
            {"x", t, s.m * s.s, BufferRole::input, -8.0, 8.0},
            {"out", t, s.m * s.s, BufferRole::output, 0.0, 0.0},
        };
    }

    // softmax_fwd(out, x, rows, cols, x_row_stride, out_row_stride, scale).
    std::vector<KernelArg> arguments(const Problem& p) const override {
        const SoftmaxShape s = shape_of(p);
        return {KernelArg::buf("out"), KernelArg::buf("x"),  KernelArg::i32(s.m),          KernelArg::i32(s.n),
                KernelArg::i64(s.s),   KernelArg::i64(s.s), KernelArg::f32(softmax_scale)};
    }

    // x read once, out written once (valid columns only).
    double bytes_moved(const Problem& p) const override {
        const SoftmaxShape s = shape_of(p);
        return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * elem_bytes(elem_type(p.dtype));
    }

    // Per element: scale, max, subtract, exp, add; then exp again, multiply (counting exp as one).
    double flops(const Problem& p) const override {
        const SoftmaxShape s = shape_of(p);
        return 7.0 * static_cast<double>(s.m) * static_cast<double>(s.n);
    }

    // out in double (scale rounded to float, as the kernels receive it); out's padding columns are left as they are
    // (out is created, filled with NaN, when absent or of the wrong size).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const SoftmaxShape s = shape_of(p);
        auto it = buffers.find("x");
        if (it == buffers.end())
            throw Error(ErrorCategory::bad_input, "cpu_reference needs buffer x", "softmax/fwd");
        const std::vector<double>& x = it->second;
        if (static_cast<std::int64_t>(x.size()) != s.m * s.s)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("buffer x has {} elements, the problem needs {}", x.size(), s.m * s.s),
                        "softmax/fwd");
        std::vector<double>& out = buffers["out"];
        if (static_cast<std::int64_t>(out.size()) != s.m * s.s)
            out.assign(static_cast<std::size_t>(s.m * s.s), std::numeric_limits<double>::quiet_NaN());
        const double scale = static_cast<double>(static_cast<float>(softmax_scale));
        for (std::int64_t r = 0; r < s.m; ++r) {
            const std::size_t row = static_cast<std::size_t>(r * s.s);
            double mx = -std::numeric_limits<double>::infinity();
            for (std::int64_t c = 0; c < s.n; ++c) mx = std::max(mx, scale * x[row + c]);
            double sum = 0.0;
            for (std::int64_t c = 0; c < s.n; ++c) sum += std::exp(scale * x[row + c] - mx);
            for (std::int64_t c = 0; c < s.n; ++c) out[row + c] = std::exp(scale * x[row + c] - mx) / sum;
        }
    }
};

}  // namespace

const OpDescription& softmax_fwd_op() {
    static const SoftmaxFwdOp op;
    return op;
}

}  // namespace ktune
