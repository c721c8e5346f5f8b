// rmsnorm/fwd: y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * w[c]. Kernels: kernels/rmsnorm/*.cuh; search
// space: search_spaces/rmsnorm.yaml.
// rmsnorm/fwd_gemma: the same with (1 + w[c]) for w[c] (Gemma checkpoints store w - 1); the same kernels with OFFSET 1,
// search space search_spaces/rmsnorm_gemma.yaml.
//
// Problem axes: M (rows, tokens), H (hidden size), optional S (row stride of x and y in elements, default H, >= H).
// With S > H the columns H..S-1 of each row are padding: no kernel reads or writes them, so an output's padding keeps
// whatever the worker put there (its poison) in both the tuned and the reference copy.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

constexpr double rmsnorm_eps = 1e-6;


class RmsNormFwdOp final : public OpDescription {
public:
    explicit RmsNormFwdOp(bool gemma) : m_gemma(gemma), m_key(gemma ? "rmsnorm/fwd_gemma" : "rmsnorm/fwd") {}

    std::string_view name() const override { return "rmsnorm"; }
    std::string_view variant() const override { return m_gemma ? "fwd_gemma" : "fwd"; }
    std::string_view summary() const override {
        if (m_gemma)
            return "RMSNorm forward, Gemma weights: y = x * rsqrt(mean(x^2) + eps) * (1 + w) (axes M, H, optional "
                   "stride S)";
        return "RMSNorm forward: y = x * rsqrt(mean(x^2) + eps) * w over rows of H elements (axes M, H, optional stride S)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        const ElemType t = elem_type(p.dtype);
        return {
            {"x", t, s.m * s.s, BufferRole::input, -2.0, 2.0},
            // The effective weight (w, or 1 + w for Gemma) lies in [0.5, 1.5) either way.
            {"w", t, s.h, BufferRole::input, m_gemma ? -0.5 : 0.5, m_gemma ? 0.5 : 1.5},
            {"y", t, s.m * s.s, BufferRole::output, 0.0, 0.0},
        };
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        return {KernelArg::buf("y"),   KernelArg::buf("x"),   KernelArg::buf("w"),
                KernelArg::i32(s.m),   KernelArg::i32(s.h),   KernelArg::i64(s.s),
                KernelArg::i64(s.s),   KernelArg::f32(rmsnorm_eps)};
    }

    // x and y once each (valid columns only), w once.
    double bytes_moved(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        return (2.0 * static_cast<double>(s.m) * static_cast<double>(s.h) + static_cast<double>(s.h)) *
               elem_bytes(elem_type(p.dtype));
    }

    // Per element: square-accumulate (2), scale by 1/rms and by w (2).
    double flops(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        return 4.0 * static_cast<double>(s.m) * static_cast<double>(s.h);
    }

    // y computed in double from the given x and w (eps rounded to float, as the kernels receive it); y is not rounded
    // to the storage type, so compare with the dtype's tolerance. y's padding columns are left as they are (y is
    // created, filled with NaN, when absent or of the wrong size).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const RowShape s = row_shape(p, m_key);
        const std::vector<double>& x = host_input(buffers, "x", s.m * s.s, m_key);
        const std::vector<double>& w = host_input(buffers, "w", s.h, m_key);
        std::vector<double>& y = host_output(buffers, "y", s.m * s.s);
        const double eps = static_cast<double>(static_cast<float>(rmsnorm_eps));
        for (std::int64_t r = 0; r < s.m; ++r) {
            const std::size_t row = static_cast<std::size_t>(r * s.s);
            double sum_sq = 0.0;
            for (std::int64_t c = 0; c < s.h; ++c) sum_sq += x[row + c] * x[row + c];
            const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(s.h) + eps);
            for (std::int64_t c = 0; c < s.h; ++c) {
                const double wc = w[static_cast<std::size_t>(c)];
                y[row + c] = x[row + c] * inv_rms * (m_gemma ? 1.0 + wc : wc);
            }
        }
    }

private:
    bool m_gemma;
    std::string m_key;  // "rmsnorm/fwd": names the op in messages
};

}  // namespace

const OpDescription& rmsnorm_fwd_op() {
    static const RmsNormFwdOp op(false);
    return op;
}

const OpDescription& rmsnorm_fwd_gemma_op() {
    static const RmsNormFwdOp op(true);
    return op;
}

}  // namespace ktune
