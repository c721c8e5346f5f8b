#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {
namespace {

TEST(PlanStrategy, AutoIsExhaustiveUpToTheLargeSpaceThreshold) {
    const StrategyPlan p = plan_strategy("auto", std::nullopt, kLargeSpace);
    EXPECT_EQ(p.name, "exhaustive");
    EXPECT_FALSE(p.budget);
    EXPECT_FALSE(p.automatic);
}

TEST(PlanStrategy, AutoSearchesALargeSpaceWithABudgetProportionalToIt) {
    const StrategyPlan p = plan_strategy("auto", std::nullopt, 20000);
    EXPECT_EQ(p.name, kLargeSpaceStrategy);
    EXPECT_EQ(p.budget, std::int64_t(kLargeSpaceBudgetFraction * 20000));
    EXPECT_TRUE(p.automatic);
    EXPECT_EQ(plan_strategy("auto", std::nullopt, kLargeSpace + 1).budget, kLargeSpaceMinBudget);
}

TEST(PlanStrategy, AutoKeepsTheBudgetTheUserGave) { EXPECT_EQ(plan_strategy("auto", 64, 20000).budget, 64); }

TEST(PlanStrategy, ExhaustiveStaysExhaustiveHoweverLargeTheSpace) {
    const StrategyPlan p = plan_strategy("exhaustive", std::nullopt, 1000000);
    EXPECT_EQ(p.name, "exhaustive");
    EXPECT_FALSE(p.budget);
    EXPECT_FALSE(p.automatic);
}

TEST(PlanStrategy, RefusesAnUnknownStrategy) { EXPECT_THROW(plan_strategy("frobnicate", std::nullopt, 10), Error); }

}  // namespace
}  // namespace ktune
