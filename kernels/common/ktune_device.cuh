#pragma once
// Device helpers shared by every ktune kernel: element conversions, aligned vectors, warp reductions.
//
// Compiled three ways: by NVRTC at tuning time (KTUNE_NVRTC defined), by nvcc ahead of time (exported headers), and by
// a plain host C++ compiler through random.cuh. A host compiler sees only KTUNE_HD: everything else needs CUDA types.
// No host-only includes: NVRTC has no C++ standard library here.

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KTUNE_HD __host__ __device__
#else
#define KTUNE_HD
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ktune::dev {

// ---- element conversions: every kernel computes in float (or double) and stores T -------------------------------

KTUNE_HD inline float to_float(float v) { return v; }
KTUNE_HD inline float to_float(__half v) { return __half2float(v); }
KTUNE_HD inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
KTUNE_HD inline T from_float(float v);
template <>
KTUNE_HD inline float from_float<float>(float v) { return v; }
template <>
KTUNE_HD inline __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
KTUNE_HD inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Rounds a double straight to T (one rounding): references compute in double and must not round twice.
template <typename T>
KTUNE_HD inline T from_double(double v);
template <>
KTUNE_HD inline float from_double<float>(double v) { return static_cast<float>(v); }
template <>
KTUNE_HD inline __half from_double<__half>(double v) { return __double2half(v); }
template <>
KTUNE_HD inline __nv_bfloat16 from_double<__nv_bfloat16>(double v) { return __double2bfloat16(v); }

// ---- aligned vectors ----------------------------------------------------------------------------------------------

// The unsigned type that moves BYTES bytes in one instruction (LDG.E.128 for 16 bytes).
template <int BYTES>
struct RawBits;
template <>
struct RawBits<2> { using type = unsigned short; };
template <>
struct RawBits<4> { using type = unsigned int; };
template <>
struct RawBits<8> { using type = uint2; };
template <>
struct RawBits<16> { using type = uint4; };

// N elements of T moved as one access; alignas makes a Vec* deref a single wide load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
    static_assert(N >= 1 && (N & (N - 1)) == 0, "Vec: N must be a power of two");
    static_assert(sizeof(T) * N <= 16, "Vec: at most 16 bytes (the widest global access)");
    T v[N];
};

// p must be aligned to sizeof(T) * N bytes: callers check with is_aligned() and take a scalar path otherwise.
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
    using Raw = typename RawBits<int(sizeof(T)) * N>::type;
    Vec<T, N> out;
    *reinterpret_cast<Raw*>(&out) = *reinterpret_cast<const Raw*>(p);
    return out;
}

template <typename T, int N>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
    using Raw = typename RawBits<int(sizeof(T)) * N>::type;
    *reinterpret_cast<Raw*>(p) = *reinterpret_cast<const Raw*>(&v);
}

__device__ __forceinline__ bool is_aligned(const void* p, unsigned bytes) {
    return (reinterpret_cast<unsigned long long>(p) & (bytes - 1)) == 0;
}

// Whether every pointer is aligned to `bytes` (a power of two): one test of their OR, no branch per pointer.
template <typename... Ts>
__device__ __forceinline__ bool all_aligned(unsigned bytes, const Ts*... p) {
    return ((... | reinterpret_cast<unsigned long long>(p)) & (bytes - 1)) == 0;
}

// ---- loads first -------------------------------------------------------------------------------------------------
//
// At decode sizes a kernel is one chain of latencies, and the code before its first load is on it (cold after an L2
// flush). The loads-first paths (GLU, RMSNorm forward and backward, add + RMSNorm, softmax) issue each thread's loads
// before the launch-wide checks, loading only whole, aligned accesses inside the thread's own rows (nothing can
// fault whatever the launch), and drop them when the checks fail. These helpers serve them.

KTUNE_HD constexpr int log2_of(int n) { return n > 1 ? 1 + log2_of(n / 2) : 0; }

