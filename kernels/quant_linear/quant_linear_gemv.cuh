#pragma once
// Weight-only quantized linear, the tuned kernel body shared by INT4 (linear_int4_fwd.cuh) and INT8
// (linear_int8_fwd.cuh): y[m, n] = sum_k x[m, k] * W[n, k], W dequantized in registers from the packed layout of
// kernels/quant_linear/quant_linear_layout.cuh, on the tensor cores (mma.m16n8k16, fp32 accumulation).
//
// The mma's A operand is a 16 (n) x 16 (k) tile of W, its B operand a 16 (k) x 8 (m) tile of x^T, so up to 8 rows of x
// share one mma and M = 1 wastes only tensor-core work, which is plentiful; the bound is the weight stream. Weights
// dequantize exactly to small integers in T (INT4: q - zero via the 1024 + q (fp16) / 128 + q (bf16) exponent trick;
// INT8: q via 1024 + (q + 128) for fp16, via fp32 and one conversion per pair for bf16), products are exact in the
// fp32 accumulator, and the scale is applied in fp32: per 64-k chunk for INT4 (one group), once per row for INT8.
//
// Work split: block (n block, k split, m block) = blockIdx (x, y, z). A block owns TILES_N tiles of 16 rows,
// 8 * M_FRAGS rows of x and 1 / SPLIT_K of the k chunks; its WARPS warps take steps of UNROLL consecutive chunks, in
// turn. Decode is bound by how many weight bytes each SM keeps in flight (~30-40 KB to saturate HBM; measured before:
// 26-64 % of copy at M = 1 with one step of loads per warp and nothing in flight while it computed), so:
//   - a step's weight, scale and zero-point loads all go out before its first mma; with PIPE 2 the next step's go
//     out before this step computes (two register stages), so a warp is never without loads in flight;
//   - PREFETCH > 1 asks L2 (one bulk prefetch per tile and step, no registers) for the weights PREFETCH - 1 steps
//     beyond the register stages, which then hit L2;
//   - x is read when a step computes (L1-resident, small), not held in registers across the DRAM wait;
//   - where TILES_N * M_FRAGS <= 2 the kernel asks for 16 warps per SM (min_blocks: at most 128 registers);
//   - STAGES > 1 (sm_90) replaces the register stages and the L2 prefetch by a ring in shared memory: each warp keeps
//     STAGES steps of weights in flight as bulk copies (cp.async.bulk, completing on one mbarrier per slot), so the
//     bytes in flight no longer cost registers: 16 warps x 4 slots x 1 KiB = 64 KiB per SM, 8.4 MB over 132 SMs, i.e.
//     all of a 4096 x 4096 INT4 matrix is requested at once, where the register stages reached ~16-32 KiB per SM and
//     the mid-sized shapes (8-30 MB of weights) were bound by DRAM latency (29-53 % of copy). The warp copies its
//     16 bytes per tile and chunk from the slot, hands the slot back for the step STAGES ahead, then computes; its x
//     and (INT4) the scales and zero points, which the block asked L2 for when it started, are loaded before the wait.
// Warps reduce through shared memory in warp order; k splits through scratch: every split block writes its fp32
// partial, and the last to arrive (atomic counter, reset by it) sums the SPLIT_K partials in split order and writes
// y. Deterministic.
//
// Tunables (template parameters, named as the YAML keys):
//   WARPS     warps per block, 1..16; they split the block's k chunks (rows per block do not change with WARPS).
//   TILES_N   16-row tiles per block (rows per block = 16 * TILES_N): 1, 2 or 4.
//   UNROLL    consecutive k chunks of a warp step (UNROLL * TILES_N 16-byte weight loads per lane): 1..16.
//   SPLIT_K   blocks along k (grid y), 1..16, at most max_split_k(M, N) (else the kernel writes nothing).
//   M_FRAGS   8-row fragments of x per block (columns per block = 8 * M_FRAGS): 1, 2, 4 or 8; grid z covers M.
//   PIPE      register stages, 1 or 2.
//   PREFETCH  1 + steps of L2 prefetch ahead of the register stages, 1..16 (1: none).
//   INTERLEAVE true (the kernels' 2): a step's chunks are one block of code (no exit at c_end between them), so
//             their mma chains interleave; false (1): one chunk after another (fewer registers).
//   STAGES    slots of the shared-memory ring per warp, 1..8 (1: no ring, the register path; > 1 needs PIPE 1 and
//             PREFETCH 1, and WARPS * (STAGES * UNROLL * TILES_N + TILES_N * M_FRAGS) <= 94: 48 KiB of static shared
//             memory with the reduction). Other architectures than sm_90+ and the plain path ignore it.
//   GROUP_CHUNKS  INT4, 1 or 2: 2 (a group size that is a multiple of 128, UNROLL even) makes a step's chunk pairs
//             share one group: one scale and zero-point load, one bias and one scaling per pair (splits start at even
//             chunks). The YAML takes 2 wherever it is legal and measures both in one family of configurations.
//   WARPS * TILES_N * M_FRAGS <= 64 (the warp reduction's shared memory, 32 KiB).
// The vector width is fixed by the packed layout: 16-byte weight loads, 16- or 32-byte x loads per lane.
//
// Any M, N, K (INT4: group size a multiple of 64). The tuned path needs 16-byte aligned weights, 16-byte aligned x
// rows (x aligned and K % 8 == 0) and, for INT4, 16-byte aligned scales and zero points and a power-of-two number of
// 64-k chunks per group; otherwise (checked once per launch) a plain path reads weights byte by byte and x element
// by element, one chunk per warp step.
#include "kernels/common/dependent_launch.cuh"
#include "kernels/common/ktune_device.cuh"
#include "kernels/quant_linear/quant_linear_layout.cuh"

