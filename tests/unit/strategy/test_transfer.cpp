#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "tuner/strategy/strategy.hpp"
#include "tuner/strategy/transfer.hpp"

namespace ktune {
namespace {

Problem rows(Dtype d, std::int64_t m, std::int64_t h) { return Problem{d, {{"M", m}, {"H", h}}}; }
Config block(std::int64_t b, std::int64_t v = 4) { return Config{{{"BLOCK", b}, {"VEC", v}}}; }

std::vector<Config> space() {
    std::vector<Config> out;
    for (std::int64_t b : {64, 128, 256, 512, 1024})
        for (std::int64_t v : {1, 2, 4, 8}) out.push_back(block(b, v));
    return out;
}

std::vector<std::string> keys(const std::vector<Config>& cs) {
    std::vector<std::string> out;
    for (const Config& c : cs) out.push_back(c.key());
    return out;
}

TEST(ProblemDistance, ADtypeOfAnotherWidthIsFartherThanAnyShapeOneOfTheSameWidthOneStep) {
    const Problem p = rows(Dtype::bf16, 16, 4096);
    EXPECT_DOUBLE_EQ(problem_distance(p, p), 0);
    EXPECT_DOUBLE_EQ(problem_distance(p, rows(Dtype::bf16, 64, 4096)), 2);  // log2(64 / 16)
    EXPECT_LT(problem_distance(p, rows(Dtype::bf16, 1 << 20, 1)), problem_distance(p, rows(Dtype::fp32, 16, 4096)));
    EXPECT_DOUBLE_EQ(problem_distance(p, rows(Dtype::fp16, 16, 4096)), 1);
    EXPECT_DOUBLE_EQ(problem_distance(p, rows(Dtype::fp16, 32, 4096)), 2);
}

// The winners change along H (BLOCK 128 at H = 1024, 512 at 2048, each 1.5x behind at the other) and not along M.
std::vector<TunedProblem> winners_change_along_h() {
    const auto at = [](std::int64_t m, std::int64_t h) {
        const Config a = block(128), b = block(512);
        return TunedProblem{rows(Dtype::bf16, m, h), {h == 1024 ? a : b, h == 1024 ? b : a}, true, {1.0, 1.5}};
    };
    return {at(1, 1024), at(1, 2048), at(256, 1024), at(256, 2048), at(16, 2048)};
}

TEST(AxisWeights, AnAxisAlongWhichTheWinnersChangeWeighsMore) {
    const AxisWeights w = axis_weights(winners_change_along_h());
    ASSERT_EQ(w.size(), 2u);
    EXPECT_DOUBLE_EQ(w.at("H"), 2.0);             // all of the change: twice the mean of the two axes
    EXPECT_DOUBLE_EQ(w.at("M"), kMinAxisWeight);  // none of it
    const Problem p = rows(Dtype::bf16, 16, 1024);
    EXPECT_DOUBLE_EQ(problem_distance(p, rows(Dtype::bf16, 1, 1024), w), 0.4);   // four doublings of M
    EXPECT_DOUBLE_EQ(problem_distance(p, rows(Dtype::bf16, 16, 2048), w), 2.0);  // one of H
}

TEST(AxisWeights, AProblemLeftOutTeachesNothing) {
    std::vector<TunedProblem> tuned = winners_change_along_h();
    const Problem left_out = tuned[1].problem;  // M = 1, H = 2048: its pairs along M and along H
    const AxisWeights all = axis_weights(tuned);
    const AxisWeights without = axis_weights(tuned, &left_out);
    tuned.erase(tuned.begin() + 1);
    EXPECT_EQ(without, axis_weights(tuned));
    tuned = {winners_change_along_h()[0], winners_change_along_h()[1]};  // one pair along H
    EXPECT_EQ(axis_weights(tuned).size(), 1u);
    EXPECT_TRUE(axis_weights(tuned, &left_out).empty());
    EXPECT_FALSE(all.empty());
}

TEST(AxisWeights, NoneWithoutTwoProblemsOfOneDtypeThatDifferAlongOneAxisAlone) {
    const std::vector<TunedProblem> tuned = winners_change_along_h();
    EXPECT_TRUE(axis_weights({tuned[0], tuned[3]}).empty());  // M and H both differ
    TunedProblem fp16 = tuned[1];
    fp16.problem.dtype = Dtype::fp16;
    EXPECT_TRUE(axis_weights({tuned[0], fp16}).empty());
}

// Unweighted, M = 16 at H = 2048 is the nearest problem (one doubling against four), but H decides the winner.
TEST(TransferHints, TheProblemsThatShareTheAxesThatDecideTheWinnerComeFirst) {
    const Problem p = rows(Dtype::bf16, 16, 1024);
    const auto all = [](const Config&) { return true; };
    EXPECT_EQ(keys(transfer_hints(p, winners_change_along_h(), all, 1)), keys({block(128)}));
}

TEST(TransferHints, NearestProblemsWinnerFirstEachOnceOnlyCandidatesAtMostTheLimit) {
    const Problem p = rows(Dtype::bf16, 16, 4096);
    const std::vector<TunedProblem> tuned = {
        {rows(Dtype::fp32, 16, 4096), {block(64)}},     // another width: last
        {rows(Dtype::bf16, 4096, 4096), {block(512)}},  // far
        {rows(Dtype::bf16, 32, 4096), {block(128)}},    // nearest
        {rows(Dtype::bf16, 1, 4096), {block(128)}},     // same winner again: once
        {rows(Dtype::bf16, 64, 4096), {block(2048)}},   // not a candidate here
        {p, {block(1024)}},                             // the problem itself: skipped
    };
    const auto in_space = [](const Config& c) {
        for (const Config& s : space())
            if (s.key() == c.key()) return true;
        return false;
    };
    EXPECT_EQ(keys(transfer_hints(p, tuned, in_space, 10)),
              (std::vector<std::string>{"BLOCK=128,VEC=4", "BLOCK=512,VEC=4", "BLOCK=64,VEC=4"}));
    EXPECT_EQ(keys(transfer_hints(p, tuned, in_space, 1)), (std::vector<std::string>{"BLOCK=128,VEC=4"}));
    EXPECT_TRUE(transfer_hints(p, {}, in_space, 10).empty());
}

// The nearest problem's runner-up tied its winner (0.5 %) and won one problem farther, where that winner lost by 8 %:
// the runner-up is handed on first. A runner-up that did not tie (1.5 %) stays behind the winner, and without
// slowdowns the order is the nearest problem's.
TEST(TransferHints, WhereARunnerUpTiedItsWinnerTheOtherProblemsDecideWhichComesFirst) {
    const Problem p = rows(Dtype::bf16, 16, 4096);
    const Config x = block(128), y = block(256), z = block(512);
    std::vector<TunedProblem> tuned = {
        {rows(Dtype::bf16, 32, 4096), {x, y}, true, {1.0, 1.005}},          // nearest: y a hair behind x
        {rows(Dtype::bf16, 64, 4096), {y, z, x}, true, {1.0, 1.02, 1.08}},  // farther: x 8 % behind y
    };
    const auto any = [](const Config&) { return true; };
    // x: (1/4 x 1 + 1/16 x 1.08) / (1/4 + 1/16) = 1.016; y: (1/4 x 1.005 + 1/16 x 1) / (5/16) = 1.004.
    EXPECT_NEAR(expected_slowdown(p, tuned, x), 1.016, 1e-9);
    EXPECT_NEAR(expected_slowdown(p, tuned, y), 1.004, 1e-9);
    EXPECT_EQ(keys(transfer_hints(p, tuned, any, 10)), keys({y, x, z}));
    EXPECT_EQ(keys(transfer_hints(p, tuned, any, 1)), keys({y}));
    tuned[0].slowdown = {1.0, 1.015};  // no tie: the nearest problem's winner first, though y is expected faster
    EXPECT_LT(expected_slowdown(p, tuned, y), expected_slowdown(p, tuned, x));
    EXPECT_EQ(keys(transfer_hints(p, tuned, any, 10)), keys({x, y, z}));
    // Where a problem handed on no slowdowns, it weighs nothing; with none, the nearest problem's winner first.
    tuned[0].slowdown = {1.0, 1.005};
    tuned[1].slowdown.clear();
    EXPECT_NEAR(expected_slowdown(p, tuned, y), 1.005, 1e-9);
    EXPECT_EQ(keys(transfer_hints(p, tuned, any, 10)), keys({x, y, z}));  // the tie decided by the nearest alone
    tuned[0].slowdown.clear();
    EXPECT_EQ(expected_slowdown(p, tuned, x), std::numeric_limits<double>::infinity());
    EXPECT_EQ(keys(transfer_hints(p, tuned, any, 10)), keys({x, y, z}));
    // A problem of another width weighs nothing either.
    tuned = {{rows(Dtype::fp32, 16, 4096), {x}, true, {1.0}}};
    EXPECT_EQ(expected_slowdown(p, tuned, x), std::numeric_limits<double>::infinity());
}

TEST(TransferHints, TheLimitIsATenthOfTheSpaceBetweenTwoAndSixteen) {
    EXPECT_EQ(transfer_hint_limit(5), 2u);
    EXPECT_EQ(transfer_hint_limit(60), 6u);
    EXPECT_EQ(transfer_hint_limit(100000), 16u);
}

TEST(TransferHints, TheLimitLeavesASearchHalfItsBudget) {
    EXPECT_EQ(transfer_hint_limit(60, 6), 3u);
    EXPECT_EQ(transfer_hint_limit(60, 7), 4u);  // half, rounded up
    EXPECT_EQ(transfer_hint_limit(60, 1), 1u);
    EXPECT_EQ(transfer_hint_limit(60, 500), 6u);
}

// Every strategy but exhaustive proposes start_with()'s candidates first, in their order, as a batch of their own
// for the adaptive ones, never twice, and within its budget.
TEST(StartWith, EveryStrategyProposesTheHintsFirstOnceWithinTheBudget) {
    const std::vector<Config> hints = {block(512, 8), block(2048), block(64, 1)};  // the middle one is no candidate
    for (const std::string name : {"random", "annealing", "genetic", "pattern", "forest"}) {
        SCOPED_TRACE(name);
        StrategyOptions o;
        o.budget = 6;
        o.seed = 3;
        auto s = make_strategy(name, o);
        s->begin(rows(Dtype::bf16, 16, 4096), space());
        s->start_with(hints);
        std::vector<std::string> proposed;
        for (auto batch = s->propose(); !batch.empty(); batch = s->propose()) {
            for (const Config& c : batch) {
                proposed.push_back(c.key());
                Measurement m;
                m.stats.p50 = 1 + double(c.at("BLOCK")) / 64;
                s->observe(c, m);
            }
        }
        ASSERT_GE(proposed.size(), 2u);
        EXPECT_EQ(proposed[0], "BLOCK=512,VEC=8");
        EXPECT_EQ(proposed[1], "BLOCK=64,VEC=1");
        EXPECT_EQ(proposed.size(), 6u);
        EXPECT_EQ(std::set<std::string>(proposed.begin(), proposed.end()).size(), proposed.size());
    }
}

// Before its model, a forest that started from hints spends whole batches around them: one step along one axis from
// the fastest hint, then from the next; no random draw while such moves are left.
TEST(StartWith, AForestSpendsItsFirstBatchAroundTheHints) {
    auto s = make_strategy("forest", StrategyOptions{.seed = 5});
    s->begin(rows(Dtype::bf16, 16, 4096), space());
    s->start_with({block(128, 2), block(512, 8)});
    for (const Config& c : s->propose()) {
        Measurement m;
        m.stats.p50 = c.at("BLOCK") == 128 ? 1.0 : 2.0;
        s->observe(c, m);
    }
    const std::set<std::string> fastest = {"BLOCK=64,VEC=2", "BLOCK=256,VEC=2", "BLOCK=128,VEC=1", "BLOCK=128,VEC=4"};
    const std::set<std::string> next = {"BLOCK=256,VEC=8", "BLOCK=1024,VEC=8", "BLOCK=512,VEC=4"};
    const std::vector<Config> batch = s->propose();
    ASSERT_EQ(batch.size(), 8u);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(fastest.contains(batch[i].key())) << batch[i].key();
    for (std::size_t i = 4; i < 7; ++i) EXPECT_TRUE(next.contains(batch[i].key())) << batch[i].key();
}

// A bowl over A, B in 0..9, its bottom at A = 6, B = 4, at every M; at M = 16 and at M = 256 three configurations of
// that problem's own (A = 0 and A = 9 at the edges) beat it by 10 %, and are as slow as the bowl elsewhere.
Config ab(std::int64_t a, std::int64_t b) { return Config{{{"A", a}, {"B", b}}}; }

std::vector<Config> bowl_space() {
    std::vector<Config> out;
    for (std::int64_t a = 0; a < 10; ++a)
        for (std::int64_t b = 0; b < 10; ++b) out.push_back(ab(a, b));
    return out;
}

double bowl_time(const Problem& p, const Config& c) {
    const double a = double(c.at("A")) - 6, b = double(c.at("B")) - 4;
    const bool own =
        p.at("M") == 16 ? c.at("A") == 0 && c.at("B") <= 2 : p.at("M") == 256 && c.at("A") == 9 && c.at("B") >= 7;
    return own ? 0.9 : 1 + 0.1 * (a * a + b * b);
}

// At M = 64 the optimum (the bowl's bottom) is fourth at both other problems, so no hint holds it; a forest that
// learned from their results proposes it first after the hints, one that did not stays around the fastest hint.
TEST(LearnFrom, AForestProposesTheOptimumThatNoHintHoldsFirstAfterTheHints) {
    const Problem p = rows(Dtype::bf16, 64, 4096);
    std::vector<TunedProblem> tuned;
    std::vector<ProblemResults> results;
    for (std::int64_t m : {16, 256}) {
        const Problem q = rows(Dtype::bf16, m, 4096);
        ProblemResults r{q, {}};
        for (const Config& c : bowl_space()) r.times.emplace_back(c, bowl_time(q, c));
        std::ranges::stable_sort(r.times, {}, [](const auto& t) { return t.second; });
        TunedProblem t{q, {}, true};
        for (std::size_t k = 0; k < kTransferDepth; ++k) {
            t.fastest.push_back(r.times[k].first);
            t.slowdown.push_back(r.times[k].second / r.times[0].second);
        }
        tuned.push_back(t);
        results.push_back(r);
    }
    const std::vector<Config> hints = transfer_hints(
        p, tuned, [](const Config&) { return true; }, 16);
    ASSERT_EQ(hints.size(), 6u);
    for (const Config& h : hints) ASSERT_NE(h.key(), ab(6, 4).key());
    for (const bool learn : {true, false}) {
        SCOPED_TRACE(learn);
        auto s = make_strategy("forest", StrategyOptions{.seed = 7});
        s->begin(p, bowl_space());
        s->start_with(hints);
        if (learn) s->learn_from(results);
        for (const Config& c : s->propose()) {
            Measurement m;
            m.stats.p50 = bowl_time(p, c);
            s->observe(c, m);
        }
        const std::vector<Config> next = s->propose();
        ASSERT_FALSE(next.empty());
        if (learn)
            EXPECT_EQ(next.front().key(), ab(6, 4).key());
        else
            EXPECT_TRUE(std::ranges::none_of(next, [](const Config& c) { return c.key() == ab(6, 4).key(); }));
    }
}

// Without hints, a forest that learned from other problems takes the history model's picks in turn with random draws
// in its first batch, not the model's picks alone: where the problem is of another regime the model's first picks can
// all be far off (the GEMM's first M = 64 problem after larger ones, docs/search.md). At M = 256 and 2048 the fastest
// configuration is the corner A = B = 9, so the model's first picks are the six within two steps of it (A + B >= 16).
TEST(LearnFrom, AForestWithoutHintsTakesTheModelsPicksInTurnWithRandomDraws) {
    const auto corner_time = [](const Config& c) {
        const double a = 9 - double(c.at("A")), b = 9 - double(c.at("B"));
        return 1 + 0.1 * (a * a + b * b);
    };
    const auto near_corner = [](const Config& c) { return c.at("A") + c.at("B") >= 16; };
    std::vector<ProblemResults> results;
    for (std::int64_t m : {256, 2048}) {
        ProblemResults r{rows(Dtype::bf16, m, 4096), {}};
        for (const Config& c : bowl_space()) r.times.emplace_back(c, corner_time(c));
        results.push_back(r);
    }
    StrategyOptions o;
    o.seed = 7;
    auto s = make_strategy("forest", o);
    s->begin(rows(Dtype::bf16, 64, 4096), bowl_space());
    s->learn_from(results);
    const std::vector<Config> batch = s->propose();
    ASSERT_EQ(batch.size(), 8u);
    std::size_t drawn_elsewhere = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (i % 2 == 0) {
            EXPECT_TRUE(near_corner(batch[i])) << batch[i].key();  // the model's picks
        } else if (!near_corner(batch[i])) {
            ++drawn_elsewhere;  // random draws
        }
    }
    EXPECT_GE(drawn_elsewhere, 3u);  // the model's eight first picks would leave at most two of them elsewhere
}

// What a strategy's model learned from, for the tuning's report: forest counts the other problems and their results
// (never the problem's own), a strategy without a model nothing, and forest too where too few results leave it none.
TEST(LearnFrom, AForestSaysHowManyProblemsAndResultsItLearnedFromAndTheOthersNothing) {
    const Problem p = rows(Dtype::bf16, 64, 4096);
    std::vector<ProblemResults> results;
    for (std::int64_t m : {16, 256, 64}) {  // the last is the problem itself
        const Problem q = rows(Dtype::bf16, m, 4096);
        ProblemResults r{q, {}};
        for (const Config& c : bowl_space()) r.times.emplace_back(c, bowl_time(q, c));
        results.push_back(r);
    }
    auto forest = make_strategy("forest", StrategyOptions{.seed = 7});
    forest->begin(p, bowl_space());
    const SearchStrategy::Learned learned = forest->learn_from(results);
    EXPECT_EQ(learned.problems, 2);
    EXPECT_EQ(learned.results, std::int64_t(2 * bowl_space().size()));

    ProblemResults few{rows(Dtype::bf16, 16, 4096), {}};
    few.times.emplace_back(bowl_space().front(), 1.0);
    forest->begin(p, bowl_space());
    EXPECT_EQ(forest->learn_from({few}).problems, 0);

    auto pattern = make_strategy("pattern", StrategyOptions{.seed = 7});
    pattern->begin(p, bowl_space());
    EXPECT_EQ(pattern->learn_from(results).results, 0);
    EXPECT_TRUE(forest->learns_from_others());  // the session gathers the others' results only for it
    EXPECT_FALSE(pattern->learns_from_others());
}

TEST(StartWith, AnAdaptiveStrategysHintsAreABatchOfTheirOwn) {
    auto s = make_strategy("forest", StrategyOptions{});
    s->begin(rows(Dtype::bf16, 16, 4096), space());
    s->start_with({block(256)});
    EXPECT_EQ(keys(s->propose()), (std::vector<std::string>{"BLOCK=256,VEC=4"}));
    EXPECT_EQ(s->propose().size(), 8u);
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

StoredResult stored(const Problem& p, std::int64_t block, double us, std::int64_t run, bool current = true) {
    return StoredResult{p, Config{{{"BLOCK", block}, {"VEC", 4}}}, {us, false, 0.0}, run, current};
}

std::vector<std::string> winners(const std::vector<TunedProblem>& tuned) {
    std::vector<std::string> out;
    for (const TunedProblem& t : tuned) {
        std::string line = t.problem.key();
        for (const Config& c : t.fastest) line += " " + c.key();
        out.push_back(line + (t.stored ? "" : " !"));
    }
    return out;
}

TEST(HistoryWinners, EachOtherProblemsFastestStoredBeforeTheRunNeverThisRunsProblems) {
    const Problem p = Problem{Dtype::bf16, {{"M", 16}, {"H", 4096}}};
    const Problem near = Problem{Dtype::bf16, {{"M", 32}, {"H", 4096}}};
    const Problem far = Problem{Dtype::bf16, {{"M", 4096}, {"H", 4096}}};
    const Problem in_run = Problem{Dtype::bf16, {{"M", 64}, {"H", 4096}}};
    const std::vector<StoredResult> history = {
        stored(p, 1024, 0.5, 1),        // the problem itself: never its own hint
        stored(near, 256, 3.0, 1),      //
        stored(near, 128, 2.0, 2),      // near's fastest
        stored(near, 64, 1.0, 5),       // faster, but recorded by the run being resumed (5) or a later one
        stored(far, 512, 9.0, 1),       //
        stored(in_run, 64, 0.1, 1),     // a problem of this run: it hands its winner on when it finishes
        stored(far, 64, 8.0, 2, false)  // another kernel source: far has a result of this one
    };
    EXPECT_EQ(winners(history_winners(history, p, {p, in_run}, 5)),
              (std::vector<std::string>{"bf16:M=32,H=4096 BLOCK=128,VEC=4 BLOCK=256,VEC=4",
                                        "bf16:M=4096,H=4096 BLOCK=512,VEC=4"}));
    // A later run sees what run 5 stored.
    EXPECT_EQ(winners(history_winners(history, p, {p, in_run}, 6)).front(),
              "bf16:M=32,H=4096 BLOCK=64,VEC=4 BLOCK=128,VEC=4 BLOCK=256,VEC=4");
    // Nothing before the first run.
    EXPECT_TRUE(history_winners(history, p, {p}, 1).empty());
}

// The same problems as history_winners, with every result: what a forest learns from (learn_from).
TEST(HistoryResults, EveryResultOfTheProblemsThatHandOnWinnersEachConfigurationOnceItsFastest) {
    const Problem p = Problem{Dtype::bf16, {{"M", 16}}}, q = Problem{Dtype::bf16, {{"M", 32}}};
    const Problem r = Problem{Dtype::bf16, {{"M", 64}}}, in_run = Problem{Dtype::bf16, {{"M", 128}}};
    const std::vector<StoredResult> history = {
        stored(p, 64, 1.0, 1),          // the problem itself
        stored(q, 64, 3.0, 1),          //
        stored(q, 128, 2.0, 2),         //
        stored(q, 256, 1.0, 5),         // run 5 or later: not yet
        stored(r, 64, 4.0, 1, false),   // another source, measured twice: its fastest
        stored(r, 64, 5.0, 2, false),   //
        stored(in_run, 64, 1.0, 1),     // a problem of this run
        stored(q, 512, 0.5, 1, false),  // another source where q has results of this one
    };
    const std::vector<ProblemResults> results = history_results(history, p, {p, in_run}, 5);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].problem, q);
    ASSERT_EQ(results[0].times.size(), 2u);
    EXPECT_EQ(results[0].times[0], std::make_pair(block(128), 2.0));
    EXPECT_EQ(results[0].times[1], std::make_pair(block(64), 3.0));
    EXPECT_EQ(results[1].problem, r);
    ASSERT_EQ(results[1].times.size(), 1u);
    EXPECT_EQ(results[1].times[0].second, 4.0);
}

