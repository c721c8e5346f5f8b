#pragma once
// Decode attention: tensor layouts, the split bound and the scratch layout. Plain C++ (host and device): the op
// description sizes the buffers with the same functions the kernels use.
//
// Tensors (row-major, elements of T):
//   q        [B, HQ, D]        one query token per sequence
//   k, v     [B, HK, L, D]     the KV cache, L = capacity (the problem's L); token t of sequence b, kv head h at
//                              ((b * HK + h) * L + t) * D ("HND": each (sequence, kv head) is one contiguous run)
//   seq_lens [B] int32         tokens of each sequence; clamped to [0, L] by every kernel (a sequence of 0 tokens
//                              has output 0)
//   out      [B, HQ, D]
// Query head hq attends with kv head hq / (HQ / HK) (PyTorch's enable_gqa, repeat_interleave order).
//
// Scratch (fp32 words, zero-filled once; the tuned kernels leave the counters at zero):
//   [0, counter_words)          one arrival counter (unsigned) per (sequence, kv head)
//   then per (sequence, kv head, split), in that order, per q head of the group: D accumulator floats, m, l and two
//   unused floats (the split's unnormalised output, its running max in log2 units, its sum of exp2(s - m)); D + 4
//   floats keep every head's accumulators 16-byte aligned for the merge's vector loads.
#include "kernels/common/ktune_device.cuh"

namespace ktune::decode_attention_layout {

inline constexpr int MAX_SPLITS = 128;
// Blocks of the tuned grid (B * HK * SPLITS) are bounded, which bounds the scratch the op allocates.
inline constexpr long long MAX_SPLIT_BLOCKS = 8192;

// The most splits a configuration may use for a problem: the YAML's constraint SPLITS * B * HK <= 8192 (and
// SPLITS <= 128) is this bound; the kernel returns without writing anything when SPLITS exceeds it.
KTUNE_HD constexpr int max_splits(long long batch, long long kv_heads) {
    const long long seqs = batch * kv_heads > 0 ? batch * kv_heads : 1;
    const long long cap = MAX_SPLIT_BLOCKS / seqs;
    return static_cast<int>(cap < 1 ? 1 : (cap > MAX_SPLITS ? MAX_SPLITS : cap));
}

KTUNE_HD constexpr long long counter_words(long long batch, long long kv_heads) {
    return (batch * kv_heads + 3) / 4 * 4;
}

// Floats of one split's partial state for one q head (D accumulators, m, l, 2 unused), and for the group's heads.
KTUNE_HD constexpr long long partial_head_floats(long long head_dim) { return head_dim + 4; }
KTUNE_HD constexpr long long partial_floats(long long group, long long head_dim) {
    return group * partial_head_floats(head_dim);
}

KTUNE_HD constexpr long long scratch_floats(long long batch, long long kv_heads, long long group, long long head_dim) {
    return counter_words(batch, kv_heads) +
           batch * kv_heads * max_splits(batch, kv_heads) * partial_floats(group, head_dim);
}

}  // namespace ktune::decode_attention_layout