// p unchanged, opaque to the optimiser (an empty asm statement): a row's address stays one uniform value instead of
// being folded into each thread's 64-bit offset (a longer chain to the first load).
template <typename P>
__device__ __forceinline__ P* opaque(P* p) {
    asm("" : "+l"(p));
    return p;
}

// ---- packed 32-bit words: how kernels keep 16-bit data in registers ---------------------------------------------
//
// A Vec<__nv_bfloat16, 8> held across a loop or a barrier tends to be split into eight 16-bit virtual registers, each
// of which costs a full 32-bit register in SASS. Kernels that hold data in registers keep it as the words it was
// loaded as, and unpack pairs with shifts (bf16) or one conversion (fp16) at the point of use.

template <int W>
struct alignas(4 * W) Words {
    static_assert(W == 1 || W == 2 || W == 4, "Words: 1, 2 or 4 words (4, 8 or 16 bytes)");
    unsigned w[W];
};

template <typename T>
inline constexpr int elems_per_word = 4 / int(sizeof(T));

// p must be aligned to 4 * W bytes.
template <int W>
__device__ __forceinline__ Words<W> load_words(const void* p) {
    Words<W> r;
    if constexpr (W == 4) {
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
    } else if constexpr (W == 2) {
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        r.w[0] = v.x; r.w[1] = v.y;
    } else {
        r.w[0] = *reinterpret_cast<const unsigned*>(p);
    }
    return r;
}

// load_words through the read-only path (ld.global.nc): for data no thread of the launch writes.
template <int W>
__device__ __forceinline__ Words<W> load_words_nc(const void* p) {
    Words<W> r;
    if constexpr (W == 4) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
        r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
    } else if constexpr (W == 2) {
        const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
        r.w[0] = v.x; r.w[1] = v.y;
    } else {
        r.w[0] = __ldg(reinterpret_cast<const unsigned*>(p));
    }
    return r;
}

template <int W>
__device__ __forceinline__ void store_words(void* p, const Words<W>& r) {
    if constexpr (W == 4)
        *reinterpret_cast<uint4*>(p) = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
    else if constexpr (W == 2)
        *reinterpret_cast<uint2*>(p) = make_uint2(r.w[0], r.w[1]);
    else
        *reinterpret_cast<unsigned*>(p) = r.w[0];
}

// store_words as one store instruction whatever the compiler makes of the code around it: __stwb (st.global.wb, the
// default policy) is inline PTX, which is never split. GLU's loads-first path had its plain uint4 store split into
// four 4-byte stores.
template <int W>
__device__ __forceinline__ void store_words_whole(void* p, const Words<W>& r) {
    if constexpr (W == 4)
        __stwb(reinterpret_cast<uint4*>(p), make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]));
    else if constexpr (W == 2)
        __stwb(reinterpret_cast<uint2*>(p), make_uint2(r.w[0], r.w[1]));
    else
        __stwb(reinterpret_cast<unsigned*>(p), r.w[0]);
}

// W words at p (aligned to 4 * W bytes), loaded only if `pred` (r is left undefined otherwise): one predicated
// instruction at an address computed unconditionally, so that accesses at constant offsets share one address register
// (a C++ condition around a load makes the compiler predicate the address arithmetic too). NC: ld.global.nc, for data
// no thread of the launch writes; otherwise a plain ld.global (an in-place operand). volatile: it stays ahead of the
// launch checks. (Any volatile asm taking a kernel's pointer made NVVM drop .nc from that kernel's other loads.)
template <int W, bool NC = true>
__device__ __forceinline__ void load_words_if(Words<W>& r, const void* p, bool pred) {
    const unsigned q = static_cast<unsigned>(pred);
    if constexpr (NC && W == 4)
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %5, 0;\n\t"
                     "@p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
                     : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])
                     : "l"(p), "r"(q));
    else if constexpr (W == 4)
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %5, 0;\n\t"
                     "@p ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
                     : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])
                     : "l"(p), "r"(q));
    else if constexpr (NC && W == 2)
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %3, 0;\n\t@p ld.global.nc.v2.u32 {%0, %1}, [%2];\n\t}"
                     : "=r"(r.w[0]), "=r"(r.w[1])
                     : "l"(p), "r"(q));
    else if constexpr (W == 2)
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %3, 0;\n\t@p ld.global.v2.u32 {%0, %1}, [%2];\n\t}"
                     : "=r"(r.w[0]), "=r"(r.w[1])
                     : "l"(p), "r"(q));
    else if constexpr (NC)
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %2, 0;\n\t@p ld.global.nc.u32 %0, [%1];\n\t}"
                     : "=r"(r.w[0])
                     : "l"(p), "r"(q));
    else
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %2, 0;\n\t@p ld.global.u32 %0, [%1];\n\t}"
                     : "=r"(r.w[0])
                     : "l"(p), "r"(q));
}

