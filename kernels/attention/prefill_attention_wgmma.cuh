#pragma once
// Prefill attention on Hopper (FlashAttention-3 style, warpgroup MMA): the same op as prefill_attention_fa2.cuh,
//
//   o[b, i, hq, :] = softmax_j(scale * q[b, i, hq, :] . k[b, j, hk, :] [+ causal mask j <= i]) @ v[b, j, hk, :]
//
// for i, j < seq_lens[b], hk = hq / (HQ / HK), layouts [B, L, H, D], rows i >= seq_lens[b] of o not written. Needs the
// arch-specific target sm_90a (the spaces set kernel.arch_specific); any other device pass compiles to a trap.
// Two kernels share the steps of a tile (WarpgroupRows): prefill_attention_wgmma, described here, whose threads all
// copy with cp.async and compute, and prefill_attention_wgmma_ws, warp-specialized and fed by TMA (wgmma_ws_body).
//
// A block owns BLOCK_M = 64 * WG query rows of one (sequence, q head): WG consumer warpgroups of 128 threads, 64 rows
// each. The q tile sits in shared memory for the whole loop; K and V tiles of BLOCK_N tokens stream through STAGES
// shared-memory stages filled by cp.async (every thread loads; tokens past the sequence are zero-filled). Per tile and
// warpgroup:
//   S = Q K^T   wgmma m64n{BLOCK_N}k16, SS: A = the warpgroup's 64 q rows, B = the K tile, both K-major (k = d);
//   softmax     online, in log2 units, on S's accumulator fragments (a row's values sit in the 4 lanes of a quad);
//   O += P V    wgmma m64n64k16, RS: A = P rounded to T in registers, B = the V tile as stored ([token][d]: MN-major,
//               imm-trans-b = 1), one instruction per 64-column panel of the head dimension.
// Causal: tiles entirely above a warpgroup's rows are skipped, only tiles crossing the diagonal (or the sequence's end)
// are masked, and the query blocks run longest first.
//
// Shared memory: every tile (q: BLOCK_M rows, K and V: BLOCK_N rows) is stored as HEAD_DIM / 64 panels of 64 columns;
// a panel holds its rows at 128 bytes each, 16-byte chunk c of row r at chunk c ^ (r % 8): the 128-byte swizzle of
// kernels/gemm/gemm_wgmma.cuh (8-row atoms of 1024 bytes; every panel starts 1024-byte aligned).
//   K-major (q as A, K as B of S): gemm::smem_desc, stride 1024 between 8-row groups; k-step ks (16 of d) starts in
//     panel ks / 4 at byte 32 (ks % 4), exactly as the GEMM steps K inside one 64-wide tile.
//   MN-major (V as B of O, n = d, k = token): one panel is 64 n-columns (128 bytes, one swizzle row) by the tile's
//     tokens, 8 tokens per 1024-byte atom: the canonical MN-major 128-byte-swizzle atom (64 x 8). A k-step of 16
//     tokens starts 2048 bytes further and spans two atoms; the PTX ISA names the stride between 8-token groups the
//     stride byte offset (MN-major) and the one between 64-column blocks the leading byte offset, which an n64
//     instruction never uses: both are set to 1024 so that either reading of the fields gives the same layout.
//
// Fragments (PTX ISA, wgmma m64nNk16), warp w = (thread / 32) % 4 of the warpgroup, g = lane / 4, c = lane % 4:
//   accumulator: d[4 j + e], j < N / 8: row 16 w + g + 8 (e / 2), column 8 j + 2 c + e % 2
//   A registers: a[0] (row 16 w + g, k 2c, 2c+1), a[1] (row + 8, k 2c..), a[2] (row, k 2c+8..), a[3] (row + 8, k 2c+8..)
// so P's A fragment for keys 16 kt..16 kt + 15 is S's columns blocks 2 kt (a[0], a[1]) and 2 kt + 1 (a[2], a[3]):
// the same plumbing as mma.sync m16n8k16 (bench/attention/prefill_fragments_check.py emulates both).
//
// Tunables (template parameters, named as the YAML keys):
//   HEAD_DIM  the problem's D (64 or 128; a multiple of 64, <= 256).
//   CAUSAL    the variant.
//   BLOCK_M   query rows per block: 64 or 128 (one or two warpgroups).
//   BLOCK_N   K/V tokens per tile: the wgmma n of S (64, 96, 128, 176 or 192: the generated wrappers).
//   STAGES    K/V tiles in shared memory (2 or 3): STAGES - 1 loaded ahead while one is computed (OVERLAP: STAGES - 2
//             while two are in use). wgmma_ws: 2 to 4, each refilled once its consumers release it.
//   OVERLAP   false: per tile S, softmax, P V in turn (each wgmma waited for at once; other warpgroups fill the gaps);
//             true: the previous tile's P V is issued behind this tile's S and runs during its softmax (FA3's
//             intra-warpgroup overlap; needs S and the previous P in registers at once, and here STAGES >= 3;
//             wgmma_ws releases stages explicitly and takes any STAGES).
//   wgmma_ws only: PINGPONG (two consumers take turns at their MMAs), CTAS_PER_SM (1, or 2 with one consumer) and
//             PERSISTENT (1: at most SMS * CTAS_PER_SM blocks, each over many blocks of rows), Q_STAGES (2: the next
//             item's q copied into a second buffer) and O_SMEM (1: O stored through shared memory by TMA): see
//             wgmma_ws_body.
//
// Launch: grid (HQ, ceil(L / BLOCK_M), B), 128 * BLOCK_M / 64 threads, (BLOCK_M + 2 * STAGES * BLOCK_N) * HEAD_DIM *
// sizeof(T) + 1024 bytes of dynamic shared memory (1024 for aligning the base); wgmma_ws: 128 more threads (the
// producer), 1024 more bytes (its mbarriers) and (Q_STAGES - 1) * BLOCK_M * HEAD_DIM * sizeof(T) (q's second buffer);
// PERSISTENT: grid (min(HQ * ceil(L / BLOCK_M) * B, SMS * CTAS_PER_SM), 1, 1). q, k, v and out 16-byte aligned; a
// launch that does not match the configuration writes nothing, so the validation fails.
#include "kernels/attention/decode_attention_mma_walk.cuh"
#include "kernels/attention/prefill_attention_query_block.cuh"
#include "kernels/attention/wgmma_attention_ops.cuh"
#include "kernels/gemm/gemm_wgmma.cuh"
#include "kernels/gemm/gemm_wgmma_ws.cuh"

