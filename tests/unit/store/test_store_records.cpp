#include <cmath>
#include <limits>

#include "tests/unit/store/store_test_util.hpp"

namespace ktune::test {
namespace {

// Every field distinct and non-default, so a column swapped or dropped anywhere shows up.
ResultRecord full_record(std::int64_t run_id) {
    ResultRecord r;
    r.kernel = KernelInfo{"rmsnorm", "fwd", "kernels/rmsnorm/rmsnorm_vec.cuh", "sha256:abc123", ""};
    r.config_key = "BLOCK=256,VEC=8,UNROLL=2";
    r.problem = Problem{Dtype::fp16, {{"M", 4096}, {"H", 8192}}};
    r.device_key = "NVIDIA H100 80GB HBM3|sm_90|132SM";
    r.run_id = run_id;
    r.measured_at = "2025-03-04T05:06:07Z";
    Measurement& m = r.measurement;
    m.status = Status::ok;
    m.message = "note with 'quotes' and \"double quotes\"; DROP TABLE measurements;";
    m.stats = SampleStats{7, 1.25, 2.5, 3.75, 4.125, 5.0625, 2.75, 0.5, 0.625, 0.0075};
    m.samples_us = {2.5, 1.25, 5.0625, 2.4, 2.6, 3.75, 1.0 / 3.0};
    m.time_cap_hit = true;
    m.cupti_samples_us = {2.375, 2.4, 1.0 / 7.0};
    m.cupti_p50_us = 2.375;
    m.kernel_us = 2.3875;
    m.ranked_by = RankTimer::kernel;
    m.gbps = 3012.5;
    m.dynamic_shared_bytes = 49152;
    m.mismatches = 12;
    m.max_abs_error = 0.0625;
    m.compile = CompileInfo{72, 8, 16, 24, 1024, 1.75, true};
    return r;
}

void expect_same(const ResultRecord& a, const ResultRecord& b) {
    EXPECT_EQ(a.kernel.op, b.kernel.op);
    EXPECT_EQ(a.kernel.variant, b.kernel.variant);
    EXPECT_EQ(a.kernel.source_path, b.kernel.source_path);
    EXPECT_EQ(a.kernel.source_hash, b.kernel.source_hash);
    EXPECT_EQ(a.config_key, b.config_key);
    EXPECT_EQ(a.problem, b.problem);
    EXPECT_EQ(a.device_key, b.device_key);
    EXPECT_EQ(a.run_id, b.run_id);
    EXPECT_EQ(a.measured_at, b.measured_at);
    const Measurement& x = a.measurement;
    const Measurement& y = b.measurement;
    EXPECT_EQ(x.status, y.status);
    EXPECT_EQ(x.message, y.message);
    EXPECT_EQ(x.stats.n, y.stats.n);
    EXPECT_EQ(x.stats.min, y.stats.min);
    EXPECT_EQ(x.stats.p50, y.stats.p50);
    EXPECT_EQ(x.stats.p95, y.stats.p95);
    EXPECT_EQ(x.stats.p99, y.stats.p99);
    EXPECT_EQ(x.stats.max, y.stats.max);
    EXPECT_EQ(x.stats.mean, y.stats.mean);
    EXPECT_EQ(x.stats.stddev, y.stats.stddev);
    EXPECT_EQ(x.stats.iqr, y.stats.iqr);
    EXPECT_EQ(x.stats.median_ci_rel, y.stats.median_ci_rel);
    EXPECT_EQ(x.samples_us, y.samples_us);
    EXPECT_EQ(x.time_cap_hit, y.time_cap_hit);
    EXPECT_EQ(x.cupti_samples_us, y.cupti_samples_us);
    EXPECT_EQ(x.cupti_p50_us, y.cupti_p50_us);
    EXPECT_EQ(x.kernel_us, y.kernel_us);
    EXPECT_EQ(x.ranked_by, y.ranked_by);
    EXPECT_EQ(x.gbps, y.gbps);
    EXPECT_EQ(x.dynamic_shared_bytes, y.dynamic_shared_bytes);
    EXPECT_EQ(x.mismatches, y.mismatches);
    EXPECT_EQ(x.max_abs_error, y.max_abs_error);
    EXPECT_EQ(x.compile.registers, y.compile.registers);
    EXPECT_EQ(x.compile.spill_store_bytes, y.compile.spill_store_bytes);
    EXPECT_EQ(x.compile.spill_load_bytes, y.compile.spill_load_bytes);
    EXPECT_EQ(x.compile.stack_bytes, y.compile.stack_bytes);
    EXPECT_EQ(x.compile.static_shared_bytes, y.compile.static_shared_bytes);
    EXPECT_EQ(x.compile.compile_seconds, y.compile.compile_seconds);
    EXPECT_EQ(x.compile.cache_hit, y.compile.cache_hit);
}

using StoreRecords = StoreTest;

TEST_F(StoreRecords, ARecordedResultReadsBackWithEveryField) {
    Store store = Store::open(db_path());
    const std::int64_t run = store.begin_run(RunInfo{});
    const ResultRecord in = full_record(run);
    store.record(in);

    const auto out = store.results({});
    ASSERT_EQ(out.size(), 1u);
    expect_same(out[0], in);
}

TEST_F(StoreRecords, AFailedResultWithoutTimingsReadsBackWithItsStatusAndMessage) {
    Store store = Store::open(db_path());
    ResultRecord in = full_record(0);
    in.measurement = Measurement{};
    in.measurement.status = Status::compile_error;
    in.measurement.message = "error: identifier \"foo\" is undefined";
    store.record(in);

    const auto out = store.results({});
    ASSERT_EQ(out.size(), 1u);
    expect_same(out[0], in);
    EXPECT_TRUE(out[0].measurement.samples_us.empty());
}

TEST_F(StoreRecords, NanAndInfinityStatisticsReadBackUnchanged) {
    Store store = Store::open(db_path());
    ResultRecord in = full_record(0);
    in.measurement.stats.median_ci_rel = std::numeric_limits<double>::infinity();
    in.measurement.max_abs_error = std::numeric_limits<double>::quiet_NaN();
    in.measurement.samples_us = {1.0, std::numeric_limits<double>::quiet_NaN()};
    store.record(in);

    const Measurement out = store.results({}).at(0).measurement;
    EXPECT_TRUE(std::isinf(out.stats.median_ci_rel));
    EXPECT_TRUE(std::isnan(out.max_abs_error));
    ASSERT_EQ(out.samples_us.size(), 2u);
    EXPECT_TRUE(std::isnan(out.samples_us[1]));
}

TEST_F(StoreRecords, AProblemReadsBackWithItsDtypeAndAxisOrder) {
    Store store = Store::open(db_path());
    const Problem p{Dtype::fp32, {{"ZZ", 3}, {"A", -1}, {"M", 1LL << 40}}};
    store.record(make_record("B=1", p, 1.0));
    EXPECT_EQ(store.results({}).at(0).problem, p);
}

TEST_F(StoreRecords, AnEmptyMeasuredAtIsFilledWithTheRecordingTime) {
    Store store = Store::open(db_path());
    ResultRecord r = make_record("B=1", problem({{"M", 1}}), 1.0);
    r.measured_at.clear();
    store.record(r);
    const std::string at = store.results({}).at(0).measured_at;
    EXPECT_EQ(at.size(), 20u) << at;  // 2025-01-01T00:00:00Z
    EXPECT_EQ(at.back(), 'Z');
}

TEST_F(StoreRecords, HasResultIsFalseBeforeRecordingAndTrueAfter) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}, {"H", 4096}});
    EXPECT_FALSE(store.has_result(kernel("hash-1"), "B=1", p.key(), "dev-A"));
    store.record(make_record("B=1", p, 1.0));
    EXPECT_TRUE(store.has_result(kernel("hash-1"), "B=1", p.key(), "dev-A"));
}