namespace ktune::dev::quant_linear {

// a * b for non-negative a, b as one 32 x 32 -> 64-bit multiply.
__device__ __forceinline__ unsigned long long wide(unsigned a, unsigned b) {
    return static_cast<unsigned long long>(a) * b;
}
__device__ __forceinline__ unsigned long long wide(int a, int b) {
    return wide(static_cast<unsigned>(a), static_cast<unsigned>(b));
}

// ---- tensor core and bit tricks ----------------------------------------------------------------------------------

template <typename T>
inline constexpr bool is_half = false;
template <>
inline constexpr bool is_half<__half> = true;

template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (is_half<T>)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// (a & b) | c in one instruction.
__device__ __forceinline__ unsigned and_or(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// a * 1 + c on a pair of T, exact here (small integers): the subtraction of the magic bias.
template <typename T>
__device__ __forceinline__ unsigned pair_add(unsigned a, unsigned c) {
    unsigned d;
    if constexpr (is_half<T>)
        asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3C003C00u), "r"(c));
    else
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3F803F80u), "r"(c));
    return d;
}

// The exponent bias that turns a small unsigned integer u in the low mantissa bits into magic + u, exactly: 1024 for
// fp16 (0x6400), 128 for bf16 (0x4300, 7 mantissa bits, so u < 128).
template <typename T>
__device__ __forceinline__ constexpr unsigned magic_bits() {
    return is_half<T> ? 0x6400u : 0x4300u;
}

// -(magic + z) in both halves: added to magic + q it gives q - z.
template <typename T>
__device__ __forceinline__ unsigned neg_bias_pair(unsigned z) {
    const unsigned h = (magic_bits<T>() | z) | 0x8000u;
    return h | (h << 16);
}

// INT4: the 4 fragment registers of one mma step from one packed word (see int4_position).
template <typename T>
__device__ __forceinline__ void dequant_int4(unsigned w, unsigned neg_lo, unsigned neg_hi, unsigned (&a)[4]) {
    constexpr unsigned magic = magic_bits<T>() | (magic_bits<T>() << 16);
    a[0] = pair_add<T>(and_or(w, 0x000F000Fu, magic), neg_lo);
    a[1] = pair_add<T>(and_or(w >> 4, 0x000F000Fu, magic), neg_hi);
    a[2] = pair_add<T>(and_or(w >> 8, 0x000F000Fu, magic), neg_lo);
    a[3] = pair_add<T>(and_or(w >> 12, 0x000F000Fu, magic), neg_hi);
}

// INT8: two fragment registers (a pair each) from one packed word of 4 signed bytes (see int8_position).
template <typename T>
__device__ __forceinline__ void dequant_int8_word(unsigned w, unsigned& lo, unsigned& hi) {
    const unsigned u = w ^ 0x80808080u;  // q + 128, unsigned
    if constexpr (is_half<T>) {
        // 1024 + u exactly (11-bit significand), minus 1152.
        lo = pair_add<T>(__byte_perm(u, 0x64646464u, 0x4140), 0xE480E480u);
        hi = pair_add<T>(__byte_perm(u, 0x64646464u, 0x4342), 0xE480E480u);
    } else {
        // bf16 cannot hold 128 + u for u >= 128: 2^23 + u in fp32, minus 2^23 + 128, then one rounding (exact) per
        // pair.
        const float f0 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440)) - 8388736.0f;
        const float f1 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7441)) - 8388736.0f;
        const float f2 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7442)) - 8388736.0f;
        const float f3 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7443)) - 8388736.0f;
        const float lo_pair[2] = {f0, f1}, hi_pair[2] = {f2, f3};
        lo = pack_word<__nv_bfloat16>(lo_pair);
        hi = pack_word<__nv_bfloat16>(hi_pair);
    }
}

// ---- loads ----------------------------------------------------------------------------------------------------------
// The prefetched loads are volatile asm so that the compiler keeps them where they are issued, a step ahead of their
// use, instead of sinking them next to it.

// The plain path's 16 weight bytes, byte by byte (p need not be aligned).
__device__ __forceinline__ uint4 load_weight_bytes(const unsigned char* p) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        w[i] = static_cast<unsigned>(p[4 * i]) | (static_cast<unsigned>(p[4 * i + 1]) << 8) |
               (static_cast<unsigned>(p[4 * i + 2]) << 16) | (static_cast<unsigned>(p[4 * i + 3]) << 24);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// 2 bytes at p (aligned to them), zero-extended.
__device__ __forceinline__ unsigned load_u16(const void* p) {
    unsigned v;
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

// The fast path's loads: predicated inside the instruction (zeros where !pred), so the address is computed whether
// or not the load happens and a step's loads share one base with constant offsets; a C++ condition around a load
// makes the compiler rebuild each address under its own predicate (~25 integer instructions a chunk at M = 16).
// STREAM: no L1 allocation (the weights, read once); otherwise through L1 (x, which every warp of an SM reads).
template <bool STREAM>
__device__ __forceinline__ uint4 load_v4_if(const void* p, bool pred) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
#define KTUNE_QL_LOAD_V4(QUAL)                                                                                      \
    asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %4, 0;\n @q ld.global.nc" QUAL                              \
                 ".v4.u32 {%0, %1, %2, %3}, [%5];\n}"                                                             \
                 : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)                                                     \
                 : "r"(static_cast<int>(pred)), "l"(p))
    if constexpr (STREAM)
        KTUNE_QL_LOAD_V4(".L1::no_allocate");
    else
        KTUNE_QL_LOAD_V4("");
#undef KTUNE_QL_LOAD_V4
    return v;
}

// BYTES (2 or 4) at p, zero-extended.
template <int BYTES>
__device__ __forceinline__ unsigned load_if(const void* p, bool pred) {
    static_assert(BYTES == 2 || BYTES == 4, "load_if: 2 or 4 bytes");
    unsigned v = 0u;
#define KTUNE_QL_LOAD(TYPE)                                                                                         \
    asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %1, 0;\n @q ld.global.nc." TYPE " %0, [%2];\n}"            \
                 : "+r"(v)                                                                                         \
                 : "r"(static_cast<int>(pred)), "l"(p))
    if constexpr (BYTES == 4)
        KTUNE_QL_LOAD("u32");
    else
        KTUNE_QL_LOAD("u16");
#undef KTUNE_QL_LOAD
    return v;
}

