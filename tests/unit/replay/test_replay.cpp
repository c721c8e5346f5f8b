#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "tuner/interop/t4.hpp"
#include "tuner/replay/comparison.hpp"
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

TEST(ReplayTrace, ChargesTheRecordedCostsPlusTheOwnTime) {
    const ReplaySpace s = tiny();
    TracedRun t;
    t.seed = 7;
    t.configs = {s.entries[1].config, s.entries[0].config};
    t.own_time_s = {0.5, 0.25};
    const ReplayRun run = replay_trace(s, "kt:x", t);
    ASSERT_EQ(run.evaluations.size(), 2u);
    EXPECT_EQ(run.strategy, "kt:x");
    EXPECT_EQ(run.seed, 7u);
    EXPECT_EQ(run.evaluations[0].entry, 1u);
    EXPECT_DOUBLE_EQ(run.evaluations[0].value, s.entries[1].value);
    EXPECT_NEAR(run.evaluations[0].time_s, 0.5 + s.entries[1].cost_s, 1e-12);
    EXPECT_TRUE(std::isnan(run.evaluations[1].value));  // entry 0 failed
    EXPECT_NEAR(run.evaluations[1].time_s, 0.75 + s.entries[1].cost_s + s.entries[0].cost_s, 1e-12);
    EXPECT_NEAR(replay_trace(s, "kt:x", t, false).evaluations[1].time_s, s.entries[1].cost_s + s.entries[0].cost_s,
                1e-12);
}

