// export_header() ranks only the newest kernel source of each alternative (Store::best); the valid results of an
// older source it passes over are said in its warnings, and change nothing in the header.
#include <algorithm>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

using ExportStaleSources = ExportTest;

// fill_user_store's newest flat source measured this problem (3.0 us), not the other.
const Problem k_edited_problem{Dtype::fp16, {{"R", 64}, {"C", 4096}}};
const Problem k_unmeasured_problem{Dtype::fp32, {{"R", 64}, {"C", 4096}}};

// Results of the flat kernel's source from before an edit, beside the user op's tuning: faster than anything the
// newest sources measured at `problem`.
void add_older_flat_source(Store& store, const std::vector<SearchSpace>& kernels, const Problem& problem) {
    const SearchSpace& flat = kernels.at(0);
    for (const std::int64_t block : {64, 128, 256}) {
        ResultRecord r = kernel_result(h100_sxm(), flat, problem, Config{{{"VEC", 2}, {"BLOCK", block}}}, 1.0);
        r.kernel.source_hash = "0ld5ource-flat";
        r.measured_at = "2026-11-01T00:00:00Z";  // before fill_user_store's results
        store.record(r);
    }
}

std::vector<std::string> stale_lines(const std::vector<std::string>& warnings) {
    std::vector<std::string> out;
    std::copy_if(warnings.begin(), warnings.end(), std::back_inserter(out),
                 [](const std::string& w) { return w.find("older source") != std::string::npos; });
    return out;
}

TEST_F(ExportStaleSources, NamesTheAlternativeTheProblemAndHowManyResultsOfAnOlderSourceWerePassedOver) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db_path());
    fill_user_store(store, kernels);
    add_older_flat_source(store, kernels, k_unmeasured_problem);
    const RenderedHeader h = render_header(store, pointers(kernels), user_options());
    ASSERT_EQ(h.result.warnings.size(), 1u);
    EXPECT_EQ(h.result.warnings[0],
              "bias_gelu/fwd fp32:R=64,C=4096: passed over 3 results of flat from an older source (0ld5ourc; newest "
              "hash-fla): re-tune flat to rank it there again");
}

// Where the newest source measured the problem too, the older results are superseded, not lost: nothing is said, so a
// re-tuning clears the warning.
TEST_F(ExportStaleSources, SaysNothingWhereTheNewestSourceMeasuredTheProblem) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db_path());
    fill_user_store(store, kernels);
    add_older_flat_source(store, kernels, k_edited_problem);
    EXPECT_TRUE(render_header(store, pointers(kernels), user_options()).result.warnings.empty());
}

TEST_F(ExportStaleSources, ExportsTheSameHeaderAsWithoutTheOlderSource) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store with_stale = Store::open(db_path());
    fill_user_store(with_stale, kernels);
    add_older_flat_source(with_stale, kernels, k_edited_problem);
    add_older_flat_source(with_stale, kernels, k_unmeasured_problem);
    std::filesystem::create_directories(dir() / "fresh");
    Store fresh = Store::open((dir() / "fresh" / "results.db").string());  // the same name: the header shows it
    fill_user_store(fresh, kernels);

    const RenderedHeader h = render_header(with_stale, pointers(kernels), user_options());
    EXPECT_EQ(h.text, render_header(fresh, pointers(kernels), user_options()).text);
    const auto best = with_stale.best("bias_gelu", "fwd", h100_sxm().key);
    const auto edited =
        std::find_if(best.begin(), best.end(), [](const auto& r) { return r.problem == k_edited_problem; });
    ASSERT_NE(edited, best.end());
    EXPECT_EQ(edited->kernel.source_hash, "hash-flat");  // not the older flat source's 1.0 us
    EXPECT_EQ(edited->measurement.stats.p50, 3.0);
}

TEST_F(ExportStaleSources, SaysNothingWithoutResultsOfAnOlderSource) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db_path());
    fill_user_store(store, kernels);
    EXPECT_TRUE(render_header(store, pointers(kernels), user_options()).result.warnings.empty());
}

TEST_F(ExportStaleSources, SumsOneLinePerAlternativeOverItsProblemsAndNamesTheFirstFew) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db_path());
    fill_user_store(store, kernels);
    const SearchSpace& rows = kernels.at(1);
    for (const std::int64_t c : {1024, 2048, 4096, 8192, 16384})
        for (const std::int64_t warps : {1, 2}) {
            ResultRecord r = kernel_result(h100_sxm(), rows, Problem{Dtype::fp32, {{"R", 64}, {"C", c}}},
                                           Config{{{"VEC", 2}, {"WARPS", warps}}}, 5.0);
            r.kernel.source_hash = c == 1024 ? "aaaa1111cafe" : "bbbb2222cafe";
            r.measured_at = "2026-11-01T00:00:00Z";
            store.record(r);
        }
    const RenderedHeader h = render_header(store, pointers(kernels), user_options());
    const std::vector<std::string> lines = stale_lines(h.result.warnings);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0],
              "bias_gelu/fwd: passed over 10 results of rows at 5 problems (fp32:R=64,C=1024: 2; fp32:R=64,C=2048: 2; "
              "fp32:R=64,C=4096: 2; 2 more) from 2 older sources (aaaa1111, bbbb2222; newest hash-row): re-tune rows "
              "to rank it there again");
}

TEST_F(ExportStaleSources, NamesTheDeviceWhenSeveralAreExported) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db_path());
    fill_user_store(store, kernels);
    add_older_flat_source(store, kernels, k_unmeasured_problem);
    const DeviceInfo pcie = h100_pcie();
    store.upsert_device(pcie);
    ResultRecord r = kernel_result(pcie, kernels.at(0), k_edited_problem, Config{{{"VEC", 2}, {"BLOCK", 128}}}, 2.0);
    store.record(r);
    const RenderedHeader h = render_header(store, pointers(kernels), user_options());
    ASSERT_EQ(h.result.warnings.size(), 1u);
    EXPECT_NE(h.result.warnings[0].find("fp32:R=64,C=4096 on NVIDIA H100 80GB HBM3: passed over 3 results of flat"),
              std::string::npos)
        << h.result.warnings[0];
}

}  // namespace
}  // namespace ktune::test