namespace ktune::dev::prefill_attention {

namespace gemm_ws = ktune::dev::gemm_ws;
// The warp-specialized kernel's registers: the producer warpgroup keeps 24 a thread and gives the rest of its launch
// allocation to the consumers, up to 240 (two consumers, one block an SM: 24 + 2 x 240 over 168 a thread at launch, as
// FlashAttention-3's split; one consumer and two blocks an SM: 24 + 232 over 128). One consumer and one block: ptxas
// compiles the kernel at 240 (the consumers' setmaxnreg bounds it), so their .inc 240 changes nothing.
constexpr int kProducerRegs = 24;
__host__ __device__ constexpr int ws_consumer_regs(int consumers, int ctas_per_sm) {
    const int threads = 128 * (consumers + 1);
    const int at_launch = (65536 / (threads * ctas_per_sm) > 255 ? 255 : 65536 / (threads * ctas_per_sm)) / 8 * 8;
    const int given = (at_launch * (consumers + 1) - kProducerRegs) / consumers / 8 * 8;
    return given < 240 ? given : 240;
}
static_assert(ws_consumer_regs(2, 1) == 240 && ws_consumer_regs(1, 1) == 240 && ws_consumer_regs(1, 2) == 232);

// Shared memory in bytes (the YAML's shared_bytes repeats it).
template <typename T, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int STAGES>
inline constexpr int wgmma_smem_bytes = (BLOCK_M + 2 * STAGES * BLOCK_N) * HEAD_DIM * int(sizeof(T)) + 1024;

// Copies ROWS rows of HEAD_DIM elements (global row r at src + r * stride) into HEAD_DIM / 64 swizzled panels at dst
// (panel p at dst + p * ROWS * 128); rows >= valid are zero-filled (the source address stays in bounds).
template <typename T, int HEAD_DIM, int ROWS, int THREADS>
__device__ __forceinline__ void copy_panels(unsigned dst, const T* src, long long stride, int valid, int tid) {
    constexpr int CPR = HEAD_DIM / 8;  // 16-byte chunks per row, 8 per panel
    constexpr int CHUNKS = ROWS * CPR;
#pragma unroll
    for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; ++i) {
        const int lin = tid + i * THREADS;
        if (CHUNKS % THREADS == 0 || lin < CHUNKS) {
            const int row = lin / CPR, ch = lin % CPR;
            const bool ok = row < valid;
            const T* s = src + (ok ? row * stride + ch * 8 : 0);
            const unsigned d = dst + (ch >> 3) * (ROWS * 128) + row * 128 + (((ch & 7) ^ (row & 7)) << 4);
            gemm::cp_async_16(d, s, ok);
        }
    }
}

// An MN-major operand with the 128-byte swizzle (see the header): 8-row (k) groups 1024 bytes apart; the leading byte
// offset (next 64-wide block of n, absent in an n64 instruction) is 1024 as well.
__device__ __forceinline__ unsigned long long mn_major_desc(unsigned addr) {
    unsigned long long d = 0;
    d |= static_cast<unsigned long long>((addr & 0x3FFFF) >> 4);
    d |= static_cast<unsigned long long>(1024 >> 4) << 16;
    d |= static_cast<unsigned long long>(1024 >> 4) << 32;
    d |= static_cast<unsigned long long>(1) << 62;
    return d;
}