TEST(HistoryWinners, AnotherSourcesWinnerStandsInWhereTheKernelsOwnHasNone) {
    const Problem p = Problem{Dtype::bf16, {{"M", 16}}}, q = Problem{Dtype::bf16, {{"M", 32}}};
    const auto w = history_winners({stored(q, 256, 2.0, 1, false), stored(q, 128, 3.0, 1, false)}, p, {p}, 9);
    EXPECT_EQ(winners(w), (std::vector<std::string>{"bf16:M=32 BLOCK=256,VEC=4 BLOCK=128,VEC=4"}));
}

TEST(HistoryWinners, AProblemHandsOnItsThreeFastest) {
    const Problem p = Problem{Dtype::bf16, {{"M", 16}}}, q = Problem{Dtype::bf16, {{"M", 32}}};
    std::vector<StoredResult> history;
    for (std::int64_t b : {64, 128, 256, 512, 1024}) history.push_back(stored(q, b, 1.0 / double(b), 1));
    ASSERT_EQ(kTransferDepth, 3u);
    const std::vector<TunedProblem> w = history_winners(history, p, {p}, 2);
    EXPECT_EQ(winners(w), (std::vector<std::string>{"bf16:M=32 BLOCK=1024,VEC=4 BLOCK=512,VEC=4 BLOCK=256,VEC=4"}));
    EXPECT_EQ(w.front().slowdown, (std::vector<double>{1.0, 2.0, 4.0}));  // each one's time over the winner's
}

