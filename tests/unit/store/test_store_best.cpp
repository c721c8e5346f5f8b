#include <algorithm>
#include <tuple>

#include "tests/unit/store/store_test_util.hpp"

namespace ktune::test {
namespace {

std::vector<std::string> problem_keys(const std::vector<ResultRecord>& rs) {
    std::vector<std::string> keys;
    for (const auto& r : rs) keys.push_back(r.problem.key());
    return keys;
}

using StoreBest = StoreTest;

TEST_F(StoreBest, PicksTheSmallestP50AmongOkResults) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 3.0));
    store.record(make_record("B=2", p, 2.0));
    store.record(make_record("B=3", p, 4.0));

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].config_key, "B=2");
    EXPECT_EQ(best[0].measurement.stats.p50, 2.0);
}

TEST_F(StoreBest, BreaksATieOnP50ByTheLowerKernelTimeThenByTheEarlierRow) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 1}}), q = problem({{"M", 16}});
    auto with_kernel_time = [](ResultRecord r, double kernel_us) {
        r.measurement.kernel_us = kernel_us;
        return r;
    };
    store.record(with_kernel_time(make_record("B=1", p, 4.0), 1.63));
    store.record(with_kernel_time(make_record("B=2", p, 4.0), 1.41));
    store.record(make_record("B=3", p, 4.0));                          // no kernel time: after those with one
    store.record(with_kernel_time(make_record("B=4", p, 4.1), 1.20));  // event-ranked: a higher p50 still loses
    store.record(make_record("B=1", q, 5.0));
    store.record(make_record("B=2", q, 5.0));

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 2u);
    EXPECT_EQ(best[0].config_key, "B=2");
    EXPECT_EQ(best[0].measurement.kernel_us, 1.41);
    EXPECT_EQ(best[1].config_key, "B=1");  // neither has a kernel time: the earlier row
}

TEST_F(StoreBest, RanksKernelRankedRowsByTheirKernelTimeThenByTheEventP50) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 1}});
    auto kernel_ranked = [](ResultRecord r, double kernel_us) {
        r.measurement.kernel_us = kernel_us;
        r.measurement.ranked_by = RankTimer::kernel;
        return r;
    };
    store.record(kernel_ranked(make_record("B=1", p, 4.0), 2.10));
    store.record(kernel_ranked(make_record("B=2", p, 4.3), 2.02));  // a higher event p50, the lower kernel time
    store.record(kernel_ranked(make_record("B=3", p, 4.2), 2.02));  // the same kernel time, a lower event p50
    store.record(kernel_ranked(make_record("B=4", p, 3.9), 2.08));

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].config_key, "B=3");
    EXPECT_EQ(best[0].measurement.ranked_by, RankTimer::kernel);
    EXPECT_EQ(best[0].measurement.rank_us(), 2.02);
}

TEST_F(StoreBest, OrdersLikeBestRankSoTheLastConfirmedLeaderIsTheOneStored) {
    Store store = Store::open(db_path());
    for (RankTimer timer : {RankTimer::event, RankTimer::kernel}) {
        const Problem p = problem({{"M", timer == RankTimer::event ? 1 : 16}});
        std::vector<ResultRecord> rs;
        for (auto [key, p50, kernel] : {std::tuple<const char*, double, double>{"B=1", 4.0, 1.63},
                                        {"B=2", 4.0, 0.0},
                                        {"B=3", 4.0, 1.41},
                                        {"B=4", 3.9, 0.0},
                                        {"B=5", 3.9, 2.5},
                                        {"B=6", 4.2, 1.41}}) {
            rs.push_back(make_record(key, p, p50));
            rs.back().measurement.kernel_us = kernel;
            rs.back().measurement.ranked_by = timer;
            store.record(rs.back());
        }
        const auto by_rank =
            std::ranges::min_element(rs, {}, [](const ResultRecord& r) { return best_rank(r.measurement); });
        const auto best = store.best("rmsnorm", "fwd", "dev-A");
        const auto it = std::ranges::find_if(best, [&](const ResultRecord& r) { return r.problem == p; });
        ASSERT_NE(it, best.end());
        // Event-ranked: B=5 (the lowest p50, the one of the two with a kernel time). Kernel-ranked: B=3 (1.41 us, the
        // lower p50 of the two at 1.41); B=2 and B=4 have no kernel time and rank by their p50s, 4.0 and 3.9.
        EXPECT_EQ(by_rank->config_key, timer == RankTimer::event ? "B=5" : "B=3");
        EXPECT_EQ(it->config_key, by_rank->config_key);
    }
}

