#pragma once
// Prefill attention, the tuned kernel (FlashAttention-2 style, mma.sync):
//
//   o[b, i, hq, :] = softmax_j(scale * q[b, i, hq, :] . k[b, j, hk, :] [+ causal mask j <= i]) @ v[b, j, hk, :]
//
// for i, j < seq_lens[b], hk = hq / (HQ / HK); layouts [B, L, H, D] (token-major, heads inner), rows i >= seq_lens[b]
// of o are not written. A block owns BLOCK_M query rows of one (sequence, q head); its warps split the rows, 16 per
// m-tile (MT = BLOCK_M / (16 * WARPS) m-tiles per warp). K and V tiles of BLOCK_N tokens stream through STAGES
// shared-memory stages filled by cp.async; S = Q K^T and O += P V use mma.sync m16n8k16 with fp32 accumulators, P
// stays in registers (the C fragments of S are the A fragments of P), and the softmax is online, in log2 units
// (scale * log2(e) folded into one fma before ex2). Causal: tiles entirely above a warp's rows are skipped, only the
// tiles crossing the diagonal (or the sequence's end) are masked, and the query blocks run longest first.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), g = lane / 4, c = lane % 4:
//   A (16 x 16): a0 (g, 2c..2c+1), a1 (g+8, 2c..), a2 (g, 2c+8..), a3 (g+8, 2c+8..)
//   B (16 x 8):  b0 (k 2c..2c+1, n g), b1 (k 2c+8..2c+9, n g)
//   C (16 x 8):  c0, c1 (g, 2c..2c+1), c2, c3 (g+8, 2c..2c+1)
// Q (A of S) and K (B of S: k = d, n = token, so a K row of consecutive d) load with ldmatrix; V (B of O: k = token,
// n = d, two consecutive tokens at one d) with ldmatrix.trans. Shared rows hold HEAD_DIM elements, their 16-byte chunks
// XOR-swizzled by row % 8 (swz), so the 8 rows of every ldmatrix matrix hit 8 different bank groups.
//
// Tunables (template parameters, named as the YAML keys):
//   HEAD_DIM  the problem's D (64 or 128 tuned; a multiple of 64, <= 256).
//   CAUSAL    the variant (q index i attends k <= i).
//   BLOCK_M   query rows per block (a multiple of 16 * WARPS, at most 32 rows per warp).
//   BLOCK_N   K/V tokens per tile (a multiple of 16).
//   WARPS     warps per block.
//   STAGES    K/V tiles in shared memory: 1 loads and computes in turn, 2 and 3 keep 1 and 2 tiles in flight.
//   Q_SHARED  false: q's A fragments stay in registers for the whole loop (HEAD_DIM / 4 words per m-tile); true: they
//             are read from shared memory again at every k-step of every tile (registers for two m-tiles at HEAD_DIM
//             128, for the price of more ldmatrix).
//
// Launch: grid (HQ, ceil(L / BLOCK_M), B), WARPS * 32 threads, (BLOCK_M + 2 * STAGES * BLOCK_N) * HEAD_DIM *
// sizeof(T) bytes of dynamic shared memory. q, k, v and out must be 16-byte aligned (the generator's buffers are);
// a launch that does not match the configuration writes nothing, so the validation fails.
#include "kernels/attention/decode_attention_mma_walk.cuh"
#include "kernels/attention/prefill_attention_query_block.cuh"