TEST(TransferHints, EveryProblemsWinnerComesBeforeAnyRunnerUp) {
    const Problem p = rows(Dtype::bf16, 16, 4096);
    const std::vector<TunedProblem> tuned = {
        {rows(Dtype::bf16, 4096, 4096), {block(512), block(1024, 8)}},  // far
        {rows(Dtype::bf16, 32, 4096), {block(128), block(256)}},        // near
    };
    const auto all = [](const Config&) { return true; };
    EXPECT_EQ(keys(transfer_hints(p, tuned, all, 16)),
              (std::vector<std::string>{"BLOCK=128,VEC=4", "BLOCK=512,VEC=4", "BLOCK=256,VEC=4", "BLOCK=1024,VEC=8"}));
    EXPECT_EQ(keys(transfer_hints(p, tuned, all, 3)),
              (std::vector<std::string>{"BLOCK=128,VEC=4", "BLOCK=512,VEC=4", "BLOCK=256,VEC=4"}));
}

TEST(TransferHints, CountTheHintsThatCameFromStoredProblems) {
    const Problem p = Problem{Dtype::bf16, {{"M", 16}}};
    const std::vector<TunedProblem> tuned = {{Problem{Dtype::bf16, {{"M", 32}}}, {Config{{{"B", 1}}}}, false},
                                             {Problem{Dtype::bf16, {{"M", 64}}}, {Config{{{"B", 2}}}}, true},
                                             {Problem{Dtype::bf16, {{"M", 1}}}, {Config{{{"B", 3}}}}, true}};
    std::size_t from_history = 99;
    const auto all = [](const Config&) { return true; };
    EXPECT_EQ(transfer_hints(p, tuned, all, 2, &from_history).size(), 2u);
    EXPECT_EQ(from_history, 1u);  // M=32 (this run's), then M=64 (stored); M=1 is past the limit
    EXPECT_EQ(transfer_hints(p, tuned, all, 3, &from_history).size(), 3u);
    EXPECT_EQ(from_history, 2u);
}