TEST_F(StoreBest, IgnoresFailedResultsEvenWithASmallerP50) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 3.0));
    store.record(make_record("B=2", p, 0.5, Status::invalid_result));
    store.record(make_record("B=3", p, 0.25, Status::timeout));

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].config_key, "B=1");
}

TEST_F(StoreBest, LeavesOutAProblemWithNoOkResult) {
    Store store = Store::open(db_path());
    store.record(make_record("B=1", problem({{"M", 16}}), 3.0));
    store.record(make_record("B=1", problem({{"M", 32}}), 1.0, Status::compile_error));

    EXPECT_EQ(problem_keys(store.best("rmsnorm", "fwd", "dev-A")), std::vector<std::string>{"bf16:M=16"});
}

TEST_F(StoreBest, OrdersProblemsNumericallyAxisByAxisNotAsText) {
    Store store = Store::open(db_path());
    for (std::int64_t m : {256, 16, 1024, 32})
        for (std::int64_t h : {8192, 768}) store.record(make_record("B=1", problem({{"M", m}, {"H", h}}), 1.0));

    EXPECT_EQ(
        problem_keys(store.best("rmsnorm", "fwd", "dev-A")),
        (std::vector<std::string>{"bf16:M=16,H=768", "bf16:M=16,H=8192", "bf16:M=32,H=768", "bf16:M=32,H=8192",
                                  "bf16:M=256,H=768", "bf16:M=256,H=8192", "bf16:M=1024,H=768", "bf16:M=1024,H=8192"}));
}

TEST_F(StoreBest, OrdersByDtypeBeforeShape) {
    Store store = Store::open(db_path());
    store.record(make_record("B=1", problem({{"M", 16}}, Dtype::bf16), 1.0));
    store.record(make_record("B=1", problem({{"M", 32}}, Dtype::fp32), 1.0));
    store.record(make_record("B=1", problem({{"M", 16}}, Dtype::fp32), 1.0));

    EXPECT_EQ(problem_keys(store.best("rmsnorm", "fwd", "dev-A")),
              (std::vector<std::string>{"fp32:M=16", "fp32:M=32", "bf16:M=16"}));
}

TEST_F(StoreBest, IsRestrictedToTheDeviceKey) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 3.0, Status::ok, "dev-A"));
    store.record(make_record("B=2", p, 1.0, Status::ok, "dev-B"));

    const auto on_a = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(on_a.size(), 1u);
    EXPECT_EQ(on_a[0].config_key, "B=1");
    EXPECT_EQ(on_a[0].device_key, "dev-A");
    EXPECT_TRUE(store.best("rmsnorm", "fwd", "dev-C").empty());
}

TEST_F(StoreBest, IsRestrictedToTheOpAndVariant) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 3.0, Status::ok, "dev-A", "h", "rmsnorm", "fwd"));
    store.record(make_record("B=2", p, 1.0, Status::ok, "dev-A", "h", "rmsnorm", "bwd"));
    store.record(make_record("B=3", p, 0.5, Status::ok, "dev-A", "h", "softmax", "fwd"));

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].config_key, "B=1");
}

