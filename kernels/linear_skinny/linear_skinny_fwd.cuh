#pragma once
// Dense skinny linear for decode: y[m, n] = act(sum_k x[m, k] * W[n, k] + bias[n]) for m < M (1..64), n < N, with x
// [M, K], W [N, K] row-major (F.linear's layout) and y [M, N] of T (__half, __nv_bfloat16); fp32 accumulation, bias and
// activation in fp32, y rounded once to T. The bf16 twin of the weight-only kernels (kernels/quant_linear/
// quant_linear_gemv.cuh), whose ideas it reuses; the time is the weight stream (N * K * 2 bytes), so everything below
// serves keeping enough weight bytes in flight per SM.
//
// Tensor cores: mma.m16n8k16 with a 16 (n) x 16 (k) tile of W as the A operand and 16 (k) x 8 (m) of x^T as B, so up
// to 8 rows of x share one mma. A dot product does not care in which order k is summed, so lane 4g + t loads 16
// contiguous bytes (8 k) of W rows g and g + 8 at k = 32c + 8t of chunk c, and the same 16 bytes of x row g: words
// 0, 1 of those loads are mma step 0's fragments (A: {row g w0, row g+8 w0, row g w1, row g+8 w1}, B: {x w0, x w1}),
// words 2, 3 step 1's. The mma's logical k 2t, 2t+1 / 2t+8, 2t+9 then stand for the actual k 8t+4s+{0,1} / {2,3} in
// both operands alike. A chunk is 16 rows x 32 k = 1 KiB of W (two full 32-byte sectors per row).
//
// Work split: block (n block, k split, m block) = blockIdx (x, y, z); a block owns TILES_N tiles of 16 rows,
// 8 * M_FRAGS rows of x and 1 / SPLIT_K of the k chunks; its WARPS warps take steps of UNROLL consecutive chunks in
// turn (a row's UNROLL * 64 bytes contiguous per step). Weights in flight:
//   - STAGES 1: a step's UNROLL * TILES_N * 2 16-byte loads go to registers (no L1 allocation), all before its mmas;
//   - STAGES > 1: a per-warp ring of STAGES steps in shared memory, filled by cp.async (16 bytes per lane, zero-fill
//     where out of range), so STAGES - 1 steps are in flight beside the one computing without costing registers. Each
//     lane reads back only the bytes it copied itself, so its own cp.async.wait_group is the only synchronisation;
//     the slot a step refills is the one the previous step read, whose values its mmas have already consumed.
//   x is read (through L1, shared by the block's warps) when a step starts, before the wait for its weights.
// Warps reduce through shared memory (the ring's bytes, after the loop) in warp order; k splits through scratch: every
// split block writes its fp32 partial, the last to arrive (atomic counter, reset by it) sums the SPLIT_K partials in
// split order, adds the bias, applies ACT and writes y. Deterministic.
//
// Scratch (fp32 words, zero-filled once; the kernel leaves the counters at zero): the layout of the weight-only
// kernels, kernels/quant_linear/quant_linear_layout.cuh (counter_words(M, N) counters, then SPLIT_K partials
// [SPLIT_K, M, N]; SPLIT_K <= max_split_k(M, N), else the kernel writes nothing).
//
// Tunables (template parameters, named as the YAML keys):
//   WARPS     warps per block, 1..16, splitting the block's k chunks.
//   TILES_N   16-row tiles of W per block: 1, 2 or 4.
//   UNROLL    consecutive 32-k chunks of a warp step, 1..8 (16-byte weight loads per lane and step: 2 UNROLL TILES_N).
//   SPLIT_K   blocks along k, 1..16, merged in the same launch.
//   M_FRAGS   8-row fragments of x per block: 1, 2, 4 or 8; grid z covers M.
//   STAGES    1: register loads; 2..8: steps of the shared-memory ring per warp (WARPS * STAGES * UNROLL * TILES_N KiB
//             of static shared memory, at most 32).
//   ACT       0 none, 1 gelu (tanh approximation), 2 silu, on the fp32 sum plus bias.
// Any M, N, K: rows past N or M and k past K load zeros (outputs past N, M are not written). W and x 16-byte aligned
// and K % 8 == 0 take the tuned path; otherwise (checked once per launch) a plain path loads element by element, one
// chunk per step, in registers.
//
// SwiGLU x (SWIGLU, the kernel linear_skinny_swiglu_fwd): x is not in memory but x[m, k] = T(silu(gate_up[m, k]) *
// gate_up[m, K + k]) of a gate_up [M, 2K] (row stride 2K elements, W's stays K), computed where x is loaded: the
// 16 bytes of x become 16 of gate and 16 of up K elements further, combined by ktune::swiglu's decode-size arithmetic
// (glu_fast, kernels/glu/glu_common.cuh) and rounded to T, so the mmas see the very x the unfused pair would. The
// fast path needs gate_up (not x) 16-byte aligned; zeros past M or K stay zeros (silu(0) * 0 = 0).
//
// Residual add + RMSNorm x (NORM, the kernel linear_skinny_add_rmsnorm_fwd): x[m, k] = T(s * rstd[m] * nw[k]) with
// s = fp32(a[m, k]) + fp32(r[m, k]) and rstd[m] = rsqrt(mean_k(s^2) + eps), ktune::add_rms_norm's arithmetic
// (kernels/add_rmsnorm/). After the wait for the kernel before (which wrote a and r), each block sums s^2 of its own
// rows over all of K (norm_prologue: every thread strides over k, 4 rows at a time, fp32; warps then the block reduce
// in a fixed order) into shared rstd; the blocks of n block 0 and k split 0 also write r_out = T(s) of their rows.
// Then x is formed where it is loaded: the 16 bytes of x become 16 of a, 16 of r and 16 of nw, one rounding to T.
// The prologue reads the block's rows of a and r whole (8 M_FRAGS rows x 4K bytes, through L1, where the loop's
// loads of them may hit again): L2 traffic that grows with M beside the weights a block streams (the space keeps
// M <= 16). It runs between the wait and the weight stream: on an H100 the fused kernel took 15.9 us where the pair
// (add + RMSNorm, then the projection) took 1.98 + 12.74 at M = 1, N = 5120, K = 3072 (39.2 against 37.2 at
// N = 16384), so the decode step keeps the pair. The fast
// path needs a, r, nw (and r_out for the prologue's vector stores) 16-byte aligned; r_out must not alias a or r
// (other blocks still read them). Zeros past M or K stay zeros (rstd of a row past M is 0).
//
// Gated (GATED, the gated FFN's small-M kernel ffn_gated_skinny, kernels/gemm/gemm_act_skinny.cuh): W [2N, K] holds a
// gate's N rows, then an up's, and y[m, n] = act(gate) * up with gate = x W[n]^T and up = x W[N + n]^T, in fp32,
// rounded once. A block streams its TILES_N tiles of the gate's rows and the TILES_N matching tiles of the up's side
// by side (as 2 TILES_N tiles: registers, ring and reduction those of 2 TILES_N), so that both sums of an output meet
// in the same lane and register; k is not split.
#include "kernels/common/dependent_launch.cuh"
#include "kernels/common/ktune_device.cuh"
#include "kernels/gemm/gemm_types.cuh"
#include "kernels/glu/glu_common.cuh"
#include "kernels/quant_linear/quant_linear_layout.cuh"