TEST(ReplayTrace, RejectsAConfigurationOutsideTheSpaceOrTwice) {
    const ReplaySpace s = tiny();
    TracedRun twice;
    twice.configs = {s.entries[2].config, s.entries[2].config};
    EXPECT_THROW(replay_trace(s, "kt:x", twice), Error);
    TracedRun outside;
    outside.configs = {Config{{{"block_size_x", 3}, {"tile", 1}}}};
    EXPECT_THROW(replay_trace(s, "kt:x", outside), Error);
    TracedRun uneven;
    uneven.configs = {s.entries[2].config};
    uneven.own_time_s = {0.1, 0.2};
    EXPECT_THROW(replay_trace(s, "kt:x", uneven), Error);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ReplayEveryStrategy, testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// Two problems of one op whose optimum is the same configuration, far from the rest: with transfer, the second
// problem's first evaluation is that optimum whatever the seed; without, it is not for most seeds.
std::vector<ReplaySpace> two_problems() {
    std::vector<ReplaySpace> out;
    for (std::int64_t m : {16, 32}) {
        ReplaySpace s;
        s.name = "p" + std::to_string(m);
        s.problem = Problem{Dtype::bf16, {{"M", m}}};
        for (std::int64_t b = 1; b <= 40; ++b) {
            ReplayEntry e;
            e.config = Config{{{"B", b}}};
            e.value = b == 27 ? 1.0 : 2.0 + double(b % 5);
            e.cost_s = 0.01;
            s.entries.push_back(e);
        }
        out.push_back(s);
    }
    return out;
}

// In-run, the second problem's strategy learns from what the same strategy and seed evaluated at the first (its ok
// results, fastest first), never from the first's unevaluated or failed entries; with the history, from all of the
// first's ok entries; without transfer, or with in-run learning off, from nothing.
TEST(ReplayTransfer, ALaterProblemsModelLearnsWhatTheEarlierOneEvaluatedNeverTheRestOfItsSpace) {
    std::vector<ReplaySpace> spaces = two_problems();
    spaces[0].entries[4].status = Status::invalid_result;  // B=5 failed at M=16
    ComparisonOptions o;
    o.strategies = {"forest"};
    o.runs = 2;
    o.budget = 10;
    o.count_strategy_time = false;
    std::map<std::pair<std::string, std::uint64_t>, std::vector<ProblemResults>> learned;
    o.on_learn = [&](const ReplaySpace& s, std::uint64_t seed, const std::vector<ProblemResults>& others) {
        learned[{s.name, seed}] = others;
    };
    compare_strategies(spaces, o);
    ASSERT_EQ(learned.size(), 4u);
    for (std::uint64_t seed : {1, 2}) {
        SCOPED_TRACE(seed);
        EXPECT_TRUE(learned.at({"p16", seed}).empty());
        const std::vector<ProblemResults>& seen = learned.at({"p32", seed});
        ASSERT_EQ(seen.size(), 1u);
        EXPECT_EQ(seen[0].problem, *spaces[0].problem);
        // The first problem's run, replayed alone (it had no hints and nothing to learn from): its ok evaluations.
        std::vector<std::pair<std::string, double>> evaluated;
        for (const Evaluation& e : replay(spaces[0], "forest", seed, options(10, false)).evaluations)
            if (!std::isnan(e.value)) evaluated.emplace_back(spaces[0].entries[e.entry].config.key(), e.value);
        std::ranges::stable_sort(evaluated, {}, [](const auto& e) { return e.second; });
        std::vector<std::pair<std::string, double>> times;
        for (const auto& [c, t] : seen[0].times) times.emplace_back(c.key(), t);
        EXPECT_EQ(times, evaluated);
        EXPECT_LT(times.size(), spaces[0].entries.size() - 1);
    }
    o.history = true;
    learned.clear();
    compare_strategies(spaces, o);
    ASSERT_EQ(learned.at({"p32", 1}).size(), 2u);  // both problems: the strategy leaves its own out
    EXPECT_EQ(learned.at({"p32", 1})[0].times.size(), spaces[0].entries.size() - 1);  // every ok entry
    o.history = false;
    o.learn_in_run = false;
    learned.clear();
    compare_strategies(spaces, o);
    EXPECT_TRUE(learned.at({"p32", 1}).empty());
    o.learn_in_run = true;
    o.transfer = false;
    learned.clear();
    compare_strategies(spaces, o);
    EXPECT_TRUE(learned.at({"p32", 1}).empty());
}

TEST(ReplayTransfer, ALaterProblemStartsFromTheWinnerOfAnEarlierOne) {
    ComparisonOptions o;
    o.strategies = {"forest"};
    o.runs = 10;
    o.budget = 40;
    o.count_strategy_time = false;
    const std::vector<Comparison> with = compare_strategies(two_problems(), o);
    ASSERT_EQ(with.size(), 2u);
    EXPECT_DOUBLE_EQ(with[1].strategies[0].share_within_small[0], 1.0);  // 10 % of 40: the first 4 evaluations
    o.transfer = false;
    const std::vector<Comparison> without = compare_strategies(two_problems(), o);
    EXPECT_LT(without[1].strategies[0].share_within_small[0], 0.5);
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// Three problems, each with its own optimum far from the rest: M=16's at B=27, M=32's at B=3, M=64's at B=7. At M=32
// and M=64 the other's optimum is within 1 % too; at M=16 neither is. With --history, M=32 and M=64 start from each
// other's optimum and find it at once; M=16 would only if its own optimum leaked into its hints.
std::vector<ReplaySpace> three_problems() {
    std::vector<ReplaySpace> out;
    for (const auto& [m, own, shared] : {std::tuple{16, 27, 0}, std::tuple{32, 3, 7}, std::tuple{64, 7, 3}}) {
        ReplaySpace s;
        s.name = "p" + std::to_string(m);
        s.problem = Problem{Dtype::bf16, {{"M", m}}};
        for (std::int64_t b = 1; b <= 40; ++b) {
            ReplayEntry e;
            e.config = Config{{{"B", b}}};
            e.value = b == own ? 1.0 : b == shared ? 1.005 : 2.0 + double(b % 5);
            e.cost_s = 0.01;
            s.entries.push_back(e);
        }
        out.push_back(s);
    }
    return out;
}

TEST(ReplayHistory, EachProblemStartsFromTheOtherProblemsOptimaNeverItsOwn) {
    ComparisonOptions o;
    o.strategies = {"forest", "random"};
    o.runs = 10;
    o.budget = 40;
    o.count_strategy_time = false;
    o.history = true;
    const std::vector<Comparison> c = compare_strategies(three_problems(), o);
    ASSERT_EQ(c.size(), 3u);
    for (std::size_t s = 0; s < 2; ++s) {
        // 10 % of 40: within 1 % in the first 4 evaluations.
        EXPECT_LT(c[0].strategies[s].share_within_small[0], 0.5) << c[0].strategies[s].strategy;
        EXPECT_DOUBLE_EQ(c[1].strategies[s].share_within_small[0], 1.0) << c[1].strategies[s].strategy;
        EXPECT_DOUBLE_EQ(c[2].strategies[s].share_within_small[0], 1.0) << c[2].strategies[s].strategy;
    }
}

TEST(ReplayHistory, TheOptimaAreEachProblemsFastestOkConfiguration) {
    std::vector<ReplaySpace> spaces = three_problems();
    spaces[0].entries[26].status = Status::invalid_result;  // B=27 failed at M=16: its optimum is the next fastest
    const std::vector<TunedProblem> optima = space_optima(spaces);
    ASSERT_EQ(optima.size(), 3u);
    EXPECT_EQ(optima[0].fastest.at(0).key(), "B=5");  // 2.0, the first of the fastest of the rest
    EXPECT_EQ(optima[1].fastest.at(0).key(), "B=3");
    EXPECT_EQ(optima[2].fastest.at(0).key(), "B=7");
    // Each with its time over the winner's, which orders the hints.
    ASSERT_EQ(optima[0].slowdown.size(), optima[0].fastest.size());
    EXPECT_DOUBLE_EQ(optima[0].slowdown.front(), 1.0);
    for (std::size_t k = 1; k < optima[0].slowdown.size(); ++k)
        EXPECT_GE(optima[0].slowdown[k], optima[0].slowdown[k - 1]);
}

}  // namespace
}  // namespace ktune
