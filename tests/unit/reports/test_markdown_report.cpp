#include <gtest/gtest.h>

#include "reports/report.hpp"
#include "tests/unit/reports/golden.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

std::string markdown(const ReportData& d) { return render_report(d, ReportFormat::markdown); }

TEST(MarkdownReport, MatchesTheGoldenFile) { expect_matches_golden(markdown(sample_report()), "sample.md"); }

TEST(MarkdownReport, HasOneHeadingPerOpAndOnePerDeviceThenThePeersWithoutResults) {
    const std::string md = markdown(sample_report());
    EXPECT_EQ(count(md, "\n## "), 2u);
    EXPECT_TRUE(contains(md, "\n## Peers without ktune results\n"));
    EXPECT_EQ(count(md, "\n### "), 2u);
    EXPECT_TRUE(contains(md, "\n## rmsnorm fwd\n"));
    EXPECT_TRUE(contains(md, "\n### NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)\n"));
}

TEST(MarkdownReport, TheResultsTableHasASpeedupColumnPerPeerAndTheBestPeer) {
    const std::string md = markdown(sample_report());
    EXPECT_TRUE(contains(md,
                         "| problem | config | p50 (us) | p95 (us) | p99 (us) | GB/s | % of copy | "
                         "% of same-size copy | vs liger | vs torch_compile | vs torch_eager | best peer |"))
        << md;
    // bf16 M=4096: torch_compile 30.2 / 24.5 = 1.23x is the best peer, torch_eager 70.4 / 24.5 = 2.87x.
    EXPECT_TRUE(contains(md, "| 1.27x | 1.23x | 2.87x | torch_compile 1.23x |")) << md;
}

TEST(MarkdownReport, TheLatencyTableGivesPercentilesAndImprovementPerPeer) {
    const std::string md = markdown(sample_report());
    EXPECT_TRUE(contains(md,
                         "| problem | ktune | liger | improvement | torch_compile | improvement | torch_eager | "
                         "improvement |"));
    // bf16 M=16384: ktune 185 us against torch_compile 181 us is 2.2 % slower.
    EXPECT_TRUE(contains(md, "| 181.0 / 184.6 / 190.1 | -2.2 / -1.2 / -0.7 % |")) << md;
}

TEST(MarkdownReport, APeerWithoutATimingOfAProblemShowsADash) {
    const std::string md = markdown(sample_report());
    // bf16 M=16384 has no liger timing: its speedup cell is missing.
    EXPECT_TRUE(contains(md, "| 96.3 | 97.9 | - | 0.98x | 2.81x | torch_compile 0.98x |")) << md;
}

TEST(MarkdownReport, EachRowGivesItsShareOfTheSameSizeCopyAfterItsShareOfTheCeiling) {
    const std::string md = markdown(sample_report());
    // bf16 M=4096: the same-size copy takes 22.8 us against ktune's 24.5 us, 93.1 %.
    EXPECT_TRUE(contains(md, "| 24.50 | 24.75 | 25.36 | 2739 | 90.9 | 93.1 | 1.27x |")) << md;
    // Without a copy curve on the device, as without a ceiling: missing.
    EXPECT_TRUE(contains(md, "| 1614 | - | - |\n")) << md;
    EXPECT_TRUE(contains(md,
                         "% of same-size copy: the p50 of the best `copy/fwd` of the same bytes on the same "
                         "device (tuned with `ktune tune copy`"));
    EXPECT_TRUE(contains(md, "(`ktune tune copy_read`)"));
}

TEST(MarkdownReport, EachPeerSaysHowItWasTimedWithWhichVersionsAndFromWhichFile) {
    EXPECT_TRUE(contains(markdown(sample_report()),
                         "- torch_eager: cold_l2_events, torch 2.5.1+cu124, triton 3.1.0, cuda_graphs false "
                         "(bench/peers/h100_rmsnorm.json)\n"));
}

TEST(MarkdownReport, AResultThatHitTheTimeCapIsMarked) {
    const std::string md = markdown(sample_report());
    EXPECT_TRUE(contains(md, "| 185.0* |"));
    EXPECT_TRUE(contains(md, "\\* sampling stopped at the time cap"));
}

TEST(MarkdownReport, ADeviceWithoutPeersSaysHowToImportThem) {
    EXPECT_TRUE(contains(markdown(sample_report()), "import some with `ktune import-peers`"));
}

TEST(MarkdownReport, ADeviceWithoutACeilingSaysItWasNotMeasured) {
    EXPECT_TRUE(contains(markdown(sample_report()), "copy ceiling not measured (ktune devices measures it)"));
}

TEST(MarkdownReport, UnmatchedPeerMeasurementsAreCounted) {
    EXPECT_TRUE(contains(markdown(sample_report()), "2 peer measurements on this device are for problems without"));
}

TEST(MarkdownReport, PipesInNamesAreEscapedSoTablesKeepTheirColumns) {
    ReportData d = sample_report();
    d.sections[0].rows[0].config_key = "A|B";
    EXPECT_TRUE(contains(markdown(d), "| A\\|B |"));
}

TEST(MarkdownReport, ATflopsColumnAppearsOnlyWhenFlopsAreKnown) {
    ReportData d = sample_report();
    EXPECT_FALSE(contains(markdown(d), "TFLOP/s"));
    d.sections[0].rows[0].flops = 5e7;
    d.sections[0].rows[0].tflops = 2.04;
    EXPECT_EQ(count(markdown(d), "TFLOP/s"), 1u);
}

TEST(MarkdownReport, AnEmptyReportSaysThereAreNoResults) {
    ReportData d;
    d.generated_at = "2025-06-01T12:00:00Z";
    EXPECT_TRUE(contains(markdown(d), "No timed results in the database."));
}

}  // namespace
}  // namespace ktune::test