TEST(KernelTriage, ExpectedSlowdownsWeighTheNearProblemsAndSkipThoseWithOneKernel) {
    const Problem p = rows(Dtype::bf16, 16, 4096);
    const std::vector<KernelBest> history{{"a", rows(Dtype::bf16, 32, 4096), 1.0, 1},
                                          {"b", rows(Dtype::bf16, 32, 4096), 2.0, 1},  // one step: 1/4
                                          {"a", rows(Dtype::bf16, 64, 4096), 3.0, 1},
                                          {"b", rows(Dtype::bf16, 64, 4096), 1.0, 1},  // two: 1/16
                                          {"a", rows(Dtype::bf16, 16, 2048), 1.5, 1},  // b absent
                                          {"a", p, 9.0, 1},                            // its own
                                          {"a", rows(Dtype::fp32, 16, 4096), 1.0, 1},
                                          {"b", rows(Dtype::fp32, 16, 4096), 9.0, 1}};  // another width
    const std::vector<double> e = expected_kernel_slowdowns(p, {"a", "b", "c"}, history);
    ASSERT_EQ(e.size(), 3u);
    EXPECT_DOUBLE_EQ(e[0], (0.25 * 1.0 + 0.0625 * 3.0) / 0.3125);
    EXPECT_DOUBLE_EQ(e[1], (0.25 * 2.0 + 0.0625 * 1.0) / 0.3125);
    EXPECT_DOUBLE_EQ(e[2], 1.0);  // nothing known: not triaged
}

