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
// 8 * M_FRAGS rows of x and 1 / SPLIT_K of the k chunks; its WARPS warps take UNROLL consecutive chunks each, in turn.
// A warp issues every load of a step (UNROLL * TILES_N 16-byte weight loads, the x fragments, INT4 scales and zero
// points) before its first mma, so their latencies overlap instead of adding up chunk by chunk (measured on an H100
// before this was so: 23-61 % of copy bandwidth at M = 1, the chunks' x and scale loads waiting in turn). Warps
// reduce through shared memory in warp order; k splits through scratch: every split block writes its fp32 partial, and
// the last to arrive (atomic counter, reset by it) sums the SPLIT_K partials in split order and writes y.
// Deterministic.
//
// Tunables (template parameters, named as the YAML keys):
//   WARPS    warps per block, 1..16; they split the block's k chunks (rows per block do not change with WARPS).
//   TILES_N  16-row tiles per block (rows per block = 16 * TILES_N): 1, 2 or 4.
//   UNROLL   consecutive k chunks a warp loads at once (the pipeline depth: UNROLL * TILES_N 16-byte loads in flight
//   per
//            lane): 1..16. K chunk of a block step = WARPS * UNROLL * CHUNK_K.
//   SPLIT_K  blocks along k (grid y), 1..16, at most max_split_k(M, N) (else the kernel writes nothing).
//   M_FRAGS  8-row fragments of x per block (columns per block = 8 * M_FRAGS): 1, 2, 4 or 8; grid z covers M.
//   WARPS * TILES_N * M_FRAGS <= 64 (the warp reduction's shared memory, 32 KiB).
// The vector width is fixed by the packed layout: 16-byte weight loads, 16- or 32-byte x loads per lane.
//
// Any M, N, K (INT4: group size a multiple of 64). x rows need 16-byte alignment (x aligned and K % 8 == 0) for the
// vector loads of x, otherwise x is read element by element; a weight buffer not aligned to 16 bytes is read byte by
// byte. Both checked once per launch.
#include "kernels/common/ktune_device.cuh"
#include "kernels/quant_linear/quant_linear_layout.cuh"

namespace ktune::dev::quant_linear {

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

// 16 weight bytes, streamed (no L1 allocation). `aligned`: p is 16-byte aligned; otherwise byte loads.
__device__ __forceinline__ uint4 load_weights(const unsigned char* p, bool aligned) {
    uint4 v;
    if (aligned) {
        asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    } else {
        unsigned w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
            w[i] = static_cast<unsigned>(p[4 * i]) | (static_cast<unsigned>(p[4 * i + 1]) << 8) |
                   (static_cast<unsigned>(p[4 * i + 2]) << 16) | (static_cast<unsigned>(p[4 * i + 3]) << 24);
        v = make_uint4(w[0], w[1], w[2], w[3]);
    }
    return v;
}

// XW words (2 * XW elements of T) of row m of x from column k: zeros past M or K. `fast`: x rows 16-byte aligned.
template <int XW>
__device__ __forceinline__ void load_x(unsigned (&out)[XW], const unsigned short* __restrict__ x, int m, int M,
                                       long long k, int K, bool fast) {
    if (m >= M) {
#pragma unroll
        for (int i = 0; i < XW; ++i) out[i] = 0u;
        return;
    }
    const unsigned short* row = x + static_cast<long long>(m) * K;
    if (fast && k + 2 * XW <= K) {
#pragma unroll
        for (int i = 0; i < XW; i += 4) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(row + k + 2 * i));
            out[i] = v.x;
            out[i + 1] = v.y;
            out[i + 2] = v.z;
            out[i + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < XW; ++i) {
            const long long k0 = k + 2 * i;
            const unsigned lo = k0 < K ? static_cast<unsigned>(__ldg(row + k0)) : 0u;
            const unsigned hi = k0 + 1 < K ? static_cast<unsigned>(__ldg(row + k0 + 1)) : 0u;
            out[i] = lo | (hi << 16);
        }
    }
}

// ---- the kernel body ------------------------------------------------------------------------------------------------

struct Problem {
    int M, N, K;
    int group;  // INT4 group size
    int max_split_k;
};

template <typename T, int BITS, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS>
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
    namespace layout = ktune::quant_linear_layout;
    constexpr int CHUNK_K = layout::chunk_k<BITS>();
    constexpr int STEPS = CHUNK_K / 16;  // mma steps per chunk
    constexpr int XW = CHUNK_K / 8;      // x words per lane per chunk (CHUNK_K / 4 elements)
    constexpr int THREADS = WARPS * 32;
    constexpr int VALUES = TILES_N * M_FRAGS * 4;  // accumulators per lane
    __shared__ float red[WARPS][VALUES][32];
    __shared__ int s_last;

    const int M = pr.M, N = pr.N, K = pr.K;
    const int n_blocks = (N + 16 * TILES_N - 1) / (16 * TILES_N);
    const int m_blocks = (M + 8 * M_FRAGS - 1) / (8 * M_FRAGS);
    if (gridDim.x != static_cast<unsigned>(n_blocks) || gridDim.y != SPLIT_K ||
        gridDim.z != static_cast<unsigned>(m_blocks) || SPLIT_K > pr.max_split_k ||
        (BITS == 4 && (pr.group < CHUNK_K || pr.group % CHUNK_K != 0)))
        return;  // a launch that does not match the configuration writes nothing

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const long long chunks_per_row = layout::chunks(K, CHUNK_K);
    const int tiles = (N + 15) / 16;
    const int per_split = static_cast<int>((chunks_per_row + SPLIT_K - 1) / SPLIT_K);
    const int c_begin = static_cast<int>(blockIdx.y) * per_split;
    const int c_end = min(static_cast<int>(chunks_per_row), c_begin + per_split);
    const int tile0 = static_cast<int>(blockIdx.x) * TILES_N;
    const int m0 = static_cast<int>(blockIdx.z) * 8 * M_FRAGS;
    const bool w_aligned = is_aligned(w, 16);
    const bool x_fast = is_aligned(x, 16) && K % 8 == 0;
    const unsigned short* xs = reinterpret_cast<const unsigned short*>(x);

    float acc[TILES_N][M_FRAGS][4];