namespace ktune::dev::prefill_attention {

// Shared memory in bytes (the YAML's shared_bytes repeats it).
template <typename T, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int STAGES>
inline constexpr int smem_bytes = (BLOCK_M + 2 * STAGES * BLOCK_N) * HEAD_DIM * int(sizeof(T));

// Copies `rows` rows of HEAD_DIM elements (global row r at src + r * stride) into swizzled shared rows at dst; rows
// >= valid are zero-filled (the source address stays in bounds). Every thread of the block takes part.
template <typename T, int HEAD_DIM, int ROWS, int THREADS>
__device__ __forceinline__ void copy_rows(unsigned dst, const T* src, long long stride, int valid, int tid) {
    constexpr int CPR = HEAD_DIM / 8;  // 16-byte chunks per row
    constexpr int CHUNKS = ROWS * CPR;
#pragma unroll
    for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; ++i) {
        const int lin = tid + i * THREADS;
        if (CHUNKS % THREADS == 0 || lin < CHUNKS) {
            const int row = lin / CPR, ch = lin % CPR;
            const bool ok = row < valid;
            const T* s = src + (ok ? row * stride + ch * 8 : 0);
            const unsigned d = dst + row * (HEAD_DIM * int(sizeof(T))) + decode_attention::swz(row, ch);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(s), "r"(ok ? 16 : 0)
                         : "memory");
        }
    }
}

}  // namespace ktune::dev::prefill_attention

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int WARPS, int STAGES, bool Q_SHARED>
__global__ void __launch_bounds__(WARPS * 32, 1)
    prefill_attention_fa2(T* __restrict__ out, const T* __restrict__ q, const T* __restrict__ k,
                          const T* __restrict__ v, const int* __restrict__ seq_lens, int batch, int q_heads,
                          int kv_heads, int head_dim, int max_len, float scale) {
    static_assert(sizeof(T) == 2, "prefill_attention_fa2: T is __half or __nv_bfloat16");
    // Rows of at least 8 chunks keep the XOR swizzle inside the row.
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256, "prefill_attention_fa2: HEAD_DIM a multiple of 64, <= 256");
    static_assert(WARPS >= 1 && WARPS <= 16, "prefill_attention_fa2: WARPS in [1, 16]");
    static_assert(BLOCK_M % (16 * WARPS) == 0 && BLOCK_M / (16 * WARPS) <= 2,
                  "prefill_attention_fa2: 16 or 32 query rows per warp");
    static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 256, "prefill_attention_fa2: BLOCK_N a multiple of 16, <= 256");
    static_assert(STAGES >= 1 && STAGES <= 4, "prefill_attention_fa2: STAGES in [1, 4]");

    using namespace ktune::dev;
    using namespace ktune::dev::decode_attention;
    using namespace ktune::dev::prefill_attention;
    constexpr int THREADS = WARPS * 32;
    constexpr int MT = BLOCK_M / (16 * WARPS);  // m-tiles per warp
    constexpr int KS = HEAD_DIM / 16;           // k-steps of S = Q K^T
    constexpr int DT = HEAD_DIM / 8;            // n-tiles of O
    constexpr int NT = BLOCK_N / 8;             // n-tiles of S
    constexpr int ROWB = HEAD_DIM * int(sizeof(T));
    constexpr int TILE_BYTES = BLOCK_N * ROWB;  // one K (or V) tile
    constexpr int SMEM = smem_bytes<T, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES>;
    static_assert(SMEM <= 232448, "prefill_attention_fa2: shared memory <= 227 KiB");
    extern __shared__ __align__(16) unsigned char smem[];  // 16, as decode attention declares it (one unit holds both)

    if (launch_differs<HEAD_DIM, BLOCK_M, THREADS>(batch, q_heads, kv_heads, head_dim, max_len) ||
        dynamic_smem_bytes() < static_cast<unsigned>(SMEM))
        return;
    const auto blk = find_query_block<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>(seq_lens, q_heads, kv_heads, max_len);
    if (!blk.ok) return;  // the whole block lies past the sequence (uniform)
    const int hq = blk.hq, b = blk.b, len = blk.len, m0 = blk.m0;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, c = lane & 3;
    const long long q_stride = static_cast<long long>(q_heads) * HEAD_DIM;   // between tokens of q and out
    const long long kv_stride = static_cast<long long>(kv_heads) * HEAD_DIM;  // between tokens of k and v
    const T* qb = blk.q_rows(q, q_stride, max_len);
    const T* kb = blk.kv_rows(k, kv_stride, max_len);
    const T* vb = blk.kv_rows(v, kv_stride, max_len);
    const int tiles = blk.tiles();

    const unsigned q_smem = smem_address(smem);
    const unsigned kv_smem = q_smem + BLOCK_M * ROWB;  // stage s: K at + 2 s TILE_BYTES, V after it
    auto issue = [&](int tile, int stage) {
        const int n0 = tile * BLOCK_N;
        const unsigned kd = kv_smem + stage * 2 * TILE_BYTES;
        copy_rows<T, HEAD_DIM, BLOCK_N, THREADS>(kd, kb + n0 * kv_stride, kv_stride, len - n0, tid);
        copy_rows<T, HEAD_DIM, BLOCK_N, THREADS>(kd + TILE_BYTES, vb + n0 * kv_stride, kv_stride, len - n0, tid);
    };

    // Group 0: the q tile (rows past the sequence zero-filled); then STAGES - 1 tiles, one group each (empty groups
    // past the last tile keep the count: at step j, group j + 1 holds tile j).
    copy_rows<T, HEAD_DIM, BLOCK_M, THREADS>(q_smem, qb, q_stride, len - m0, tid);
    cp_async_commit();
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue(s, s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 1>();
    __syncthreads();

    // This warp's rows: m0 + row0 + 16 mt + (g, g + 8).
    const int row0 = warp * 16 * MT;
    // q's A fragment of m-tile mt, k-step ks. Matrices: rows 0-7 / 8-15 of the m-tile x chunks 2 ks / 2 ks + 1 -> a0,
    // a1, a2, a3.
    auto load_q = [&](unsigned (&a)[4], int mt, int ks) {
        const int r = row0 + 16 * mt + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int ch = 2 * ks + (lane >> 4);
        ldmatrix_x4<false>(a, q_smem + r * ROWB + swz(r, ch));
    };
    [[maybe_unused]] unsigned qf[Q_SHARED ? 1 : MT][Q_SHARED ? 1 : KS][4];
    if constexpr (!Q_SHARED) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) load_q(qf[mt][ks], mt, ks);
    }

    const float qscale = scale * 1.4426950408889634f;  // scores in log2 units
    float o[MT][DT][4];
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.0f;
        m[mt][0] = m[mt][1] = neg_inf();
        l[mt][0] = l[mt][1] = 0.0f;
    }
    const int warp_first = m0 + row0, warp_last = m0 + row0 + 16 * MT - 1;  // this warp's query rows

    for (int j = 0; j < tiles; ++j) {
        if constexpr (STAGES == 1) {
            issue(j, 0);
            cp_async_commit();
            cp_async_wait<0>();
        } else {
            cp_async_wait<STAGES - 2>();  // tile j has landed (this thread's copies)
        }
        __syncthreads();  // everyone's copies of tile j, and everyone is done with the stage refilled next
        if constexpr (STAGES > 1) {
            const int next = j + STAGES - 1;
            if (next < tiles) issue(next, next % STAGES);
            cp_async_commit();
        }
        const int stage = STAGES == 1 ? 0 : j % STAGES;
        const unsigned ks_base = kv_smem + stage * 2 * TILE_BYTES, vs_base = ks_base + TILE_BYTES;
        const int n0 = j * BLOCK_N;

        // Causal: a tile whose first key is past this warp's last row adds nothing to it.
        if (!(CAUSAL && n0 > warp_last)) {
            // S = Q K^T for this warp's rows x BLOCK_N keys.
            float s[MT][NT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                [[maybe_unused]] unsigned qs[Q_SHARED ? MT : 1][4];
                if constexpr (Q_SHARED) {
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) load_q(qs[mt], mt, ks);
                }
#pragma unroll
                for (int np = 0; np < NT / 2; ++np) {
                    // Matrices: keys 16 np + 0-7 x chunks 2 ks, 2 ks + 1, then keys 16 np + 8-15 x the same:
                    // (b0, b1) of n-tile 2 np, then of n-tile 2 np + 1.
                    const int r = 16 * np + (lane & 7) + (lane >> 4) * 8;
                    const int ch = 2 * ks + ((lane >> 3) & 1);
                    unsigned kf[4];
                    ldmatrix_x4<false>(kf, ks_base + r * ROWB + swz(r, ch));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        if constexpr (Q_SHARED) {
                            mma16816<T>(s[mt][2 * np], qs[mt], kf[0], kf[1]);
                            mma16816<T>(s[mt][2 * np + 1], qs[mt], kf[2], kf[3]);
                        } else {
                            mma16816<T>(s[mt][2 * np], qf[mt][ks], kf[0], kf[1]);
                            mma16816<T>(s[mt][2 * np + 1], qf[mt][ks], kf[2], kf[3]);
                        }
                    }
                }
            }

            // Masks: keys past the sequence, and (causal) keys after the row; only tiles that cross either.
            const bool tail = n0 + BLOCK_N > len;
            const bool diagonal = CAUSAL && n0 + BLOCK_N - 1 > warp_first;
            if (tail || diagonal) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int key = n0 + 8 * nt + 2 * c + (e & 1);
                            const int row = warp_first + 16 * mt + g + (e >> 1) * 8;
                            if (key >= len || (CAUSAL && key > row)) s[mt][nt][e] = neg_inf();
                        }
            }

            // Online softmax per row (g: e 0, 1; g + 8: e 2, 3); a quad (lanes 4g..4g+3) shares a row.
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float mx = neg_inf();
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    const float m_new = fmaxf(m[mt][h], mx * qscale);  // qscale > 0 keeps the order
                    // Nothing seen yet (m_new = -inf): 0 as the reference gives p = 0 and alpha = 0.
                    const float ref = m_new == neg_inf() ? 0.0f : m_new;
                    const float alpha = fast_exp2(m[mt][h] - ref);
                    m[mt][h] = m_new;
                    float sum = 0.0f;
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt) {
                        s[mt][nt][2 * h] = fast_exp2(fmaf(s[mt][nt][2 * h], qscale, -ref));
                        s[mt][nt][2 * h + 1] = fast_exp2(fmaf(s[mt][nt][2 * h + 1], qscale, -ref));
                        sum += s[mt][nt][2 * h] + s[mt][nt][2 * h + 1];
                    }
                    l[mt][h] = l[mt][h] * alpha + sum;  // this thread's columns; the quad sums at the end