__device__ __forceinline__ unsigned load_u8(const unsigned char* p) {
    unsigned v;
    asm volatile("ld.global.nc.u8 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

// ---- the shared-memory ring (STAGES > 1, sm_90): bulk copies completing on an mbarrier --------------------------
// The copies need no registers, so a warp keeps STAGES steps of weights in flight however few registers it has.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KTUNE_QUANT_LINEAR_BULK 1
#else
#define KTUNE_QUANT_LINEAR_BULK 0
#endif

__device__ __forceinline__ unsigned smem_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
#if KTUNE_QUANT_LINEAR_BULK
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}

// Makes the initialised barriers visible to the bulk copies' complete_tx (the async proxy).
__device__ __forceinline__ void fence_mbar_init() {
#if KTUNE_QUANT_LINEAR_BULK
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival (the barrier's only expected one) that also announces `bytes` of copies to complete this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
#if KTUNE_QUANT_LINEAR_BULK
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#endif
}

// Waits until the phase of parity `parity` has completed (its bytes have landed in shared memory).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
#if KTUNE_QUANT_LINEAR_BULK
    unsigned done = 0;
    while (!done)
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
#endif
}

// `bytes` (a multiple of 16) from global src (16-byte aligned) to shared dst (16-byte aligned), completing on bar.
__device__ __forceinline__ void bulk_copy(unsigned dst, const unsigned char* src, unsigned bytes, unsigned bar) {
#if KTUNE_QUANT_LINEAR_BULK
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
#endif
}

// Orders this thread's (and, after a __syncwarp, its warp's) earlier shared memory reads before later bulk copies
// into the same bytes (the copies write through the async proxy).
__device__ __forceinline__ void fence_proxy_async() {
#if KTUNE_QUANT_LINEAR_BULK
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ __forceinline__ uint4 load_shared_v4(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

// T's bits (low 16 bits of b) as float.
template <typename T>
__device__ __forceinline__ float bits_to_float(unsigned b) {
    if constexpr (is_half<T>)
        return __half2float(__ushort_as_half(static_cast<unsigned short>(b & 0xFFFFu)));
    else
        return __uint_as_float(b << 16);
}

// XW words (2 * XW elements of T) of one row of x from column k (row: the row's element k; live: the row exists and
// the chunk is the warp's): zeros where not live or past K. Predicated, not branched, and k in 32 bits (K <= 2^30),
// so a chunk's x costs its loads and a few compares. FAST: x rows 16-byte aligned and K % 8 == 0, k % 8 == 0, so
// each 8-element vector lies wholly before K or wholly past it.
template <int XW, bool FAST>
__device__ __forceinline__ void load_x(unsigned (&out)[XW], const unsigned short* __restrict__ row, bool live, int k,
                                       int K) {
    if constexpr (FAST) {
#pragma unroll
        for (int i = 0; i < XW; i += 4) {
            const uint4 v = live && k + 2 * i < K ? __ldg(reinterpret_cast<const uint4*>(row + 2 * i))
                                                  : make_uint4(0u, 0u, 0u, 0u);
            out[i] = v.x;
            out[i + 1] = v.y;
            out[i + 2] = v.z;
            out[i + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < XW; ++i) {
            const int k0 = k + 2 * i;
            const unsigned lo = live && k0 < K ? static_cast<unsigned>(__ldg(row + 2 * i)) : 0u;
            const unsigned hi = live && k0 + 1 < K ? static_cast<unsigned>(__ldg(row + 2 * i + 1)) : 0u;
            out[i] = lo | (hi << 16);
        }
    }
}

// One warp step's prefetched operands: UNROLL chunks of TILES_N tiles. INT4 scales and zero points of rows g and g + 8
// packed in one word each (low and high half, bits 0..7 and 8..15), a quarter of the registers of four floats.
// The main loop's compile-time shape (see gemv).
template <bool FAST_, int U_, int PIPE_, int PREFETCH_, int STAGES_ = 1, bool INTERLEAVE_ = false, int GC_ = 1>
struct Path {
    static constexpr bool FAST = FAST_, INTERLEAVE = INTERLEAVE_;
    static constexpr int U = U_, PIPE = PIPE_, PREFETCH = PREFETCH_, STAGES = STAGES_;
    static constexpr int GC = GC_;  // consecutive chunks of a step that share one group (INT4; divides U)
    static_assert(U % GC == 0, "quant linear: a step holds whole pairs of group chunks");
};

template <int UNROLL, int TILES_N>
struct Stage {
    uint4 w[UNROLL][TILES_N];
    unsigned s[UNROLL][TILES_N];
    unsigned z[UNROLL][TILES_N];
};

// The main loop of gemv (below), with the block's coordinates. A warp step: chunks c .. c + U - 1 of the block's
// tiles; warps take steps in turn. P (a Path) fixes at compile time the step size U, the pipeline and whether the
// loads are vectors (FAST: weights and x rows 16-byte aligned, power-of-two chunks per group): the fast path is the
// tuned one; the other reads element by element, one chunk per step, so that its many addresses do not raise the
// kernel's register count (it only serves misaligned inputs and odd group sizes).
template <typename T, int BITS, int WARPS, int TILES_N, int M_FRAGS>
struct MainLoop {
    static constexpr int CHUNK_K = ktune::quant_linear_layout::chunk_k<BITS>();
    static constexpr int STEPS = CHUNK_K / 16;  // mma steps per chunk
    static constexpr int XW = CHUNK_K / 8;      // x words per lane per chunk (CHUNK_K / 4 elements)
    using Acc = float[TILES_N][M_FRAGS][4];

    const unsigned char* __restrict__ w;
    const unsigned short* __restrict__ xs;
    const unsigned short* __restrict__ ss;
    const unsigned char* __restrict__ zeros;
    int M, K, c_begin, c_end, tile0, tiles, m0, lane, warp, g, t, cpg, cpg_shift, n_groups;
    long long chunks_per_row;

    // The lane's loop-invariant addresses (set_lanes): chunk c of tile tn is w_lane[tn] + c * TILE_BYTES, group grp's
    // scale pair s_lane[tn] + 16 grp (zero points likewise), chunk c of x row f x_lane[f] + c * CHUNK_K, so that each
    // address costs one wide multiply-add per chunk (rebuilt from the indices they cost ~25 instructions a chunk,
    // much of it 64-bit arithmetic, in the sm_90 SASS).
    const unsigned char* w_lane[TILES_N];
    const unsigned short* s_lane[TILES_N];
    const unsigned char* z_lane[TILES_N];
    const unsigned short* x_lane[M_FRAGS];
    bool tile_live[TILES_N];  // the tile is not past the padded N
    bool row_live[M_FRAGS];   // the lane's x row is not past M
    int x_limit;              // K - the lane's first column in a chunk: a vector at chunk column k + 8i is in K when
                              // k + 8i < x_limit (fast path: K % 8 == 0)

    __device__ __forceinline__ void set_lanes() {
        namespace layout = ktune::quant_linear_layout;
#pragma unroll
        for (int tn = 0; tn < TILES_N; ++tn) {
            // Unsigned 32 x 32 -> 64-bit products (one IMAD.WIDE.U32 each): every index here is non-negative, and
            // the signed forms cost sign extensions on the way to the first loads.
            const unsigned tile = static_cast<unsigned>(tile0 + tn);
            // layout::lane_offset(tile, 0, chunks_per_row, lane): 16 bytes per lane, 32 lanes per tile and chunk.
            w_lane[tn] = w + (wide(tile, static_cast<unsigned>(chunks_per_row)) * 32u + static_cast<unsigned>(lane)) *
                                 (layout::TILE_BYTES / 32);
            const unsigned long long params = wide(tile, static_cast<unsigned>(n_groups)) * 16u + 2u * g;
            s_lane[tn] = ss + params;
            z_lane[tn] = zeros + params;
            tile_live[tn] = tile0 + tn < tiles;
        }
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f) {
            const int m = m0 + 8 * f + g;
            row_live[f] = m < M;
            x_lane[f] = xs + wide(m < M ? m : 0, K) + 2 * XW * t;  // row 0 past M (not loaded)
        }
        x_limit = K - 2 * XW * t;
    }

    // Every load of a step (weights, and for INT4 the scales and zero points), issued together so that their
    // latencies overlap. Chunks past c_end (or tiles past N) load nothing and give zeros, never used.
    template <typename P>
    __device__ __forceinline__ void load_stage(Stage<P::U, TILES_N>& st, int c) const {
        namespace layout = ktune::quant_linear_layout;
        constexpr int U = P::U;
#pragma unroll
        for (int tn = 0; tn < TILES_N; ++tn) {
            const unsigned char* wp = w_lane[tn] + static_cast<long long>(c) * layout::TILE_BYTES;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const bool live = c + u < c_end && tile_live[tn];  // the last block's tiles may pass the padded N
                if constexpr (P::FAST)
                    st.w[u][tn] = load_v4_if<true>(wp + u * layout::TILE_BYTES, live);
                else
                    st.w[u][tn] = live ? load_weight_bytes(wp + u * layout::TILE_BYTES) : make_uint4(0u, 0u, 0u, 0u);
            }
        }
        load_scales<P>(st, c);
    }

    // INT4: the step's scales and zero points (nothing for INT8).
    template <typename P>
    __device__ __forceinline__ void load_scales(Stage<P::U, TILES_N>& st, int c) const {
        constexpr int U = P::U;
        if constexpr (BITS == 4) {
#pragma unroll
            for (int u = 0; u < U; u += P::GC) {  // the first chunk of each group's run in the step
                const int cc = c + u;
                const bool live = cc < c_end;
                // Rows g and g + 8 of each tile, side by side in the packed order (quant_linear_layout.cuh): the
                // chunk's group's two scales in one word, its two zero points in one half word. The fast path has a
                // power-of-two chunks per group (a shift) and aligned scales and zero points (one load each).
                const int grp = P::FAST ? cc >> cpg_shift : cc / cpg;
#pragma unroll
                for (int tn = 0; tn < TILES_N; ++tn) {
                    // Chunks past c_end and tiles past the padded N: scale 0 and zero point 0 (never used). A group
                    // is 16 values on from the one before.
                    const bool ok = live && tile_live[tn];
                    const unsigned short* sp = s_lane[tn] + static_cast<long long>(grp) * 16;
                    const unsigned char* zp = z_lane[tn] + static_cast<long long>(grp) * 16;
                    if constexpr (P::FAST) {
                        st.s[u][tn] = load_if<4>(sp, ok);
                        st.z[u][tn] = load_if<2>(zp, ok);
                    } else {
                        st.s[u][tn] = ok ? load_u16(sp) | (load_u16(sp + 1) << 16) : 0u;
                        st.z[u][tn] = ok ? load_u8(zp) | (load_u8(zp + 1) << 8) : 0u;
                    }
                }
            }
        }
    }

    // L2 prefetch of the step at chunk c: one bulk request per tile (a tile's chunks are contiguous), from lane tn.
    template <typename P>
    __device__ __forceinline__ void prefetch_step(int c) const {
        namespace layout = ktune::quant_linear_layout;
        constexpr int U = P::U;
        if constexpr (P::PREFETCH > 0) {
            if (P::FAST && lane < TILES_N && c < c_end && tile0 + lane < tiles) {
                const int n_chunks = min(U, c_end - c);
                prefetch_l2(w + layout::lane_offset(tile0 + lane, c, chunks_per_row, 0),
                            static_cast<unsigned>(n_chunks) * layout::TILE_BYTES);
            }
        }
    }

    // The math of a step. x is read here, not with the weights: it is small and stays in L1 (the weights do not
    // allocate there), so one L1 round trip per step replaces UNROLL * M_FRAGS * XW registers held across the DRAM
    // wait (twice that with PIPE 2). All of the step's x loads go out first: one latency per step, not per chunk.
    template <typename P>
    __device__ __forceinline__ void compute_stage(const Stage<P::U, TILES_N>& st, int c, Acc& acc) const {
        unsigned xw[P::U][M_FRAGS][XW];
        load_xs<P>(xw, c);
        compute_math<P>(st, xw, c, acc);
    }

    // The step's x fragments (zeros past M, K or c_end).
    template <typename P>
    __device__ __forceinline__ void load_xs(unsigned (&xw)[P::U][M_FRAGS][XW], int c) const {
        if constexpr (P::FAST) {
            // One base per row and step; the vectors' columns against K are the same for every row.
            bool in_k[P::U][XW / 4];
#pragma unroll
            for (int u = 0; u < P::U; ++u)
#pragma unroll
                for (int i = 0; i < XW / 4; ++i) in_k[u][i] = c + u < c_end && (c + u) * CHUNK_K + 8 * i < x_limit;
#pragma unroll
            for (int f = 0; f < M_FRAGS; ++f) {
                const unsigned short* xp = x_lane[f] + static_cast<long long>(c) * CHUNK_K;
#pragma unroll
                for (int u = 0; u < P::U; ++u)
#pragma unroll
                    for (int i = 0; i < XW; i += 4) {
                        const uint4 v = load_v4_if<false>(xp + u * CHUNK_K + 2 * i, row_live[f] && in_k[u][i / 4]);
                        xw[u][f][i] = v.x;
                        xw[u][f][i + 1] = v.y;
                        xw[u][f][i + 2] = v.z;
                        xw[u][f][i + 3] = v.w;
                    }
            }
        } else {
#pragma unroll
            for (int f = 0; f < M_FRAGS; ++f) {
#pragma unroll
                for (int u = 0; u < P::U; ++u) {
                    const int k = (c + u) * CHUNK_K;
                    load_x<XW, false>(xw[u][f], x_lane[f] + k, row_live[f] && c + u < c_end, k + 2 * XW * t, K);
                }
            }
        }
    }

    template <typename P>
    __device__ __forceinline__ void compute_math(const Stage<P::U, TILES_N>& st,
                                                 const unsigned (&xw)[P::U][M_FRAGS][XW], int c, Acc& acc) const {
        constexpr int U = P::U, GC = P::GC;
#pragma unroll
        for (int u = 0; u < U; u += GC) {
            // INTERLEAVE: no exit at c_end. A chunk past it has zero weights, scales and x (the loads say so) and adds
            // zeros, and without the branch the step is one basic block, so the scheduler interleaves the chunks'
            // mma chains (ncu, INT4 M = 1 4096^2: 22 % of the stall samples were fixed-latency waits on those chains
            // when the chunks ran one after another). It costs registers, so it is a tunable.
            if constexpr (!P::INTERLEAVE) {
                if (c + u >= c_end) break;  // uniform over the warp
            }
#pragma unroll
            for (int tn = 0; tn < TILES_N; ++tn) {
                if constexpr (BITS == 4) {
                    // GC chunks of one group: one scale and zero point, one bias, one sum of their mma and one
                    // scaling. (Each chunk's own chain and scaling, as with GC 1, saved fewer instructions and
                    // measured slower in most configurations on an H100.)
                    const unsigned zp = st.z[u][tn], sp = st.s[u][tn];
                    const unsigned neg_lo = neg_bias_pair<T>(zp & 0xFFu), neg_hi = neg_bias_pair<T>(zp >> 8);
                    const float s_lo = bits_to_float<T>(sp), s_hi = bits_to_float<T>(sp >> 16);
                    float part[M_FRAGS][4];
#pragma unroll
                    for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
                        for (int r = 0; r < 4; ++r) part[f][r] = 0.0f;
#pragma unroll
                    for (int v = 0; v < GC; ++v) {
                        if constexpr (!P::INTERLEAVE) {
                            if (v > 0 && c + u + v >= c_end) break;  // uniform over the warp
                        }
                        const unsigned wq[4] = {st.w[u + v][tn].x, st.w[u + v][tn].y, st.w[u + v][tn].z,
                                                st.w[u + v][tn].w};
#pragma unroll
                        for (int j = 0; j < STEPS; ++j) {
                            unsigned a[4];
                            dequant_int4<T>(wq[j], neg_lo, neg_hi, a);
#pragma unroll
                            for (int f = 0; f < M_FRAGS; ++f)
                                mma_16816<T>(part[f], a, xw[u + v][f][2 * j], xw[u + v][f][2 * j + 1]);
                        }
                    }
#pragma unroll
                    for (int f = 0; f < M_FRAGS; ++f) {
                        acc[tn][f][0] = fmaf(s_lo, part[f][0], acc[tn][f][0]);
                        acc[tn][f][1] = fmaf(s_lo, part[f][1], acc[tn][f][1]);
                        acc[tn][f][2] = fmaf(s_hi, part[f][2], acc[tn][f][2]);
                        acc[tn][f][3] = fmaf(s_hi, part[f][3], acc[tn][f][3]);
                    }
                } else {
                    const unsigned wq[4] = {st.w[u][tn].x, st.w[u][tn].y, st.w[u][tn].z, st.w[u][tn].w};
#pragma unroll
                    for (int j = 0; j < STEPS; ++j) {
                        unsigned a[4];
                        dequant_int8_word<T>(wq[2 * j], a[0], a[1]);
                        dequant_int8_word<T>(wq[2 * j + 1], a[2], a[3]);
#pragma unroll
                        for (int f = 0; f < M_FRAGS; ++f)
                            mma_16816<T>(acc[tn][f], a, xw[u][f][2 * j], xw[u][f][2 * j + 1]);
                    }
                }
            }
        }
    }

    // The shared-memory ring (P::STAGES > 1; fast path, sm_90): the warp's own STAGES slots of one step each
    // (TILES_N tiles x U chunks, tile-major: a tile's chunks are contiguous in global memory, one bulk copy per tile),
    // each with an mbarrier. Lane 0 fills slot i % STAGES with step i; the warp waits on its barrier, copies its 16
    // bytes per (chunk, tile) to registers, hands the slot back to lane 0 (which refills it with step i + STAGES at
    // once) and computes. So STAGES steps are always in flight, in shared memory, not registers. Scales and zero
    // points, too small for a bulk copy of their own, were asked of L2 when the block started (gemv) and are loaded
    // one step ahead into registers.
    template <typename P>
    __device__ __forceinline__ void issue_bulk(int c, unsigned slot, unsigned bar) const {
        namespace layout = ktune::quant_linear_layout;
        if (c >= c_end) return;
        const unsigned bytes = static_cast<unsigned>(min(P::U, c_end - c)) * layout::TILE_BYTES;
        const int live = min(TILES_N, tiles - tile0);  // >= 1: tile0 < tiles in every block
        mbar_arrive_expect_tx(bar, bytes * static_cast<unsigned>(live));
#pragma unroll
        for (int tn = 0; tn < TILES_N; ++tn)
            if (tn < live)
                bulk_copy(slot + tn * P::U * layout::TILE_BYTES,
                          w + layout::lane_offset(tile0 + tn, c, chunks_per_row, 0), bytes, bar);
    }

    template <typename P>
    __device__ __forceinline__ void run_bulk(Acc& acc, unsigned char* ring, unsigned long long* bars) const {
        namespace layout = ktune::quant_linear_layout;
        constexpr int S = P::STAGES, U = P::U;
        constexpr int STRIDE = WARPS * U;
        constexpr unsigned SLOT_BYTES = U * TILES_N * layout::TILE_BYTES;
        const unsigned ring0 = smem_address(ring) + static_cast<unsigned>(warp) * S * SLOT_BYTES;
        const unsigned bar0 = smem_address(bars) + static_cast<unsigned>(warp) * S * 8u;
        int c = c_begin + warp * U;
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < S; ++i) mbar_init(bar0 + 8u * i, 1u);
            fence_mbar_init();
#pragma unroll
            for (int i = 0; i < S; ++i) issue_bulk<P>(c + i * STRIDE, ring0 + i * SLOT_BYTES, bar0 + 8u * i);
        }
        __syncwarp();  // the barriers are initialised before any lane waits on them
        Stage<U, TILES_N> st, next;
        load_scales<P>(next, c);
        int slot = 0;
        unsigned parity = 0;
#pragma unroll 1
        for (; c < c_end; c += STRIDE) {
#pragma unroll
            for (int u = 0; u < U; u += P::GC)
#pragma unroll
                for (int tn = 0; tn < TILES_N; ++tn)
                    if constexpr (BITS == 4) {
                        st.s[u][tn] = next.s[u][tn];
                        st.z[u][tn] = next.z[u][tn];
                    }
            load_scales<P>(next, c + STRIDE);  // past c_end: no loads
            unsigned xw[U][M_FRAGS][XW];
            load_xs<P>(xw, c);  // x and scales (L2) on their way while the weights land
            const unsigned base = ring0 + static_cast<unsigned>(slot) * SLOT_BYTES;
            const unsigned bar = bar0 + 8u * static_cast<unsigned>(slot);
            mbar_wait(bar, parity);
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int tn = 0; tn < TILES_N; ++tn)  // only bytes the copies wrote (not past N's tiles or c_end)
                    st.w[u][tn] = c + u < c_end && tile0 + tn < tiles
                                      ? load_shared_v4(base + (tn * U + u) * layout::TILE_BYTES + 16 * lane)
                                      : make_uint4(0u, 0u, 0u, 0u);
            __syncwarp();  // every lane has read the slot
            if (lane == 0) {
                fence_proxy_async();
                issue_bulk<P>(c + S * STRIDE, base, bar);
            }
            if (++slot == S) {
                slot = 0;
                parity ^= 1u;
            }
            compute_math<P>(st, xw, c, acc);
        }
    }

    // Pipeline: the step whose registers load at iteration i is i + PIPE - 1 (PIPE 2: the next step loads while this
    // one computes); its L2 prefetch went out PREFETCH iterations earlier. Prefetches of steps that load in the first
    // iteration would come too late to help, so the first ones cover steps PIPE .. PIPE + PREFETCH - 2.
    template <typename P>
    __device__ __forceinline__ void run(Acc& acc) const {
        constexpr int STRIDE = WARPS * P::U;
        int c = c_begin + warp * P::U;
#pragma unroll 1
        for (int j = P::PIPE; j < P::PIPE - 1 + P::PREFETCH; ++j) prefetch_step<P>(c + j * STRIDE);
        constexpr int PF_AHEAD = (P::PIPE - 1 + P::PREFETCH) * STRIDE;
        Stage<P::U, TILES_N> sa;
        if constexpr (P::PIPE == 1) {
#pragma unroll 1
            for (; c < c_end; c += STRIDE) {
                prefetch_step<P>(c + PF_AHEAD);
                load_stage<P>(sa, c);
                compute_stage<P>(sa, c, acc);
            }
        } else {
            // Two register stages used in turn (unrolled by two, so no copies between them).
            Stage<P::U, TILES_N> sb;
            load_stage<P>(sa, c);
#pragma unroll 1
            while (c < c_end) {
                prefetch_step<P>(c + PF_AHEAD);
                load_stage<P>(sb, c + STRIDE);
                compute_stage<P>(sa, c, acc);
                c += STRIDE;
                if (c >= c_end) break;
                prefetch_step<P>(c + PF_AHEAD);
                load_stage<P>(sa, c + STRIDE);
                compute_stage<P>(sb, c, acc);
                c += STRIDE;
            }
        }
    }
};

