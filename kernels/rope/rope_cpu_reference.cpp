// The CPU references of rope/neox and rope/gptj (kernels/rope/*.op.yaml): q and k rotated in place, pairs (i, i + R/2)
// (NeoX) or (2i, 2i + 1) (GPT-J) of every head by the cos and sin of the token's position.
#include <cmath>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/op.hpp"

namespace ktune {
namespace {

// Rotates q and k in place, in double, from the given caches. Throws Error(bad_input) for a position outside [0, P).
void rope(const Problem& p, HostBuffers& buffers, bool interleaved) {
    const std::string_view key = interleaved ? "rope/gptj" : "rope/neox";
    const std::int64_t m = axis(p, "M", key), hq = axis(p, "HQ", key), hk = axis(p, "HK", key), d = axis(p, "D", key);
    const std::int64_t r = axis(p, "R", key), positions = axis(p, "P", key);
    const std::int64_t sq = axis(p, "SQ", key), sk = axis(p, "SK", key);
    const std::int64_t half = r / 2;
    std::vector<double>& q = host_inout(buffers, "q", m * sq, key);
    std::vector<double>& k = host_inout(buffers, "k", m * sk, key);
    const std::vector<double>& pos = host_input(buffers, "positions", m, key);
    const std::vector<double>& cs = host_input(buffers, "cos_cache", positions * half, key);
    const std::vector<double>& sn = host_input(buffers, "sin_cache", positions * half, key);
    for (std::int64_t t = 0; t < m; ++t) {
        const double position = pos[static_cast<std::size_t>(t)];
        if (!(position >= 0 && position < static_cast<double>(positions)) || position != std::floor(position))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("position {} of token {} is outside [0, P={})", position, t, positions), "rope");
        const std::int64_t row = static_cast<std::int64_t>(position) * half;
        for (std::int64_t h = 0; h < hq + hk; ++h) {
            double* head = h < hq ? &q[static_cast<std::size_t>(t * sq + h * d)]
                                  : &k[static_cast<std::size_t>(t * sk + (h - hq) * d)];
            for (std::int64_t i = 0; i < half; ++i) {
                double& a = interleaved ? head[2 * i] : head[i];
                double& b = interleaved ? head[2 * i + 1] : head[i + half];
                const double c = cs[static_cast<std::size_t>(row + i)], sv = sn[static_cast<std::size_t>(row + i)];
                const double ra = a * c - b * sv, rb = b * c + a * sv;
                a = ra;
                b = rb;
            }
        }
    }
}

}  // namespace

void rope_neox_cpu_reference(const Problem& p, HostBuffers& buffers) { rope(p, buffers, false); }
void rope_gptj_cpu_reference(const Problem& p, HostBuffers& buffers) { rope(p, buffers, true); }

}  // namespace ktune
