#pragma once
// Prefill attention: what a block of every kernel (prefill_attention_fa2.cuh, prefill_attention_wgmma.cuh) derives
// from its launch. The kernels share the grid (HQ, ceil(L / BLOCK_M), B) of the YAML's launch: a block owns BLOCK_M
// query rows of one (sequence, q head), reads the K/V tiles of BLOCK_N tokens its rows attend to, and finds q, k, v and
// out as [B, L, H, D] (token-major, heads inner, L = max_len). One copy of this arithmetic, so that no kernel reads the
// grid differently.
#include "kernels/attention/decode_attention_common.cuh"

namespace ktune::dev::prefill_attention {

// The block's query rows: its (sequence, q head, BLOCK_M-row block) and what follows from them. `ok` is false for a
// block wholly past its sequence's length (and, from query_block, for a launch that does not match the configuration):
// the block writes nothing. The rest holds only where `ok` is true.
template <bool CAUSAL, int HEAD_DIM, int BLOCK_M, int BLOCK_N>
struct QueryBlock {
    int hq, b, hk, len, m0;
    bool ok;

    // K/V tiles of BLOCK_N tokens the block sees: all of the sequence, or (causal) up to its last row.
    __device__ __forceinline__ int tiles() const {
        const int kv_end = CAUSAL ? min(len, m0 + BLOCK_M) : len;
        return (kv_end + BLOCK_N - 1) / BLOCK_N;
    }
    // The block's first q row (token m0 of head hq), and its kv head's first token in k or v; stride: between tokens
    // (H * HEAD_DIM).
    template <typename T>
    __device__ __forceinline__ const T* q_rows(const T* q, long long q_stride, int max_len) const {
        return q + (static_cast<long long>(b) * max_len + m0) * q_stride + static_cast<long long>(hq) * HEAD_DIM;
    }
    template <typename T>
    __device__ __forceinline__ const T* kv_rows(const T* kv, long long kv_stride, int max_len) const {
        return kv + static_cast<long long>(b) * max_len * kv_stride + static_cast<long long>(hk) * HEAD_DIM;
    }
};

// True where the launch does not match the configuration (THREADS: its block size) in grid, block or problem; uniform
// over the grid. The caller checks the dynamic shared memory (dynamic_smem_bytes() < SMEM) in the same condition,
// right after this: returned from here instead, nvcc hoists that check and compiles the wgmma kernels differently.
template <int HEAD_DIM, int BLOCK_M, int THREADS>
__device__ __forceinline__ bool launch_differs(int batch, int q_heads, int kv_heads, int head_dim, int max_len) {
    return blockDim.x != THREADS || gridDim.x != static_cast<unsigned>(q_heads) ||
           gridDim.y != static_cast<unsigned>((max_len + BLOCK_M - 1) / BLOCK_M) ||
           gridDim.z != static_cast<unsigned>(batch) || kv_heads < 1 || q_heads % kv_heads != 0 || head_dim != HEAD_DIM;
}

// The query rows of q head hq, sequence b and the block of rank `rank` (blocks of rows counted from the sequence's
// start, or from its end when causal: causal blocks near the end have the most tiles, so they go first and the short
// ones fill in); `blocks`: ceil(max_len / BLOCK_M).
template <bool CAUSAL, int HEAD_DIM, int BLOCK_M, int BLOCK_N>
__device__ __forceinline__ QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N> query_block_at(
    int hq, int rank, int b, int blocks, const int* __restrict__ seq_lens, int q_heads, int kv_heads, int max_len) {
    QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N> q;
    q.hq = hq;
    q.b = b;
    const int mblock = CAUSAL ? blocks - 1 - rank : rank;
    q.hk = q.hq / (q_heads / kv_heads);
    const int len = seq_lens[q.b];
    q.len = len < 0 ? 0 : (len > max_len ? max_len : len);
    q.m0 = mblock * BLOCK_M;
    q.ok = q.m0 < q.len;
    return q;
}

// The same for a persistent grid (x any size, y and z 1: blocks take every gridDim.x-th of persistent_items' work
// items, persistent_query_block's).
template <int HEAD_DIM, int THREADS>
__device__ __forceinline__ bool persistent_launch_differs(int q_heads, int kv_heads, int head_dim) {
    return blockDim.x != THREADS || gridDim.y != 1 || gridDim.z != 1 || kv_heads < 1 || q_heads % kv_heads != 0 ||
           head_dim != HEAD_DIM;
}
template <int BLOCK_M>
__device__ __forceinline__ int persistent_items(int batch, int q_heads, int max_len) {
    return q_heads * ((max_len + BLOCK_M - 1) / BLOCK_M) * batch;
}

// The block's query rows, in a launch that matches.
template <bool CAUSAL, int HEAD_DIM, int BLOCK_M, int BLOCK_N>
__device__ __forceinline__ QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N> find_query_block(
    const int* __restrict__ seq_lens, int q_heads, int kv_heads, int max_len) {
    return query_block_at<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>(blockIdx.x, blockIdx.y, blockIdx.z, gridDim.y, seq_lens,
                                                              q_heads, kv_heads, max_len);
}

// A persistent grid's work item `item` of HQ * ceil(max_len / BLOCK_M) * batch (blocks take every gridDim.x-th).
// Causal: the blocks' ranks outermost (longest first), so that every round of the grid holds items of about one size;
// then sequences, then q heads, neighbours sharing their kv head's K and V in L2. Not causal (every item the same
// size): sequences, then kv heads, then blocks of rows, then the q heads of the kv head, so that the grid's blocks
// stream the K and V of one or two kv heads at a time, which stay in L2.
template <bool CAUSAL, int HEAD_DIM, int BLOCK_M, int BLOCK_N>
__device__ __forceinline__ QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N> persistent_query_block(
    int item, const int* __restrict__ seq_lens, int batch, int q_heads, int kv_heads, int max_len) {
    const int blocks = (max_len + BLOCK_M - 1) / BLOCK_M;
    if constexpr (CAUSAL) {
        const int per_rank = batch * q_heads, rank = item / per_rank, rest = item - rank * per_rank;
        const int b = rest / q_heads;
        return query_block_at<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>(rest - b * q_heads, rank, b, blocks, seq_lens,
                                                                  q_heads, kv_heads, max_len);
    } else {
        const int group = q_heads / kv_heads, per_seq = q_heads * blocks, b = item / per_seq;
        const int rest = item - b * per_seq, hk = rest / (group * blocks), in_head = rest - hk * group * blocks;
        const int rank = in_head / group;
        return query_block_at<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>(hk * group + (in_head - rank * group), rank, b,
                                                                  blocks, seq_lens, q_heads, kv_heads, max_len);
    }
}

// The launch check (SMEM: the configuration's least dynamic shared memory) and the block's query rows in one, `ok`
// false for either reason (the wgmma kernels). The FA2 kernel returns after each in turn instead: nvcc compiles the
// two forms differently, and each kernel keeps the form it had, so that sharing them changed neither's machine code.
template <bool CAUSAL, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int THREADS, int SMEM>
__device__ __forceinline__ QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N> query_block(const int* __restrict__ seq_lens,
                                                                                      int batch, int q_heads,
                                                                                      int kv_heads, int head_dim,
                                                                                      int max_len) {
    QueryBlock<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N> q{};
    if (launch_differs<HEAD_DIM, BLOCK_M, THREADS>(batch, q_heads, kv_heads, head_dim, max_len) ||
        decode_attention::dynamic_smem_bytes() < static_cast<unsigned>(SMEM))
        return q;
    q = find_query_block<CAUSAL, HEAD_DIM, BLOCK_M, BLOCK_N>(seq_lens, q_heads, kv_heads, max_len);
    return q;
}

}  // namespace ktune::dev::prefill_attention