// ---- the kernel body ------------------------------------------------------------------------------------------------

// Blocks per SM the kernel's registers must allow (__launch_bounds__): 16 warps per SM (128 registers a thread) where
// the accumulators and x fragments are few, so that enough warps hold loads in flight; else no bound (no spills).
KTUNE_HD constexpr int min_blocks(int warps, int tiles_n, int m_frags) {
    return tiles_n * m_frags <= 2 ? (16 / warps > 0 ? 16 / warps : 1) : 1;
}

// Static shared memory of a configuration with a ring (STAGES > 1): WARPS * STAGES steps of UNROLL * TILES_N tiles
// (512 bytes each) and the warps' reduction (WARPS * TILES_N * M_FRAGS * 512 bytes), under 48 KiB with room for the
// barriers (8 bytes per slot, at most 93 slots) and the rest: 94 * 512 + 93 * 8 + 128 < 49152. The YAML repeats it as
// a constraint.
KTUNE_HD constexpr bool ring_fits(int warps, int tiles_n, int unroll, int m_frags, int stages) {
    return stages == 1 || warps * (stages * unroll * tiles_n + tiles_n * m_frags) <= 94;
}

struct Problem {
    int M, N, K;
    int group;  // INT4 group size
    int max_split_k;
};

template <typename T, int BITS, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int PIPE, int PREFETCH,
          int STAGES = 1, bool INTERLEAVE = false, int GROUP_CHUNKS = 1>