namespace ktune::dev::linear_skinny {

inline constexpr int CHUNK_K = 32;          // k per chunk: 4 lanes x 8 elements per row
inline constexpr int CHUNK_BYTES = 1024;    // one 16-row tile of one chunk: 2 16-byte loads per lane
inline constexpr int MAX_RING_KIB = 32;  // of the 48 KiB of static shared memory (powers of two: 32 is the most)

KTUNE_HD constexpr int ring_kib(int warps, int stages, int unroll, int tiles_n) {
    return stages > 1 ? warps * stages * unroll * tiles_n : 0;
}

// Blocks per SM the registers must allow (__launch_bounds__): 16 warps per SM (128 registers) where accumulators and x
// fragments are few, so that enough warps issue loads; else no bound (no spills).
KTUNE_HD constexpr int min_blocks(int warps, int tiles_n, int m_frags) {
    return tiles_n * m_frags <= 2 ? (16 / warps > 0 ? 16 / warps : 1) : 1;
}

template <typename T>
inline constexpr bool is_half = false;
template <>
inline constexpr bool is_half<__half> = true;

template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                          unsigned b0, unsigned b1) {
    if constexpr (is_half<T>)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// ACT's activation in gemm::activate's sigmoid form (kernels/gemm/gemm_types.cuh: glu::activate's v * sigmoid(z)) at
// every type: the tensor-core GEMMs' bf16 tanh.approx form saves MUFU work that these weight-bound kernels do not wait
// on.
template <int ACT>
__device__ __forceinline__ float activate(float v) {
    return gemm::activate<static_cast<gemm::Act>(ACT)>(v);
}

// 16 bytes at p where pred (zeros elsewhere), predicated inside the instruction so that a step's loads share one base
// with constant offsets. STREAM: no L1 allocation (the weights, read once), and L2 fetches the whole 128-byte line (a
// lane's 16 bytes are a quarter of a row's 64 in a chunk; the next chunk, often another warp's, reads the line's other
// half); else through L1 (x, read by every warp).
// Volatile: the compiler keeps them where they are issued, ahead of their use.
template <bool STREAM>
__device__ __forceinline__ uint4 load_v4_if(const void* p, bool pred) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
#define KTUNE_SKINNY_LOAD_V4(QUAL)                                                                                  \
    asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %4, 0;\n @q ld.global.nc" QUAL                              \
                 ".v4.u32 {%0, %1, %2, %3}, [%5];\n}"                                                             \
                 : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)                                                     \
                 : "r"(static_cast<int>(pred)), "l"(p))
    if constexpr (STREAM)
        KTUNE_SKINNY_LOAD_V4(".L1::no_allocate.L2::128B");
    else
        KTUNE_SKINNY_LOAD_V4("");
#undef KTUNE_SKINNY_LOAD_V4
    return v;
}