TEST_F(StoreRecords, HasResultIsTrueForAFailedResult) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 0.0, Status::launch_error));
    EXPECT_TRUE(store.has_result(kernel("hash-1"), "B=1", p.key(), "dev-A"));
}

TEST_F(StoreRecords, HasResultIsFalseWhenAnyPartOfTheIdentityDiffers) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 1.0));
    EXPECT_FALSE(store.has_result(kernel("hash-2"), "B=1", p.key(), "dev-A"));
    EXPECT_FALSE(store.has_result(kernel("hash-1"), "B=2", p.key(), "dev-A"));
    EXPECT_FALSE(store.has_result(kernel("hash-1"), "B=1", problem({{"M", 17}}).key(), "dev-A"));
    EXPECT_FALSE(store.has_result(kernel("hash-1"), "B=1", p.key(), "dev-B"));
}

TEST_F(StoreRecords, TwoVariantsOfOneSourceAreDifferentKernels) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 1.0, Status::ok, "dev-A", "hash-1", "add_rmsnorm", "fwd"));
    EXPECT_TRUE(store.has_result(kernel("hash-1", "add_rmsnorm", "fwd"), "B=1", p.key(), "dev-A"));
    EXPECT_FALSE(store.has_result(kernel("hash-1", "add_rmsnorm", "fwd_inplace"), "B=1", p.key(), "dev-A"));
    EXPECT_FALSE(store.has_result(kernel("hash-1", "rmsnorm", "fwd"), "B=1", p.key(), "dev-A"));
}

