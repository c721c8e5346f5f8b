// rmsnorm/bwd: with rstd[r] = 1 / sqrt(mean(x[r, :]^2) + eps),
//   dx[r, c] = rstd[r] * dy[r, c] * w[c] - rstd[r]^3 * mean_c(dy[r, :] * w * x[r, :]) * x[r, c]
//   dw[c]    = sum_r dy[r, c] * x[r, c] * rstd[r]   (fp32 whatever the dtype)
// Kernels: kernels/rmsnorm/rmsnorm_bwd*.cuh; search space: search_spaces/rmsnorm_bwd.yaml.
//
// Problem axes: M (rows), H (hidden size), optional S (row stride of x, dy and dx in elements, default H, >= H).
// The scratch buffer holds the fixed dw reduction tree and the reference's column sums
// (kernels/rmsnorm/rmsnorm_bwd_layout.cuh sizes it, for the kernels and for this file alike).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "kernels/rmsnorm/rmsnorm_bwd_layout.cuh"
#include "core/error.hpp"

namespace ktune {
namespace {

constexpr double rmsnorm_bwd_eps = 1e-6;
constexpr std::string_view op_key = "rmsnorm/bwd";


class RmsNormBwdOp final : public OpDescription {
public:
    std::string_view name() const override { return "rmsnorm"; }
    std::string_view variant() const override { return "bwd"; }
    std::string_view summary() const override {
        return "RMSNorm backward: dx and an fp32, deterministic dw from x, w and dy (rstd recomputed; axes M, H, "
               "optional stride S)";
    }

    // x is shifted and dy has a positive mean so that mean(dy * w * x) is O(1): the second term of dx is then as
    // large as the first, and validation checks it; and every dw[c] is a sum with a non-zero mean, judged by rtol.
    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const RowShape s = row_shape(p, op_key);
        const ElemType t = elem_type(p.dtype);
        return {
            {"x", t, s.m * s.s, BufferRole::input, -1.0, 3.0},
            {"dy", t, s.m * s.s, BufferRole::input, -0.5, 1.5},
            {"w", t, s.h, BufferRole::input, 0.5, 1.5},
            {"dx", t, s.m * s.s, BufferRole::output, 0.0, 0.0},
            {"dw", ElemType::f32, s.h, BufferRole::output, 0.0, 0.0},
            {"scratch", ElemType::f32, rmsnorm_bwd_layout::dw_scratch_floats(s.m, s.h), BufferRole::scratch, 0.0, 0.0},
        };
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        const RowShape s = row_shape(p, op_key);
        return {KernelArg::buf("dx"), KernelArg::buf("dw"), KernelArg::buf("scratch"), KernelArg::buf("x"),
                KernelArg::buf("dy"), KernelArg::buf("w"),  KernelArg::i32(s.m),         KernelArg::i32(s.h),
                KernelArg::i64(s.s),  KernelArg::i64(s.s),  KernelArg::i64(s.s),
                KernelArg::f32(rmsnorm_bwd_eps)};
    }

    // x, dy read and dx written once (valid columns), w read once, dw (fp32) written once. Scratch traffic (the
    // partial rows, mostly in L2) is the kernel's cost, not the op's.
    double bytes_moved(const Problem& p) const override {
        const RowShape s = row_shape(p, op_key);
        const double mh = static_cast<double>(s.m) * static_cast<double>(s.h);
        return (3.0 * mh + static_cast<double>(s.h)) * elem_bytes(elem_type(p.dtype)) + 4.0 * static_cast<double>(s.h);
    }

    // Per element: two sums (x^2: 2, dy*w*x: 3), dx (4), dw term (3).
    double flops(const Problem& p) const override {
        const RowShape s = row_shape(p, op_key);
        return 12.0 * static_cast<double>(s.m) * static_cast<double>(s.h);
    }

    // dx and dw in double from the given x, dy and w (eps rounded to float as the kernels receive it), not rounded to
    // the storage type. dx's padding columns are left as they are (dx created with NaN when absent or mis-sized).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const RowShape s = row_shape(p, op_key);
        const std::vector<double>& x = host_input(buffers, "x", s.m * s.s, op_key);
        const std::vector<double>& dy = host_input(buffers, "dy", s.m * s.s, op_key);
        const std::vector<double>& w = host_input(buffers, "w", s.h, op_key);
        std::vector<double>& dx = host_output(buffers, "dx", s.m * s.s);
        std::vector<double>& dw = host_output(buffers, "dw", s.h);
        std::fill(dw.begin(), dw.end(), 0.0);
        const double eps = static_cast<double>(static_cast<float>(rmsnorm_bwd_eps));
        const double h = static_cast<double>(s.h);
        for (std::int64_t r = 0; r < s.m; ++r) {
            const std::size_t row = static_cast<std::size_t>(r * s.s);
            double sxx = 0.0, sgx = 0.0;
            for (std::int64_t c = 0; c < s.h; ++c) {
                sxx += x[row + c] * x[row + c];
                sgx += dy[row + c] * w[static_cast<std::size_t>(c)] * x[row + c];
            }
            const double rstd = 1.0 / std::sqrt(sxx / h + eps);
            const double k = rstd * rstd * rstd * (sgx / h);
            for (std::int64_t c = 0; c < s.h; ++c) {
                dx[row + c] = rstd * dy[row + c] * w[static_cast<std::size_t>(c)] - k * x[row + c];
                dw[static_cast<std::size_t>(c)] += dy[row + c] * x[row + c] * rstd;
            }
        }
    }
};

}  // namespace

const OpDescription& rmsnorm_bwd_op() {
    static const RmsNormBwdOp op;
    return op;
}

}  // namespace ktune
