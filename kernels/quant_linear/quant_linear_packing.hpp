#pragma once
// Host-side packing of plain quantized weights into the kernels' layout (kernels/quant_linear/quant_linear_layout.cuh),
// and back: header-only, on raw arrays, with no dependency beyond that layout, so that a program compiled against an
// exported linear_int4 / linear_int8 header (which includes this file) packs its weights without linking ktune.
// ktune's own vector interface with error messages (quant_linear_pack.hpp) is built on these functions.
//
// Each function returns false, writing nothing, when N or K (or G) is < 1 or an output pointer is null. The packed
// array must hold the layout's size (int4_weight_bytes(N, K), int4_params(N, K, G), int8_weight_bytes(N, K)), whose
// padding the packers zero.
#include <cstdint>

#include "kernels/quant_linear/quant_linear_layout.cuh"

namespace ktune::quant_linear_packing {

namespace layout = quant_linear_layout;

// Bytes of one plain INT4 row: two weights a byte, weight (n, k) in the low nibble (even k) or high nibble (odd k)
// of byte n * plain_int4_row(K) + k / 2.
constexpr std::int64_t plain_int4_row(std::int64_t k) { return (k + 1) / 2; }

// plain: [N, ceil(K / 2)] bytes; packed: int4_weight_bytes(N, K) bytes.
inline bool pack_int4(const std::uint8_t* plain, std::int64_t n, std::int64_t k, std::uint8_t* packed) {
    if (n < 1 || k < 1 || plain == nullptr || packed == nullptr) return false;
    for (std::int64_t i = 0; i < layout::int4_weight_bytes(n, k); ++i) packed[i] = 0;
    const std::int64_t row = plain_int4_row(k);
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) {
            const unsigned q = (plain[r * row + c / 2] >> ((c % 2) * 4)) & 0xFu;
            const layout::Position p = layout::int4_position(r, c, k);
            packed[p.byte] = static_cast<std::uint8_t>(packed[p.byte] | (q << p.shift));
        }
    return true;
}

// The inverse: packed int4_weight_bytes(N, K) bytes into plain [N, ceil(K / 2)] (a padding nibble of odd K is 0).
inline bool unpack_int4(const std::uint8_t* packed, std::int64_t n, std::int64_t k, std::uint8_t* plain) {
    if (n < 1 || k < 1 || plain == nullptr || packed == nullptr) return false;
    const std::int64_t row = plain_int4_row(k);
    for (std::int64_t i = 0; i < n * row; ++i) plain[i] = 0;
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) {
            const layout::Position p = layout::int4_position(r, c, k);
            const unsigned q = (packed[p.byte] >> p.shift) & 0xFu;
            plain[r * row + c / 2] = static_cast<std::uint8_t>(plain[r * row + c / 2] | (q << ((c % 2) * 4)));
        }
    return true;
}

// INT4 scales or zero points: plain [ceil(K / G), N] into the packed order (int4_params(N, K, G) values, padding rows
// E{}), and back. E: the bits of fp16 / bf16 scales (std::uint16_t, __half, __nv_bfloat16), zero points
// (std::uint8_t), or any copyable value.
template <typename E>
inline bool pack_int4_params(const E* plain, std::int64_t n, std::int64_t k, std::int64_t group, E* packed) {
    if (n < 1 || k < 1 || group < 1 || plain == nullptr || packed == nullptr) return false;
    const std::int64_t groups = layout::groups(k, group);
    for (std::int64_t i = 0; i < layout::int4_params(n, k, group); ++i) packed[i] = E{};
    for (std::int64_t g = 0; g < groups; ++g)
        for (std::int64_t r = 0; r < n; ++r) packed[layout::int4_param_index(r, g, groups)] = plain[g * n + r];
    return true;
}

template <typename E>
inline bool unpack_int4_params(const E* packed, std::int64_t n, std::int64_t k, std::int64_t group, E* plain) {
    if (n < 1 || k < 1 || group < 1 || plain == nullptr || packed == nullptr) return false;
    const std::int64_t groups = layout::groups(k, group);
    for (std::int64_t g = 0; g < groups; ++g)
        for (std::int64_t r = 0; r < n; ++r) plain[g * n + r] = packed[layout::int4_param_index(r, g, groups)];
    return true;
}

// plain: [N, K] signed bytes; packed: int8_weight_bytes(N, K) bytes.
inline bool pack_int8(const std::int8_t* plain, std::int64_t n, std::int64_t k, std::int8_t* packed) {
    if (n < 1 || k < 1 || plain == nullptr || packed == nullptr) return false;
    for (std::int64_t i = 0; i < layout::int8_weight_bytes(n, k); ++i) packed[i] = 0;
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) packed[layout::int8_position(r, c, k).byte] = plain[r * k + c];
    return true;
}

inline bool unpack_int8(const std::int8_t* packed, std::int64_t n, std::int64_t k, std::int8_t* plain) {
    if (n < 1 || k < 1 || plain == nullptr || packed == nullptr) return false;
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) plain[r * k + c] = packed[layout::int8_position(r, c, k).byte];
    return true;
}

}  // namespace ktune::quant_linear_packing
