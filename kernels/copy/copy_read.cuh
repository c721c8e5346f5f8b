#pragma once
// Device memory read, tuned like any op: y[c] = max(x[c * C], ..., x[c * C + C - 1]) over chunks of C = 512 /
// sizeof(T) elements (the last chunk may be shorter), for x of n elements. Not a transformer op: the read roofline at
// each size. The decode-time kernels (weight-only linear, decode attention) read far more than they write; a copy
// moves its bytes half read, half written, so its time for the same bytes is not their floor. This kernel reads every
// byte once and writes one element per 512 bytes read (1/256 of them for 16-bit T, 1/128 for fp32), and its best time
// at a size is what any kernel needs to read that many bytes with the same method (cold L2, launch latency hidden).
// The max is exact whatever the order, so every configuration matches the reference bit for bit.
// Driven by search_spaces/copy_read.yaml (op copy, variant read); reference: kernels/copy/copy_reference.cuh.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block, a multiple of 32 in [32, 1024].
//   UNROLL  chunks each warp loads before it reduces any, 1..16 (16 bytes per lane each: bytes in flight per thread).
//   SPREAD  1: a block's loads cover BLOCK * UNROLL * 16 contiguous bytes (warp w of block b takes chunks
//           (b * UNROLL + u) * WARPS + w); 2: its UNROLL loads lie a grid of chunks apart (chunks (u * grid + b) *
//           WARPS + w), so the grid's u-th loads together cover one contiguous range. Same bytes in flight, another
//           spread of the addresses requested at once.
// A chunk is one 16-byte access per lane of a warp. Launch: any grid, blocks stride over steps of WARPS * UNROLL
// chunks each (the YAML's grid gives one step). x aligned to 16 bytes takes the vector path for its whole chunks; the
// last partial chunk, or every chunk of an unaligned x, is read element by element.
#include "kernels/common/ktune_device.cuh"

template <typename T, int BLOCK, int UNROLL, int SPREAD>
__global__ void __launch_bounds__(BLOCK) copy_read(T* __restrict__ y, const T* __restrict__ x, long long n) {
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "copy_read: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(UNROLL >= 1 && UNROLL <= 16, "copy_read: UNROLL in [1, 16]");
    static_assert(SPREAD == 1 || SPREAD == 2, "copy_read: SPREAD 1 or 2");
    using namespace ktune::dev;
    constexpr int VEC = 16 / int(sizeof(T));
    constexpr int CHUNK = 32 * VEC;  // elements per chunk: 512 bytes
    constexpr int WARPS = BLOCK / 32;
    constexpr long long TILE = static_cast<long long>(WARPS) * UNROLL;  // chunks per block per step
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long chunks = (n + CHUNK - 1) / CHUNK;
    const long long whole = is_aligned(x, 16) ? n / CHUNK : 0;
    // This warp's first chunk of a step, and the distance between its UNROLL loads.
    const long long stride = SPREAD == 2 ? static_cast<long long>(gridDim.x) * WARPS : WARPS;
    const long long first0 = static_cast<long long>(blockIdx.x) * (SPREAD == 2 ? WARPS : TILE) + warp;
    for (long long first = first0; first < whole; first += static_cast<long long>(gridDim.x) * TILE) {
        Vec<T, VEC> v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long c = first + u * stride;
            if (c < whole) v[u] = load_vec<T, VEC>(x + c * CHUNK + lane * VEC);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long c = first + u * stride;
            if (c < whole) {  // uniform over the warp
                float m = to_float(v[u].v[0]);
#pragma unroll
                for (int e = 1; e < VEC; ++e) m = fmaxf(m, to_float(v[u].v[e]));
                m = warp_max(m);
                if (lane == 0) y[c] = from_float<T>(m);
            }
        }
    }
    // The rest, one warp per chunk: the last partial chunk, or every chunk when x is unaligned.
    for (long long c = whole + static_cast<long long>(blockIdx.x) * WARPS + warp; c < chunks;
         c += static_cast<long long>(gridDim.x) * WARPS) {
        const long long end = c * CHUNK + CHUNK < n ? c * CHUNK + CHUNK : n;
        float m = __int_as_float(0xff800000);  // -inf: lanes past the end contribute nothing
        for (long long i = c * CHUNK + lane; i < end; i += 32) m = fmaxf(m, to_float(x[i]));
        m = warp_max(m);
        if (lane == 0) y[c] = from_float<T>(m);
    }
}
