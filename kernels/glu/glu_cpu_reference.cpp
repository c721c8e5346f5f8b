// The CPU references of glu/swiglu, swiglu_cat, geglu and geglu_cat (kernels/glu/*.op.yaml): out = act(gate) * up,
// act silu (SwiGLU) or gelu with the tanh approximation (GeGLU), from gate [M, I] and up [M, I] or from one x [M, 2I]
// (gate first, up second: the *_cat variants); and of glu/swiglu_bwd (glu_swiglu_bwd.op.yaml), SwiGLU's gradients.
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

// dgate and dup of out = silu(gate) * up from dy, in double from the textbook derivative (s = sigmoid(g), silu'(g) =
// s (1 + g (1 - s))); padding columns as glu()'s.
void swiglu_bwd(const Problem& p, HostBuffers& buffers) {
    const std::string key = "glu/swiglu_bwd";
    const std::int64_t m = axis(p, "M", key), cols = axis(p, "I", key), s = axis(p, "S", key);
    const std::int64_t so = axis(p, "SO", key);
    const std::vector<double>& gate = host_input(buffers, "gate", m * s, key);
    const std::vector<double>& up = host_input(buffers, "up", m * s, key);
    const std::vector<double>& dy = host_input(buffers, "dy", m * so, key);
    std::vector<double>& dgate = host_output(buffers, "dgate", m * s);
    std::vector<double>& dup = host_output(buffers, "dup", m * s);
    for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
            const auto i = static_cast<std::size_t>(r * s + c);
            const double g = gate[i], u = up[i], d = dy[static_cast<std::size_t>(r * so + c)];
            const double sig = 1.0 / (1.0 + std::exp(-g));
            dup[i] = d * g * sig;
            dgate[i] = d * u * sig * (1.0 + g * (1.0 - sig));
        }
}

}  // namespace

void glu_swiglu_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, false, false); }
void glu_swiglu_cat_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, false, true); }
void glu_geglu_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, true, false); }
void glu_geglu_cat_cpu_reference(const Problem& p, HostBuffers& b) { glu(p, b, true, true); }
void glu_swiglu_bwd_cpu_reference(const Problem& p, HostBuffers& b) { swiglu_bwd(p, b); }

}  // namespace ktune
