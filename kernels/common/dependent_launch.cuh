#pragma once
// Programmatic dependent launch (Hopper, sm_90+): a kernel launched with the programmatic stream serialization
// attribute may start while the kernel before it in the stream is still running, once every block of that one has
// called launch_dependents() or exited. It must then call wait_prior_grids() before it reads what the kernels before it
// wrote, or writes what they read: the wait returns when they have completed and their writes are visible. What it
// does before the wait may only touch memory no kernel writes (weights: an L2 prefetch of its first weight bytes).
//
// Kernels that follow these rules say so in their search space (kernel.programmatic_launch: true); exported headers
// launch only those with the attribute. Without it (the tuner's worker, older GPUs) both calls do nothing.

namespace ktune::dev {

// Blocks until the kernels this one depends on have completed and their writes are visible.
__device__ __forceinline__ void wait_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream (if launched with the attribute) start once every block of this one has called
// it or exited; it still waits for this one's completion before reading its results.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks L2 for `bytes` (a multiple of 16) from p (16-byte aligned): no registers, no reply to wait for.
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#elif defined(__CUDA_ARCH__)
    for (unsigned off = 0; off < bytes; off += 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const unsigned char*>(p) + off));
#endif
}

// What a weight-streaming kernel asks L2 for before its wait, over its whole grid: about what DRAM delivers while a
// small kernel before it runs (a few microseconds at 3 TB/s), a quarter of an H100's L2.
inline constexpr unsigned long long EARLY_WEIGHT_BYTES = 12ull << 20;

// The bytes of one of `pieces` equal slices of the weights to prefetch early: EARLY_WEIGHT_BYTES shared among them,
// rounded down to `unit` (a power of two, >= 16), at least one unit, at most the slice's `span`.
__device__ __forceinline__ unsigned early_bytes(unsigned long long pieces, unsigned span, unsigned unit) {
    const unsigned long long share = EARLY_WEIGHT_BYTES / (pieces > 0 ? pieces : 1);
    const unsigned long long cap = share < unit ? unit : share & ~static_cast<unsigned long long>(unit - 1);
    return static_cast<unsigned>(cap < span ? cap : span);
}

}  // namespace ktune::dev
