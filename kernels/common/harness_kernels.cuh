#pragma once
// The GPU worker's utility kernels: compiled by NVRTC once per architecture and session, never tuned.
//
//   ktune_empty                     launch-floor measurement.                       grid 1, block 1.
//   ktune_spin_wait                 blocks the stream until the host raises a flag  grid 1, block 1.
//                                   (or the timeout passes), so the timed launch is
//                                   already queued when the events start: host
//                                   launch latency stays out of the measurement.
//   ktune_fill_uniform<T>           seeded inputs (kernels/common/random.cuh).      grid-stride: any grid, 1-D block.
//   ktune_poison<T>                 outputs before each validation run.             grid-stride: any grid, 1-D block.
//   ktune_pad_nan<T>                NaN in the rows of a padded batch past each     grid-stride: any grid, 1-D block.
//                                   sequence's length (op spec `pad`), after the
//                                   inputs are generated. Floating-point T only.
//   ktune_compare<T>                validation against the reference's output.      grid-stride: any grid, 1-D block.
// Grid-stride kernels are correct for any 1-D launch; min(ceil(n / 256), 4 x SM count) blocks of 256 threads
// saturate memory.
// T: float, __half, __nv_bfloat16, int, long long, signed char, unsigned char (name expressions such as
// "ktune_fill_uniform<__nv_bfloat16>"). Defines extern "C" kernels: include it in one translation unit only.
#include "kernels/common/ktune_device.cuh"
#include "kernels/common/random.cuh"

