#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ktune_test_config.hpp"
#include "tuner/interop/t4.hpp"
#include "tuner/replay/replay.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {
namespace {

ReplayOptions options(std::optional<std::int64_t> budget, bool count_strategy_time) {
    ReplayOptions o;
    o.budget = budget;
    o.count_strategy_time = count_strategy_time;
    return o;
}

ReplaySpace tiny() {
    return replay_space_from_t4(read_t4(std::string(KTUNE_TEST_DATA) + "/replay/tiny_T4.json"), "tiny");
}

TEST(ReplaySpace, FromT4KeepsFailuresAsFailedWithTheirCost) {
    const ReplaySpace s = tiny();
    ASSERT_EQ(s.entries.size(), 12u);
    EXPECT_EQ(s.entries[0].status, Status::launch_error);
    EXPECT_EQ(s.entries[11].status, Status::compile_error);
    EXPECT_DOUBLE_EQ(s.entries[0].cost_s, 0.110);
    EXPECT_DOUBLE_EQ(s.entries[7].value, 1.0);
}

class ReplayEveryStrategy : public testing::TestWithParam<std::string> {};

TEST_P(ReplayEveryStrategy, VisitsEachConfigurationOnceAndAddsUpTheirCosts) {
    const ReplaySpace s = tiny();
    const ReplayRun run = replay(s, GetParam(), 3, options({}, false));
    ASSERT_EQ(run.evaluations.size(), s.entries.size());  // no budget: the whole space in the end
    std::set<std::size_t> seen;
    double cost = 0;
    for (const Evaluation& e : run.evaluations) {
        EXPECT_TRUE(seen.insert(e.entry).second);
        cost += s.entries[e.entry].cost_s;
        EXPECT_NEAR(e.time_s, cost, 1e-12);
        EXPECT_EQ(std::isnan(e.value), s.entries[e.entry].status != Status::ok);
    }
}

TEST_P(ReplayEveryStrategy, StopsAtTheBudget) {
    EXPECT_EQ(replay(tiny(), GetParam(), 3, options(5, true)).evaluations.size(), 5u);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ReplayEveryStrategy, testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ktune