// Keeps P's registers (an RS wgmma's A operand) in place until the wgmma that reads them has been waited for.
template <int N, int M>
__device__ __forceinline__ void fence_words(unsigned (&a)[N][M]) {
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < M; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// One consumer warpgroup's 64 query rows: O's accumulators, the running max and sum of its rows, and the steps of a
// K/V tile (S = Q K^T, the online softmax, O += P V). Q_ROWS: the rows of the q tile in shared memory (its panels'
// height); q_wg: this warpgroup's 64 rows in panel 0.
template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_N, int Q_ROWS>
struct WarpgroupRows {
    static constexpr int PANELS = HEAD_DIM / 64;  // 64-column panels of the head dimension
    static constexpr int SACC = BLOCK_N / 2;      // S accumulators per thread
    static constexpr int KT = BLOCK_N / 16;       // k-steps of O += P V

    float o[PANELS][32];      // O, one n64 accumulator per panel of d
    float m_run[2], l_run[2]; // rows g and g + 8 of this warp's 16
    float qscale;             // scores in log2 units
    int len, wg_first, row_lo, c;
    unsigned q_wg;

    __device__ __forceinline__ WarpgroupRows(float scale, int len_, int wg_first_, unsigned q_wg_)
        : qscale(scale * 1.4426950408889634f), len(len_), wg_first(wg_first_), q_wg(q_wg_) {
        const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
        c = lane & 3;
        row_lo = wg_first + 16 * warp + (lane >> 2);
#pragma unroll
        for (int p = 0; p < PANELS; ++p)
#pragma unroll
            for (int i = 0; i < 32; ++i) o[p][i] = 0.0f;
        m_run[0] = m_run[1] = decode_attention::neg_inf();
        l_run[0] = l_run[1] = 0.0f;
    }
    __device__ __forceinline__ int last_row() const { return wg_first + 63; }

    // S = Q K^T of one tile: HEAD_DIM / 16 k-steps; the first overwrites the accumulators (scale-d 0). Not committed.
    __device__ __forceinline__ void issue_s(float (&s)[SACC], unsigned k_base) const {
#pragma unroll
        for (int ks = 0; ks < HEAD_DIM / 16; ++ks) {
            const unsigned long long da = gemm::smem_desc(q_wg + (ks >> 2) * (Q_ROWS * 128) + (ks & 3) * 32);
            const unsigned long long db = gemm::smem_desc(k_base + (ks >> 2) * (BLOCK_N * 128) + (ks & 3) * 32);
            WgmmaSS<T, BLOCK_N>::mma(s, da, db, ks > 0 ? 1 : 0);
        }
    }
    // O += P V of one tile: per k-step of 16 tokens (2048 bytes of every V panel), one n64 instruction per panel of d.
    __device__ __forceinline__ void issue_pv(unsigned (&pf)[KT][4], unsigned v_base) {
#pragma unroll
        for (int kt = 0; kt < KT; ++kt)
#pragma unroll
            for (int p = 0; p < PANELS; ++p)
                WgmmaRS<T, 64>::mma(o[p], pf[kt], mn_major_desc(v_base + p * (BLOCK_N * 128) + kt * 2048));
    }
    // O += P V of one tile, waited for: O and pf are free again when it returns (REUSE_P false: pf is not written
    // again, so it needs no fence).
    template <bool REUSE_P = true>
    __device__ __forceinline__ void pv_and_wait(unsigned (&pf)[KT][4], unsigned v_base) {
        fence_o();
        gemm::wgmma_fence();
        issue_pv(pf, v_base);
        gemm::wgmma_commit();
        gemm::wgmma_wait<0>();
        fence_o();
        if constexpr (REUSE_P) fence_words(pf);
    }
    // Masks S (keys past the sequence, and causal keys after the row; only tiles that cross either), turns it into P
    // = exp2(s * qscale - m) in place, updates m and l, and gives the factors O must be scaled by (alpha).
    __device__ __forceinline__ void softmax(float (&s)[SACC], int n0, float (&alpha)[2]) {
        const bool tail = n0 + BLOCK_N > len;
        const bool diagonal = CAUSAL && n0 + BLOCK_N - 1 > wg_first;
        if (tail || diagonal) {
#pragma unroll
            for (int jn = 0; jn < BLOCK_N / 8; ++jn)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = n0 + 8 * jn + 2 * c + (e & 1);
                    const int row = row_lo + 8 * (e >> 1);
                    if (key >= len || (CAUSAL && key > row)) s[4 * jn + e] = decode_attention::neg_inf();
                }
        }
        // Per row (row_lo: e 0, 1; row_lo + 8: e 2, 3); a quad (lanes 4g..4g+3) shares a row.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = decode_attention::neg_inf();
#pragma unroll
            for (int jn = 0; jn < BLOCK_N / 8; ++jn) mx = fmaxf(mx, fmaxf(s[4 * jn + 2 * h], s[4 * jn + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m_run[h], mx * qscale);  // qscale > 0 keeps the order
            // Nothing seen yet (m_new = -inf): 0 as the reference gives p = 0 and alpha = 0.
            const float ref = m_new == decode_attention::neg_inf() ? 0.0f : m_new;
            alpha[h] = decode_attention::fast_exp2(m_run[h] - ref);
            m_run[h] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int jn = 0; jn < BLOCK_N / 8; ++jn) {
                s[4 * jn + 2 * h] = decode_attention::fast_exp2(fmaf(s[4 * jn + 2 * h], qscale, -ref));
                s[4 * jn + 2 * h + 1] = decode_attention::fast_exp2(fmaf(s[4 * jn + 2 * h + 1], qscale, -ref));
                sum += s[4 * jn + 2 * h] + s[4 * jn + 2 * h + 1];
            }
            l_run[h] = l_run[h] * alpha[h] + sum;  // this thread's columns; the quad sums at the end
        }
    }
    __device__ __forceinline__ void rescale(const float (&alpha)[2]) {
#pragma unroll
        for (int p = 0; p < PANELS; ++p)
#pragma unroll
            for (int jd = 0; jd < 8; ++jd)
#pragma unroll
                for (int e = 0; e < 4; ++e) o[p][4 * jd + e] *= alpha[e >> 1];
    }
    // P's A fragment for keys 16 kt..16 kt + 15: S's column blocks 2 kt (a[0], a[1]) and 2 kt + 1 (a[2], a[3]).
    static __device__ __forceinline__ void pack_p(const float (&s)[SACC], unsigned (&pf)[KT][4]) {
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) {
            pf[kt][0] = decode_attention::pack2<T>(s[8 * kt + 0], s[8 * kt + 1]);
            pf[kt][1] = decode_attention::pack2<T>(s[8 * kt + 2], s[8 * kt + 3]);
            pf[kt][2] = decode_attention::pack2<T>(s[8 * kt + 4], s[8 * kt + 5]);
            pf[kt][3] = decode_attention::pack2<T>(s[8 * kt + 6], s[8 * kt + 7]);
        }
    }
    __device__ __forceinline__ void fence_o() {
#pragma unroll
        for (int p = 0; p < PANELS; ++p) gemm::fence_operands(o[p]);
    }
    // 1 / l of rows g and g + 8 (l summed over the quad), 0 for a row that saw no key.
    __device__ __forceinline__ void inverse_sums(float (&inv)[2]) const {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l_run[h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            inv[h] = sum > 0.0f ? 1.0f / sum : 0.0f;
        }
    }
    // O / l, two adjacent columns per 4-byte store, rows inside the sequence only.
    __device__ __forceinline__ void store(T* __restrict__ out, int b, int hq, int max_len, long long q_stride) {
        float inv[2];
        inverse_sums(inv);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row_lo + 8 * h;
            if (row < len) {
                T* orow = out + (static_cast<long long>(b) * max_len + row) * q_stride +
                          static_cast<long long>(hq) * HEAD_DIM;
#pragma unroll
                for (int p = 0; p < PANELS; ++p)
#pragma unroll
                    for (int jd = 0; jd < 8; ++jd) {
                        const unsigned w = decode_attention::pack2<T>(o[p][4 * jd + 2 * h] * inv[h],
                                                                      o[p][4 * jd + 2 * h + 1] * inv[h]);
                        *reinterpret_cast<unsigned*>(orow + 64 * p + 8 * jd + 2 * c) = w;
                    }
            }
        }
    }
    // O / l into this warpgroup's 64 rows of HEAD_DIM / 64 panels at base (panel p at base + p * PANEL_BYTES), in the
    // 128-byte swizzle a tensor map's store reads. stmatrix x4 writes four 8 x 8 matrices (rows g and g + 8, column
    // blocks 2 jj and 2 jj + 1): the accumulator's layout, so each thread passes its words as they are; lane i names
    // row i % 8 of matrix i / 8.
    template <int PANEL_BYTES>
    __device__ __forceinline__ void stage(unsigned base) const {
        float inv[2];
        inverse_sums(inv);
        const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
        const int mi = lane >> 3, rr = lane & 7, row = 16 * warp + 8 * (mi & 1) + rr;
#pragma unroll
        for (int p = 0; p < PANELS; ++p)
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
                unsigned w[4];
#pragma unroll
                for (int m = 0; m < 4; ++m) {
                    const int jd = 2 * jj + (m >> 1), h = m & 1;
                    w[m] = decode_attention::pack2<T>(o[p][4 * jd + 2 * h] * inv[h], o[p][4 * jd + 2 * h + 1] * inv[h]);
                }
                const unsigned at = base + p * PANEL_BYTES + row * 128 + (((2 * jj + (mi >> 1)) ^ rr) << 4);
                asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(at),
                             "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                             : "memory");
            }
    }
};

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int STAGES, bool OVERLAP>
__device__ __forceinline__ void wgmma_body(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k,
                                           const T* __restrict__ v, const int* __restrict__ seq_lens, int batch,
                                           int q_heads, int kv_heads, int head_dim, int max_len, float scale) {

    constexpr int WG = BLOCK_M / 64;
    constexpr int THREADS = 128 * WG;
    using Rows = WarpgroupRows<T, HEAD_DIM, CAUSAL, BLOCK_N, BLOCK_M>;
    // Tiles loaded ahead: every stage but the one computed (OVERLAP: but the two in use, tile j's K and j - 1's V).
    constexpr int AHEAD = OVERLAP ? STAGES - 2 : STAGES - 1;
    constexpr int Q_BYTES = BLOCK_M * HEAD_DIM * 2;
    constexpr int TILE_BYTES = BLOCK_N * HEAD_DIM * 2;  // one K (or V) tile
    constexpr int SMEM = wgmma_smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES>;
    extern __shared__ unsigned char smem_raw[];

    const auto blk = query_block<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N, THREADS, SMEM>(seq_lens, batch, q_heads, kv_heads,
                                                                                    head_dim, max_len);
    if (!blk.ok) return;
    const int hq = blk.hq, b = blk.b, len = blk.len, m0 = blk.m0;

    const int tid = threadIdx.x, wg = tid >> 7;
    const long long q_stride = static_cast<long long>(q_heads) * HEAD_DIM;   // between tokens of q and out
    const long long kv_stride = static_cast<long long>(kv_heads) * HEAD_DIM;  // between tokens of k and v
    const T* qb = blk.q_rows(q, q_stride, max_len);
    const T* kb = blk.kv_rows(k, kv_stride, max_len);
    const T* vb = blk.kv_rows(v, kv_stride, max_len);
    const int tiles = blk.tiles();

    const unsigned q_smem = (gemm::smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned kv_smem = q_smem + Q_BYTES;  // stage s: K at + 2 s TILE_BYTES, V after it
    auto issue = [&](int tile, int stage) {
        const int n0 = tile * BLOCK_N;
        const unsigned kd = kv_smem + stage * 2 * TILE_BYTES;
        copy_panels<T, HEAD_DIM, BLOCK_N, THREADS>(kd, kb + n0 * kv_stride, kv_stride, len - n0, tid);
        copy_panels<T, HEAD_DIM, BLOCK_N, THREADS>(kd + TILE_BYTES, vb + n0 * kv_stride, kv_stride, len - n0, tid);
    };

    // Group 0: the q tile (rows past the sequence zero-filled); then AHEAD tiles, one group each (empty groups past
    // the last tile keep the count: at step j, group j + 1 holds tile j).
    copy_panels<T, HEAD_DIM, BLOCK_M, THREADS>(q_smem, qb, q_stride, len - m0, tid);
    gemm::cp_async_commit();
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (s < tiles) issue(s, s);
        gemm::cp_async_commit();
    }

    Rows rows(scale, len, m0 + 64 * wg, q_smem + wg * 64 * 128);

    // OVERLAP: P V of tile j - 1 is issued right after S of tile j and runs while tile j's softmax does; its P and its
    // V stage stay in use until the wait before O is rescaled.
    unsigned pf[Rows::KT][4];
    [[maybe_unused]] bool pending = false;  // OVERLAP: P V of the previous tile not issued yet (pf, pending_v)
    [[maybe_unused]] unsigned pending_v = 0;
    for (int j = 0; j < tiles; ++j) {
        gemm::cp_async_wait<AHEAD - 1>();  // tile j has landed (this thread's copies)
        gemm::fence_proxy_async();         // ... visible to wgmma (async proxy)
        // Everyone's copies of tile j have landed; every warpgroup is done with the stage refilled next (tile
        // j - 1's without OVERLAP, j - 2's with it: tile j - 1's V is still to be read).
        __syncthreads();
        {
            const int next = j + AHEAD;
            if (next < tiles) issue(next, next % STAGES);
            gemm::cp_async_commit();
        }
        const unsigned k_base = kv_smem + (j % STAGES) * 2 * TILE_BYTES, v_base = k_base + TILE_BYTES;
        const int n0 = j * BLOCK_N;
        // Causal: a tile whose first key is past this warpgroup's last row adds nothing to it (uniform per warpgroup;
        // every later tile is skipped too). OVERLAP: the previous tile's P V is finished now, before its V stage is
        // refilled at the next step.
        if (CAUSAL && n0 > rows.last_row()) {
            if constexpr (OVERLAP) {
                if (pending) {
                    rows.pv_and_wait(pf, pending_v);
                    pending = false;
                }
            }
            continue;
        }

        float s[Rows::SACC];
        float alpha[2];
        if constexpr (OVERLAP) {
            rows.fence_o();
            gemm::wgmma_fence();
            rows.issue_s(s, k_base);
            gemm::wgmma_commit();
            if (pending) {
                rows.issue_pv(pf, pending_v);
                gemm::wgmma_commit();
                gemm::wgmma_wait<1>();  // S (the older group) is done; P V may still run
            } else {
                gemm::wgmma_wait<0>();
            }
            gemm::fence_operands(s);
            rows.softmax(s, n0, alpha);
            gemm::wgmma_wait<0>();  // P V of tile j - 1: O and pf are free again
            rows.fence_o();
            fence_words(pf);
            rows.rescale(alpha);
            Rows::pack_p(s, pf);
            pending = true;
            pending_v = v_base;
        } else {
            gemm::wgmma_fence();
            rows.issue_s(s, k_base);
            gemm::wgmma_commit();
            gemm::wgmma_wait<0>();
            gemm::fence_operands(s);
            rows.softmax(s, n0, alpha);
            rows.rescale(alpha);
            Rows::pack_p(s, pf);
            rows.pv_and_wait(pf, v_base);  // before the next barrier (its stage is refilled) and o and pf are touched
        }
    }
    if constexpr (OVERLAP) {
        if (pending) rows.template pv_and_wait<false>(pf, pending_v);  // the last tile's P V (no refill any more)
    }
    gemm::cp_async_wait<0>();  // no copy may land after the block exits (only empty groups are left)
    rows.store(out, b, hq, max_len, q_stride);
}

