#pragma once
// Host-side packing of quantized weights into the kernels' layout, and CPU references on the plain layout.
// Layouts: kernels/quant_linear/quant_linear_layout.cuh. The tuner never packs: it fills the packed buffers directly
// with random bytes (valid weights in any layout) and the reference kernel reads the same packed buffers. These
// functions are what a caller with ordinary (plain) weights uses, and what the tests use to show that packing loses
// nothing and that the packed reference equals the plain one. The packing itself is quant_linear_packing.hpp
// (header-only, what exported headers ship); these add vectors and messages.
#include <cstdint>
#include <vector>

namespace ktune {

// plain: [N, ceil(K / 2)] bytes, weight (n, k) in the low nibble (even k) or high nibble (odd k) of byte
// n * ceil(K / 2) + k / 2. Returns int4_weight_bytes(N, K) bytes; padding nibbles are 0.
// Throws Error(bad_input) when plain has the wrong size or N, K < 1.
std::vector<std::uint8_t> pack_int4(const std::vector<std::uint8_t>& plain, std::int64_t n, std::int64_t k);
// The inverse (padding dropped; a padding nibble of odd K is 0).
std::vector<std::uint8_t> unpack_int4(const std::vector<std::uint8_t>& packed, std::int64_t n, std::int64_t k);

// INT4 scales or zero points, plain [ceil(K / G), N], into the packed order of int4_param_index (int4_params(N, K, G)
// values, padding rows 0), and back. E: std::uint16_t (the bits of fp16 / bf16 scales), std::uint8_t (zero points) or
// double. Throws Error(bad_input) on a wrong size, N, K < 1 or G < 1.
template <typename E>
std::vector<E> pack_int4_params(const std::vector<E>& plain, std::int64_t n, std::int64_t k, std::int64_t group);
template <typename E>
std::vector<E> unpack_int4_params(const std::vector<E>& packed, std::int64_t n, std::int64_t k, std::int64_t group);

// plain: [N, K] signed bytes. Returns int8_weight_bytes(N, K) bytes; padding is 0.
std::vector<std::int8_t> pack_int8(const std::vector<std::int8_t>& plain, std::int64_t n, std::int64_t k);
std::vector<std::int8_t> unpack_int8(const std::vector<std::int8_t>& packed, std::int64_t n, std::int64_t k);

// y [M, N] in double from x [M, K], plain weights and scales (INT4: scale and zero [ceil(K / G), N]; INT8: scale [N]).
std::vector<double> linear_int4_plain_reference(const std::vector<double>& x, const std::vector<std::uint8_t>& plain,
                                                const std::vector<double>& scale, const std::vector<double>& zero,
                                                std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t group);
std::vector<double> linear_int8_plain_reference(const std::vector<double>& x, const std::vector<std::int8_t>& plain,
                                                const std::vector<double>& scale, std::int64_t m, std::int64_t n,
                                                std::int64_t k);

}  // namespace ktune
