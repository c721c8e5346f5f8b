#pragma once
// RMSNorm backward: the fixed reduction tree of the weight gradient and the layout of the scratch buffer. Plain C++
// (host and device): the op description sizes the scratch buffer with the same functions the kernels use.
//
// dW[c] = sum over rows r of dy[r, c] * x[r, c] * rstd[r] is summed in a shape fixed by the problem (rows, hidden),
// never by the tunables or the grid:
//   - P = dw_partials(rows, hidden) leaf partials; partial p sums the rows p, p + P, p + 2P, ... in increasing order,
//     in fp32, starting from 0.
//   - a tree of fan-in DW_TREE_FAN over the partials: node j of level l + 1 is the in-order fp32 sum of nodes
//     j * FAN .. j * FAN + FAN - 1 of level l; the single node of the last level is dW.
// Which threads or blocks compute a node changes with the configuration; what is added, and in which order, does not
// (a block may sum a level-1 node from its own partials without writing them: the same additions).
//
// Scratch (fp32 words, 16-byte aligned, zero-filled once before first use; the kernels leave the counters at zero):
//   [0, DW_COUNTER_WORDS)          arrival counters of the tree's inner nodes (unsigned), tuned kernel: two words per
//                                  node, a 4-bit count per cluster rank (rank r: word r / 8, bits 4(r % 8)..+3;
//                                  children <= 8 < 16), so clusters of up to 16 blocks
//   then, level by level below the root, one row of dw_row_stride(hidden) floats per node
//   then DW_REFERENCE_HEADER words (the reference kernel's arrival counter) and 2 * hidden words (hidden doubles: the
//   reference kernel's column sums)
#include "kernels/common/ktune_device.cuh"

namespace ktune::rmsnorm_bwd_layout {

inline constexpr int DW_TREE_FAN = 8;
inline constexpr int DW_MAX_PARTIALS = 512;
inline constexpr int DW_MIN_PARTIALS = 128;
inline constexpr int DW_MAX_LEVELS = 4;  // 512 -> 64 -> 8 -> 1
inline constexpr int DW_RANKS_PER_COUNTER = 8;  // 4-bit counts in a 32-bit word
inline constexpr int DW_COUNTERS_PER_NODE = 2;  // cluster ranks 0-7 and 8-15
// >= 2 * (64 + 8 + 1) inner nodes' words; a multiple of 4 keeps rows 16-byte aligned
inline constexpr int DW_COUNTER_WORDS = 256;
inline constexpr int DW_REFERENCE_HEADER = 4;

// 2^20 / hidden partials, between 128 and 512, never more than rows: 512 for H = 2048, 256 for 4096, 128 for 8192.
// Depends on the problem only. Measured on an H100 (bf16, M = 4096 and 32768, H = 2048..8192): with rows in flight
// doubled by ROWS_IN_FLIGHT = 2, this count was as fast as or faster than 2x and 4x as many partials (which cost
// partial-row traffic, a deeper tree and, when the groups outnumber what the GPU holds at once, a second wave).
KTUNE_HD constexpr int dw_partials(long long rows, long long hidden) {
    // Every cap is at least DW_MIN_PARTIALS: a kernel with few rows then needs no division before its first load.
    if (rows <= DW_MIN_PARTIALS) return static_cast<int>(rows);
    long long cap = (1ll << 20) / (hidden > 0 ? hidden : 1);
    cap = cap < DW_MIN_PARTIALS ? DW_MIN_PARTIALS : (cap > DW_MAX_PARTIALS ? DW_MAX_PARTIALS : cap);
    return static_cast<int>(rows < cap ? rows : cap);
}

// Partial rows are padded to whole 16-byte quads.
KTUNE_HD constexpr long long dw_row_stride(long long hidden) { return (hidden + 3) / 4 * 4; }

struct DwTree {
    int levels = 1;                  // level 0: the partials; level levels - 1: the root (one node)
    int nodes[DW_MAX_LEVELS] = {};   // nodes per level
    int first_row[DW_MAX_LEVELS] = {};      // row index in scratch of each level's first node (levels below the root)
    int first_counter[DW_MAX_LEVELS] = {};  // counter index of each level's first node (levels above 0)
    int rows_below_root = 0;         // scratch rows of all levels below the root
};

KTUNE_HD constexpr DwTree dw_tree(long long rows, long long hidden) {
    DwTree t;
    t.nodes[0] = dw_partials(rows, hidden);
    t.levels = 1;
    while (t.nodes[t.levels - 1] > 1 && t.levels < DW_MAX_LEVELS) {
        t.nodes[t.levels] = (t.nodes[t.levels - 1] + DW_TREE_FAN - 1) / DW_TREE_FAN;
        ++t.levels;
    }
    int row = 0, counter = 0;
    for (int l = 0; l < t.levels; ++l) {
        t.first_row[l] = row;
        t.first_counter[l] = counter;
        if (l + 1 < t.levels) row += t.nodes[l];
        if (l > 0) counter += t.nodes[l];
    }
    t.rows_below_root = row;
    return t;
}

// Offset (in floats) of the reference kernel's region.
KTUNE_HD constexpr long long dw_reference_offset(long long rows, long long hidden) {
    return DW_COUNTER_WORDS + static_cast<long long>(dw_tree(rows, hidden).rows_below_root) * dw_row_stride(hidden);
}

// Floats of scratch the op needs (tuned and reference regions together).
KTUNE_HD constexpr long long dw_scratch_floats(long long rows, long long hidden) {
    return dw_reference_offset(rows, hidden) + DW_REFERENCE_HEADER + 2 * hidden;
}

}  // namespace ktune::rmsnorm_bwd_layout
