#include <gtest/gtest.h>

#include <set>

#include "core/error.hpp"
#include "tuner/strategy/strategy.hpp"

namespace ktune {
namespace {

std::vector<Config> configs(int n) {
    std::vector<Config> out;
    for (int i = 0; i < n; ++i) out.push_back(Config{{{"BLOCK", 32 * (i + 1)}}});
    return out;
}

const Problem kProblem{Dtype::bf16, {{"M", 16}, {"H", 4096}}};

TEST(ExhaustiveStrategy, ProposesEveryCandidateInOrderThenNothing) {
    auto s = make_strategy("exhaustive", {});
    s->begin(kProblem, configs(5));
    const auto batch = s->propose();
    EXPECT_EQ(batch, configs(5));
    EXPECT_TRUE(s->propose().empty());
}

TEST(RandomStrategy, ProposesABudgetOfDistinctCandidates) {
    auto s = make_strategy("random", {.budget = 7, .seed = 3});
    s->begin(kProblem, configs(40));
    const auto batch = s->propose();
    ASSERT_EQ(batch.size(), 7u);
    std::set<std::string> keys;
    for (const auto& c : batch) keys.insert(c.key());
    EXPECT_EQ(keys.size(), 7u);
}

TEST(RandomStrategy, IsRepeatableForTheSameSeedAndDiffersForAnother) {
    auto a = make_strategy("random", {.budget = 10, .seed = 3});
    auto b = make_strategy("random", {.budget = 10, .seed = 3});
    auto c = make_strategy("random", {.budget = 10, .seed = 4});
    a->begin(kProblem, configs(100));
    b->begin(kProblem, configs(100));
    c->begin(kProblem, configs(100));
    const auto pa = a->propose();
    EXPECT_EQ(pa, b->propose());
    EXPECT_NE(pa, c->propose());
}

TEST(MakeStrategy, RejectsAnUnknownNameListingTheKnownOnes) {
    try {
        make_strategy("frobnicate", {});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("exhaustive, random"), std::string::npos);
    }
}

TEST(MakeStrategy, RejectsABudgetBelowOne) { EXPECT_THROW(make_strategy("random", {.budget = 0}), Error); }

}  // namespace
}  // namespace ktune