TEST_F(StoreBest, WithoutASourceHashUsesOnlyTheMostRecentlyMeasuredKernelSource) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    ResultRecord old_fast = make_record("B=1", p, 1.0, Status::ok, "dev-A", "old");
    old_fast.measured_at = "2025-01-01T00:00:00Z";
    ResultRecord old_other = make_record("B=1", problem({{"M", 32}}), 1.0, Status::ok, "dev-A", "old");
    old_other.measured_at = "2025-01-01T00:00:00Z";
    ResultRecord new_slow = make_record("B=1", p, 5.0, Status::ok, "dev-A", "new");
    new_slow.measured_at = "2025-02-01T00:00:00Z";
    store.record(old_fast);
    store.record(old_other);
    store.record(new_slow);

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 1u);  // M=32 was only measured with the old source: it does not mix in
    EXPECT_EQ(best[0].kernel.source_hash, "new");
    EXPECT_EQ(best[0].measurement.stats.p50, 5.0);
}

// B=1 at p on dev-A measured with an L2 method ("cold", "hot"), its source named after it.
ResultRecord l2_record(const std::string& l2_state, const Problem& p, double p50, const std::string& measured_at) {
    ResultRecord r = make_record("B=1", p, p50, Status::ok, "dev-A", l2_state + "-hash");
    r.kernel.l2_state = l2_state;
    r.measured_at = measured_at;
    return r;
}

TEST_F(StoreBest, WithoutASourceHashPrefersTheCleanColdMethodOverALaterHotOrDirtyTuning) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    const ResultRecord cold = l2_record("cold", p, 5.0, "2025-01-01T00:00:00Z");
    const ResultRecord hot = l2_record("hot", p, 1.0, "2025-02-01T00:00:00Z");
    ResultRecord legacy = make_record("B=1", p, 2.0, Status::ok, "dev-A", "legacy-hash");  // schema < 3: no state
    legacy.measured_at = "2025-03-01T00:00:00Z";
    store.record(cold);
    store.record(hot);
    store.record(legacy);

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].kernel.source_hash, "cold-hash");
    EXPECT_EQ(best[0].measurement.stats.p50, 5.0);
}

TEST_F(StoreBest, WithASourceHashUsesThatSource) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    ResultRecord old_fast = make_record("B=1", p, 1.0, Status::ok, "dev-A", "old");
    old_fast.measured_at = "2025-01-01T00:00:00Z";
    ResultRecord new_slow = make_record("B=1", p, 5.0, Status::ok, "dev-A", "new");
    new_slow.measured_at = "2025-02-01T00:00:00Z";
    store.record(old_fast);
    store.record(new_slow);

    const auto best = store.best("rmsnorm", "fwd", "dev-A", {"old"});
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].kernel.source_hash, "old");
    EXPECT_EQ(best[0].measurement.stats.p50, 1.0);
}

TEST_F(StoreBest, IsEmptyWhenNothingWasMeasured) {
    Store store = Store::open(db_path());
    EXPECT_TRUE(store.best("rmsnorm", "fwd", "dev-A").empty());
}

// A space of alternative kernels: each alternative's newest source competes, and the row says which won.
ResultRecord alternative_record(const std::string& alternative, const std::string& hash, const std::string& config,
                                const Problem& p, double p50, const std::string& measured_at) {
    ResultRecord r = make_record(config, p, p50, Status::ok, "dev-A", hash);
    r.kernel.alternative = alternative;
    r.measured_at = measured_at;
    return r;
}

