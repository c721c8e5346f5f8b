#include <gtest/gtest.h>

#include <cmath>

#include "reports/size_roofline.hpp"

namespace ktune::test {
namespace {

// A copy at 1, 4 and 16 MB taking 5, 10 and 30 us.
SizeRoofline three_sizes() { return SizeRoofline({{1e6, 5}, {4e6, 10}, {16e6, 30}}); }

TEST(SizeRoofline, IsExactAtAMeasuredSize) {
    const SizeRoofline r = three_sizes();
    EXPECT_EQ(r.at(1e6), 5);
    EXPECT_EQ(r.at(4e6), 10);
    EXPECT_EQ(r.at(16e6), 30);
}

TEST(SizeRoofline, InterpolatesLogTimeAgainstLogBytes) {
    const SizeRoofline r = three_sizes();
    // Halfway between 1 and 4 MB on a log scale (2 MB) is the geometric mean of 5 and 10 us.
    EXPECT_NEAR(r.at(2e6), std::sqrt(5.0 * 10.0), 1e-12);
    EXPECT_NEAR(r.at(8e6), std::sqrt(10.0 * 30.0), 1e-12);
    // A power law is a straight line in log-log: read back exactly at any size in between.
    const auto law = [](double bytes) { return 0.002 * std::pow(bytes, 0.75); };
    const SizeRoofline power({{1e6, law(1e6)}, {64e6, law(64e6)}});
    EXPECT_NEAR(power.at(3.3e6), law(3.3e6), 1e-9 * law(3.3e6));
}

TEST(SizeRoofline, IsUnknownOutsideTheMeasuredSizes) {
    const SizeRoofline r = three_sizes();
    EXPECT_TRUE(std::isnan(r.at(0.999e6)));
    EXPECT_TRUE(std::isnan(r.at(16.001e6)));
    EXPECT_TRUE(std::isnan(r.at(0)));
    EXPECT_TRUE(std::isnan(r.at(std::nan(""))));
}

TEST(SizeRoofline, IsUnknownWithFewerThanTwoSizes) {
    EXPECT_TRUE(std::isnan(SizeRoofline().at(1e6)));
    EXPECT_TRUE(std::isnan(SizeRoofline({{1e6, 5}}).at(1e6)));
    EXPECT_TRUE(std::isnan(SizeRoofline({{1e6, 5}, {1e6, 6}}).at(1e6)));  // one size measured twice
}

TEST(SizeRoofline, TakesPointsInAnyOrderAndTheFastestOfASize) {
    const SizeRoofline r({{16e6, 30}, {1e6, 5}, {4e6, 12}, {4e6, 10}, {4e6, 11}});
    ASSERT_EQ(r.points().size(), 3u);
    EXPECT_EQ(r.points()[0].bytes, 1e6);
    EXPECT_EQ(r.points()[1].us, 10);
    EXPECT_EQ(r.at(4e6), 10);
    EXPECT_NEAR(r.at(2e6), std::sqrt(5.0 * 10.0), 1e-12);
}

TEST(SizeRoofline, DropsPointsWithoutALogarithm) {
    const SizeRoofline r({{0, 1}, {1e6, 5}, {2e6, -1}, {4e6, 10}, {std::nan(""), 3}, {8e6, std::nan("")}});
    EXPECT_EQ(r.points().size(), 2u);
    EXPECT_TRUE(std::isnan(r.at(8e6)));
    EXPECT_NEAR(r.at(2e6), std::sqrt(5.0 * 10.0), 1e-12);
}

}  // namespace
}  // namespace ktune::test