#pragma unroll
    for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[tn][f][r] = 0.0f;

    // INT4: chunks per group (group is a multiple of CHUNK_K); a shift when it is a power of two, as it always is in
    // practice (64, 128), so no division runs per chunk.
    const int cpg = BITS == 4 ? pr.group / CHUNK_K : 1;
    const int cpg_shift = (cpg & (cpg - 1)) == 0 ? __ffs(cpg) - 1 : -1;

#pragma unroll 1
    for (int c = c_begin + warp * UNROLL; c < c_end; c += WARPS * UNROLL) {
        // Every load of the step first (weights, x, and for INT4 the scales and zero points), so their latencies
        // overlap; then the math. Loads of chunks past c_end (or tiles past N) give zeros and are not used.
        uint4 wv[UNROLL][TILES_N];
        unsigned xw[UNROLL][M_FRAGS][XW];
        float s_lo[UNROLL][TILES_N], s_hi[UNROLL][TILES_N];
        unsigned z_lo[UNROLL][TILES_N], z_hi[UNROLL][TILES_N];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int cc = c + u;
            const bool live = cc < c_end;
#pragma unroll
            for (int tn = 0; tn < TILES_N; ++tn)
                wv[u][tn] = live && tile0 + tn < tiles  // the last block's tiles may pass the padded N
                                ? load_weights(w + layout::lane_offset(tile0 + tn, cc, chunks_per_row, lane), w_aligned)
                                : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
            for (int f = 0; f < M_FRAGS; ++f)
                load_x<XW>(xw[u][f], xs, live ? m0 + 8 * f + g : M, M,
                           static_cast<long long>(cc) * CHUNK_K + 2 * XW * t, K, x_fast);
            if constexpr (BITS == 4) {
                // Rows n_lo = g and n_hi = g + 8 of each tile: the chunk's group's zero points and scales.
                const int grp = cpg_shift >= 0 ? cc >> cpg_shift : cc / cpg;
                const long long srow = static_cast<long long>(grp) * N;
#pragma unroll
                for (int tn = 0; tn < TILES_N; ++tn) {
                    const int n_lo = (tile0 + tn) * 16 + g, n_hi = n_lo + 8;
                    const bool ok_lo = live && n_lo < N, ok_hi = live && n_hi < N;
                    z_lo[u][tn] = ok_lo ? zeros[srow + n_lo] : 0u;
                    z_hi[u][tn] = ok_hi ? zeros[srow + n_hi] : 0u;
                    s_lo[u][tn] = ok_lo ? to_float(scales[srow + n_lo]) : 0.0f;
                    s_hi[u][tn] = ok_hi ? to_float(scales[srow + n_hi]) : 0.0f;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (c + u >= c_end) break;  // uniform over the warp
#pragma unroll
            for (int tn = 0; tn < TILES_N; ++tn) {
                const unsigned wq[4] = {wv[u][tn].x, wv[u][tn].y, wv[u][tn].z, wv[u][tn].w};
                if constexpr (BITS == 4) {
                    const unsigned neg_lo = neg_bias_pair<T>(z_lo[u][tn]), neg_hi = neg_bias_pair<T>(z_hi[u][tn]);
                    float part[M_FRAGS][4];
#pragma unroll
                    for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
                        for (int r = 0; r < 4; ++r) part[f][r] = 0.0f;
#pragma unroll
                    for (int j = 0; j < STEPS; ++j) {
                        unsigned a[4];
                        dequant_int4<T>(wq[j], neg_lo, neg_hi, a);
#pragma unroll
                        for (int f = 0; f < M_FRAGS; ++f)
                            mma_16816<T>(part[f], a, xw[u][f][2 * j], xw[u][f][2 * j + 1]);
                    }
#pragma unroll
                    for (int f = 0; f < M_FRAGS; ++f) {
                        acc[tn][f][0] = fmaf(s_lo[u][tn], part[f][0], acc[tn][f][0]);
                        acc[tn][f][1] = fmaf(s_lo[u][tn], part[f][1], acc[tn][f][1]);
                        acc[tn][f][2] = fmaf(s_hi[u][tn], part[f][2], acc[tn][f][2]);
                        acc[tn][f][3] = fmaf(s_hi[u][tn], part[f][3], acc[tn][f][3]);
                    }
                } else {
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