namespace ktune::dev {

// ---- per-type traits ----------------------------------------------------------------------------------------------

// Generator value in storage type: floats round to nearest even, integers truncate toward lo (floor of a value >= lo).
template <typename T>
__device__ __forceinline__ T fill_value(float v) {
    return from_float<T>(v);
}
template <>
__device__ __forceinline__ int fill_value<int>(float v) { return static_cast<int>(floorf(v)); }
template <>
__device__ __forceinline__ long long fill_value<long long>(float v) { return static_cast<long long>(floorf(v)); }
template <>
__device__ __forceinline__ signed char fill_value<signed char>(float v) { return static_cast<signed char>(floorf(v)); }
template <>
__device__ __forceinline__ unsigned char fill_value<unsigned char>(float v) {
    return static_cast<unsigned char>(floorf(v));
}

// Poison: a quiet NaN whose payload arithmetic never produces (GPU arithmetic returns the canonical NaN 0x7fffffff /
// 0x7fff), so "untouched" is recognisable bit for bit; integers get the 0x5A byte pattern.
template <typename T>
__device__ __forceinline__ T poison_value();
template <>
__device__ __forceinline__ float poison_value<float>() { return __uint_as_float(0x7FC5A5A5u); }
template <>
__device__ __forceinline__ __half poison_value<__half>() { return __ushort_as_half(static_cast<unsigned short>(0x7E5Au)); }
template <>
__device__ __forceinline__ __nv_bfloat16 poison_value<__nv_bfloat16>() {
    return __ushort_as_bfloat16(static_cast<unsigned short>(0x7FDAu));
}
template <>
__device__ __forceinline__ int poison_value<int>() { return 0x5A5A5A5A; }
template <>
__device__ __forceinline__ long long poison_value<long long>() { return 0x5A5A5A5A5A5A5A5All; }
template <>
__device__ __forceinline__ signed char poison_value<signed char>() { return 0x5A; }
template <>
__device__ __forceinline__ unsigned char poison_value<unsigned char>() { return 0x5A; }

// The NaN of a padded batch's rows past a length: quiet, with a payload that arithmetic never produces and that the
// poison has not, so an output element that copied it is told from one never written.
template <typename T>
__device__ __forceinline__ T pad_value();
template <>
__device__ __forceinline__ float pad_value<float>() { return __uint_as_float(0x7FCDCDCDu); }
template <>
__device__ __forceinline__ __half pad_value<__half>() { return __ushort_as_half(static_cast<unsigned short>(0x7E4Du)); }
template <>
__device__ __forceinline__ __nv_bfloat16 pad_value<__nv_bfloat16>() {
    return __ushort_as_bfloat16(static_cast<unsigned short>(0x7FCDu));
}

// Raw bits, for "both untouched" comparisons.
__device__ __forceinline__ unsigned long long bits_of(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned long long bits_of(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ unsigned long long bits_of(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }
__device__ __forceinline__ unsigned long long bits_of(int v) { return static_cast<unsigned int>(v); }
__device__ __forceinline__ unsigned long long bits_of(long long v) { return static_cast<unsigned long long>(v); }
__device__ __forceinline__ unsigned long long bits_of(signed char v) { return static_cast<unsigned char>(v); }
__device__ __forceinline__ unsigned long long bits_of(unsigned char v) { return v; }

// Value for comparison: double keeps fp32 and integer differences exact enough; half types go through float.
__device__ __forceinline__ double compare_value(float v) { return v; }
__device__ __forceinline__ double compare_value(__half v) { return __half2float(v); }
__device__ __forceinline__ double compare_value(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ double compare_value(int v) { return v; }
__device__ __forceinline__ double compare_value(long long v) { return static_cast<double>(v); }
__device__ __forceinline__ double compare_value(signed char v) { return v; }
__device__ __forceinline__ double compare_value(unsigned char v) { return v; }

__device__ __forceinline__ bool is_finite_double(double v) {
    return (static_cast<unsigned long long>(__double_as_longlong(v)) & 0x7FF0000000000000ull) != 0x7FF0000000000000ull;
}

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

}  // namespace ktune::dev

extern "C" __global__ void ktune_empty() {}

// The cold-L2 flush, three kernels over a buffer of 2x the L2 size (Worker::flush_l2 runs them in this order):
// 1. ktune_flush_l2_evict_last writes it with the L2 evict_last policy. Lines another kernel loaded with evict_last
//    (Triton does so for reused inputs) survive ordinary writes: on an H100 a kernel whose inputs were read once with
//    evict_last ran 0.3-0.9 us faster after a flush of ordinary writes alone (bench/peers/harness_probe.py).
// 2. ktune_flush_l2 writes it again with ordinary stores, a kernel on the SMs like the peers script's fill_.
// 3. ktune_discard_l2 (the default "clean" flush) drops the buffer's lines from the L2 without writing them back.
//    Without it the L2 is full of the flush's dirty lines, and the timed kernel pays for writing back as many of them
//    as it displaces: up to twice the DRAM traffic of a read-only kernel of a few tens of MB (an H100 decode attention
//    at 34 MB of KV: time = (bytes + min(bytes, ~50 MB)) / 3.16 TB/s). That is the flush's cost, not the kernel's.
// Each write pass stores a different value each time, so nothing can skip the writes.
extern "C" __global__ void ktune_flush_l2(uint4* p, long long n, unsigned value) {
    const uint4 v = make_uint4(value, value, value, value);
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = v;
}

extern "C" __global__ void ktune_flush_l2_evict_last(uint4* p, long long n, unsigned value) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %1, %1, %1}, %2;" ::"l"(p + i), "r"(value), "l"(policy)
                     : "memory");
#else  // no cache hints before sm_80: ordinary writes
    const uint4 v = make_uint4(value, value, value, value);
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = v;
#endif
}

// n is in 16-byte words, as for the writes; p is 128-byte aligned (cuMemAlloc gives 256 or more).
extern "C" __global__ void ktune_discard_l2(uint4* p, long long n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const long long lines = n / 8;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < lines; i += stride)
        asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + 8 * i) : "memory");
#endif
}

// Spins until *flag != 0 (the host writes it through mapped pinned memory) or timeout_ns of %globaltimer pass, so a
// host that dies cannot hang the GPU. Launch <<<1, 1>>>.
extern "C" __global__ void ktune_spin_wait(volatile int* flag, unsigned long long timeout_ns) {
    const unsigned long long start = ktune::dev::global_timer_ns();
    while (*flag == 0) {
        if (ktune::dev::global_timer_ns() - start > timeout_ns) break;
        __nanosleep(100);
    }
}

