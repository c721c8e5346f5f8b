// layernorm: y[r, c] = (x[r, c] - mean(x[r, :])) * rsqrt(var(x[r, :]) + eps) * w[c] (+ b[c]), var the biased (1/H)
// variance, as torch.nn.LayerNorm.
//   layernorm/fwd         with bias b     search_spaces/layernorm.yaml
//   layernorm/fwd_nobias  without bias    search_spaces/layernorm_nobias.yaml
// Kernels: kernels/layernorm/*.cuh.
//
// Problem axes: M (rows), H (hidden size), optional S (row stride of x and y in elements, default H, >= H).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

constexpr double layernorm_eps = 1e-5;  // torch.nn.LayerNorm's default


class LayerNormOp final : public OpDescription {
public:
    explicit LayerNormOp(bool bias) : m_bias(bias), m_key(bias ? "layernorm/fwd" : "layernorm/fwd_nobias") {}

    std::string_view name() const override { return "layernorm"; }
    std::string_view variant() const override { return m_bias ? "fwd" : "fwd_nobias"; }
    std::string_view summary() const override {
        if (m_bias)
            return "LayerNorm forward: y = (x - mean) * rsqrt(var + eps) * w + b over rows of H elements (two-pass "
                   "variance; axes M, H, optional stride S)";
        return "LayerNorm forward without bias: y = (x - mean) * rsqrt(var + eps) * w (two-pass variance; axes M, H, "
               "optional stride S)";
    }

    // x has a mean of 1 and a standard deviation of 1.15: a row's mean matters, and so does how the variance is taken.
    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        const ElemType t = elem_type(p.dtype);
        std::vector<BufferSpec> b{
            {"x", t, s.m * s.s, BufferRole::input, -1.0, 3.0},
            {"w", t, s.h, BufferRole::input, 0.5, 1.5},
        };
        if (m_bias) b.push_back({"b", t, s.h, BufferRole::input, -0.5, 0.5});
        b.push_back({"y", t, s.m * s.s, BufferRole::output, 0.0, 0.0});
        return b;
    }

    // layernorm_fwd(y, x, w, b, rows, hidden, x_row_stride, y_row_stride, eps); _nobias without b.
    std::vector<KernelArg> arguments(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        std::vector<KernelArg> a{KernelArg::buf("y"), KernelArg::buf("x"), KernelArg::buf("w")};
        if (m_bias) a.push_back(KernelArg::buf("b"));
        for (KernelArg v : {KernelArg::i32(s.m), KernelArg::i32(s.h), KernelArg::i64(s.s), KernelArg::i64(s.s),
                            KernelArg::f32(layernorm_eps)})
            a.push_back(std::move(v));
        return a;
    }

    // x read and y written once (valid columns), w (and b) read once.
    double bytes_moved(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        const double h = static_cast<double>(s.h);
        return (2.0 * static_cast<double>(s.m) * h + (m_bias ? 2.0 : 1.0) * h) * elem_bytes(elem_type(p.dtype));
    }

    // Per element: sum (1), deviation square-accumulate (3), normalise, scale and shift (3, or 2 without bias).
    double flops(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        return (m_bias ? 7.0 : 6.0) * static_cast<double>(s.m) * static_cast<double>(s.h);
    }

    // y in double (two-pass variance, eps rounded to float as the kernels receive it), not rounded to the storage
    // type. y's padding columns are left as they are (y created with NaN when absent or mis-sized).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const RowShape s = row_shape(p, m_key);
        const std::vector<double>& x = host_input(buffers, "x", s.m * s.s, m_key);
        const std::vector<double>& w = host_input(buffers, "w", s.h, m_key);
        const std::vector<double>* b = m_bias ? &host_input(buffers, "b", s.h, m_key) : nullptr;
        std::vector<double>& y = buffers["y"];
        if (static_cast<std::int64_t>(y.size()) != s.m * s.s)
            y.assign(static_cast<std::size_t>(s.m * s.s), std::numeric_limits<double>::quiet_NaN());
        const double eps = static_cast<double>(static_cast<float>(layernorm_eps));
        const double h = static_cast<double>(s.h);
        for (std::int64_t r = 0; r < s.m; ++r) {
            const std::size_t row = static_cast<std::size_t>(r * s.s);
            double sum = 0.0;
            for (std::int64_t c = 0; c < s.h; ++c) sum += x[row + c];
            const double mean = sum / h;
            double dev = 0.0;
            for (std::int64_t c = 0; c < s.h; ++c) dev += (x[row + c] - mean) * (x[row + c] - mean);
            const double rstd = 1.0 / std::sqrt(dev / h + eps);
            for (std::int64_t c = 0; c < s.h; ++c) {
                const std::size_t col = static_cast<std::size_t>(c);
                y[row + c] = (x[row + c] - mean) * rstd * w[col] + (b ? (*b)[col] : 0.0);
            }
        }
    }

private:
            bool m_bias;
    std::string m_key;  // "layernorm/fwd": names the op in messages
};

}  // namespace

const OpDescription& layernorm_fwd_op() {
    static const LayerNormOp op(true);
    return op;
}

const OpDescription& layernorm_fwd_nobias_op() {
    static const LayerNormOp op(false);
    return op;
}

}  // namespace ktune