// The plain path's 8 elements from p (2-byte aligned only): element e where e < limit, zeros elsewhere.
__device__ __forceinline__ uint4 load_elems(const unsigned char* p, bool live, int limit) {
    const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const unsigned lo = live && 2 * i < limit ? static_cast<unsigned>(__ldg(q + 2 * i)) : 0u;
        const unsigned hi = live && 2 * i + 1 < limit ? static_cast<unsigned>(__ldg(q + 2 * i + 1)) : 0u;
        w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// 16 bytes from global src to shared dst (both 16-byte aligned) as one cp.async, L1 bypassed and the whole 128-byte
// line fetched into L2 (as load_v4_if's STREAM); pred false copies nothing and zero-fills dst (src-size 0: src is not
// read).
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool pred) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint4 load_shared_v4(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

// A lane's loop-invariant view of the block: chunk c of its W row h (g, g + 8) of tile tn is w_row[tn][h] + 64 c,
// of its x row in fragment f x_row[f] + 64 c; a chunk's vector lies inside K when 32 c < k_limit (fast path; the plain
// path checks per element).
template <int TILES_N, int M_FRAGS>
struct Lanes {
    const unsigned char* w_row[TILES_N][2];
    const unsigned char* x_row[M_FRAGS];
    bool w_live[TILES_N][2];
    bool x_live[M_FRAGS];
    int k_limit;  // K - 8t
    int c_end;
    unsigned x_up;  // SWIGLU: bytes from a gate element to its up (2K)
    // NORM: the residual's rows beside x's (a's), the norm weight at the lane's k (chunk c at + 64 c), and rstd of
    // the lane's row in each fragment.
    const unsigned char* r_row[M_FRAGS];
    const unsigned char* nw_row;
    float rstd[M_FRAGS];
};

// NORM's extra operands (header comment): residual r [M, K], norm weight nw [K], r_out [M, K] (= T(a + r)), eps.
template <typename T>
struct NormArgs {
    const T* r = nullptr;
    const T* nw = nullptr;
    T* r_out = nullptr;
    float eps = 0.0f;
};

// One chunk's mmas: W rows g, g + 8 of each tile (wv[tn][0], wv[tn][1]) against each fragment's x (xv[f]).
template <typename T, int TILES_N, int M_FRAGS>
__device__ __forceinline__ void chunk_mma(float (&acc)[TILES_N][M_FRAGS][4], const uint4 (&wv)[TILES_N][2],
                                          const uint4 (&xv)[M_FRAGS]) {
#pragma unroll
    for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f) {
            mma_16816<T>(acc[tn][f], wv[tn][0].x, wv[tn][1].x, wv[tn][0].y, wv[tn][1].y, xv[f].x, xv[f].y);
            mma_16816<T>(acc[tn][f], wv[tn][0].z, wv[tn][1].z, wv[tn][0].w, wv[tn][1].w, xv[f].z, xv[f].w);
        }
}

// 8 elements of x from their gate (g) and up (u): silu(g) * u as ktune::swiglu computes it, rounded to T.
template <typename T>
__device__ __forceinline__ uint4 swiglu_x(const uint4& g, const uint4& u) {
    const unsigned gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
    unsigned out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float fg[2], fu[2], fo[2];
        unpack_word(T{}, gw[j], fg);
        unpack_word(T{}, uw[j], fu);
#pragma unroll
        for (int e = 0; e < 2; ++e) fo[e] = ktune::dev::glu::glu_fast<ktune::dev::glu::Act::silu>(fg[e], fu[e]);
        out[j] = pack_word<T>(fo);
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
}

// 8 elements of x from a, r and nw: T((fp32(a) + fp32(r)) * rstd * nw) as ktune::add_rms_norm computes it.
template <typename T>
__device__ __forceinline__ uint4 norm_x(const uint4& a, const uint4& r, const uint4& nw, float rstd) {
    const unsigned aw[4] = {a.x, a.y, a.z, a.w}, rw[4] = {r.x, r.y, r.z, r.w}, nww[4] = {nw.x, nw.y, nw.z, nw.w};
    unsigned out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float fa[2], fr[2], fn[2], fo[2];
        unpack_word(T{}, aw[j], fa);
        unpack_word(T{}, rw[j], fr);
        unpack_word(T{}, nww[j], fn);
#pragma unroll
        for (int e = 0; e < 2; ++e) fo[e] = (fa[e] + fr[e]) * rstd * fn[e];
        out[j] = pack_word<T>(fo);
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
}