// p[i] = lo + (hi - lo) * ktune_uniform01(seed, i), converted to T (see fill_value).
template <typename T>
__global__ void ktune_fill_uniform(T* p, long long n, unsigned long long seed, float lo, float hi) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = ktune::dev::fill_value<T>(ktune_uniform_in(seed, static_cast<unsigned long long>(i), lo, hi));
}

template <typename T>
__global__ void ktune_poison(T* p, long long n) {
    const T poison = ktune::dev::poison_value<T>();
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = poison;
}

// p holds [sequences, heads, tokens, token_elements] elements (more may follow, untouched); lengths[b] is the tokens
// of sequence b, clamped to [0, tokens]. Every element of a later token becomes NaN (pad_value).
template <typename T>
__global__ void ktune_pad_nan(T* p, const int* lengths, long long sequences, long long heads, long long tokens,
                              long long token_elements) {
    const T pad = ktune::dev::pad_value<T>();
    const long long n = sequences * heads * tokens * token_elements;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long row = i / token_elements;  // (sequence, head, token)
        const long long t = row % tokens;
        if (t >= lengths[row / tokens / heads]) p[i] = pad;  // as clamped: a length past tokens pads none, below 0 all
    }
}

// Compares out with ref element by element. The caller zeroes result[0] and result[2] and sets result[1] = ~0ull.
//   result[0] += number of mismatches
//   result[1]  = min index of a mismatch (~0ull when none)
//   result[2]  = max |out - ref| as the bits of a non-negative float (they order like the values); +inf bits when a
//                mismatch involves NaN or Inf
// Where ref is finite: a mismatch is |out - ref| > atol + rtol * |ref| or out not finite.
// Where ref is not finite (NaN or Inf, e.g. poison in output padding that neither kernel writes): out must have the
// identical bits. Poison both output copies with ktune_poison and untouched padding compares equal, while a kernel
// that writes into it, or leaves a valid element unwritten, does not.
// Each thread keeps its own tallies: atomics only at the end (counts and index only when it saw a mismatch).
template <typename T>
__global__ void ktune_compare(const T* out, const T* ref, long long n, float rtol, float atol,
                              unsigned long long* result) {
    using namespace ktune::dev;
    const unsigned int inf_bits = 0x7F800000u;
    unsigned long long mismatches = 0;
    unsigned long long first_bad = ~0ull;
    float max_err = 0.0f;
    bool max_is_inf = false;

    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const T o = out[i];
        const T r = ref[i];
        const double ov = compare_value(o);
        const double rv = compare_value(r);
        bool bad;
        if (!is_finite_double(rv)) {
            bad = bits_of(o) != bits_of(r);
            if (bad) max_is_inf = true;
        } else if (!is_finite_double(ov)) {
            bad = true;
            max_is_inf = true;
        } else {
            const double err = fabs(ov - rv);
            const double tol = static_cast<double>(atol) + static_cast<double>(rtol) * fabs(rv);
            bad = err > tol;
            max_err = fmaxf(max_err, static_cast<float>(err));
        }
        if (bad) {
            ++mismatches;
            if (static_cast<unsigned long long>(i) < first_bad) first_bad = static_cast<unsigned long long>(i);
        }
    }
    if (mismatches != 0) {
        atomicAdd(&result[0], mismatches);
        atomicMin(&result[1], first_bad);
    }
    const unsigned int err_bits = max_is_inf ? inf_bits : __float_as_uint(max_err);
#if __CUDA_ARCH__ >= 800
    // One atomic per warp: almost every thread has a non-zero error in fp16/bf16 even when all match.
    const unsigned int active = __activemask();
    const unsigned int warp_max = __reduce_max_sync(active, err_bits);
    if ((threadIdx.x & 31) == static_cast<unsigned>(__ffs(active) - 1) && warp_max != 0)
        atomicMax(&result[2], static_cast<unsigned long long>(warp_max));
#else
    if (err_bits != 0) atomicMax(&result[2], static_cast<unsigned long long>(err_bits));
#endif
}