// Shared memory of the warp-specialized kernel: Q_STAGES q tiles, the stages and the base's alignment as
// wgmma_smem_bytes, 1024 more for its mbarriers.
template <typename T, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int STAGES, int Q_STAGES>
inline constexpr int wgmma_ws_smem_bytes =
    wgmma_smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES> + (Q_STAGES - 1) * BLOCK_M * HEAD_DIM * int(sizeof(T)) + 1024;

// Warp-specialized, TMA-fed (alternative `wgmma_ws`, FlashAttention-3's structure): warpgroup 0 is the producer, of
// which warp 0 copies the q tile of each block of rows and every K and V tile through tensor maps over the [B, L, H, D]
// buffers (boxes [1, rows, 1, 64]: one 64-column panel of one head, 128-byte swizzle, the layout above; tokens past L
// read as zeros; lane 0 issues the copies); warpgroups 1.. are the consumers, 64 query rows each, with the producer's
// registers (setmaxnreg). Per stage four mbarriers: k_full[s] and v_full[s] (one arrival expecting the tile's bytes; S
// starts once K has landed), and k_empty[s] and v_empty[s] (lane 0 of every consumer warp, once its wgmma reading K,
// or V, have completed: the next K is loaded while this tile's P V still runs). The producer runs up to STAGES tiles
// ahead, so no stage is held back for the refill (the cp.async kernel loads STAGES - 1 or - 2 ahead). q_full[i] and
// q_empty[i] hand the q tiles over the same way, once per block of rows.
// Keys past a sequence's length but inside L are read as stored (TMA zero-fills only past L): their scores are masked,
// but a value row that is not finite (a padded batch's pad rows) would still turn 0 * v into NaN. So the V tile that
// crosses the sequence's end is copied onto v_landed, a barrier only the producer warp waits for; once it has landed
// the warp zeroes the rows past the end and only then arrives on the stage's v_full (the cp.async kernel zero-fills
// them as it copies). The consumers see one kind of V tile.
// PINGPONG (two consumers): they take turns issuing their MMAs (named barriers 1 and 2, FA3's warp scheduler
// barrier), so that one's softmax runs while the other's MMAs do instead of both contending at once.
// CTAS_PER_SM 2 (one consumer, shared memory for two): registers for two blocks an SM (__launch_bounds__), so that one
// block's start (its barriers, q and first K/V copies) and end run under the other's MMAs: short sequences have many
// blocks of few tiles.
// PERSISTENT: a grid of at most SMS * CTAS_PER_SM blocks, each taking every gridDim.x-th block of rows
// (persistent_query_block's order); the stages' and q's barriers run on across a block's items, so the producer copies
// the next item's q and first tiles while the consumers finish and store this one's; Q_STAGES 2 (PERSISTENT) holds the
// next item's q in a second buffer, copied while this item's S still read the first.
// O_SMEM: a consumer's O leaves through its own 64 rows of the q buffer (stmatrix, then a TMA store of 64 rows a panel
// with the out map), so q_empty's arrival for the item comes once the store has read them, from one thread for the
// warpgroup's four warps: at once with one q buffer, after the next item's first S is issued with two. 64 rows partly
// past the sequence are stored from registers (TMA would write the rows past it, which stay unwritten) and release q
// as before.
// bench/attention/prefill_ws_protocol_check.py models these barriers under random interleavings (keep it in sync).
template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int STAGES, bool OVERLAP, bool PINGPONG,
          int CTAS_PER_SM, bool PERSISTENT, int Q_STAGES, bool O_SMEM>
