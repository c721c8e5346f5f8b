#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "reports/report.hpp"
#include "tests/unit/reports/golden.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

std::string html(const ReportData& d) { return render_report(d, ReportFormat::html); }

TEST(HtmlReport, MatchesTheGoldenFile) { expect_matches_golden(html(sample_report()), "sample.html"); }

// With KTUNE_WRITE_SAMPLES=DIR, the sample report is written there in every format, for reports/check_html.sh and
// for a look at it.
TEST(HtmlReport, TheSampleReportCanBeWrittenForABrowserCheck) {
    const char* dir = std::getenv("KTUNE_WRITE_SAMPLES");
    if (!dir) GTEST_SKIP() << "set KTUNE_WRITE_SAMPLES=DIR to write the sample reports there";
    std::filesystem::create_directories(dir);
    for (const ReportFormat f : {ReportFormat::markdown, ReportFormat::html, ReportFormat::csv, ReportFormat::json}) {
        const std::string path = std::string(dir) + "/sample." + std::string(report_format_name(f));
        std::ofstream(path, std::ios::binary) << render_report(sample_report(), f);
        EXPECT_TRUE(std::filesystem::file_size(path) > 0) << path;
    }
}

TEST(HtmlReport, IsOneDocumentWithItsStyleInline) {
    const std::string h = html(sample_report());
    EXPECT_EQ(h.rfind("<!DOCTYPE html>\n", 0), 0u);
    EXPECT_EQ(count(h, "<style>"), 1u);
    EXPECT_TRUE(h.size() > 20 && h.substr(h.size() - 8) == "</html>\n");
}

TEST(HtmlReport, NeedsNoScriptAndNoExternalResource) {
    const std::string h = html(sample_report());
    EXPECT_FALSE(contains(h, "<script"));
    EXPECT_FALSE(contains(h, "src="));
    EXPECT_FALSE(contains(h, "href=\"http"));
    EXPECT_FALSE(contains(h, "url("));
    EXPECT_FALSE(contains(h, "@import"));
    EXPECT_EQ(count(h, "http"), count(h, "xmlns=\"http://www.w3.org/2000/svg\""));  // a namespace name, never fetched
}

TEST(HtmlReport, DrawsABandwidthChartPerSectionAndASpeedupChartWhereThereArePeers) {
    const std::string h = html(sample_report());
    EXPECT_EQ(count(h, "aria-label=\"Achieved bandwidth of rmsnorm fwd against bytes moved\""), 2u);
    EXPECT_EQ(count(h, "aria-label=\"Speedup of ktune over each peer for rmsnorm fwd\""), 1u);
}

TEST(HtmlReport, DrawsALatencyDistributionPerProblem) {
    const std::string h = html(sample_report());
    EXPECT_EQ(count(h, "aria-label=\"Latency distributions of "), 4u);
    // 2 + 1 charts above, 4 latency panels.
    EXPECT_EQ(count(h, "<svg "), 7u);
}

TEST(HtmlReport, TheBandwidthChartHasAPointPerProblemAndALinePerDtypeWithSeveralPoints) {
    const std::string h = html(sample_report());
    EXPECT_EQ(count(h, "<circle "), 4u);
    EXPECT_EQ(count(h, "<polyline "), 1u);  // bf16 has two problems on the H100; fp32 and fp16 have one each
}

TEST(HtmlReport, TheCopyCeilingIsADashedLineOnlyWhereItWasMeasured) {
    const std::string h = html(sample_report());
    EXPECT_EQ(count(h, ">copy ceiling 3012 GB/s</text>"), 1u);
    // The ceiling and the speedup chart's parity line.
    EXPECT_EQ(count(h, "stroke-dasharray=\"6 4\""), 2u);
}

TEST(HtmlReport, TheSpeedupChartHasABarPerPeerTiming) {
    const std::string h = html(sample_report());
    const std::size_t speedup = h.find("aria-label=\"Speedup of ktune");
    const std::size_t end = h.find("</svg>", speedup);
    ASSERT_NE(speedup, std::string::npos);
    // 3 + 2 + 1 peer timings, and 3 legend swatches.
    EXPECT_EQ(count(h.substr(speedup, end - speedup), "<rect "), 6u + 3u);
}

TEST(HtmlReport, APeerWithoutSamplesIsDrawnFromItsPercentiles) {
    EXPECT_EQ(count(html(sample_report()), "(no samples)</title>"), 2u);  // torch_eager on two problems
}

TEST(HtmlReport, EveryNameIsEscaped) {
    ReportData d = sample_report();
    d.title = "<b>bold</b>";
    d.devices[0].name = "Fake <GPU> & \"Co\"";
    d.sections[0].rows[0].config_key = "<script>alert(1)</script>";
    d.sections[0].peer_labels[0] = "li<ger";
    d.sections[0].rows[0].peers[0].label = "li<ger";
    const std::string h = html(d);
    EXPECT_FALSE(contains(h, "<script"));
    EXPECT_FALSE(contains(h, "<b>"));
    EXPECT_FALSE(contains(h, "<GPU>"));
    EXPECT_FALSE(contains(h, "li<ger"));
    EXPECT_TRUE(contains(h, "Fake &lt;GPU&gt; &amp; &quot;Co&quot;"));
    EXPECT_TRUE(contains(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
}

TEST(HtmlReport, SpeedupCellsAreColouredByWhoIsFaster) {
    const std::string h = html(sample_report());
    EXPECT_TRUE(contains(h, "<td class=\"num better\">1.23x</td>"));
    EXPECT_TRUE(contains(h, "<td class=\"num worse\">0.98x</td>"));
}

TEST(HtmlReport, EachRowGivesItsShareOfTheSameSizeCopyAfterItsShareOfTheCeiling) {
    const std::string h = html(sample_report());
    EXPECT_EQ(count(h, "<th>GB/s</th><th>% of copy</th><th>% of same-size copy</th>"), 2u);
    // bf16 M=4096: the same-size copy takes 22.8 us against ktune's 24.5 us, 93.1 %.
    EXPECT_TRUE(contains(h, "<td class=\"num\">90.9</td><td class=\"num\">93.1</td>")) << h;
    EXPECT_TRUE(contains(h, "<td class=\"num\">1614</td><td class=\"num\">-</td><td class=\"num\">-</td></tr>"));
    EXPECT_TRUE(contains(h, "% of same-size copy: the p50 of the best <code>copy/fwd</code> of the same bytes"));
    EXPECT_TRUE(contains(h, "<code>ktune tune copy_read</code>"));
}

TEST(HtmlReport, AnEmptyReportIsStillAWholeDocument) {
    const std::string h = html(ReportData{});
    EXPECT_TRUE(contains(h, "No timed results in the database."));
    EXPECT_TRUE(contains(h, "</html>"));
    EXPECT_FALSE(contains(h, "<svg"));
}

}  // namespace
}  // namespace ktune::test