template <int W>
__device__ __forceinline__ Words<W> zero_words() {
    Words<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) r.w[j] = 0u;
    return r;
}

// The elems_per_word<T> values of one word, lowest address first.
__device__ __forceinline__ void unpack_word(float, unsigned w, float* f) { f[0] = __uint_as_float(w); }
__device__ __forceinline__ void unpack_word(__nv_bfloat16, unsigned w, float* f) {
    f[0] = __uint_as_float(w << 16);  // bf16 is the top half of a float: exact
    f[1] = __uint_as_float(w & 0xFFFF0000u);
}
__device__ __forceinline__ void unpack_word(__half, unsigned w, float* f) {
    f[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xFFFFu)));
    f[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

// Rounds elems_per_word<T> floats to T (nearest even) and packs them, lowest address first.
template <typename T>
__device__ __forceinline__ unsigned pack_word(const float* f);
template <>
__device__ __forceinline__ unsigned pack_word<float>(const float* f) { return __float_as_uint(f[0]); }
template <>
__device__ __forceinline__ unsigned pack_word<__nv_bfloat16>(const float* f) {
    return static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(f[0]))) |
           (static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(f[1]))) << 16);
}
template <>
__device__ __forceinline__ unsigned pack_word<__half>(const float* f) {
    return static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[0]))) |
           (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[1]))) << 16);
}

// ---- reductions ---------------------------------------------------------------------------------------------------

// Butterfly sum over WIDTH lanes (a power of two <= 32); every lane gets the same bits (each step adds the same two
// values in both partners, and float addition is commutative). All 32 lanes of the warp must call it.
template <int WIDTH = 32>
__device__ __forceinline__ float warp_sum(float v) {
    static_assert(WIDTH >= 1 && WIDTH <= 32 && (WIDTH & (WIDTH - 1)) == 0, "warp_sum: WIDTH must be a power of two <= 32");
#pragma unroll
    for (int offset = WIDTH / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Butterfly max over the warp; every lane gets the result. All 32 lanes must call it.
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Sum over a group of GROUP_WARPS consecutive warps (GROUP_WARPS * 32 consecutive threads): warp shuffles, then one
// step through shared memory. scratch holds GROUP_WARPS floats for this group and must not be reused until after the
// next __syncthreads() (double-buffer it across calls). Contains __syncthreads(): every thread of the block must call
// it the same number of times. All threads of the group receive the same bits.
template <int GROUP_WARPS>
__device__ __forceinline__ float group_sum(float v, float* scratch) {
    v = warp_sum(v);
    if constexpr (GROUP_WARPS > 1) {
        const int lane = threadIdx.x & 31;
        const int warp_in_group = (threadIdx.x >> 5) % GROUP_WARPS;
        if (lane == 0) scratch[warp_in_group] = v;
        __syncthreads();
        if constexpr (GROUP_WARPS <= 8) {
            v = 0.0f;
#pragma unroll
            for (int i = 0; i < GROUP_WARPS; ++i) v += scratch[i];
        } else {
            v = lane < GROUP_WARPS ? scratch[lane] : 0.0f;
            v = warp_sum(v);
        }
    }
    return v;
}

}  // namespace ktune::dev

#endif  // a CUDA compiler
