#include "kernels/quant_linear/quant_linear_pack.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"
#include "kernels/quant_linear/quant_linear_packing.hpp"

namespace ktune {
namespace {

namespace layout = quant_linear_layout;

void check_shape(std::int64_t n, std::int64_t k, std::size_t size, std::int64_t expected, const char* what) {
    if (n < 1 || k < 1)
        throw Error(ErrorCategory::bad_input, fmt::format("{} needs N, K >= 1, got N={} K={}", what, n, k), what);
    if (static_cast<std::int64_t>(size) != expected)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{}: {} elements for N={} K={}, expected {}", what, size, n, k, expected), what);
}

using quant_linear_packing::plain_int4_row;

}  // namespace

std::vector<std::uint8_t> pack_int4(const std::vector<std::uint8_t>& plain, std::int64_t n, std::int64_t k) {
    check_shape(n, k, plain.size(), n * plain_int4_row(k), "pack_int4");
    std::vector<std::uint8_t> packed(static_cast<std::size_t>(layout::int4_weight_bytes(n, k)));
    quant_linear_packing::pack_int4(plain.data(), n, k, packed.data());
    return packed;
}

std::vector<std::uint8_t> unpack_int4(const std::vector<std::uint8_t>& packed, std::int64_t n, std::int64_t k) {
    check_shape(n, k, packed.size(), layout::int4_weight_bytes(n, k), "unpack_int4");
    std::vector<std::uint8_t> plain(static_cast<std::size_t>(n * plain_int4_row(k)));
    quant_linear_packing::unpack_int4(packed.data(), n, k, plain.data());
    return plain;
}

namespace {

// packed: the vector holds the packed order (int4_params values), else the plain [groups, N] one.
void check_params(std::int64_t n, std::int64_t k, std::int64_t group, std::size_t size, bool packed, const char* what) {
    if (group < 1) throw Error(ErrorCategory::bad_input, fmt::format("{} needs G >= 1, got G={}", what, group), what);
    check_shape(n, k, size, packed ? layout::int4_params(n, k, group) : layout::groups(k, group) * n, what);
}

}  // namespace

template <typename E>
std::vector<E> pack_int4_params(const std::vector<E>& plain, std::int64_t n, std::int64_t k, std::int64_t group) {
    check_params(n, k, group, plain.size(), /*packed=*/false, "pack_int4_params");
    std::vector<E> packed(static_cast<std::size_t>(layout::int4_params(n, k, group)));
    quant_linear_packing::pack_int4_params(plain.data(), n, k, group, packed.data());
    return packed;
}

template <typename E>
std::vector<E> unpack_int4_params(const std::vector<E>& packed, std::int64_t n, std::int64_t k, std::int64_t group) {
    check_params(n, k, group, packed.size(), /*packed=*/true, "unpack_int4_params");
    std::vector<E> plain(static_cast<std::size_t>(layout::groups(k, group) * n));
    quant_linear_packing::unpack_int4_params(packed.data(), n, k, group, plain.data());
    return plain;
}

template std::vector<std::uint8_t> pack_int4_params(const std::vector<std::uint8_t>&, std::int64_t, std::int64_t,
                                                    std::int64_t);
template std::vector<std::uint16_t> pack_int4_params(const std::vector<std::uint16_t>&, std::int64_t, std::int64_t,
                                                     std::int64_t);
template std::vector<double> pack_int4_params(const std::vector<double>&, std::int64_t, std::int64_t, std::int64_t);
template std::vector<std::uint8_t> unpack_int4_params(const std::vector<std::uint8_t>&, std::int64_t, std::int64_t,
                                                      std::int64_t);
template std::vector<std::uint16_t> unpack_int4_params(const std::vector<std::uint16_t>&, std::int64_t, std::int64_t,
                                                       std::int64_t);
template std::vector<double> unpack_int4_params(const std::vector<double>&, std::int64_t, std::int64_t, std::int64_t);

std::vector<std::int8_t> pack_int8(const std::vector<std::int8_t>& plain, std::int64_t n, std::int64_t k) {
    check_shape(n, k, plain.size(), n * k, "pack_int8");
    std::vector<std::int8_t> packed(static_cast<std::size_t>(layout::int8_weight_bytes(n, k)));
    quant_linear_packing::pack_int8(plain.data(), n, k, packed.data());
    return packed;
}

std::vector<std::int8_t> unpack_int8(const std::vector<std::int8_t>& packed, std::int64_t n, std::int64_t k) {
    check_shape(n, k, packed.size(), layout::int8_weight_bytes(n, k), "unpack_int8");
    std::vector<std::int8_t> plain(static_cast<std::size_t>(n * k));
    quant_linear_packing::unpack_int8(packed.data(), n, k, plain.data());
    return plain;
}

std::vector<double> linear_int4_plain_reference(const std::vector<double>& x, const std::vector<std::uint8_t>& plain,
                                                const std::vector<double>& scale, const std::vector<double>& zero,
                                                std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t group) {
    check_shape(n, k, plain.size(), n * plain_int4_row(k), "linear_int4_plain_reference");
    const std::int64_t row = plain_int4_row(k);
    std::vector<double> y(static_cast<std::size_t>(m * n), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t r = 0; r < n; ++r) {
            double acc = 0.0;
            for (std::int64_t c = 0; c < k; ++c) {
                const unsigned q = (plain[static_cast<std::size_t>(r * row + c / 2)] >> ((c % 2) * 4)) & 0xFu;
                const std::size_t gi = static_cast<std::size_t>((c / group) * n + r);
                acc += x[static_cast<std::size_t>(i * k + c)] * ((static_cast<double>(q) - zero[gi]) * scale[gi]);
            }
            y[static_cast<std::size_t>(i * n + r)] = acc;
        }
    return y;
}

std::vector<double> linear_int8_plain_reference(const std::vector<double>& x, const std::vector<std::int8_t>& plain,
                                                const std::vector<double>& scale, std::int64_t m, std::int64_t n,
                                                std::int64_t k) {
    check_shape(n, k, plain.size(), n * k, "linear_int8_plain_reference");
    std::vector<double> y(static_cast<std::size_t>(m * n), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t r = 0; r < n; ++r) {
            double acc = 0.0;
            for (std::int64_t c = 0; c < k; ++c)
                acc += x[static_cast<std::size_t>(i * k + c)] *
                       (static_cast<double>(plain[static_cast<std::size_t>(r * k + c)]) *
                        scale[static_cast<std::size_t>(r)]);
            y[static_cast<std::size_t>(i * n + r)] = acc;
        }
    return y;
}

}  // namespace ktune
