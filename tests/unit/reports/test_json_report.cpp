#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "tests/unit/reports/golden.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

nlohmann::ordered_json json_of(const ReportData& d) {
    return nlohmann::ordered_json::parse(render_report(d, ReportFormat::json));
}

TEST(JsonReport, MatchesTheGoldenFile) {
    expect_matches_golden(render_report(sample_report(), ReportFormat::json), "sample.json");
}

TEST(JsonReport, TopLevelKeysComeInAStableOrder) {
    const auto j = json_of(sample_report());
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"format", "format_version", "title", "generated_at", "database",
                                              "devices", "sections", "unmatched_peers"}));
}

TEST(JsonReport, PeersWithoutKtuneResultsAreListedWithMissingTimesAsNull) {
    const auto j = json_of(sample_report());
    ASSERT_EQ(j["unmatched_peers"].size(), 2u);
    EXPECT_EQ(j["unmatched_peers"][0]["problem"], "bf16:M=1,H=4096");
    EXPECT_EQ(j["unmatched_peers"][0]["p50_us"], 6.1);
    EXPECT_TRUE(j["unmatched_peers"][1]["p50_us"].is_null());
}

TEST(JsonReport, EachProblemCarriesItsTimingsPeersAndSamples) {
    const auto j = json_of(sample_report());
    const auto& p = j["sections"][0]["problems"][0];
    EXPECT_EQ(p["problem"], "bf16:M=4096,H=4096");
    EXPECT_EQ(p["shape"]["M"], 4096);
    EXPECT_DOUBLE_EQ(p["p50_us"].get<double>(), 24.5);
    EXPECT_EQ(p["best_peer"], "torch_compile");
    EXPECT_EQ(p["peers"].size(), 3u);
    EXPECT_NEAR(p["peers"][1]["speedup"].get<double>(), 30.2 / 24.5, 1e-12);
    EXPECT_EQ(p["samples_us"].size(), 20u);
}

TEST(JsonReport, APeersEnvironmentIsKeptAsAnObject) {
    const auto j = json_of(sample_report());
    EXPECT_EQ(j["sections"][0]["problems"][0]["peers"][0]["environment"]["torch"], "2.5.1+cu124");
}

TEST(JsonReport, UnknownNumbersAreNull) {
    const auto j = json_of(sample_report());
    EXPECT_TRUE(j["devices"][1]["copy_gbps"].is_null());
    EXPECT_TRUE(j["sections"][1]["problems"][0]["pct_of_copy"].is_null());
    EXPECT_TRUE(j["sections"][1]["problems"][0]["best_peer"].is_null());
}

TEST(JsonReport, EachProblemCarriesItsSameSizeFloorsAfterItsShareOfTheCopyCeiling) {
    const auto j = json_of(sample_report());
    const auto& p = j["sections"][0]["problems"][0];
    std::vector<std::string> keys;
    for (const auto& [k, v] : p.items()) keys.push_back(k);
    const auto at = std::find(keys.begin(), keys.end(), "pct_of_copy");
    ASSERT_LT(at + 3, keys.end());
    EXPECT_EQ(std::vector<std::string>(at + 1, at + 4),
              (std::vector<std::string>{"copy_floor_us", "read_floor_us", "pct_of_copy_floor"}));
    EXPECT_DOUBLE_EQ(p["copy_floor_us"].get<double>(), 22.8);
    EXPECT_DOUBLE_EQ(p["read_floor_us"].get<double>(), 14.1);
    EXPECT_NEAR(p["pct_of_copy_floor"].get<double>(), 100 * 22.8 / 24.5, 1e-9);
    EXPECT_TRUE(j["sections"][0]["problems"][2]["read_floor_us"].is_null());
    const auto& bare = j["sections"][1]["problems"][0];
    EXPECT_TRUE(bare["copy_floor_us"].is_null());
    EXPECT_TRUE(bare["pct_of_copy_floor"].is_null());
}

TEST(JsonReport, SectionsNameTheirDeviceByKey) {
    const auto j = json_of(sample_report());
    EXPECT_EQ(j["sections"][1]["device_key"], "dev-without-ceilings");
    EXPECT_EQ(j["sections"][0]["unmatched_peers"], 2);
}

}  // namespace
}  // namespace ktune::test
