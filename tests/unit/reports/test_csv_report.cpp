#include <gtest/gtest.h>

#include "reports/report.hpp"
#include "tests/unit/reports/golden.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

std::string csv(const ReportData& d) { return render_report(d, ReportFormat::csv); }

// A small RFC 4180 reader: records of fields, quotes doubled inside quoted fields.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                records.back().back() += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                records.back().back() += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            records.back().emplace_back();
        } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            ++i;
            if (i + 1 < text.size()) records.emplace_back(1);
        } else {
            records.back().back() += c;
        }
    }
    return records;
}

TEST(CsvReport, MatchesTheGoldenFile) { expect_matches_golden(csv(sample_report()), "sample.csv"); }

TEST(CsvReport, EveryLineEndsWithCrlf) {
    const std::string c = csv(sample_report());
    EXPECT_EQ(count(c, "\n"), count(c, "\r\n"));
    EXPECT_EQ(count(c, "\r\n"), 5u);  // a header and four rows
}

TEST(CsvReport, TheHeaderHasTheFixedColumnsThenFourPerPeer) {
    const auto records = parse_csv(csv(sample_report()));
    const std::vector<std::string>& head = records.front();
    ASSERT_EQ(head.size(), 29u + 3u * 4u);
    EXPECT_EQ(head[0], "device_key");
    EXPECT_EQ(head[10], "p50_us");
    EXPECT_EQ(head[28], "best_peer_speedup");
    EXPECT_EQ(head[29], "liger_p50_us");
    EXPECT_EQ(head[32], "liger_speedup");
    EXPECT_EQ(head.back(), "torch_eager_speedup");
}

TEST(CsvReport, HasOneRowPerDeviceOpAndProblemWithAsManyFieldsAsTheHeader) {
    const auto records = parse_csv(csv(sample_report()));
    ASSERT_EQ(records.size(), 5u);
    for (const auto& r : records) EXPECT_EQ(r.size(), records.front().size());
    EXPECT_EQ(records[1][4], "bf16:M=4096,H=4096");
    EXPECT_EQ(records[4][0], "dev-without-ceilings");
}

TEST(CsvReport, FieldsWithCommasQuotesAndLineBreaksReadBackIntact) {
    ReportData d = sample_report();
    d.devices[0].name = "GPU \"one\", rev\nB";
    const auto records = parse_csv(csv(d));
    EXPECT_EQ(records[1][1], "GPU \"one\", rev\nB");
    EXPECT_EQ(records[1][6], "M=4096,H=4096");
}

TEST(CsvReport, UnknownNumbersAndMissingPeersAreEmptyFields) {
    const auto records = parse_csv(csv(sample_report()));
    const auto& head = records.front();
    const auto col = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin());
    };
    EXPECT_EQ(records[4][col("copy_gbps")], "");
    EXPECT_EQ(records[4][col("pct_of_copy")], "");
    EXPECT_EQ(records[2][col("liger_p50_us")], "");  // bf16 M=16384 has no liger timing
    EXPECT_EQ(records[2][col("torch_compile_p50_us")], "181");
}

TEST(CsvReport, TheSameSizeFloorsFollowTheShareOfTheCopyCeiling) {
    const auto records = parse_csv(csv(sample_report()));
    const std::vector<std::string>& head = records.front();
    const auto at = std::find(head.begin(), head.end(), "pct_of_copy");
    ASSERT_LT(at + 3, head.end());
    EXPECT_EQ(std::vector<std::string>(at + 1, at + 4),
              (std::vector<std::string>{"copy_floor_us", "read_floor_us", "pct_of_copy_floor"}));
    const auto col = static_cast<std::size_t>(at - head.begin()) + 1;
    EXPECT_EQ(records[1][col], "22.8");
    EXPECT_EQ(records[1][col + 1], "14.1");
    EXPECT_NEAR(std::stod(records[1][col + 2]), 100 * 22.8 / 24.5, 1e-9);
    EXPECT_EQ(records[3][col + 1], "");                                        // fp32 M=4096: no read floor
    for (std::size_t i = col; i < col + 3; ++i) EXPECT_EQ(records[4][i], "");  // a device without copies
}

}  // namespace
}  // namespace ktune::test