TEST(KernelTriage, AKernelFarBehindKeepsAProbeTheOthersShareWhatItFreesUpToTheirSpaces) {
    // b 1.5x behind: 2 of its 20; a and c share the 18 by their budgets (10 : 30, 4 and 13), c capped at its 35
    // configurations (5), a takes the rest.
    EXPECT_EQ(triage_budgets({10, 20, 30}, {100, 200, 35}, {1.0, 1.5, 1.05}), (std::vector<std::int64_t>{23, 2, 35}));
    // Uncapped: 4 and 13, the one left to the first.
    EXPECT_EQ(triage_budgets({10, 20, 30}, {100, 200, 300}, {1.0, 1.5, 1.05}), (std::vector<std::int64_t>{15, 2, 43}));
    // 4 % behind is within the margin: nothing changes.
    EXPECT_EQ(triage_budgets({10, 20}, {100, 200}, {1.0, 1.04}), (std::vector<std::int64_t>{10, 20}));
    // Every kernel behind (an estimate against kernels not in the list) or the rest full: unchanged.
    EXPECT_EQ(triage_budgets({10, 20}, {100, 200}, {1.2, 1.5}), (std::vector<std::int64_t>{10, 20}));
    EXPECT_EQ(triage_budgets({10, 1}, {10, 200}, {1.0, 1.5}), (std::vector<std::int64_t>{10, 1}));
    // What cannot be placed is not invented: a at its whole space, b's 18 freed, 5 taken.
    EXPECT_EQ(triage_budgets({10, 20}, {15, 200}, {1.0, 1.5}), (std::vector<std::int64_t>{15, 2}));
}

