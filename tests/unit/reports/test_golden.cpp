#include <gtest/gtest.h>

#include "tests/unit/reports/golden.hpp"

namespace ktune::test {
namespace {

TEST(GoldenMatcher, APlaceholderMatchesIntegersDecimalsSignsAndExponents) {
    EXPECT_EQ(golden_mismatch("{num} {num} {num} {num} {num}", "12 3.50 -0.25 +34.2 1e-06"), "");
}

TEST(GoldenMatcher, APlaceholderMatchesANumberFollowedByAUnit) {
    EXPECT_EQ(golden_mismatch("{num}x {num} GB/s {num}rem", "1.52x 2950 GB/s .3rem"), "");
}

TEST(GoldenMatcher, APlaceholderDoesNotMatchText) { EXPECT_NE(golden_mismatch("p50 {num} us", "p50 - us"), ""); }

TEST(GoldenMatcher, LiteralTextMustMatchExactlyAndTheMismatchNamesTheLine) {
    const std::string m = golden_mismatch("a\nM=4096 {num}\n", "a\nM=4097 1.5\n");
    EXPECT_NE(m.find("line 2, column 6"), std::string::npos) << m;
}

TEST(GoldenMatcher, AMissingOrExtraLineIsAMismatch) {
    EXPECT_NE(golden_mismatch("a\nb\n", "a\n"), "");
    EXPECT_NE(golden_mismatch("a\n", "a\nb\n"), "");
}

TEST(GoldenMatcher, CrlfLineEndsMatchLfOnes) { EXPECT_EQ(golden_mismatch("a,{num}\nb\n", "a,1\r\nb\r\n"), ""); }

TEST(GoldenMatcher, GeneratedGoldensReplaceMeasurementsButKeepNamesAndShapes) {
    EXPECT_EQ(golden_from("bf16:M=4096,H=4096 sm_90 #1f6feb 12.30 / 1.52x +3.5 %"),
              "bf16:M=4096,H=4096 sm_90 #1f6feb {num} / {num}x {num} %");
}

TEST(GoldenMatcher, GeneratedGoldensKeepDatesAndNumbersGluedToAUnit) {
    EXPECT_EQ(golden_from("H100 80GB at 2025-06-01T12:00:00Z, torch 2.5.1, w3.org/2000/svg, 2902 GB/s"),
              "H100 80GB at 2025-06-01T12:00:00Z, torch 2.5.1, w3.org/2000/svg, {num} GB/s");
}

TEST(GoldenMatcher, AGeneratedGoldenMatchesTheTextItCameFrom) {
    const std::string text = "p50 12.3 us, 2025-06-01T12:00:00Z, viewBox=\"0 0 640.0 360.0\", 1e-05\n";
    EXPECT_EQ(golden_mismatch(golden_from(text), text), "");
}

}  // namespace
}  // namespace ktune::test
