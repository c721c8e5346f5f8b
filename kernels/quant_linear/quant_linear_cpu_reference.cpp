// The CPU references of linear_int4/fwd, linear_int8/fwd and linear/fwd (kernels/quant_linear/*.op.yaml): y = x W^T,
// W as INT4 (group-wise scales and zero points), INT8 (per-channel scales) or dense in the activations' type. The
// packed weights are read through kernels/quant_linear/quant_linear_layout.cuh, as the kernels read them.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"

namespace ktune {
namespace {

namespace layout = quant_linear_layout;

// y in double, each weight dequantized from the packed buffer (bytes as given, 0..255 or -128..127), not rounded to
// the storage type. bits: 4 or 8 (weight-only quantized), 16 (dense weights in T).
void linear(const Problem& p, HostBuffers& buffers, int bits) {
    const std::string key = bits == 16 ? "linear/fwd" : fmt::format("linear_int{}/fwd", bits);
    const std::int64_t rows = axis(p, "M", key), outs = axis(p, "N", key), ins = axis(p, "K", key);
    const std::int64_t group = bits == 4 ? axis(p, "G", key) : 0;
    const std::int64_t groups = bits == 4 ? layout::groups(ins, group) : 0;
    const std::int64_t params = bits == 4 ? layout::int4_params(outs, ins, group) : outs;
    const std::vector<double>& x = host_input(buffers, "x", rows * ins, key);
    const std::int64_t wbytes = bits == 4   ? layout::int4_weight_bytes(outs, ins)
                                : bits == 8 ? layout::int8_weight_bytes(outs, ins)
                                            : outs * ins;
    const std::vector<double>& w = host_input(buffers, "w", wbytes, key);
    const std::vector<double>* scales = bits == 16 ? nullptr : &host_input(buffers, "scales", params, key);
    const std::vector<double>* zeros = bits == 4 ? &host_input(buffers, "zeros", params, key) : nullptr;
    std::vector<double>& y = buffers["y"];
    y.assign(static_cast<std::size_t>(rows * outs), 0.0);
    std::vector<double> row(static_cast<std::size_t>(ins));
    for (std::int64_t n = 0; n < outs; ++n) {
        for (std::int64_t k = 0; k < ins; ++k) {
            double q;
            if (bits == 4) {
                const layout::Position pos = layout::int4_position(n, k, ins);
                q = static_cast<double>((static_cast<unsigned>(w[static_cast<std::size_t>(pos.byte)]) >> pos.shift) &
                                        0xFu);
                const auto gi = static_cast<std::size_t>(layout::int4_param_index(n, k / group, groups));
                row[static_cast<std::size_t>(k)] = (q - (*zeros)[gi]) * (*scales)[gi];
            } else if (bits == 8) {
                q = w[static_cast<std::size_t>(layout::int8_position(n, k, ins).byte)];
                row[static_cast<std::size_t>(k)] = q * (*scales)[static_cast<std::size_t>(n)];
            } else {
                row[static_cast<std::size_t>(k)] = w[static_cast<std::size_t>(n * ins + k)];
            }
        }
        for (std::int64_t m = 0; m < rows; ++m) {
            double acc = 0.0;
            for (std::int64_t k = 0; k < ins; ++k)
                acc += x[static_cast<std::size_t>(m * ins + k)] * row[static_cast<std::size_t>(k)];
            y[static_cast<std::size_t>(m * outs + n)] = acc;
        }
    }
}

}  // namespace

void linear_int4_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) { linear(p, buffers, 4); }
void linear_int8_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) { linear(p, buffers, 8); }
void linear_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) { linear(p, buffers, 16); }

}  // namespace ktune
