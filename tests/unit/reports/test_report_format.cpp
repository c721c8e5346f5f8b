#include <gtest/gtest.h>

#include "reports/detail/format.hpp"
#include "reports/report.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

using namespace ktune::report_detail;

TEST(ReportFormatNames, EveryFormatIsParsedFromItsNameInAnyCase) {
    EXPECT_EQ(parse_report_format("md"), ReportFormat::markdown);
    EXPECT_EQ(parse_report_format("Markdown"), ReportFormat::markdown);
    EXPECT_EQ(parse_report_format("HTML"), ReportFormat::html);
    EXPECT_EQ(parse_report_format("csv"), ReportFormat::csv);
    EXPECT_EQ(parse_report_format("json"), ReportFormat::json);
}

TEST(ReportFormatNames, AnUnknownFormatIsBadInputNamingTheOption) {
    const Error e = error_of([] { parse_report_format("pdf"); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), "--format");
    EXPECT_EQ(e.message(), "unknown report format 'pdf' (expected md, html, csv or json)");
}

TEST(ReportFormatNames, TheFormatFollowsTheOutputFilesExtension) {
    EXPECT_EQ(report_format_for_path("out/report.HTML"), ReportFormat::html);
    EXPECT_EQ(report_format_for_path("r.md"), ReportFormat::markdown);
    EXPECT_EQ(report_format_for_path("r.csv"), ReportFormat::csv);
    EXPECT_EQ(report_format_for_path("r.json"), ReportFormat::json);
    EXPECT_EQ(report_format_for_path("r.txt"), std::nullopt);
    EXPECT_EQ(report_format_for_path("dir.html/report"), std::nullopt);
}

TEST(ReportNumbers, TimesKeepAtLeastThreeSignificantDigits) {
    EXPECT_EQ(format_us(0.5123), "0.512");
    EXPECT_EQ(format_us(24.5), "24.50");
    EXPECT_EQ(format_us(185.04), "185.0");
    EXPECT_EQ(format_us(1234.6), "1235");
}

TEST(ReportNumbers, UnknownNumbersAreShownAsMissing) {
    EXPECT_EQ(format_us(k_report_nan), "-");
    EXPECT_EQ(format_speedup(k_report_nan), "-");
    EXPECT_EQ(format_exact(k_report_nan), "");
}

TEST(ReportNumbers, ImprovementIsTheShareOfThePeersTimeSaved) {
    EXPECT_DOUBLE_EQ(improvement_pct(75, 100), 25);
    EXPECT_DOUBLE_EQ(improvement_pct(110, 100), -10);
    EXPECT_EQ(format_improvement(25), "+25.0 %");
    EXPECT_EQ(format_improvement(-10), "-10.0 %");
}

TEST(ReportNumbers, BytesUsePowersOfAThousand) {
    EXPECT_EQ(format_bytes(1e6), "1 MB");
    EXPECT_EQ(format_bytes(16.8e6), "16.8 MB");
    EXPECT_EQ(format_bytes(512), "512 B");
    EXPECT_EQ(format_bytes(2.5e9), "2.5 GB");
}

TEST(ReportNumbers, CsvReadsBackTheExactDouble) {
    EXPECT_EQ(std::stod(format_exact(0.1 + 0.2)), 0.1 + 0.2);
    EXPECT_EQ(format_exact(24.5), "24.5");
}

TEST(ReportEscaping, HtmlEscapesTheFiveSpecialCharacters) {
    EXPECT_EQ(html_escape("<a href=\"x\">Tom & Jerry's</a>"),
              "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
}

TEST(ReportEscaping, MarkdownCellsEscapePipesAndFoldLineBreaks) {
    EXPECT_EQ(markdown_cell("a|b\\c\nd"), "a\\|b\\\\c d");
}

TEST(ReportEscaping, CsvFieldsAreQuotedOnlyWhenTheyMustBe) {
    EXPECT_EQ(csv_field("plain text"), "plain text");
    EXPECT_EQ(csv_field("M=4096,H=4096"), "\"M=4096,H=4096\"");
    EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
    EXPECT_EQ(csv_field("cr\rhere"), "\"cr\rhere\"");
}

}  // namespace
}  // namespace ktune::test
