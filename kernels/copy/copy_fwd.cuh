#pragma once
// Device-to-device copy, tuned like any op: y[i] = x[i] for i < n. Not a transformer op: it is the roofline at each
// size. `ktune devices` measures the copy ceiling on 1 GiB with cuMemcpy; a problem of 4 to 64 MB cannot reach it
// (launch, DRAM latency and the tail of the last wave are a larger share), and the best copy ktune can tune at that
// size, timed with the same method as every kernel (cold L2, launch latency hidden), says how far any op can get there.
// Driven by search_spaces/copy.yaml (op copy, variant fwd); reference: kernels/copy/copy_reference.cuh.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK   threads per block, 32..1024.
//   VEC     elements per access, VEC * sizeof(T) of 4, 8 or 16 bytes.
//   UNROLL  accesses each thread loads before it stores any, 1..16 (bytes in flight per thread: UNROLL * VEC * size).
// Launch: any grid; blocks stride over tiles of BLOCK * VEC * UNROLL elements (the YAML's grid gives one tile per block).
// x and y aligned to VEC * sizeof(T) take the vector path (the scalar tail of n % VEC elements by the first threads);
// otherwise element by element.
#include "kernels/common/ktune_device.cuh"

template <typename T, int BLOCK, int VEC, int UNROLL>
__global__ void __launch_bounds__(BLOCK) copy_fwd(T* __restrict__ y, const T* __restrict__ x, long long n) {
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "copy_fwd: BLOCK in [32, 1024]");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "copy_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) >= 4 && VEC * sizeof(T) <= 16, "copy_fwd: VEC * sizeof(T) in {4, 8, 16}");
    static_assert(UNROLL >= 1 && UNROLL <= 16, "copy_fwd: UNROLL in [1, 16]");
    using namespace ktune::dev;
    constexpr int W = VEC * int(sizeof(T)) / 4;
    constexpr long long TILE = static_cast<long long>(BLOCK) * UNROLL;  // accesses per block per step
    const bool vector_ok = is_aligned(x, VEC * sizeof(T)) && is_aligned(y, VEC * sizeof(T));
    const long long nvec = vector_ok ? n / VEC : 0;
    for (long long base = static_cast<long long>(blockIdx.x) * TILE; base < nvec;
         base += static_cast<long long>(gridDim.x) * TILE) {
        Words<W> v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + u * BLOCK + threadIdx.x;
            if (i < nvec) v[u] = load_words<W>(x + i * VEC);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + u * BLOCK + threadIdx.x;
            if (i < nvec) store_words<W>(y + i * VEC, v[u]);
        }
    }
    // The scalar rest: n % VEC elements after the vector part, or everything when unaligned.
    const long long first = nvec * VEC;
    for (long long i = first + static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * BLOCK)
        y[i] = x[i];
}