__device__ __forceinline__ void wgmma_ws_body(T* __restrict__ out, const int* __restrict__ seq_lens, int batch,
                                              int q_heads, int kv_heads, int head_dim, int max_len, float scale,
                                              const gemm_ws::TensorMap& q_map, const gemm_ws::TensorMap& k_map,
                                              const gemm_ws::TensorMap& v_map, const gemm_ws::TensorMap& o_map) {
    constexpr int CONSUMERS = BLOCK_M / 64;
    constexpr int THREADS = 128 * (CONSUMERS + 1);
    using Rows = WarpgroupRows<T, HEAD_DIM, CAUSAL, BLOCK_N, BLOCK_M>;
    using Block = QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>;
    constexpr int PANELS = HEAD_DIM / 64;
    constexpr int Q_BYTES = BLOCK_M * HEAD_DIM * 2;
    constexpr int TILE_BYTES = BLOCK_N * HEAD_DIM * 2;  // one K (or V) tile
    constexpr int SMEM = wgmma_ws_smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, Q_STAGES>;
    extern __shared__ unsigned char smem_raw[];

    // The block's work items: its one block of rows, or (PERSISTENT) every gridDim.x-th of the problem's.
    int items = 1, step = 1, first = 0;
    Block only{};  // not PERSISTENT: the one block of rows
    if constexpr (PERSISTENT) {
        if (persistent_launch_differs<HEAD_DIM, THREADS>(q_heads, kv_heads, head_dim) ||
            decode_attention::dynamic_smem_bytes() < static_cast<unsigned>(SMEM))
            return;
        items = persistent_items<BLOCK_M>(batch, q_heads, max_len);
        step = gridDim.x;
        first = blockIdx.x;
    } else {
        only = query_block<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N, THREADS, SMEM>(seq_lens, batch, q_heads, kv_heads,
                                                                              head_dim, max_len);
        if (!only.ok) return;
    }
    const auto item_block = [&](int item) -> Block {
        if constexpr (PERSISTENT)
            return persistent_query_block<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>(item, seq_lens, batch, q_heads,
                                                                              kv_heads, max_len);
        else
            return only;
    };

    const unsigned q_smem = (gemm::smem_addr(smem_raw) + 1023u) & ~1023u;  // q buffer i at + i Q_BYTES
    const unsigned kv_smem = q_smem + Q_STAGES * Q_BYTES;                 // stage s: K at + 2 s TILE_BYTES, V after it
    const unsigned bars = kv_smem + STAGES * 2 * TILE_BYTES;
    const unsigned v_landed = bars;
    auto q_full = [&](int i) { return bars + 8u * (1 + i); };
    auto q_empty = [&](int i) { return bars + 8u * (1 + Q_STAGES + i); };
    auto k_full = [&](int s) { return bars + 8u * (1 + 2 * Q_STAGES + s); };
    auto v_full = [&](int s) { return bars + 8u * (1 + 2 * Q_STAGES + STAGES + s); };
    auto k_empty = [&](int s) { return bars + 8u * (1 + 2 * Q_STAGES + 2 * STAGES + s); };
    auto v_empty = [&](int s) { return bars + 8u * (1 + 2 * Q_STAGES + 3 * STAGES + s); };
    auto v_stage = [&](int t) { return kv_smem + (t % STAGES) * 2 * TILE_BYTES + TILE_BYTES; };  // tile t's V
    if (threadIdx.x == 0) {
        gemm_ws::mbar_init(v_landed, 1);
        for (int i = 0; i < Q_STAGES; ++i) {
            gemm_ws::mbar_init(q_full(i), 1);
            gemm_ws::mbar_init(q_empty(i), CONSUMERS * 4);
        }
        for (int s = 0; s < STAGES; ++s) {
            gemm_ws::mbar_init(k_full(s), 1);
            gemm_ws::mbar_init(v_full(s), 1);
            gemm_ws::mbar_init(k_empty(s), CONSUMERS * 4);
            gemm_ws::mbar_init(v_empty(s), CONSUMERS * 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    // Tiles are counted over the block's items (t), so that stage t % STAGES and its phases run on across them.
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);  // warp-uniform for setmaxnreg
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
        if (threadIdx.x >= 32) return;  // warp 0: lane 0 issues the copies, the warp zeroes the V tails
        const int lane = threadIdx.x;
        if (lane == 0) {
            gemm_ws::prefetch_tensor_map(q_map);
            gemm_ws::prefetch_tensor_map(k_map);
            gemm_ws::prefetch_tensor_map(v_map);
            if constexpr (O_SMEM) gemm_ws::prefetch_tensor_map(o_map);
        }
        int t = 0, n = 0, tails = 0;  // tiles, items and V tails so far
        for (int item = first; item < items; item += step) {
            const Block blk = item_block(item);
            if (!blk.ok) continue;
            const int tiles = blk.tiles(), last = tiles - 1, valid = blk.len - last * BLOCK_N;
            const int qi = n % Q_STAGES;  // every S of the item that last used the buffer has read it
            if (n >= Q_STAGES) gemm_ws::mbar_wait(q_empty(qi), ((n / Q_STAGES) - 1) & 1);
            if (lane == 0) {
                gemm_ws::mbar_arrive_expect_tx(q_full(qi), Q_BYTES);
                for (int p = 0; p < PANELS; ++p)
                    gemm_ws::tma_load_4d(q_smem + qi * Q_BYTES + p * BLOCK_M * 128, q_map, 64 * p, blk.hq, blk.m0,
                                         blk.b, q_full(qi));
            }
            for (int j = 0; j < tiles; ++j, ++t) {
                const int s = t % STAGES;
                const unsigned released = ((t / STAGES) - 1) & 1;  // the phase of the stage's previous tile
                const unsigned kd = kv_smem + s * 2 * TILE_BYTES;
                if (t >= STAGES) gemm_ws::mbar_wait(k_empty(s), released);
                if (lane == 0) {
                    gemm_ws::mbar_arrive_expect_tx(k_full(s), TILE_BYTES);
                    for (int p = 0; p < PANELS; ++p)
                        gemm_ws::tma_load_4d(kd + p * BLOCK_N * 128, k_map, 64 * p, blk.hk, j * BLOCK_N, blk.b,
                                             k_full(s));
                }
                if (t >= STAGES) gemm_ws::mbar_wait(v_empty(s), released);
                const bool tail = j == last && valid < BLOCK_N;
                const unsigned v_bar = tail ? v_landed : v_full(s);
                if (lane == 0) {
                    gemm_ws::mbar_arrive_expect_tx(v_bar, TILE_BYTES);
                    for (int p = 0; p < PANELS; ++p)
                        gemm_ws::tma_load_4d(kd + TILE_BYTES + p * BLOCK_N * 128, v_map, 64 * p, blk.hk, j * BLOCK_N,
                                             blk.b, v_bar);
                }
                if (tail) {
                    gemm_ws::mbar_wait(v_landed, tails++ & 1);
                    const int chunks = (BLOCK_N - valid) * 8;  // 16-byte chunks of a panel's rows past the end
                    for (int i = lane; i < PANELS * chunks; i += 32) {
                        const unsigned at =
                            kd + TILE_BYTES + (i / chunks) * (BLOCK_N * 128) + valid * 128 + (i % chunks) * 16;
                        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(at), "r"(0u) : "memory");
                    }
                    gemm_ws::fence_proxy_async();  // before wgmma reads them
                    __syncwarp();
                    if (lane == 0) gemm_ws::mbar_arrive(v_full(s));
                }
            }
            ++n;
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(ws_consumer_regs(CONSUMERS, CTAS_PER_SM)));
    const int cw = wg - 1;
    const bool lane0 = (threadIdx.x & 31) == 0;
    // PINGPONG: consumer c's turn is named barrier 1 + c, given by the other's arrival (consumer 0 goes first). Both
    // take a turn at every tile, a skipped one too, so the arrivals pair up; consumer 0 takes the last one back.
    constexpr bool TURNS = PINGPONG && CONSUMERS == 2;
    const auto my_turn = [&]() {
        if constexpr (TURNS) gemm_ws::named_sync(1 + cw, 256);
    };
    const auto their_turn = [&]() {
        if constexpr (TURNS) gemm_ws::named_arrive(2 - cw, 256);
    };
    if (TURNS && cw == 1) gemm_ws::named_arrive(1, 256);

    unsigned pf[Rows::KT][4];
    int t = 0, n = 0;  // tiles and items so far, as the producer counts them
    // O_SMEM with Q_STAGES 2: the buffer whose O store has not been waited for (-1: none). Its wait and q_empty's
    // arrival come after the next item's first S is issued, so that the store's read runs under that S; the producer
    // needs the buffer only for the item after next.
    [[maybe_unused]] int stored_q = -1;
    [[maybe_unused]] auto release_stored = [&]() {
        if (stored_q >= 0 && threadIdx.x % 128 == 0) {
            gemm_ws::bulk_wait_all<true>();               // the store has read the rows: the buffer may be refilled
            gemm_ws::mbar_arrive(q_empty(stored_q), 4);  // for the warpgroup's four warps
        }
        stored_q = -1;
    };
    for (int item = first; item < items; item += step) {
        const Block blk = item_block(item);
        if (!blk.ok) continue;
        const int tiles = blk.tiles();
        const int qi = n % Q_STAGES;
        Rows rows(scale, blk.len, blk.m0 + 64 * cw, q_smem + qi * Q_BYTES + cw * 64 * 128);
        gemm_ws::mbar_wait(q_full(qi), (n / Q_STAGES) & 1);
        [[maybe_unused]] int pending = -1;  // OVERLAP: the tile (counted as t) whose P V is not issued yet, -1: none
        // OVERLAP: the pending tile's P V, then its stage back to the producer.
        [[maybe_unused]] auto finish_pending = [&]() {
            rows.pv_and_wait(pf, v_stage(pending));
            if (lane0) gemm_ws::mbar_arrive(v_empty(pending % STAGES));
            pending = -1;
        };
        for (int j = 0; j < tiles; ++j, ++t) {
            const int s = t % STAGES;
            const unsigned parity = (t / STAGES) & 1;
            const unsigned k_base = kv_smem + s * 2 * TILE_BYTES, v_base = k_base + TILE_BYTES;
            const int n0 = j * BLOCK_N;
            // Causal: a tile whose first key is past this warpgroup's last row adds nothing to it (and neither does
            // any later one); its stage goes back unread, once it has landed: an arrival before the fill would count
            // towards the stage's previous release, which the other consumer may not have made yet.
            if (CAUSAL && n0 > rows.last_row()) {
                my_turn();
                if constexpr (OVERLAP) {
                    if (pending >= 0) finish_pending();
                }
                their_turn();
                gemm_ws::mbar_wait(k_full(s), parity);
                gemm_ws::mbar_wait(v_full(s), parity);
                if (lane0) {
                    gemm_ws::mbar_arrive(k_empty(s));
                    gemm_ws::mbar_arrive(v_empty(s));
                }
                continue;
            }
            gemm_ws::mbar_wait(k_full(s), parity);
            float s_acc[Rows::SACC];
            float alpha[2];
            if constexpr (OVERLAP) {
                my_turn();
                rows.fence_o();
                gemm::wgmma_fence();
                rows.issue_s(s_acc, k_base);
                gemm::wgmma_commit();
                if constexpr (O_SMEM && Q_STAGES == 2) {
                    if (j == 0) release_stored();
                }
                if (pending >= 0) {
                    rows.issue_pv(pf, v_stage(pending));
                    gemm::wgmma_commit();
                    their_turn();
                    gemm::wgmma_wait<1>();  // S (the older group) is done; P V may still run
                } else {
                    their_turn();
                    gemm::wgmma_wait<0>();
                }
                gemm::fence_operands(s_acc);
                if (lane0) gemm_ws::mbar_arrive(k_empty(s));
                rows.softmax(s_acc, n0, alpha);
                gemm::wgmma_wait<0>();  // P V of the pending tile: O and pf are free again, and its V
                rows.fence_o();
                fence_words(pf);
                if (pending >= 0 && lane0) gemm_ws::mbar_arrive(v_empty(pending % STAGES));
                rows.rescale(alpha);
                Rows::pack_p(s_acc, pf);
                gemm_ws::mbar_wait(v_full(s), parity);  // before its P V is issued, at the next tile
                pending = t;
            } else {
                my_turn();
                gemm::wgmma_fence();
                rows.issue_s(s_acc, k_base);
                gemm::wgmma_commit();
                if constexpr (O_SMEM && Q_STAGES == 2) {
                    if (j == 0) release_stored();
                }
                their_turn();
                gemm::wgmma_wait<0>();
                gemm::fence_operands(s_acc);
                if (lane0) gemm_ws::mbar_arrive(k_empty(s));
                rows.softmax(s_acc, n0, alpha);
                rows.rescale(alpha);
                Rows::pack_p(s_acc, pf);
                gemm_ws::mbar_wait(v_full(s), parity);
                rows.pv_and_wait(pf, v_base);
                if (lane0) gemm_ws::mbar_arrive(v_empty(s));
            }
        }
        // O_SMEM: O of 64 rows inside the sequence goes out through this warpgroup's rows of the q buffer (its S are
        // done) and a TMA store; rows partly past the sequence are stored from registers, each row inside it.
        const bool staged = O_SMEM && blk.m0 + 64 * cw + 64 <= blk.len;
        if (!staged && lane0) gemm_ws::mbar_arrive(q_empty(qi));  // every S done: the buffer's next q may land
        if constexpr (OVERLAP) {
            if (pending >= 0) finish_pending();
        }
        if (staged) {
            const unsigned q_rows = q_smem + qi * Q_BYTES + cw * 64 * 128;  // panel p at + p * BLOCK_M * 128
            gemm_ws::named_sync(3 + cw, 128);  // every warp's wgmma reading these rows has completed
            rows.template stage<BLOCK_M * 128>(q_rows);
            gemm_ws::fence_proxy_async();  // the stmatrix writes, before TMA reads them
            gemm_ws::named_sync(3 + cw, 128);
            if (threadIdx.x % 128 == 0) {
                for (int p = 0; p < PANELS; ++p)
                    gemm_ws::tma_store_4d(o_map, 64 * p, blk.hq, blk.m0 + 64 * cw, blk.b, q_rows + p * BLOCK_M * 128);
                gemm_ws::bulk_commit();
            }
            stored_q = qi;
            if constexpr (Q_STAGES == 1) release_stored();  // the next item's q goes into this very buffer
        } else {
            rows.store(out, blk.b, blk.hq, max_len, static_cast<long long>(q_heads) * HEAD_DIM);
        }
        ++n;
    }
    if (TURNS && cw == 0) my_turn();  // consumer 1's last arrival
    if (O_SMEM && threadIdx.x % 128 == 0) gemm_ws::bulk_wait_all<false>();  // the stores complete before the exit
}

}  // namespace ktune::dev::prefill_attention

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int STAGES, bool OVERLAP>
__global__ void __launch_bounds__(BLOCK_M * 2, 1)
    prefill_attention_wgmma(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k,
                            const T* __restrict__ v, const int* __restrict__ seq_lens, int batch, int q_heads,
                            int kv_heads, int head_dim, int max_len, float scale) {
    // Checked in every compilation pass (the plain sm_90 one too, whose body is only a trap).
    static_assert(sizeof(T) == 2, "prefill_attention_wgmma: T is __half or __nv_bfloat16");
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256, "prefill_attention_wgmma: HEAD_DIM a multiple of 64, <= 256");
    static_assert(BLOCK_M == 64 || BLOCK_M == 128, "prefill_attention_wgmma: one or two warpgroups of 64 rows");
    static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 256, "prefill_attention_wgmma: BLOCK_N a multiple of 16, <= 256");
    static_assert(STAGES >= 2 && STAGES <= 4, "prefill_attention_wgmma: STAGES in [2, 4]");
    static_assert(!OVERLAP || STAGES >= 3, "prefill_attention_wgmma: OVERLAP keeps two tiles in use: STAGES >= 3");
    static_assert(ktune::dev::prefill_attention::wgmma_smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES> <= 232448,
                  "prefill_attention_wgmma: shared memory <= 227 KiB");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::prefill_attention::wgmma_body<T, HEAD_DIM, CAUSAL, BLOCK_M, BLOCK_N, STAGES, OVERLAP>(
        out, q, k, v, seq_lens, batch, q_heads, kv_heads, head_dim, max_len, scale);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma (nvcc -arch=sm_90a also emits compute_90 PTX): never run