TEST_F(StoreBest, RanksTheNewestSourceOfEveryAlternativeTogether) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 1}}), q = problem({{"M", 16}});
    store.record(alternative_record("flat", "flat-1", "B=1", p, 1.0, "2025-01-01T00:00:00Z"));  // older flat source
    store.record(alternative_record("flat", "flat-2", "B=1", p, 3.0, "2025-01-02T00:00:00Z"));
    store.record(alternative_record("flat", "flat-2", "B=1", q, 2.0, "2025-01-02T00:00:00Z"));
    store.record(alternative_record("rows", "rows-1", "R=4", p, 2.5, "2025-01-01T12:00:00Z"));
    store.record(alternative_record("rows", "rows-1", "R=4", q, 4.0, "2025-01-01T12:00:00Z"));

    const auto best = store.best("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(best.size(), 2u);
    EXPECT_EQ(best[0].kernel.alternative, "rows");  // 2.5 beats flat-2's 3.0; flat-1's 1.0 is an older source
    EXPECT_EQ(best[0].config_key, "R=4");
    EXPECT_EQ(best[1].kernel.alternative, "flat");
    EXPECT_EQ(best[1].measurement.stats.p50, 2.0);
}

TEST_F(StoreBest, RanksOnlyTheSourcesGivenWhenAskedFor) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 1}});
    store.record(alternative_record("flat", "flat-1", "B=1", p, 1.0, "2025-01-01T00:00:00Z"));
    store.record(alternative_record("rows", "rows-1", "R=4", p, 2.5, "2025-01-01T12:00:00Z"));
    const auto best = store.best("rmsnorm", "fwd", "dev-A", {"rows-1"});
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(best[0].kernel.alternative, "rows");
}

// Only where the newest source of the alternative has no ok result: elsewhere the older results are superseded.
TEST_F(StoreBest, CountsTheOkResultsOfAnOlderSourceAtTheProblemsItsNewestSourceLacksAsStale) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 1}}), q = problem({{"M", 16}});
    store.record(alternative_record("flat", "flat-1", "B=1", p, 1.0, "2025-01-01T00:00:00Z"));
    store.record(alternative_record("flat", "flat-1", "B=2", p, 1.5, "2025-01-01T00:00:00Z"));
    store.record(alternative_record("flat", "flat-1", "B=1", q, 1.0, "2025-01-01T00:00:00Z"));
    ResultRecord failed = alternative_record("flat", "flat-1", "B=4", p, 1.0, "2025-01-01T00:00:00Z");
    failed.measurement.status = Status::invalid_result;  // not a valid result: not counted
    store.record(failed);
    store.record(alternative_record("flat", "flat-2", "B=1", p, 3.0, "2025-01-02T00:00:00Z"));
    store.record(alternative_record("rows", "rows-1", "R=4", p, 2.5, "2025-01-01T12:00:00Z"));

    const auto stale = store.stale_results("rmsnorm", "fwd", "dev-A");
    ASSERT_EQ(stale.size(), 1u);  // not at p, where flat-2 measured B=1
    EXPECT_EQ(stale[0].alternative, "flat");
    EXPECT_EQ(stale[0].source_hash, "flat-1");
    EXPECT_EQ(stale[0].ranked_hash, "flat-2");
    EXPECT_EQ(stale[0].problem, q);
    EXPECT_EQ(stale[0].results, 1);

    store.record(alternative_record("flat", "flat-2", "B=1", q, 3.0, "2025-01-03T00:00:00Z"));  // re-tuned at q
    EXPECT_TRUE(store.stale_results("rmsnorm", "fwd", "dev-A").empty());
}

TEST_F(StoreBest, CountsNothingAsStaleForTheRankedSourcesOrAnotherL2Method) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    const ResultRecord cold = l2_record("cold", p, 5.0, "2025-01-01T00:00:00Z");
    const ResultRecord hot = l2_record("hot", p, 1.0, "2025-02-01T00:00:00Z");
    store.record(cold);
    store.record(hot);
    store.record(alternative_record("rows", "rows-1", "R=4", p, 2.5, "2025-01-01T12:00:00Z"));
    EXPECT_TRUE(store.stale_results("rmsnorm", "fwd", "dev-A").empty());
    EXPECT_TRUE(store.stale_results("rmsnorm", "fwd", "dev-B").empty());
}

}  // namespace
}  // namespace ktune::test