TEST(KernelTriage, TheBudgetOfOneKernelFromTheRunsBeforeTheProblemWasFirstMeasured) {
    const Problem p = rows(Dtype::bf16, 16, 4096), near = rows(Dtype::bf16, 32, 4096);
    const std::vector<TriagedKernel> kernels{{"a", 100, 10}, {"b", 200, 20}, {"x", 50, std::nullopt}};
    std::vector<KernelBest> stored{{"a", near, 1.0, 3}, {"b", near, 2.0, 3}, {"x", near, 0.5, 3}};
    Triage t = triage_budget(p, kernels, 1, stored, 10);
    EXPECT_EQ(t.budget, kTriageProbe);  // x, tuned exhaustively, takes no part, though the fastest
    EXPECT_DOUBLE_EQ(t.expected_slowdown, 2.0);
    EXPECT_EQ(triage_budget(p, kernels, 0, stored, 10).budget, 28);
    EXPECT_EQ(triage_budget(p, kernels, 2, stored, 10).budget, 50);  // exhaustive: its whole space
    // A kernel with no configuration here takes no part and is told nothing of the others.
    const std::vector<TriagedKernel> with_none{{"a", 100, 10}, {"b", 200, 20}, {"n", 0, 20}};
    const Triage none = triage_budget(p, with_none, 2, stored, 10);
    EXPECT_EQ(none.budget, 0);
    EXPECT_DOUBLE_EQ(none.expected_slowdown, 1.0);
    EXPECT_EQ(triage_budget(p, with_none, 0, stored, 10).budget, 28);
    EXPECT_EQ(triage_budget(p, kernels, 1, stored, 3).budget, 20);  // those results are of this run: no history
    // A resumed run: the problem's own first results (run 2) bound the history as it stood then.
    stored.push_back({"a", p, 1.0, 2});
    EXPECT_EQ(triage_budget(p, kernels, 1, stored, 10).budget, 20);
}

}  // namespace
}  // namespace ktune
