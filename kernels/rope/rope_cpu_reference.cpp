// The CPU references of rope/neox and rope/gptj (kernels/rope/*.op.yaml): q and k rotated in place, pairs (i, i + R/2)
// (NeoX) or (2i, 2i + 1) (GPT-J) of every head by the cos and sin of the token's position; and of rope/neox_cache:
// q rotated in place as neox's, k rotated and v copied into the KV caches [M, HK, L, D] at row positions[m].
#include <algorithm>
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

// rope/neox_cache: token m is sequence m's new token at position positions[m]. Throws Error(bad_input) for a position
// outside [0, min(L, P)).
void rope_cache(const Problem& p, HostBuffers& buffers) {
    const std::string_view key = "rope/neox_cache";
    const std::int64_t m = axis(p, "M", key), hq = axis(p, "HQ", key), hk = axis(p, "HK", key), d = axis(p, "D", key);
    const std::int64_t r = axis(p, "R", key), rows = axis(p, "P", key), len = axis(p, "L", key);
    const std::int64_t sq = axis(p, "SQ", key), sk = axis(p, "SK", key), sv = axis(p, "SV", key);
    const std::int64_t half = r / 2;
    std::vector<double>& q = host_inout(buffers, "q", m * sq, key);
    const std::vector<double>& k = host_input(buffers, "k", m * sk, key);
    const std::vector<double>& v = host_input(buffers, "v", m * sv, key);
    std::vector<double>& kc = host_inout(buffers, "k_cache", m * hk * len * d, key);
    std::vector<double>& vc = host_inout(buffers, "v_cache", m * hk * len * d, key);
    const std::vector<double>& pos = host_input(buffers, "positions", m, key);
    const std::vector<double>& cs = host_input(buffers, "cos_cache", rows * half, key);
    const std::vector<double>& sn = host_input(buffers, "sin_cache", rows * half, key);
    const auto at = [](auto& vec, std::int64_t i) -> auto& { return vec[static_cast<std::size_t>(i)]; };
    for (std::int64_t t = 0; t < m; ++t) {
        const double position = at(pos, t);
        if (!(position >= 0 && position < static_cast<double>(std::min(len, rows))) || position != std::floor(position))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("position {} of token {} is outside [0, min(L={}, P={}))", position, t, len, rows),
                        "rope");
        const auto row = static_cast<std::int64_t>(position);
        // q in place, pair (i, i + half) of every head
        for (std::int64_t h = 0; h < hq; ++h) {
            const std::int64_t x = t * sq + h * d;
            for (std::int64_t i = 0; i < half; ++i) {
                const double a = at(q, x + i), b = at(q, x + i + half);
                const double c = at(cs, row * half + i), s = at(sn, row * half + i);
                at(q, x + i) = a * c - b * s;
                at(q, x + i + half) = b * c + a * s;
            }
        }
        // k rotated (dims R.. as they are) and v, into cache row `row` of every kv head
        for (std::int64_t h = 0; h < hk; ++h) {
            const std::int64_t x = t * sk + h * d, y = ((t * hk + h) * len + row) * d;
            for (std::int64_t i = 0; i < half; ++i) {
                const double a = at(k, x + i), b = at(k, x + i + half);
                const double c = at(cs, row * half + i), s = at(sn, row * half + i);
                at(kc, y + i) = a * c - b * s;
                at(kc, y + i + half) = b * c + a * s;
            }
            for (std::int64_t i = r; i < d; ++i) at(kc, y + i) = at(k, x + i);
            for (std::int64_t i = 0; i < d; ++i) at(vc, y + i) = at(v, t * sv + h * d + i);
        }
    }
}

}  // namespace

void rope_neox_cache_cpu_reference(const Problem& p, HostBuffers& buffers) { rope_cache(p, buffers); }
void rope_neox_cpu_reference(const Problem& p, HostBuffers& buffers) { rope(p, buffers, false); }
void rope_gptj_cpu_reference(const Problem& p, HostBuffers& buffers) { rope(p, buffers, true); }

}  // namespace ktune
