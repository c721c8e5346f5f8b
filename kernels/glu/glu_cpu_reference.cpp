// The CPU references of glu/swiglu, swiglu_cat, geglu and geglu_cat (kernels/glu/*.op.yaml): out = act(gate) * up,
// act silu (SwiGLU) or gelu with the tanh approximation (GeGLU), from gate [M, I] and up [M, I] or from one x [M, 2I]
// (gate first, up second: the *_cat variants).
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/op.hpp"

namespace ktune {
namespace {

// out in double from the textbook activation; out's padding columns are left as they are (out is created, filled
// with NaN, when absent or of the wrong size).
void glu(const Problem& p, HostBuffers& buffers, bool gelu, bool cat) {
    const std::string key = std::string("glu/") + (gelu ? "geglu" : "swiglu") + (cat ? "_cat" : "");
    const std::int64_t m = axis(p, "M", key), cols = axis(p, "I", key), s = axis(p, "S", key);
    const std::int64_t so = axis(p, "SO", key);
    const std::vector<double>& gate = host_input(buffers, cat ? "x" : "gate", m * s, key);
    const std::vector<double>& up = host_input(buffers, cat ? "x" : "up", m * s, key);
    const std::int64_t up_offset = cat ? cols : 0;
    std::vector<double>& out = host_output(buffers, "out", m * so);
    for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
            const double g = gate[static_cast<std::size_t>(r * s + c)];
            const double u = up[static_cast<std::size_t>(r * s + up_offset + c)];
            const double a = gelu ? 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))
                                  : g / (1.0 + std::exp(-g));
            out[static_cast<std::size_t>(r * so + c)] = a * u;
        }
}

}  // namespace

void glu_swiglu_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, false, false); }
void glu_swiglu_cat_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, false, true); }
void glu_geglu_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, true, false); }
void glu_geglu_cat_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, true, true); }

}  // namespace ktune
