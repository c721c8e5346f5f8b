// The CPU references of linear_skinny/fwd (kernels/linear_skinny/linear_skinny_fwd.op.yaml): y = x W^T with W dense
// [N, K] row-major, in double; and of linear_skinny/fwd_swiglu (linear_skinny_swiglu.op.yaml): the same with x =
// silu(gate) * up from gate_up [M, 2K], rounded to the problem's type first as the unfused swiglu + linear do; and
// of linear_skinny/fwd_add_rmsnorm (linear_skinny_add_rmsnorm.op.yaml): the same with x = T(s * rstd * nw), s = a + r
// in fp32, rstd = rsqrt(mean_k(s^2) + eps) (ktune::add_rms_norm), and r_out = T(s). The scratch is the kernel's own
// and has no reference value.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/op.hpp"

namespace ktune {
namespace {

// v rounded to nearest (ties to even) with the significant bits of dtype (fp16 11, subnormal below 2^-14; bf16 8;
// fp32 24); overflow is not modelled (the op's inputs stay far from it).
double round_to(Dtype dtype, double v) {
    if (v == 0.0 || !std::isfinite(v)) return v;
    const int bits = dtype == Dtype::fp16 ? 11 : dtype == Dtype::bf16 ? 8 : 24;
    const int min_exp = dtype == Dtype::fp16 ? -24 : dtype == Dtype::bf16 ? -133 : -149;  // of the smallest ulp
    int e = 0;
    std::frexp(v, &e);  // v = f 2^e, 0.5 <= |f| < 1
    const int ulp_exp = std::max(e - bits, min_exp);
    return std::ldexp(std::nearbyint(std::ldexp(v, -ulp_exp)), ulp_exp);
}

// y [rows, outs] = x [rows, ins] W^T [ins, outs] in double: the product every variant ends with.
void dense_product(const std::vector<double>& x, const std::vector<double>& w, std::int64_t rows, std::int64_t outs,
                   std::int64_t ins, std::vector<double>& y) {
    y.assign(static_cast<std::size_t>(rows * outs), 0.0);
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t n = 0; n < outs; ++n) {
            double acc = 0.0;
            for (std::int64_t k = 0; k < ins; ++k)
                acc += x[static_cast<std::size_t>(m * ins + k)] * w[static_cast<std::size_t>(n * ins + k)];
            y[static_cast<std::size_t>(m * outs + n)] = acc;
        }
}

}  // namespace

void linear_skinny_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) {
    const char* key = "linear_skinny/fwd";
    const std::int64_t rows = axis(p, "M", key), outs = axis(p, "N", key), ins = axis(p, "K", key);
    const std::vector<double>& x = host_input(buffers, "x", rows * ins, key);
    const std::vector<double>& w = host_input(buffers, "w", outs * ins, key);
    dense_product(x, w, rows, outs, ins, buffers["y"]);
}

void linear_skinny_fwd_swiglu_cpu_reference(const Problem& p, HostBuffers& buffers) {
    const char* key = "linear_skinny/fwd_swiglu";
    const std::int64_t rows = axis(p, "M", key), outs = axis(p, "N", key), ins = axis(p, "K", key);
    const std::vector<double>& gate_up = host_input(buffers, "gate_up", rows * 2 * ins, key);
    const std::vector<double>& w = host_input(buffers, "w", outs * ins, key);
    std::vector<double> a(static_cast<std::size_t>(rows * ins));
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t k = 0; k < ins; ++k) {
            const double g = gate_up[static_cast<std::size_t>(m * 2 * ins + k)];
            const double u = gate_up[static_cast<std::size_t>(m * 2 * ins + ins + k)];
            a[static_cast<std::size_t>(m * ins + k)] = round_to(p.dtype, g / (1.0 + std::exp(-g)) * u);
        }
    dense_product(a, w, rows, outs, ins, buffers["y"]);
}

void linear_skinny_fwd_add_rmsnorm_cpu_reference(const Problem& p, HostBuffers& buffers) {
    const char* key = "linear_skinny/fwd_add_rmsnorm";
    const std::int64_t rows = axis(p, "M", key), outs = axis(p, "N", key), ins = axis(p, "K", key);
    const double eps = static_cast<double>(axis(p, "EPS_E9", key)) * 1e-9;
    const std::vector<double>& a = host_input(buffers, "a", rows * ins, key);
    const std::vector<double>& r = host_input(buffers, "r", rows * ins, key);
    const std::vector<double>& nw = host_input(buffers, "nw", ins, key);
    const std::vector<double>& w = host_input(buffers, "w", outs * ins, key);
    std::vector<double> x(static_cast<std::size_t>(rows * ins));
    std::vector<double>& r_out = buffers["r_out"];
    r_out.assign(static_cast<std::size_t>(rows * ins), 0.0);
    for (std::int64_t m = 0; m < rows; ++m) {
        const auto at = [&](std::int64_t k) { return static_cast<std::size_t>(m * ins + k); };
        double sum_sq = 0.0;
        for (std::int64_t k = 0; k < ins; ++k) {
            const double s = static_cast<float>(a[at(k)] + r[at(k)]);  // the fp32 sum
            sum_sq += s * s;
        }
        const float rstd = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(ins) + eps));
        for (std::int64_t k = 0; k < ins; ++k) {
            const float s = static_cast<float>(a[at(k)] + r[at(k)]);
            r_out[at(k)] = round_to(p.dtype, s);
            x[at(k)] = round_to(p.dtype, s * rstd * static_cast<float>(nw[static_cast<std::size_t>(k)]));  // fp32
        }
    }
    dense_product(x, w, rows, outs, ins, buffers["y"]);
}

}  // namespace ktune
