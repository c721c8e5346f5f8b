#pragma once
// Weight-only quantized linear (y = x W^T): the packed weight layouts the kernels read, buffer sizes, the split-K bound
// and the scratch layout. Plain C++ (host and device): the op description, the host packing functions
// (quant_linear_pack.hpp), the reference kernels and the tuned kernels all locate a weight through these functions.
//
// Logical weights W[n, k], n < N, k < K:
//   INT4: unsigned q in [0, 16), w = (q - zero[g, n]) * scale[g, n] with g = k / G (group size G, a multiple of 64;
//         the last group may be partial when G does not divide K); scale of T and zero of u8 in [0, 16), one per
//         (group, n), in the packed order of int4_param_index below.
//   INT8: signed q in [-128, 128), w = q * scale[n]; scale [N] of T.
//
// Packed layout (the kernel's): the weights are cut into tiles of 16 rows (n) by one chunk of k (64 for INT4, 32 for
// INT8), stored tile-row by tile-row ((n / 16) * chunks + k / CHUNK_K): each tile is 512 bytes, 16 bytes per lane of a
// warp, and a lane's 16 bytes are exactly its A fragments of the mma.m16n8k16 steps of that chunk (4 steps for INT4,
// 2 for INT8), ordered so that a shift and a lop3 (INT4) or a byte permute (INT8) dequantize a pair of weights into a
// register (kernels/quant_linear/quant_linear_gemv.cuh). Lane 4g + t holds rows g and g + 8 of the tile and the
// logical k offsets CHUNK_K / 4 * t .. + CHUNK_K / 4 - 1 of the chunk (the mma's k order is permuted consistently
// for x, which is therefore read as 16 or 32 contiguous bytes per lane). N is padded to a multiple of 16 and K to a
// multiple of CHUNK_K; padding weights are never used (their x is zero, their outputs are not written), so any bytes
// may fill them. Random bytes are valid weights in this layout, which is how the tuner fills it.
//
// INT4 scales and zero points are packed too, per tile of 16 rows: a tile's groups one after another, 16 values per
// group in the order of the fragment rows, row r of the tile at 2 * (r % 8) + r / 8. Lane 4g + t then finds the two
// rows it needs (g and g + 8) side by side: one 32-bit load for a chunk's two scales and one 16-bit load for its two
// zero points, at an address that only moves by a constant per group (the plain [groups, N] order took four loads and
// a bounds check per row). Padding rows may hold anything, as for the weights.
//
// Plain layouts (the usual ones, for the host packing functions and tests): INT4 [N, ceil(K / 2)] bytes, weight (n, k)
// in byte n * ceil(K / 2) + k / 2, the low nibble for even k (a padding nibble of odd K is 0), scales and zero points
// [ceil(K / G), N]; INT8 [N, K].
//
// Scratch (fp32 words, zero-filled once; the kernel leaves the counters at zero): [0, counter_words(M, N)) arrival
// counters, one per (n block, m block) of a launch; then SPLIT_K partial outputs [SPLIT_K, M, N].
#include "kernels/common/ktune_device.cuh"