#pragma unroll
                    for (int dt = 0; dt < DT; ++dt) {
                        o[mt][dt][2 * h] *= alpha;
                        o[mt][dt][2 * h + 1] *= alpha;
                    }
                }

            // O += P V: P's A fragment for keys 16 kt..16 kt + 15 is S's n-tiles 2 kt (a0, a1) and 2 kt + 1 (a2, a3).
#pragma unroll
            for (int kt = 0; kt < BLOCK_N / 16; ++kt) {
                unsigned pf[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    pf[mt][0] = pack2<T>(s[mt][2 * kt][0], s[mt][2 * kt][1]);
                    pf[mt][1] = pack2<T>(s[mt][2 * kt][2], s[mt][2 * kt][3]);
                    pf[mt][2] = pack2<T>(s[mt][2 * kt + 1][0], s[mt][2 * kt + 1][1]);
                    pf[mt][3] = pack2<T>(s[mt][2 * kt + 1][2], s[mt][2 * kt + 1][3]);
                }
#pragma unroll
                for (int dp = 0; dp < DT / 2; ++dp) {
                    // Matrices (transposed): keys 16 kt + 0-7 / + 8-15 x chunk 2 dp, then the same x chunk 2 dp + 1:
                    // (b0, b1) of d-tile 2 dp, then of d-tile 2 dp + 1.
                    const int r = 16 * kt + (lane & 7) + ((lane >> 3) & 1) * 8;
                    const int ch = 2 * dp + (lane >> 4);
                    unsigned vf[4];
                    ldmatrix_x4<true>(vf, vs_base + r * ROWB + swz(r, ch));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(o[mt][2 * dp], pf[mt], vf[0], vf[1]);
                        mma16816<T>(o[mt][2 * dp + 1], pf[mt], vf[2], vf[3]);
                    }
                }
            }
        }
        if constexpr (STAGES == 1) __syncthreads();  // the next copy overwrites this tile
    }
    cp_async_wait<0>();  // no copy may land after the block exits (only empty groups are left)

    // Epilogue: O / l into this warp's own rows of the q tile (only it read them), then 16-byte stores of the rows
    // inside the sequence.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l[mt][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
            const int r = row0 + 16 * mt + g + 8 * h;
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) {
                const unsigned w = pack2<T>(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
                // Chunk dt holds columns 8 dt..8 dt + 7; this thread's pair sits at 4 c bytes into it.
                const unsigned a = q_smem + r * ROWB + swz(r, dt) + 4 * c;
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(w) : "memory");
            }
        }
    __syncwarp();
    constexpr int CPR = HEAD_DIM / 8;
#pragma unroll
    for (int i = 0; i < 16 * MT * CPR / 32; ++i) {
        const int lin = lane + 32 * i, r = row0 + lin / CPR, ch = lin % CPR;
        if (m0 + r < len) {
            uint4 w;
            asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
                         : "r"(q_smem + r * ROWB + swz(r, ch)));
            *reinterpret_cast<uint4*>(out + (static_cast<long long>(b) * max_len + m0 + r) * q_stride +
                                      static_cast<long long>(hq) * HEAD_DIM + ch * 8) = w;
        }
    }
}