#endif
}

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int STAGES, bool OVERLAP, int PINGPONG,
          int CTAS_PER_SM, int PERSISTENT, int Q_STAGES, int O_SMEM>
__global__ void __launch_bounds__(BLOCK_M * 2 + 128, CTAS_PER_SM)
    prefill_attention_wgmma_ws(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k,
                               const T* __restrict__ v, const int* __restrict__ seq_lens, int batch, int q_heads,
                               int kv_heads, int head_dim, int max_len, float scale,
                               const __grid_constant__ ktune::dev::gemm_ws::TensorMap q_map,
                               const __grid_constant__ ktune::dev::gemm_ws::TensorMap k_map,
                               const __grid_constant__ ktune::dev::gemm_ws::TensorMap v_map,
                               const __grid_constant__ ktune::dev::gemm_ws::TensorMap o_map) {
    static_assert(sizeof(T) == 2, "prefill_attention_wgmma_ws: T is __half or __nv_bfloat16");
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256,
                  "prefill_attention_wgmma_ws: HEAD_DIM a multiple of 64, <= 256");
    static_assert(BLOCK_M == 64 || BLOCK_M == 128, "prefill_attention_wgmma_ws: one or two consumer warpgroups");
    static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 256, "prefill_attention_wgmma_ws: BLOCK_N a multiple of 16, <= 256");
    static_assert(STAGES >= 2 && STAGES <= 4, "prefill_attention_wgmma_ws: STAGES in [2, 4]");
    static_assert(PINGPONG == 0 || BLOCK_M == 128, "prefill_attention_wgmma_ws: PINGPONG takes turns of two consumers");
    static_assert(PERSISTENT == 0 || PERSISTENT == 1, "prefill_attention_wgmma_ws: PERSISTENT is 0 or 1");
    static_assert(Q_STAGES == 1 || (Q_STAGES == 2 && PERSISTENT == 1),
                  "prefill_attention_wgmma_ws: Q_STAGES is 1, or 2 with PERSISTENT");
    static_assert(O_SMEM == 0 || O_SMEM == 1, "prefill_attention_wgmma_ws: O_SMEM is 0 or 1");
    static_assert(ktune::dev::prefill_attention::wgmma_ws_smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, Q_STAGES> <= 232448,
                  "prefill_attention_wgmma_ws: shared memory <= 227 KiB");
    // Two blocks an SM: one consumer (two would have 104 registers), each block within half the SM's 228 KiB less the
    // 1 KiB the hardware reserves a block.
    static_assert(CTAS_PER_SM == 1 ||
                      (CTAS_PER_SM == 2 && BLOCK_M == 64 &&
                       ktune::dev::prefill_attention::wgmma_ws_smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, Q_STAGES> <=
                           115712),
                  "prefill_attention_wgmma_ws: CTAS_PER_SM 2 takes BLOCK_M 64 and at most 113 KiB");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ktune::dev::prefill_attention::wgmma_ws_body<T, HEAD_DIM, CAUSAL, BLOCK_M, BLOCK_N, STAGES, OVERLAP, PINGPONG != 0,
                                                 CTAS_PER_SM, PERSISTENT != 0, Q_STAGES, O_SMEM != 0>(
        out, seq_lens, batch, q_heads, kv_heads, head_dim, max_len, scale, q_map, k_map, v_map, o_map);
#elif defined(__CUDA_ARCH__)
    __trap();  // a device pass without wgmma / setmaxnreg / TMA: never run
#endif
}
