#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "tuner/strategy/space_index.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {
namespace {

const Problem kProblem{Dtype::fp32, {{"N", 1024}}};

StrategyOptions options(std::optional<std::int64_t> budget, std::uint64_t seed, std::optional<int> batch = {}) {
    StrategyOptions o;
    o.budget = budget;
    o.seed = seed;
    o.batch = batch;
    return o;
}

// A small space with holes (the "constraints"): A, B in 0..9, C in {1, 2, 4, 8}, without the points where
// (A + 2B) % 7 == 3.
std::vector<Config> synthetic_space() {
    std::vector<Config> out;
    for (int a = 0; a < 10; ++a)
        for (int b = 0; b < 10; ++b)
            for (int c : {1, 2, 4, 8})
                if ((a + 2 * b) % 7 != 3) out.push_back(Config{{{"A", a}, {"B", b}, {"C", c}}});
    return out;
}

// Convex in the grid coordinates, optimum 1 us at A=6, B=4, C=4; every A <= `failing_a` fails to compile.
Measurement evaluate(const Config& c, int failing_a = 0) {
    Measurement m;
    if (c.at("A") <= failing_a) {
        m.status = Status::compile_error;
        return m;
    }
    const double a = double(c.at("A")) - 6, b = double(c.at("B")) - 4, lc = std::log2(double(c.at("C"))) - 2;
    m.stats.p50 = 1 + a * a + b * b + lc * lc;
    return m;
}

// Runs a strategy to its end or the budget; returns every proposal, in order.
std::vector<Config> run(const std::string& name, StrategyOptions o, const std::vector<Config>& space,
                        int failing_a = 0) {
    auto s = make_strategy(name, o);
    s->begin(kProblem, space);
    std::vector<Config> all;
    for (auto batch = s->propose(); !batch.empty(); batch = s->propose()) {
        if (o.batch) {
            EXPECT_LE(batch.size(), std::size_t(*o.batch));
        }
        for (const Config& c : batch) {
            s->observe(c, evaluate(c, failing_a));
            all.push_back(c);
        }
    }
    return all;
}

class AdaptiveStrategyTest : public testing::TestWithParam<std::string> {};

TEST_P(AdaptiveStrategyTest, IsRepeatableForTheSameSeedAndDiffersForAnother) {
    const auto space = synthetic_space();
    const auto a = run(GetParam(), options(60, 5), space);
    EXPECT_EQ(a, run(GetParam(), options(60, 5), space));
    EXPECT_NE(a, run(GetParam(), options(60, 6), space));
}

TEST_P(AdaptiveStrategyTest, ProposesOnlyValidConfigurationsEachOnceUntilTheSpaceIsDone) {
    const auto space = synthetic_space();
    const auto all = run(GetParam(), options({}, 2), space);
    std::set<std::string> valid, seen;
    for (const Config& c : space) valid.insert(c.key());
    for (const Config& c : all) {
        EXPECT_TRUE(valid.contains(c.key())) << c.key();
        EXPECT_TRUE(seen.insert(c.key()).second) << "proposed twice: " << c.key();
    }
    EXPECT_EQ(seen, valid);  // without a budget, every candidate in the end
}

TEST_P(AdaptiveStrategyTest, KeepsToTheBudgetAndTheBatchSize) {
    const auto all = run(GetParam(), options(37, 1, 5), synthetic_space());
    EXPECT_EQ(all.size(), 37u);
}

TEST_P(AdaptiveStrategyTest, FindsTheOptimumOfAConvexSpaceWithinAFifthOfIt) {
    const auto space = synthetic_space();
    const Config optimum{{{"A", 6}, {"B", 4}, {"C", 4}}};
    const std::int64_t budget = std::int64_t(space.size()) / 5;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        const auto all = run(GetParam(), options(budget, seed), space);
        EXPECT_NE(std::ranges::find(all, optimum), all.end()) << "seed " << seed;
    }
}

TEST_P(AdaptiveStrategyTest, LearnsToAvoidWhatFails) {
    // A third of the space (A <= 2) fails; random search would spend a third of its budget there.
    const auto space = synthetic_space();
    std::size_t proposed = 0, failing = 0;
    for (std::uint64_t seed = 1; seed <= 5; ++seed)
        for (const Config& c : run(GetParam(), options(80, seed), space, 2)) {
            ++proposed;
            failing += c.at("A") <= 2 ? 1 : 0;
        }
    EXPECT_LT(double(failing) / double(proposed), 0.2);
}

TEST_P(AdaptiveStrategyTest, CrossesABandOfFailuresToTheOptimum) {
    // Every A = 7 fails, between the optimum (A = 6) and the A = 8, 9 side; within two fifths of the space.
    const auto space = synthetic_space();
    const Config optimum{{{"A", 6}, {"B", 4}, {"C", 4}}};
    int found = 0;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        auto s = make_strategy(GetParam(), options(std::int64_t(space.size()) * 2 / 5, seed));
        s->begin(kProblem, space);
        bool hit = false;
        for (auto batch = s->propose(); !batch.empty(); batch = s->propose())
            for (const Config& c : batch) {
                Measurement m = evaluate(c, -1);
                if (c.at("A") == 7) m.status = Status::compile_error;
                s->observe(c, m);
                hit = hit || c == optimum;
            }
        found += hit ? 1 : 0;
    }
    EXPECT_EQ(found, 5);
}

INSTANTIATE_TEST_SUITE_P(Strategies, AdaptiveStrategyTest, testing::Values("annealing", "genetic", "pattern", "forest"),
                         [](const auto& info) { return info.param; });

TEST(SpaceIndex, FindsNeighboursOneStepAwayOnEachAxisSkippingInvalidPoints) {
    const auto space = synthetic_space();
    const SpaceIndex grid(space);
    const auto at = [&](int a, int b, int c) { return *grid.find(Config{{{"A", a}, {"B", b}, {"C", c}}}); };
    std::set<std::size_t> got;
    for (std::size_t i : grid.neighbours(at(5, 5, 4))) got.insert(i);
    // (4,5,4) is a hole: 4 + 10 = 14, 14 % 7 = 0 is fine; (6,5,4): 16 % 7 = 2 fine; (5,4,4): 13 % 7 = 6 fine;
    // (5,6,4): 17 % 7 = 3 is a hole.
    EXPECT_EQ(got, (std::set<std::size_t>{at(4, 5, 4), at(6, 5, 4), at(5, 4, 4), at(5, 5, 2), at(5, 5, 8)}));
}

}  // namespace
}  // namespace ktune