// x of chunk c for every fragment (zeros past M, K or the warp's chunks); SWIGLU: from its gate and up; NORM: from
// a, r and nw.
template <typename T, bool SWIGLU, bool NORM, bool FAST, int TILES_N, int M_FRAGS>
__device__ __forceinline__ void load_x_chunk(uint4 (&xv)[M_FRAGS], const Lanes<TILES_N, M_FRAGS>& ln, int c) {
    const bool in = c < ln.c_end;
    uint4 nw = make_uint4(0u, 0u, 0u, 0u);  // NORM: the chunk's norm weights, shared by the fragments
    if constexpr (NORM) {
        if constexpr (FAST)
            nw = load_v4_if<false>(ln.nw_row + 64ll * c, in && 32 * c < ln.k_limit);
        else
            nw = load_elems(ln.nw_row + 64ll * c, in, ln.k_limit - 32 * c);
    }
#pragma unroll
    for (int f = 0; f < M_FRAGS; ++f) {
        const unsigned char* p = ln.x_row[f] + 64ll * c;
        if constexpr (NORM) {
            // Both loads before the math, so that they are in flight together (as SWIGLU's).
            const unsigned char* q = ln.r_row[f] + 64ll * c;
            uint4 a, r;
            if constexpr (FAST) {
                const bool live = in && ln.x_live[f] && 32 * c < ln.k_limit;
                a = load_v4_if<false>(p, live);
                r = load_v4_if<false>(q, live);
            } else {
                a = load_elems(p, in && ln.x_live[f], ln.k_limit - 32 * c);
                r = load_elems(q, in && ln.x_live[f], ln.k_limit - 32 * c);
            }
            xv[f] = norm_x<T>(a, r, nw, ln.rstd[f]);
        } else if constexpr (SWIGLU) {
            // Both loads before the math, so that they are in flight together.
            uint4 g, u;
            if constexpr (FAST) {
                const bool live = in && ln.x_live[f] && 32 * c < ln.k_limit;
                g = load_v4_if<false>(p, live);
                u = load_v4_if<false>(p + ln.x_up, live);
            } else {
                g = load_elems(p, in && ln.x_live[f], ln.k_limit - 32 * c);
                u = load_elems(p + ln.x_up, in && ln.x_live[f], ln.k_limit - 32 * c);
            }
            xv[f] = swiglu_x<T>(g, u);
        } else if constexpr (FAST) {
            xv[f] = load_v4_if<false>(p, in && ln.x_live[f] && 32 * c < ln.k_limit);
        } else {
            xv[f] = load_elems(p, in && ln.x_live[f], ln.k_limit - 32 * c);
        }
    }
}

// STAGES 1 (and the plain path, U 1): a step's weights in registers, all loads before the first mma.
template <typename T, bool SWIGLU, bool NORM, bool FAST, int U, int WARPS, int TILES_N, int M_FRAGS>
__device__ __forceinline__ void run_registers(float (&acc)[TILES_N][M_FRAGS][4], const Lanes<TILES_N, M_FRAGS>& ln,
                                              int c_begin, int warp) {
    constexpr int STRIDE = WARPS * U;
#pragma unroll 1
    for (int c = c_begin + warp * U; c < ln.c_end; c += STRIDE) {
        uint4 wv[U][TILES_N][2];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const bool in = c + u < ln.c_end;
#pragma unroll
            for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const unsigned char* p = ln.w_row[tn][h] + 64ll * (c + u);
                    if constexpr (FAST)
                        wv[u][tn][h] = load_v4_if<true>(p, in && ln.w_live[tn][h] && 32 * (c + u) < ln.k_limit);
                    else
                        wv[u][tn][h] = load_elems(p, in && ln.w_live[tn][h], ln.k_limit - 32 * (c + u));
                }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            uint4 xv[M_FRAGS];
            load_x_chunk<T, SWIGLU, NORM, FAST>(xv, ln, c + u);
            chunk_mma<T>(acc, wv[u], xv);
        }
    }
}

// STAGES > 1: the warp's ring of S slots of one step each (slot layout: chunk u, tile tn, row h, lane: 16 bytes).
template <typename T, bool SWIGLU, bool NORM, int U, int S, int WARPS, int TILES_N, int M_FRAGS>
__device__ __forceinline__ void run_ring(float (&acc)[TILES_N][M_FRAGS][4], const Lanes<TILES_N, M_FRAGS>& ln,
                                         int c_begin, int warp, int lane, unsigned ring) {
    constexpr int STRIDE = WARPS * U;
    constexpr int SLOT_BYTES = U * TILES_N * CHUNK_BYTES;
    const unsigned base = ring + static_cast<unsigned>(warp * S * SLOT_BYTES + 16 * lane);
    const auto issue = [&](int c, int slot) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const bool in = c + u < ln.c_end && 32 * (c + u) < ln.k_limit;
#pragma unroll
            for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    cp_async_16(base + slot * SLOT_BYTES + ((u * TILES_N + tn) * 2 + h) * 512,
                                ln.w_row[tn][h] + 64ll * (c + u), in && ln.w_live[tn][h]);
        }
        cp_async_commit();
    };
    int c = c_begin + warp * U;
#pragma unroll
    for (int s = 0; s < S - 1; ++s) issue(c + s * STRIDE, s);
    int slot = 0;
#pragma unroll 1
    for (; c < ln.c_end; c += STRIDE) {
        // Refill the slot the previous step read (its values are consumed: its mmas came before in program order).
        issue(c + (S - 1) * STRIDE, slot == 0 ? S - 1 : slot - 1);
        uint4 xv[U][M_FRAGS];
#pragma unroll
        for (int u = 0; u < U; ++u) load_x_chunk<T, SWIGLU, NORM, true>(xv[u], ln, c + u);
        cp_async_wait<S - 1>();  // this step's group (S - 1 groups issued after it)
#pragma unroll
        for (int u = 0; u < U; ++u) {
            uint4 wv[TILES_N][2];
#pragma unroll
            for (int tn = 0; tn < TILES_N; ++tn)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    wv[tn][h] = load_shared_v4(base + slot * SLOT_BYTES + ((u * TILES_N + tn) * 2 + h) * 512);
            chunk_mma<T>(acc, wv, xv[u]);
        }
        slot = slot == S - 1 ? 0 : slot + 1;
    }
    cp_async_wait<0>();  // the zero-fills past the warp's chunks land before the ring's bytes are reused
}

