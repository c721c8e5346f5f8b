// add_rmsnorm: fused residual add + RMSNorm forward. s = x + residual (fp32), residual_out = s rounded to T,
// y = s * rsqrt(mean(s^2) + eps) * g with g = w, or 1 + w for the Gemma variant.
//   add_rmsnorm/fwd          residual_out is its own output buffer    search_spaces/add_rmsnorm.yaml
//   add_rmsnorm/fwd_inplace  residual is updated in place (inout)      search_spaces/add_rmsnorm_inplace.yaml
//   add_rmsnorm/fwd_gemma    fwd with g = 1 + w                        search_spaces/add_rmsnorm_gemma.yaml
// Kernels: kernels/add_rmsnorm/*.cuh.
//
// Problem axes: M (rows), H (hidden size), optional S (row stride of every [M, H] buffer in elements, default H, >= H).
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

constexpr double add_rmsnorm_eps = 1e-6;


enum class Kind { fwd, fwd_inplace, fwd_gemma };

std::string_view variant_name(Kind k) {
    switch (k) {
        case Kind::fwd: return "fwd";
        case Kind::fwd_inplace: return "fwd_inplace";
        case Kind::fwd_gemma: return "fwd_gemma";
    }
    return "?";
}

class AddRmsNormOp final : public OpDescription {
public:
    explicit AddRmsNormOp(Kind kind) : m_kind(kind), m_key(fmt::format("add_rmsnorm/{}", variant_name(kind))) {}

    std::string_view name() const override { return "add_rmsnorm"; }
    std::string_view variant() const override { return variant_name(m_kind); }
    std::string_view summary() const override {
        switch (m_kind) {
            case Kind::fwd_inplace:
                return "Residual add + RMSNorm, residual updated in place: residual += x; y = rmsnorm(residual) * w "
                       "(fp32 sum normalised; axes M, H, optional stride S)";
            case Kind::fwd_gemma:
                return "Residual add + RMSNorm, Gemma weights: residual_out = x + residual; "
                       "y = rmsnorm(x + residual) * (1 + w) (axes M, H, optional stride S)";
            case Kind::fwd: break;
        }
        return "Residual add + RMSNorm: residual_out = x + residual; y = rmsnorm(x + residual) * w (fp32 sum "
               "normalised; axes M, H, optional stride S)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        const ElemType t = elem_type(p.dtype);
        const bool gemma = m_kind == Kind::fwd_gemma;
        std::vector<BufferSpec> b{
            {"x", t, s.m * s.s, BufferRole::input, -2.0, 2.0},
            {"residual", t, s.m * s.s, m_kind == Kind::fwd_inplace ? BufferRole::inout : BufferRole::input, -2.0, 2.0},
            // The effective weight (w, or 1 + w for Gemma) lies in [0.5, 1.5) either way.
            {"w", t, s.h, BufferRole::input, gemma ? -0.5 : 0.5, gemma ? 0.5 : 1.5},
            {"y", t, s.m * s.s, BufferRole::output, 0.0, 0.0},
        };
        if (m_kind != Kind::fwd_inplace) b.push_back({"residual_out", t, s.m * s.s, BufferRole::output, 0.0, 0.0});
        return b;
    }

    // add_rmsnorm_fwd(y, residual_out, x, residual, w, ...) / add_rmsnorm_fwd_inplace(y, residual, x, w, ...).
    std::vector<KernelArg> arguments(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        std::vector<KernelArg> a{KernelArg::buf("y")};
        if (m_kind == Kind::fwd_inplace) {
            a.push_back(KernelArg::buf("residual"));
            a.push_back(KernelArg::buf("x"));
        } else {
            a.push_back(KernelArg::buf("residual_out"));
            a.push_back(KernelArg::buf("x"));
            a.push_back(KernelArg::buf("residual"));
        }
        for (KernelArg v : {KernelArg::buf("w"), KernelArg::i32(s.m), KernelArg::i32(s.h), KernelArg::i64(s.s),
                            KernelArg::i64(s.s), KernelArg::i64(s.s), KernelArg::f32(add_rmsnorm_eps)})
            a.push_back(std::move(v));
        return a;
    }

    // x and residual read, y and the residual written (valid columns only), w read once.
    double bytes_moved(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        return (4.0 * static_cast<double>(s.m) * static_cast<double>(s.h) + static_cast<double>(s.h)) *
               elem_bytes(elem_type(p.dtype));
    }

    // Per element: add (1), square-accumulate (2), scale by rstd and the weight (2; Gemma's 1 + w: one more).
    double flops(const Problem& p) const override {
        const RowShape s = row_shape(p, m_key);
        return (m_kind == Kind::fwd_gemma ? 6.0 : 5.0) * static_cast<double>(s.m) * static_cast<double>(s.h);
    }

    // In double, not rounded to the storage type: the residual written (residual_out, or residual in place) is the
    // exact sum, y normalises it. Padding columns of the outputs are left as they are (outputs created with NaN when
    // absent or mis-sized; the in-place residual's padding keeps its input values).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const RowShape s = row_shape(p, m_key);
        const std::int64_t n = s.m * s.s;
        const std::vector<double> x = host_input(buffers, "x", n, m_key);
        const std::vector<double> w = host_input(buffers, "w", s.h, m_key);
        std::vector<double> residual = host_input(buffers, "residual", n, m_key);  // a copy: in place, it is overwritten
        std::vector<double>& y = host_output(buffers, "y", n);
        std::vector<double>& res_out =
            m_kind == Kind::fwd_inplace ? buffers["residual"] : host_output(buffers, "residual_out", n);
        const double eps = static_cast<double>(static_cast<float>(add_rmsnorm_eps));
        for (std::int64_t r = 0; r < s.m; ++r) {
            const std::size_t row = static_cast<std::size_t>(r * s.s);
            double sum_sq = 0.0;
            for (std::int64_t c = 0; c < s.h; ++c) {
                const double v = x[row + c] + residual[row + c];
                sum_sq += v * v;
            }
            const double rstd = 1.0 / std::sqrt(sum_sq / static_cast<double>(s.h) + eps);
            for (std::int64_t c = 0; c < s.h; ++c) {
                const double v = x[row + c] + residual[row + c];
                const double wc = w[static_cast<std::size_t>(c)];
                res_out[row + c] = v;
                y[row + c] = v * rstd * (m_kind == Kind::fwd_gemma ? 1.0 + wc : wc);
            }
        }
    }

private:
                Kind m_kind;
    std::string m_key;  // "add_rmsnorm/fwd": names the op in messages
};

}  // namespace

const OpDescription& add_rmsnorm_fwd_op() {
    static const AddRmsNormOp op(Kind::fwd);
    return op;
}

const OpDescription& add_rmsnorm_fwd_inplace_op() {
    static const AddRmsNormOp op(Kind::fwd_inplace);
    return op;
}

const OpDescription& add_rmsnorm_fwd_gemma_op() {
    static const AddRmsNormOp op(Kind::fwd_gemma);
    return op;
}

}  // namespace ktune
