#include <gtest/gtest.h>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/interop/t4.hpp"

namespace ktune {
namespace {

const std::string kTiny = std::string(KTUNE_TEST_DATA) + "/replay/tiny_T4.json";

TEST(T4, ReadsConfigurationsTimesAndWhyAConfigurationIsInvalid) {
    const T4File f = read_t4(kTiny);
    ASSERT_EQ(f.results.size(), 12u);
    EXPECT_EQ(f.parameters, (std::vector<std::string>{"block_size_x", "tile"}));
    const T4Result& failed = f.results[0];  // block_size_x=32, tile=1
    EXPECT_EQ(failed.config, (NamedValues{{"block_size_x", 32}, {"tile", 1}}));
    EXPECT_EQ(failed.invalidity, "runtime");
    EXPECT_FALSE(failed.time_ms);
    const T4Result& best = f.results[7];  // block_size_x=128, tile=2
    EXPECT_EQ(best.config, (NamedValues{{"block_size_x", 128}, {"tile", 2}}));
    ASSERT_TRUE(best.valid());
    EXPECT_DOUBLE_EQ(*best.time_ms, 1.0);
    EXPECT_DOUBLE_EQ(best.total_ms(), 100 + 10 + 1 + 1);
    EXPECT_EQ(f.results[11].invalidity, "compile");
}

TEST(T4, SurvivesARoundTripThroughPlainAndGzipFiles) {
    const T4File f = read_t4(kTiny);
    test::TempDir dir;
    for (const std::string name : {"out.json", "out.json.gz"}) {
        const std::string path = (dir.path() / name).string();
        write_t4(f, path);
        const T4File g = read_t4(path);
        ASSERT_EQ(g.results.size(), f.results.size()) << name;
        for (std::size_t i = 0; i < f.results.size(); ++i) {
            EXPECT_EQ(g.results[i].config, f.results[i].config);
            EXPECT_EQ(g.results[i].invalidity, f.results[i].invalidity);
            EXPECT_EQ(g.results[i].time_ms, f.results[i].time_ms);
            EXPECT_DOUBLE_EQ(g.results[i].total_ms(), f.results[i].total_ms());
        }
    }
}

TEST(T4, KeepsNonIntegralValuesAsPositionsAndWritesThemBack) {
    const T4File f = parse_t4(R"({"metadata": {"timeunit": "seconds"}, "results": [
        {"configuration": {"dtype": "half", "scale": 0.5}, "invalidity": "correct",
         "measurements": [{"name": "time", "value": 0.002}], "times": {"compilation": 1}},
        {"configuration": {"dtype": "float", "scale": 0.25}, "invalidity": "correct",
         "measurements": [{"name": "time", "value": 0.001}], "times": {"compilation": 1}}]})",
                              "inline");
    EXPECT_EQ(f.results[0].config, (NamedValues{{"dtype", 1}, {"scale", 1}}));  // "float" < "half", 0.25 < 0.5
    EXPECT_DOUBLE_EQ(*f.results[1].time_ms, 1.0);                               // seconds to milliseconds
    EXPECT_DOUBLE_EQ(f.results[1].compile_ms, 1000.0);
    const T4File g = parse_t4(t4_json(f), "written");
    EXPECT_EQ(g.labels, f.labels);
    EXPECT_EQ(g.results[0].config, f.results[0].config);
}

TEST(T4, RefusesAFileWithoutResults) { EXPECT_THROW(parse_t4(R"({"schema_version": "1.0.0"})", "inline"), Error); }

TEST(T4, WritesKtuneResultsWithTheirStatusAsInvalidity) {
    ResultRecord ok, wrong, failed;
    ok.config_key = "BLOCK=256,VEC=8";
    ok.measurement.stats.p50 = 12.5;
    ok.measurement.samples_us = {12, 13};
    ok.measurement.compile.compile_seconds = 0.25;
    wrong.config_key = "BLOCK=512,VEC=8";
    wrong.measurement.status = Status::invalid_result;
    failed.config_key = "BLOCK=1024,VEC=8";
    failed.measurement.status = Status::compile_error;
    const T4File f = t4_from_results({ok, wrong, failed});
    EXPECT_EQ(f.parameters, (std::vector<std::string>{"BLOCK", "VEC"}));
    EXPECT_EQ(f.results[0].config, (NamedValues{{"BLOCK", 256}, {"VEC", 8}}));
    EXPECT_DOUBLE_EQ(*f.results[0].time_ms, 0.0125);
    EXPECT_DOUBLE_EQ(f.results[0].total_ms(), 250 + 0.012 + 0.013);
    EXPECT_EQ(f.results[1].invalidity, "correctness");
    EXPECT_EQ(f.results[2].invalidity, "compile");
    EXPECT_FALSE(f.results[2].time_ms);
}

}  // namespace
}  // namespace ktune