// NORM's prologue (header comment): rstd[i] of the block's rows m0 + i (0 for rows past M) from a and r over all of
// K, and r_out = T(a + r) of those rows where write_r. Threads stride over k (16-byte loads where vec, else element by
// element), NORM_ROWS rows at a time so that their loads are in flight together; each row's fp32 sum of s^2 is reduced
// per warp (shuffles) into part [WARPS][ROWS], then over the warps in warp order: deterministic. part may be any
// shared memory nobody else uses until this returns; it ends with the block synchronised.
inline constexpr int NORM_ROWS = 4;
template <typename T, int WARPS, int ROWS>
__device__ __forceinline__ void norm_prologue(float* __restrict__ rstd, float* __restrict__ part,
                                              const T* __restrict__ a, const T* __restrict__ r, T* __restrict__ r_out,
                                              int M, int K, int m0, float eps, bool write_r, bool vec) {
    static_assert(ROWS % NORM_ROWS == 0, "linear_skinny: the block's rows are whole groups of NORM_ROWS");
    constexpr int THREADS = WARPS * 32;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int rows = min(ROWS, M - m0);  // >= 1: grid z covers M exactly
#pragma unroll 1
    for (int i0 = 0; i0 < rows; i0 += NORM_ROWS) {
        float sq[NORM_ROWS];
#pragma unroll
        for (int i = 0; i < NORM_ROWS; ++i) sq[i] = 0.0f;
        if (vec) {
            const int vecs = K / 8;
#pragma unroll 1
            for (int v = tid; v < vecs; v += THREADS) {
                uint4 av[NORM_ROWS], rv[NORM_ROWS];
#pragma unroll
                for (int i = 0; i < NORM_ROWS; ++i) {
                    const bool live = i0 + i < rows;
                    const long long at = live ? static_cast<long long>(m0 + i0 + i) * K + 8ll * v : 0;
                    av[i] = load_v4_if<false>(a + at, live);
                    rv[i] = load_v4_if<false>(r + at, live);
                }
#pragma unroll
                for (int i = 0; i < NORM_ROWS; ++i) {
                    const unsigned aw[4] = {av[i].x, av[i].y, av[i].z, av[i].w};
                    const unsigned rw[4] = {rv[i].x, rv[i].y, rv[i].z, rv[i].w};
                    unsigned out[4];
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        float fa[2], fr[2], fs[2];
                        unpack_word(T{}, aw[j], fa);
                        unpack_word(T{}, rw[j], fr);
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            fs[e] = fa[e] + fr[e];
                            sq[i] += fs[e] * fs[e];
                        }
                        out[j] = pack_word<T>(fs);
                    }
                    if (write_r && i0 + i < rows)
                        *reinterpret_cast<uint4*>(r_out + static_cast<long long>(m0 + i0 + i) * K + 8ll * v) =
                            make_uint4(out[0], out[1], out[2], out[3]);
                }
            }
        } else {
#pragma unroll 1
            for (int k = tid; k < K; k += THREADS)
#pragma unroll
                for (int i = 0; i < NORM_ROWS; ++i) {
                    if (i0 + i >= rows) continue;
                    const long long at = static_cast<long long>(m0 + i0 + i) * K + k;
                    const float sum = to_float(a[at]) + to_float(r[at]);
                    sq[i] += sum * sum;
                    if (write_r) r_out[at] = from_float<T>(sum);
                }
        }
#pragma unroll
        for (int i = 0; i < NORM_ROWS; ++i) {
            const float total = warp_sum(sq[i]);
            if (lane == 0) part[warp * ROWS + i0 + i] = total;  // i0 + i < ROWS: i0 < rows <= ROWS, both of 4s
        }
    }
    __syncthreads();
    const float inv_k = 1.0f / static_cast<float>(K);  // as add_rmsnorm's inv_hidden
    for (int i = tid; i < ROWS; i += THREADS) {
        float total = 0.0f;
        if (i < rows)
#pragma unroll
            for (int wp = 0; wp < WARPS; ++wp) total += part[wp * ROWS + i];
        rstd[i] = i < rows ? rsqrtf(total * inv_k + eps) : 0.0f;
    }
    __syncthreads();
}

// x: x [M, K], or with SWIGLU gate_up [M, 2K], or with NORM a [M, K] beside norm's r, nw (header comment). GATED:
// W [2N, K] holds a gate's rows, then an up's; y = act(gate) * up (header comment).
template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int STAGES, int ACT,
          bool SWIGLU = false, bool NORM = false, bool GATED = false>