namespace ktune::quant_linear_layout {

inline constexpr int TILE_N = 16;
inline constexpr int TILE_BYTES = 512;
inline constexpr int INT4_CHUNK_K = 64;
inline constexpr int INT8_CHUNK_K = 32;
inline constexpr int MAX_SPLIT_K = 16;
inline constexpr long long MAX_SPLIT_FLOATS = 1ll << 24;  // bound of SPLIT_K * M * N (64 MiB of partials)

template <int BITS>
KTUNE_HD constexpr int chunk_k() {
    return BITS == 4 ? INT4_CHUNK_K : INT8_CHUNK_K;
}

KTUNE_HD constexpr long long padded_n(long long n) { return (n + TILE_N - 1) / TILE_N * TILE_N; }
KTUNE_HD constexpr long long chunks(long long k, int chunk) { return (k + chunk - 1) / chunk; }
KTUNE_HD constexpr long long groups(long long k, long long group) { return (k + group - 1) / group; }

// Bytes of the packed weights.
KTUNE_HD constexpr long long int4_weight_bytes(long long n, long long k) {
    return padded_n(n) * chunks(k, INT4_CHUNK_K) * INT4_CHUNK_K / 2;
}
KTUNE_HD constexpr long long int8_weight_bytes(long long n, long long k) {
    return padded_n(n) * chunks(k, INT8_CHUNK_K) * INT8_CHUNK_K;
}

// Values of the packed INT4 scales (and of the zero points): every group of every 16-row tile, padding rows included.
KTUNE_HD constexpr long long int4_params(long long n, long long k, long long group) {
    return padded_n(n) * groups(k, group);
}

// Index of the scale (and zero point) of row n, group grp, in the packed INT4 order (`n_groups` = groups(K, G)).
KTUNE_HD constexpr long long int4_param_index(long long n, long long grp, long long n_groups) {
    const long long tile = n / TILE_N;
    const int r = static_cast<int>(n % TILE_N);
    return (tile * n_groups + grp) * TILE_N + 2 * (r % 8) + r / 8;
}

// Byte offset of the 16 bytes lane `lane` loads for tile row `tile` (n / 16) and chunk `chunk`.
KTUNE_HD constexpr long long lane_offset(long long tile, long long chunk, long long chunks_per_row, int lane) {
    return ((tile * chunks_per_row + chunk) * 32 + lane) * 16;
}

struct Position {
    long long byte;
    int shift;  // INT4: 0 (low nibble) or 4 (high nibble); INT8: 0
};

// Where weight (n, k) of an N x K INT4 matrix lives in the packed buffer.
KTUNE_HD constexpr Position int4_position(long long n, long long k, long long K) {
    const long long tile = n / TILE_N, chunk = k / INT4_CHUNK_K;
    const int r = static_cast<int>(n % TILE_N), kk = static_cast<int>(k % INT4_CHUNK_K);
    const int g = r % 8, upper = r / 8;                    // row g or g + 8 of the mma fragment
    const int t = kk / 16, j = (kk % 16) / 4, e = kk % 4;  // lane 4g + t, mma step j, element e of the step
    // Word j's nibbles: 0, 4 = (row g, e 0, 1); 1, 5 = (row g + 8, e 0, 1); 2, 6 = (row g, e 2, 3); 3, 7 = (row g + 8,
    // e 2, 3): (w >> 4p) & 0x000F000F puts nibbles p and p + 4 in the two halves of fragment register p.
    const int nibble = (e / 2) * 2 + upper + (e % 2) * 4;
    const long long word = lane_offset(tile, chunk, chunks(K, INT4_CHUNK_K), 4 * g + t) + 4 * j;
    return {word + nibble / 2, (nibble % 2) * 4};
}

// Where weight (n, k) of an N x K INT8 matrix lives in the packed buffer.
KTUNE_HD constexpr Position int8_position(long long n, long long k, long long K) {
    const long long tile = n / TILE_N, chunk = k / INT8_CHUNK_K;
    const int r = static_cast<int>(n % TILE_N), kk = static_cast<int>(k % INT8_CHUNK_K);
    const int g = r % 8, upper = r / 8;
    const int t = kk / 8, j = (kk % 8) / 4, e = kk % 4;
    // Words 2j and 2j + 1 of the lane: bytes (row g, e 0), (row g, e 1), (row g + 8, e 0), (row g + 8, e 1), then the
    // same for e 2, 3: a byte permute of a word's bytes 0, 1 and 2, 3 gives fragment registers 0, 1 (and 2, 3).
    const int word = 2 * j + e / 2, byte = upper * 2 + e % 2;
    return {lane_offset(tile, chunk, chunks(K, INT8_CHUNK_K), 4 * g + t) + 4 * word + byte, 0};
}

// The most SPLIT_K blocks a configuration may use: SPLIT_K * M * N <= 2^24 and SPLIT_K <= 16 (the YAML's constraint);
// the kernel writes nothing when SPLIT_K exceeds it.
KTUNE_HD constexpr int max_split_k(long long m, long long n) {
    const long long mn = m * n > 0 ? m * n : 1;
    const long long cap = MAX_SPLIT_FLOATS / mn;
    return static_cast<int>(cap < 1 ? 1 : (cap > MAX_SPLIT_K ? MAX_SPLIT_K : cap));
}

// Counters: at most one per (16-row n block, 8-row m block).
KTUNE_HD constexpr long long counter_words(long long m, long long n) {
    return ((n + TILE_N - 1) / TILE_N * ((m + 7) / 8) + 3) / 4 * 4;
}

KTUNE_HD constexpr long long scratch_floats(long long m, long long n) {
    return counter_words(m, n) + static_cast<long long>(max_split_k(m, n)) * m * n;
}

}  // namespace ktune::quant_linear_layout
