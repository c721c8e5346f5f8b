#pragma once
// SHA-256 (FIPS 180-4) for cache keys and source hashes. Our own small implementation: one owner per third-party
// library, and a hash is not worth a dependency.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ktune::detail {

class Sha256 {
public:
    Sha256();
    void update(std::string_view bytes);
    std::array<std::uint8_t, 32> finish();  // the object must not be updated afterwards

private:
    void compress(const std::uint8_t* block);

    std::array<std::uint32_t, 8> m_state;
    std::array<std::uint8_t, 64> m_block{};
    std::size_t m_block_used = 0;
    std::uint64_t m_total_bytes = 0;
};

std::string to_hex(const std::array<std::uint8_t, 32>& digest);

}  // namespace ktune::detail