__device__ __forceinline__ void skinny(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                       const T* __restrict__ bias, float* __restrict__ scratch, int M, int N, int K,
                                       int max_split_k, const NormArgs<T>& norm = NormArgs<T>{}) {
    static_assert(sizeof(T) == 2, "linear_skinny: T is __half or __nv_bfloat16");
    static_assert(WARPS >= 1 && WARPS <= 16, "linear_skinny: WARPS in [1, 16]");
    static_assert(TILES_N == 1 || TILES_N == 2 || TILES_N == 4, "linear_skinny: TILES_N is 1, 2 or 4");
    static_assert(UNROLL >= 1 && UNROLL <= 8, "linear_skinny: UNROLL in [1, 8]");
    static_assert(SPLIT_K >= 1 && SPLIT_K <= ktune::quant_linear_layout::MAX_SPLIT_K,
                  "linear_skinny: SPLIT_K in [1, 16]");
    static_assert(M_FRAGS == 1 || M_FRAGS == 2 || M_FRAGS == 4 || M_FRAGS == 8,
                  "linear_skinny: M_FRAGS is 1, 2, 4 or 8");
    // Tiles of W a block streams: GATED, its TILES_N tiles of the gate's rows and the up's matching ones.
    constexpr int TN = GATED ? 2 * TILES_N : TILES_N;
    static_assert(WARPS * TN * M_FRAGS <= 64, "linear_skinny: WARPS * TILES_N * M_FRAGS <= 64 (reduction; GATED 2x)");
    static_assert(STAGES >= 1 && STAGES <= 8, "linear_skinny: STAGES in [1, 8]");
    static_assert(ring_kib(WARPS, STAGES, UNROLL, TN) <= MAX_RING_KIB,
                  "linear_skinny: WARPS * STAGES * UNROLL * TILES_N <= 32 (KiB of ring; GATED 2x)");
    static_assert(ACT >= 0 && ACT <= 2, "linear_skinny: ACT is 0 (none), 1 (gelu tanh) or 2 (silu)");
    static_assert(!(SWIGLU && NORM) && !(GATED && (SWIGLU || NORM)),
                  "linear_skinny: x is formed one way, SWIGLU or NORM, and GATED reads x as it is");
    static_assert(!GATED || SPLIT_K == 1, "linear_skinny: GATED sums k in one block (the product needs whole sums)");
    namespace layout = ktune::quant_linear_layout;
    constexpr int THREADS = WARPS * 32;
    constexpr int VALUES = TN * M_FRAGS * 4;       // accumulators per lane
    constexpr int OUT_VALUES = TILES_N * M_FRAGS * 4;  // of them the output's (GATED: the gate's; the up's follow)
    constexpr int RING_BYTES = ring_kib(WARPS, STAGES, UNROLL, TN) * 1024;
    constexpr int RED_BYTES = WARPS * VALUES * 32 * 4;
    __shared__ __align__(128) unsigned char smem[RING_BYTES > RED_BYTES ? RING_BYTES : RED_BYTES];
    __shared__ int s_last;
    __shared__ float s_rstd[NORM ? 8 * M_FRAGS : 1];  // NORM: rstd of the block's rows
    static_assert(!NORM || WARPS * 8 * M_FRAGS * 4 <= static_cast<int>(sizeof(smem)),
                  "linear_skinny: NORM's per-warp partial sums fit the reduction's shared memory");

    // A launch that does not match the configuration writes nothing (uniform over the grid).
    if (gridDim.x != (static_cast<unsigned>(N) + (16 * TILES_N - 1)) / (16 * TILES_N) || gridDim.y != SPLIT_K ||
        gridDim.z != (static_cast<unsigned>(M) + (8 * M_FRAGS - 1)) / (8 * M_FRAGS) || SPLIT_K > max_split_k)
        return;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const unsigned cpr = (static_cast<unsigned>(K) + (CHUNK_K - 1)) / CHUNK_K;
    const unsigned per_split = (cpr + (SPLIT_K - 1)) / SPLIT_K;
    const int c_begin = static_cast<int>(blockIdx.y * per_split);
    const int tile0 = static_cast<int>(blockIdx.x) * TILES_N;
    const int m0 = static_cast<int>(blockIdx.z) * 8 * M_FRAGS;

    Lanes<TN, M_FRAGS> ln;
    ln.c_end = static_cast<int>(min(cpr, blockIdx.y * per_split + per_split));
    ln.k_limit = K - 8 * t;
    ln.x_up = 2u * static_cast<unsigned>(K);
    const unsigned char* wb = reinterpret_cast<const unsigned char*>(w);
    const unsigned char* xb = reinterpret_cast<const unsigned char*>(x);
    const unsigned row_bytes = 2u * static_cast<unsigned>(K);           // of W (and of x)
    const unsigned x_row_bytes = SWIGLU ? 2u * row_bytes : row_bytes;  // gate_up's rows hold 2K elements
#pragma unroll
    for (int tn = 0; tn < TN; ++tn)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int n = (tile0 + tn % TILES_N) * 16 + g + 8 * h;
            const int row = tn < TILES_N ? n : N + n;  // GATED: the up's row of output column n
            ln.w_live[tn][h] = n < N;
            // Rows past N point at row 0 (never loaded). Unsigned 32 x 32 -> 64-bit products: one wide multiply-add.
            ln.w_row[tn][h] = wb + static_cast<unsigned long long>(n < N ? row : 0) * row_bytes + 16u * t;
        }
