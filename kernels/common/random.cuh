#pragma once
// The seeded input generator: a counter-based hash, so element i of a buffer is a pure function of (seed, i) and any
// grid fills it identically. Plain C++ as well as CUDA: the host (tests, buffer_seed, CPU references) computes the
// same bits as the device. Every operation below is exact or a single IEEE rounding, so host and device agree bit for
// bit (host code must not be built with -ffp-contract=fast on an FMA target; ktune's ISO C++20 build contracts nothing).
#include "kernels/common/ktune_device.cuh"

// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijection of 64-bit integers with full avalanche.
KTUNE_HD inline unsigned long long ktune_splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) with 24 random bits: k * 2^-24 for k in [0, 2^24), exact in float on every compiler.
KTUNE_HD inline float ktune_uniform01(unsigned long long seed, unsigned long long index) {
    const unsigned long long z = ktune_splitmix64(seed ^ (index * 0x9E3779B97F4A7C15ull));
    return static_cast<float>(static_cast<unsigned int>(z >> 40)) * (1.0f / 16777216.0f);
}

// lo + (hi - lo) * u in float with three separate roundings (no FMA on either side), before conversion to the
// storage type. The result can round up to hi itself when hi - lo is large relative to lo's spacing.
KTUNE_HD inline float ktune_uniform_in(unsigned long long seed, unsigned long long index, float lo, float hi) {
    const float u = ktune_uniform01(seed, index);
#if defined(__CUDA_ARCH__)
    return __fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), u));
#else
    const float span = hi - lo;
    const float scaled = span * u;
    return lo + scaled;
#endif
}