__device__ __forceinline__ void gemv(T* __restrict__ y, const T* __restrict__ x, const unsigned char* __restrict__ w,
                                     const T* __restrict__ scales, const unsigned char* __restrict__ zeros,
                                     float* __restrict__ scratch, const Problem& pr) {
    static_assert(sizeof(T) == 2, "quant linear: T is __half or __nv_bfloat16");
    static_assert(WARPS >= 1 && WARPS <= 16, "quant linear: WARPS in [1, 16]");
    static_assert(TILES_N == 1 || TILES_N == 2 || TILES_N == 4, "quant linear: TILES_N is 1, 2 or 4");
    static_assert(UNROLL >= 1 && UNROLL <= 16, "quant linear: UNROLL in [1, 16]");
    static_assert(SPLIT_K >= 1 && SPLIT_K <= ktune::quant_linear_layout::MAX_SPLIT_K,
                  "quant linear: SPLIT_K in [1, 16]");
    static_assert(M_FRAGS == 1 || M_FRAGS == 2 || M_FRAGS == 4 || M_FRAGS == 8,
                  "quant linear: M_FRAGS is 1, 2, 4 or 8");
    static_assert(WARPS * TILES_N * M_FRAGS <= 64, "quant linear: WARPS * TILES_N * M_FRAGS <= 64");
    static_assert(PIPE == 1 || PIPE == 2, "quant linear: PIPE is 1 or 2");
    static_assert(PREFETCH >= 1 && PREFETCH <= 16, "quant linear: PREFETCH in [1, 16]");
    static_assert(STAGES >= 1 && STAGES <= 8, "quant linear: STAGES in [1, 8]");
    static_assert(GROUP_CHUNKS == 1 || (BITS == 4 && GROUP_CHUNKS == 2 && UNROLL % 2 == 0),
                  "quant linear: GROUP_CHUNKS 2 needs INT4 and an even UNROLL");
    static_assert(STAGES == 1 || (PIPE == 1 && PREFETCH == 1), "quant linear: STAGES > 1 needs PIPE 1, PREFETCH 1");
    static_assert(ring_fits(WARPS, TILES_N, UNROLL, M_FRAGS, STAGES),
                  "quant linear: WARPS * (STAGES * UNROLL * TILES_N + TILES_N * M_FRAGS) <= 94 (static shared memory)");
    namespace layout = ktune::quant_linear_layout;
    constexpr int CHUNK_K = layout::chunk_k<BITS>();
    constexpr int THREADS = WARPS * 32;
    constexpr int VALUES = TILES_N * M_FRAGS * 4;  // accumulators per lane
    __shared__ float red[WARPS][VALUES][32];
    __shared__ int s_last;

    const int M = pr.M, N = pr.N, K = pr.K;
    // A launch that does not match the configuration writes nothing. The fast path checks the grid where it matters,
    // before its first write: its first loads go out before (decode time is latency, and the code before the first
    // load is on the critical path), and they stay inside the buffers whatever the grid (a block past the tiles, the
    // splits or the rows of x loads nothing). The group size decides the scales' addresses: no path runs without it.
    const bool group_ok = BITS != 4 || (pr.group >= CHUNK_K && pr.group % (GROUP_CHUNKS * CHUNK_K) == 0);
    const bool grid_ok = gridDim.x == (static_cast<unsigned>(N) + (16 * TILES_N - 1)) / (16 * TILES_N) &&
                         gridDim.y == SPLIT_K &&
                         gridDim.z == (static_cast<unsigned>(M) + (8 * M_FRAGS - 1)) / (8 * M_FRAGS) &&
                         SPLIT_K <= pr.max_split_k;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    // Unsigned: M, N, K are non-negative, and signed divisions and 64-bit forms cost instructions before the first
    // loads.
    const unsigned cpr = (static_cast<unsigned>(K) + (CHUNK_K - 1)) / CHUNK_K;
    const long long chunks_per_row = cpr;
    const int tiles = static_cast<int>((static_cast<unsigned>(N) + 15u) / 16u);
    // A split starts at a multiple of GROUP_CHUNKS chunks, so every step's chunk pairs lie in one group.
    const unsigned per_split = ((cpr + (SPLIT_K - 1)) / SPLIT_K + (GROUP_CHUNKS - 1)) / GROUP_CHUNKS * GROUP_CHUNKS;
    const int c_begin = static_cast<int>(blockIdx.y * per_split);
    const int c_end = static_cast<int>(min(cpr, blockIdx.y * per_split + per_split));
    const int tile0 = static_cast<int>(blockIdx.x) * TILES_N;
    const int m0 = static_cast<int>(blockIdx.z) * 8 * M_FRAGS;
    const bool w_aligned = is_aligned(w, 16);
    const bool x_fast = is_aligned(x, 16) && K % 8 == 0;
    const unsigned short* xs = reinterpret_cast<const unsigned short*>(x);
    const unsigned short* ss = reinterpret_cast<const unsigned short*>(scales);

    float acc[TILES_N][M_FRAGS][4];
#pragma unroll
    for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[tn][f][r] = 0.0f;

    // Programmatic launch (dependent_launch.cuh): the weights are constant, so the block asks L2 for its warps' first
    // step of each of its tiles (contiguous in the packed layout) while the kernel before, which wrote x, finishes (no
    // more: with the whole k range prefetched, the tuned decode-size kernels came out 10-20 % slower alone in one
    // call's tuning and back with this in the next (not side by side); x, y and scratch only after it has.
    if (blockIdx.z == 0 && tid < TILES_N && tile0 + tid < tiles && c_end > c_begin && w_aligned)
        prefetch_l2(w + (static_cast<long long>(tile0 + tid) * chunks_per_row + c_begin) * layout::TILE_BYTES,
                    ktune::dev::early_bytes(1ull * tiles * SPLIT_K,
                                            min(c_end - c_begin, WARPS * UNROLL) * layout::TILE_BYTES,
                                            layout::TILE_BYTES));
    ktune::dev::wait_prior_grids();

    // INT4: chunks per group (group is a multiple of CHUNK_K); a shift when it is a power of two, as it always is in
    // practice (64, 128), so no division runs per chunk.
    const int cpg = BITS == 4 ? pr.group / CHUNK_K : 1;
    const int cpg_shift = (cpg & (cpg - 1)) == 0 ? __ffs(cpg) - 1 : -1;
    const bool params_aligned = BITS == 8 || (is_aligned(scales, 16) && is_aligned(zeros, 16));
    const bool fast = w_aligned && x_fast && params_aligned && cpg_shift >= 0 && group_ok;
    // The main loop with its lanes' addresses for n_groups groups per row of scales. The fast path takes them by a
    // shift (ceil(ceil(K / CHUNK_K) / cpg) = ceil(K / group)); only the plain path divides, so that neither a
    // division nor its branch lies before the fast path's first loads.
    const auto main_loop = [&](int n_groups) {
        MainLoop<T, BITS, WARPS, TILES_N, M_FRAGS> loop{w,     xs,    ss,    zeros, M,    K,    c_begin,
                                                            c_end, tile0, tiles, m0,    lane, warp, g,
                                                            t,     cpg,   cpg_shift, n_groups, chunks_per_row};
        loop.set_lanes();
        return loop;
    };
    const auto plain = [&] {
        if (!grid_ok || !group_ok) return false;
        main_loop(BITS == 4 ? static_cast<int>(layout::groups(K, pr.group)) : 0).template run<Path<false, 1, 1, 0>>(acc);
        return true;
    };
    const int fast_groups = BITS == 4 ? static_cast<int>((cpr + cpg - 1) >> cpg_shift) : 0;
    if constexpr (STAGES > 1 && KTUNE_QUANT_LINEAR_BULK) {
        if (fast) {
            // Each warp's ring of STAGES steps, and their barriers.
            __shared__ __align__(128) unsigned char ring[WARPS * STAGES * UNROLL * TILES_N * layout::TILE_BYTES];
            __shared__ __align__(8) unsigned long long bars[WARPS * STAGES];
            // Ask L2 for the block's scales and zero points now (a tile's groups are contiguous: one bulk prefetch
            // per tile for each), so that the ring's steps find them there.
            if constexpr (BITS == 4) {
                const int g_first = c_begin >> cpg_shift;
                const int g_count = c_end > c_begin ? ((c_end - 1) >> cpg_shift) - g_first + 1 : 0;
                if (tid < 2 * TILES_N && g_count > 0 && tile0 + tid / 2 < tiles) {
                    const long long first = (static_cast<long long>(tile0 + tid / 2) * fast_groups + g_first) * 16;
                    if (tid % 2 == 0)
                        prefetch_l2(reinterpret_cast<const unsigned char*>(ss + first), 32u * g_count);
                    else
                        prefetch_l2(zeros + first, 16u * g_count);
                }
            }
            main_loop(fast_groups).template run_bulk<Path<true, UNROLL, 1, 0, STAGES, INTERLEAVE, GROUP_CHUNKS>>(
                acc, ring, bars);
        } else if (!plain()) {
            return;
        }
    } else {
        if (fast)
            main_loop(fast_groups).template run<Path<true, UNROLL, PIPE, PREFETCH - 1, 1, INTERLEAVE, GROUP_CHUNKS>>(
                acc);
        else if (!plain())
            return;
    }

    // The next kernel may start once every block is past its weight stream (dependent_launch.cuh): asked at the start,
    // its blocks waited on the SMs beside this one's for the whole stream.
    ktune::dev::launch_dependents();
    if (!grid_ok) return;  // uniform over the grid: no block waits at the barrier below for one that left

    // Warps reduce in warp order through shared memory.
#pragma unroll
    for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
            for (int r = 0; r < 4; ++r) red[warp][(tn * M_FRAGS + f) * 4 + r][lane] = acc[tn][f][r];
    __syncthreads();

    // Value i of the block: (tile tn, fragment f, register r) of lane l; C fragment register r of lane 4g + t is row
    // g (+ 8 for r >= 2) and column 2t (+ 1 for odd r).
    float* parts = scratch + layout::counter_words(M, N);
    for (int i = tid; i < VALUES * 32; i += THREADS) {
        const int v = i / 32, l = i % 32;
        const int tn = v / (M_FRAGS * 4), f = (v / 4) % M_FRAGS, r = v % 4;
        const int n = (tile0 + tn) * 16 + (l >> 2) + (r >= 2 ? 8 : 0);
        const int m = m0 + 8 * f + 2 * (l & 3) + (r & 1);
        float sum = 0.0f;
#pragma unroll
        for (int wp = 0; wp < WARPS; ++wp) sum += red[wp][v][l];
        if (n >= N || m >= M) continue;
        if constexpr (SPLIT_K == 1) {
            if constexpr (BITS == 8) sum *= to_float(scales[n]);
            y[static_cast<long long>(m) * N + n] = from_float<T>(sum);
        } else {
            parts[(static_cast<long long>(blockIdx.y) * M + m) * N + n] = sum;
        }
    }
    if constexpr (SPLIT_K > 1) {
        __threadfence();
        __syncthreads();
        if (tid == 0) {
            unsigned* counter = reinterpret_cast<unsigned*>(scratch) + blockIdx.x * gridDim.z + blockIdx.z;
            const bool last = atomicAdd(counter, 1u) == static_cast<unsigned>(SPLIT_K - 1);
            if (last) *counter = 0u;  // every split has arrived: nobody else touches it in this launch
            s_last = last;
        }
        __syncthreads();
        if (!s_last) return;
        __threadfence();
        // The block's rows and columns, n fastest: sum the splits in order.
        constexpr int ROWS = 16 * TILES_N, COLS = 8 * M_FRAGS;
        for (int i = tid; i < ROWS * COLS; i += THREADS) {
            const int n = tile0 * 16 + i % ROWS, m = m0 + i / ROWS;
            if (n >= N || m >= M) continue;
            float sum = 0.0f;
#pragma unroll 4
            for (int sp = 0; sp < SPLIT_K; ++sp) sum += __ldcg(parts + (static_cast<long long>(sp) * M + m) * N + n);
            if constexpr (BITS == 8) sum *= to_float(scales[n]);
            y[static_cast<long long>(m) * N + n] = from_float<T>(sum);
        }
    }
}

}  // namespace ktune::dev::quant_linear