#pragma unroll
    for (int f = 0; f < M_FRAGS; ++f) {
        const int m = m0 + 8 * f + g;
        ln.x_live[f] = m < M;
        ln.x_row[f] = xb + static_cast<unsigned long long>(m < M ? m : 0) * x_row_bytes + 16u * t;
    }

    float acc[TN][M_FRAGS][4];
#pragma unroll
    for (int tn = 0; tn < TN; ++tn)
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[tn][f][r] = 0.0f;

    // Programmatic launch (dependent_launch.cuh): the weights are constant, so the block asks L2 for its warps' first
    // step of each of its rows while the kernel before, which wrote x, finishes (no more: a prefetch of the whole k
    // range goes ahead of the loop's own loads); x, y and scratch only after it has.
    if (blockIdx.z == 0 && tid < 16 * TN && is_aligned(w, 16) && K % 8 == 0) {
        const int n = tile0 * 16 + tid % (16 * TILES_N);
        const int row = tid < 16 * TILES_N ? n : N + n;
        const unsigned from = 64u * c_begin;
        const unsigned to = min(min(64u * ln.c_end, row_bytes), from + 64u * WARPS * UNROLL);
        if (n < N && to > from)
            ktune::dev::prefetch_l2(wb + static_cast<unsigned long long>(row) * row_bytes + from,
                                    ktune::dev::early_bytes(1ull * N * SPLIT_K * (TN / TILES_N), to - from, 128));
    }
    ktune::dev::wait_prior_grids();

    if constexpr (NORM) {
        // rstd of the block's rows (and r_out from the blocks of n block 0, split 0): a and r are the kernel before's.
        const bool vec = is_aligned(x, 16) && is_aligned(norm.r, 16) && is_aligned(norm.r_out, 16) && K % 8 == 0;
        norm_prologue<T, WARPS, 8 * M_FRAGS>(s_rstd, reinterpret_cast<float*>(smem), x, norm.r, norm.r_out, M, K, m0,
                                             norm.eps, blockIdx.x == 0 && blockIdx.y == 0, vec);
        const unsigned char* rb = reinterpret_cast<const unsigned char*>(norm.r);
        ln.nw_row = reinterpret_cast<const unsigned char*>(norm.nw) + 16u * t;
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f) {
            const int m = m0 + 8 * f + g;
            ln.r_row[f] = rb + static_cast<unsigned long long>(m < M ? m : 0) * row_bytes + 16u * t;
            ln.rstd[f] = s_rstd[8 * f + g];
        }
    }

    const bool fast = is_aligned(w, 16) && is_aligned(x, 16) && K % 8 == 0 &&
                      (!NORM || (is_aligned(norm.r, 16) && is_aligned(norm.nw, 16)));
    if (fast) {
        if constexpr (STAGES > 1)
            run_ring<T, SWIGLU, NORM, UNROLL, STAGES, WARPS>(acc, ln, c_begin, warp, lane,
                                                             static_cast<unsigned>(__cvta_generic_to_shared(smem)));
        else
            run_registers<T, SWIGLU, NORM, true, UNROLL, WARPS>(acc, ln, c_begin, warp);
    } else {
        run_registers<T, SWIGLU, NORM, false, 1, WARPS>(acc, ln, c_begin, warp);
    }

    // The next kernel may start once every block is past its weight stream (dependent_launch.cuh): asked at the start,
    // its blocks waited on the SMs beside this one's for the whole stream.
    ktune::dev::launch_dependents();
    // Warps reduce in warp order through shared memory (the ring's bytes: every warp is past its loop).
    __syncthreads();
    float(*red)[VALUES][32] = reinterpret_cast<float(*)[VALUES][32]>(smem);
#pragma unroll
    for (int tn = 0; tn < TN; ++tn)
#pragma unroll
        for (int f = 0; f < M_FRAGS; ++f)
