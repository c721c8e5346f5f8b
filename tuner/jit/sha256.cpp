#include "tuner/jit/sha256.hpp"

#include <algorithm>
#include <cstring>

#include "tuner/jit/compile_service.hpp"

namespace ktune::detail {

namespace {

constexpr std::array<std::uint32_t, 64> k_round_constants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256()
    : m_state{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::compress(const std::uint8_t* block) {
    std::array<std::uint32_t, 64> w;
    for (int i = 0; i < 16; ++i) {
        w[i] = std::uint32_t(block[4 * i]) << 24 | std::uint32_t(block[4 * i + 1]) << 16 |
               std::uint32_t(block[4 * i + 2]) << 8 | std::uint32_t(block[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
        const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = m_state[0], b = m_state[1], c = m_state[2], d = m_state[3];
    std::uint32_t e = m_state[4], f = m_state[5], g = m_state[6], h = m_state[7];
    for (int i = 0; i < 64; ++i) {
        const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        const std::uint32_t ch = (e & f) ^ (~e & g);
        const std::uint32_t t1 = h + s1 + ch + k_round_constants[i] + w[i];
        const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        const std::uint32_t t2 = s0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    m_state[0] += a;
    m_state[1] += b;
    m_state[2] += c;
    m_state[3] += d;
    m_state[4] += e;
    m_state[5] += f;
    m_state[6] += g;
    m_state[7] += h;
}

void Sha256::update(std::string_view bytes) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
    std::size_t n = bytes.size();
    m_total_bytes += n;
    if (m_block_used > 0) {
        const std::size_t take = std::min(n, m_block.size() - m_block_used);
        std::memcpy(m_block.data() + m_block_used, p, take);
        m_block_used += take;
        p += take;
        n -= take;
        if (m_block_used < m_block.size()) return;
        compress(m_block.data());
        m_block_used = 0;
    }
    for (; n >= 64; p += 64, n -= 64) compress(p);
    if (n > 0) {
        std::memcpy(m_block.data(), p, n);
        m_block_used = n;
    }
}

std::array<std::uint8_t, 32> Sha256::finish() {
    const std::uint64_t bit_length = m_total_bytes * 8;
    // Padding: a 1 bit, zeros up to 56 mod 64, then the message length in bits, big-endian.
    std::array<char, 72> pad{};
    pad[0] = char(0x80);
    const std::size_t zeros = (m_block_used < 56 ? 56 : 120) - m_block_used;
    update(std::string_view(pad.data(), zeros));
    std::array<char, 8> length;
    for (int i = 0; i < 8; ++i) length[i] = char(bit_length >> (56 - 8 * i));
    update(std::string_view(length.data(), length.size()));

    std::array<std::uint8_t, 32> digest;
    for (int i = 0; i < 8; ++i) {
        for (int j = 0; j < 4; ++j) digest[4 * i + j] = std::uint8_t(m_state[i] >> (24 - 8 * j));
    }
    return digest;
}

std::string to_hex(const std::array<std::uint8_t, 32>& digest) {
    static constexpr char k_digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(64);
    for (std::uint8_t b : digest) {
        hex += k_digits[b >> 4];
        hex += k_digits[b & 15];
    }
    return hex;
}

}  // namespace ktune::detail

namespace ktune {

std::string hash_hex(const std::string& bytes) {
    detail::Sha256 sha;
    sha.update(bytes);
    return detail::to_hex(sha.finish());
}

}  // namespace ktune