TEST_F(StoreRecords, AResultIsStillFoundAfterReopeningTheFile) {
    const Problem p = problem({{"M", 16}});
    {
        Store store = Store::open(db_path());
        store.record(make_record("B=1", p, 1.0));
    }
    Store reopened = Store::open(db_path());
    EXPECT_TRUE(reopened.has_result(kernel("hash-1"), "B=1", p.key(), "dev-A"));
    EXPECT_EQ(reopened.count_results({}), 1);
}

TEST_F(StoreRecords, RecordingAgainWithoutReplaceKeepsTheOldRow) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 1.0));
    store.record(make_record("B=1", p, 2.0), /*replace=*/false);

    const auto out = store.results({});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].measurement.stats.p50, 1.0);
}

TEST_F(StoreRecords, RecordingAgainWithReplaceOverwritesTheRow) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 1.0));
    store.record(make_record("B=1", p, 2.0, Status::timeout), /*replace=*/true);

    const auto out = store.results({});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].measurement.stats.p50, 2.0);
    EXPECT_EQ(out[0].measurement.status, Status::timeout);
}

TEST_F(StoreRecords, ResultsAndCountsFollowTheFilter) {
    Store store = Store::open(db_path());
    const Problem p = problem({{"M", 16}});
    store.record(make_record("B=1", p, 1.0));
    store.record(make_record("B=2", p, 1.0, Status::invalid_result));
    store.record(make_record("B=1", p, 1.0, Status::ok, "dev-B"));
    store.record(make_record("B=1", p, 1.0, Status::ok, "dev-A", "hash-1", "softmax"));
    store.record(make_record("B=1", problem({{"M", 256}}), 1.0));

    ResultFilter by_op;
    by_op.op = "rmsnorm";
    EXPECT_EQ(store.count_results(by_op), 4);
    ResultFilter by_problem;
    by_problem.problem_key = problem({{"M", 256}}).key();
    ASSERT_EQ(store.results(by_problem).size(), 1u);
    EXPECT_EQ(store.results(by_problem)[0].problem.key(), by_problem.problem_key);
    EXPECT_EQ(store.count_results(by_problem), 1);
    ResultFilter failed;
    failed.status = Status::invalid_result;
    ASSERT_EQ(store.results(failed).size(), 1u);
    EXPECT_EQ(store.results(failed)[0].config_key, "B=2");
    ResultFilter on_b;
    on_b.device_key = "dev-B";
    on_b.op = "rmsnorm";
    on_b.variant = "fwd";
    on_b.source_hash = "hash-1";
    EXPECT_EQ(store.count_results(on_b), 1);
    EXPECT_EQ(store.count_results({}), 5);
}

TEST_F(StoreRecords, RecordingForARunThatDoesNotExistIsRefused) {
    Store store = Store::open(db_path());
    ResultRecord r = make_record("B=1", problem({{"M", 16}}), 1.0);
    r.run_id = 42;
    const Error e = error_of([&] { store.record(r); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_NE(e.message().find("run 42"), std::string::npos) << e.message();
    EXPECT_EQ(store.count_results({}), 0);
}

TEST_F(StoreRecords, RecordingWithoutADeviceKeyIsRefused) {
    Store store = Store::open(db_path());
    const Error e = error_of([&] { store.record(make_record("B=1", problem({{"M", 16}}), 1.0, Status::ok, "")); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_EQ(e.where(), db_path());
}

TEST_F(StoreRecords, AReadOnlyStoreReadsResultsButRefusesToRecord) {
    const Problem p = problem({{"M", 16}});
    Store::open(db_path()).record(make_record("B=1", p, 1.0));

    Store ro = Store::open(db_path(), Store::Mode::read_only);
    EXPECT_TRUE(ro.has_result(kernel("hash-1"), "B=1", p.key(), "dev-A"));
    const Error e = error_of([&] { ro.record(make_record("B=2", p, 1.0)); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_NE(e.message().find("read-only"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace ktune::test