#pragma unroll
            for (int r = 0; r < 4; ++r) red[warp][(tn * M_FRAGS + f) * 4 + r][lane] = acc[tn][f][r];
    __syncthreads();

    // Value i of the block: (tile tn, fragment f, register r) of lane l; C fragment register r of lane 4g + t is row
    // n = g (+ 8 for r >= 2) and column m = 2t (+ 1 for odd r).
    const auto finish = [&](int m, int n, float sum) {
        if (bias != nullptr) sum += to_float(bias[n]);
        y[static_cast<long long>(m) * N + n] = from_float<T>(activate<ACT>(sum));
    };
    float* parts = scratch + layout::counter_words(M, N);
    for (int i = tid; i < OUT_VALUES * 32; i += THREADS) {
        const int v = i / 32, l = i % 32;
        const int tn = v / (M_FRAGS * 4), f = (v / 4) % M_FRAGS, r = v % 4;
        const int n = (tile0 + tn) * 16 + (l >> 2) + (r >= 2 ? 8 : 0);
        const int m = m0 + 8 * f + 2 * (l & 3) + (r & 1);
        float sum = 0.0f;
#pragma unroll
        for (int wp = 0; wp < WARPS; ++wp) sum += red[wp][v][l];
        if (n >= N || m >= M) continue;
        if constexpr (GATED) {
            float up = 0.0f;  // the up's value of the same lane and register, OUT_VALUES on
#pragma unroll
            for (int wp = 0; wp < WARPS; ++wp) up += red[wp][v + OUT_VALUES][l];
            y[static_cast<long long>(m) * N + n] = from_float<T>(activate<ACT>(sum) * up);
        } else if constexpr (SPLIT_K == 1)
            finish(m, n, sum);
        else
            parts[(static_cast<long long>(blockIdx.y) * M + m) * N + n] = sum;
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
        // The block's rows and columns, n fastest: the splits summed in order.
        constexpr int ROWS = 16 * TILES_N, COLS = 8 * M_FRAGS;
        for (int i = tid; i < ROWS * COLS; i += THREADS) {
            const int n = tile0 * 16 + i % ROWS, m = m0 + i / ROWS;
            if (n >= N || m >= M) continue;
            float sum = 0.0f;
#pragma unroll 4
            for (int sp = 0; sp < SPLIT_K; ++sp) sum += __ldcg(parts + (static_cast<long long>(sp) * M + m) * N + n);
            finish(m, n, sum);
        }
    }
}

}  // namespace ktune::dev::linear_skinny

// The op's kernel (search_spaces/linear_skinny*.yaml, op linear_skinny/fwd): no bias, no activation, the arguments of
// cuBLAS's linear/fwd plus the scratch of the split-K merge. Launch: grid (ceil(N / (16 * TILES_N)), SPLIT_K,
// ceil(M / (8 * M_FRAGS))), block WARPS * 32, static shared memory only. scratch: scratch_floats(M, N) floats of
// kernels/quant_linear/quant_linear_layout.cuh; max_split_k = max_split_k(M, N).
template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::linear_skinny::min_blocks(WARPS, TILES_N, M_FRAGS))
    linear_skinny_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, float* __restrict__ scratch,
                      int M, int N, int K, int max_split_k) {
    ktune::dev::linear_skinny::skinny<T, WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, STAGES, 0>(y, x, w, nullptr, scratch,
                                                                                               M, N, K, max_split_k);
}

// The same with a bias [N] of T (nullptr: none) and an activation (ACT 0 none, 1 gelu tanh, 2 silu), both in fp32
// before the rounding: the small-M kernel of a fused linear + activation op. Same launch.
template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int STAGES, int ACT>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::linear_skinny::min_blocks(WARPS, TILES_N, M_FRAGS))
    linear_skinny_act_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ bias, float* __restrict__ scratch, int M, int N, int K,
                          int max_split_k) {
    ktune::dev::linear_skinny::skinny<T, WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, STAGES, ACT>(y, x, w, bias, scratch,
                                                                                                 M, N, K, max_split_k);
}

// The down projection of a SwiGLU MLP (search_spaces/linear_skinny_swiglu.yaml, op linear_skinny/fwd_swiglu):
// y = (silu(gate) * up) W^T with gate_up [M, 2K] (gate columns [0, K), up [K, 2K)), W [N, K], no bias, no activation;
// x = silu(gate) * up is formed as it is loaded (SWIGLU in the header comment). Same launch and scratch as
// linear_skinny_fwd.
template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::linear_skinny::min_blocks(WARPS, TILES_N, M_FRAGS))
    linear_skinny_swiglu_fwd(T* __restrict__ y, const T* __restrict__ gate_up, const T* __restrict__ w,
                             float* __restrict__ scratch, int M, int N, int K, int max_split_k) {
    ktune::dev::linear_skinny::skinny<T, WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, STAGES, 0, true>(
        y, gate_up, w, nullptr, scratch, M, N, K, max_split_k);
}

// Residual add + RMSNorm fused into the projection after it (search_spaces/linear_skinny_add_rmsnorm.yaml, op
// linear_skinny/fwd_add_rmsnorm): s = a + r (fp32), r_out = T(s), x = T(s * rsqrt(mean_k(s^2) + eps) * nw), y = x W^T
// with a, r, r_out [M, K], nw [K], W [N, K], no bias, no activation (NORM in the header comment). r_out must not
// alias a or r. Same launch and scratch as linear_skinny_fwd.
template <typename T, int WARPS, int TILES_N, int UNROLL, int SPLIT_K, int M_FRAGS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, ktune::dev::linear_skinny::min_blocks(WARPS, TILES_N, M_FRAGS))
    linear_skinny_add_rmsnorm_fwd(T* __restrict__ y, T* __restrict__ r_out, const T* __restrict__ a,
                                  const T* __restrict__ r, const T* __restrict__ nw, const T* __restrict__ w,
                                  float* __restrict__ scratch, int M, int N, int K, int max_split_k, float eps) {
    const ktune::dev::linear_skinny::NormArgs<T> norm{r, nw, r_out, eps};
    ktune::dev::linear_skinny::skinny<T, WARPS, TILES_N, UNROLL, SPLIT_K, M_FRAGS, STAGES, 0, false, true>(
        y, a, w, nullptr, scratch, M, N, K, max_split_k, norm);
}
