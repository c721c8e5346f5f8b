#include <string>

#include <gtest/gtest.h>

#include "tuner/jit/compile_service.hpp"
#include "tuner/jit/sha256.hpp"

namespace ktune {
namespace {

// Vectors from FIPS 180-4 / NIST CSHA examples.
TEST(Sha256, HashesTheEmptyString) {
    EXPECT_EQ(hash_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, HashesAbc) {
    EXPECT_EQ(hash_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, HashesAMessageThatNeedsTwoBlocksOfPadding) {
    EXPECT_EQ(hash_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, HashesAMillionRepetitionsOfA) {
    EXPECT_EQ(hash_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, GivesTheSameDigestWhenFedInPiecesOfAnySize) {
    std::string message;
    for (int i = 0; i < 1000; ++i) message += char('a' + i % 26);
    for (std::size_t piece : {1u, 3u, 63u, 64u, 65u, 200u}) {
        detail::Sha256 sha;
        for (std::size_t at = 0; at < message.size(); at += piece)
            sha.update(std::string_view(message).substr(at, piece));
        EXPECT_EQ(detail::to_hex(sha.finish()), hash_hex(message)) << "piece size " << piece;
    }
}

}  // namespace
}  // namespace ktune
