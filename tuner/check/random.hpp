#pragma once
// A small seeded generator whose streams are the same on every platform and standard library (std::*_distribution
// are not), so a bootstrap interval, and hence a verdict, reproduces exactly from the same samples.
#include <cmath>
#include <cstdint>
#include <string_view>

namespace ktune::check_random {

inline std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// FNV-1a: a stable hash of a name, to derive one seed per case.
inline std::uint64_t hash_name(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

inline std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
    std::uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ULL);
    return splitmix64(s);
}

// xoshiro256**
class Rng {
public:
    explicit Rng(std::uint64_t seed) {
        for (auto& x : m_s) x = splitmix64(seed);
    }

    std::uint64_t next() {
        const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
        const std::uint64_t t = m_s[1] << 17;
        m_s[2] ^= m_s[0];
        m_s[3] ^= m_s[1];
        m_s[1] ^= m_s[2];
        m_s[0] ^= m_s[3];
        m_s[2] ^= t;
        m_s[3] = rotl(m_s[3], 45);
        return result;
    }

    // In (0, 1): never 0, so log() is safe.
    double uniform() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; }
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

    double normal() {  // Box-Muller; one value per call keeps the stream simple
        const double u1 = uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

    // Gamma(shape, 1) for shape >= 1 (Marsaglia and Tsang 2000).
    double gamma(double shape) {
        const double d = shape - 1.0 / 3.0;
        const double c = 1.0 / std::sqrt(9.0 * d);
        for (;;) {
            double x, v;
            do {
                x = normal();
                v = 1.0 + c * x;
            } while (v <= 0);
            v = v * v * v;
            const double u = uniform();
            if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
            if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
        }
    }

    // Beta(a, b) for a, b >= 1.
    double beta(double a, double b) {
        const double x = gamma(a);
        return x / (x + gamma(b));
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t m_s[4];
};

}  // namespace ktune::check_random
