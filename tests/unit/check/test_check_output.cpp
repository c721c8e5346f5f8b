#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "ktune_test_config.hpp"
#include "tuner/check/check_output.hpp"

namespace ktune {
namespace {

Comparison comparison(double base, double ratio, double lo, double hi, double threshold, Verdict v) {
    Comparison c;
    c.n_baseline = 90;
    c.n_current = 300;
    c.baseline_p50_us = base;
    c.current_p50_us = base * ratio;
    c.ratio = ratio;
    c.ci_lo = lo;
    c.ci_hi = hi;
    c.threshold = threshold;
    c.verdict = v;
    c.mann_whitney_p = 0.001;
    c.prob_slower = 0.9;
    return c;
}

CaseResult row(const std::string& op, const std::string& problem, Verdict v, Comparison c) {
    CaseResult r;
    r.op = op;
    r.variant = "fwd";
    r.problem_key = problem;
    r.id = op + "/fwd " + problem;
    r.config_key = "BLOCK=256,VEC=8";
    r.first = c;
    r.first_verdict = v;
    r.verdict = v;
    r.seconds = 1.5;
    return r;
}

// One case of every verdict, in an order the renderers must change (slow news first).
CheckReport sample_report() {
    CheckReport r;
    r.baseline_path = "results/baselines/nvidia-h100-80gb-hbm3-sm_90.json";
    r.baseline_device = {.key = "NVIDIA H100 80GB HBM3|sm_90|132SM", .name = "NVIDIA H100 80GB HBM3", .arch = "sm_90"};
    r.baseline_git_revision = "abc1234";
    r.baseline_created_at = "2025-01-31T12:00:00Z";
    r.current_device_key = r.baseline_device.key;
    r.remeasure_rounds = 5;

    CaseResult same =
        row("rmsnorm", "bf16:M=1,H=4096", Verdict::same, comparison(3.2, 1.004, 0.98, 1.03, 0.077, Verdict::same));
    same.better_config = "BLOCK=512,VEC=8";
    same.better_config_wins = true;
    same.notes.push_back(
        "a different configuration now wins: BLOCK=512,VEC=8 (-7.0 % versus BLOCK=256,VEC=8; re-tune)");
    r.cases.push_back(same);

    CaseResult slower = row("rmsnorm", "bf16:M=4096,H=8192", Verdict::slower,
                            comparison(50.1, 1.085, 1.06, 1.11, 0.054, Verdict::slower));
    slower.remeasured = comparison(50.1, 1.102, 1.081, 1.121, 0.054, Verdict::slower);
    slower.reference = ReferenceKind::same_code;
    slower.rounds = 5;
    slower.notes.push_back("slowdown reproduced in 5 interleaved rounds");
    r.cases.push_back(slower);

    r.cases.push_back(row("softmax", "fp16:M=4096,N=32000", Verdict::faster,
                          comparison(1210, 0.9, 0.89, 0.91, 0.03, Verdict::faster)));

    CaseResult unclear =
        row("rope", "bf16:T=1,H=32", Verdict::unclear, comparison(8.4, 1.06, 1.04, 1.09, 0.07, Verdict::unclear));
    unclear.remeasured = comparison(8.4, 1.061, 1.041, 1.088, 0.07, Verdict::unclear);
    unclear.rounds = 5;
    unclear.notes.push_back("the GPU is <noisy> & \"busy\" | 'today'");
    r.cases.push_back(unclear);

    CaseResult failed = row("swiglu", "bf16:M=64,H=14336", Verdict::failed, Comparison{});
    failed.failure = Status::invalid_result;
    failed.failure_message = "1024 of 4096 outputs differ from the reference (max |err| 3.1e-01)";
    failed.notes.push_back("invalid_result: " + failed.failure_message);
    r.cases.push_back(failed);
    return r;
}

// Golden text with "{num}" standing for any number, so formatting changes of digits never break the test but
// everything else must match line for line.
void expect_matches_golden(const std::string& text, const std::string& golden_path) {
    std::ifstream in(golden_path);
    ASSERT_TRUE(in) << "cannot open " << golden_path;
    std::stringstream g;
    g << in.rdbuf();
    auto lines = [](const std::string& s) {
        std::vector<std::string> out;
        std::stringstream ss(s);
        for (std::string l; std::getline(ss, l);) out.push_back(l);
        return out;
    };
    const auto want = lines(g.str()), got = lines(text);
    ASSERT_EQ(got.size(), want.size()) << text;
    const std::regex special(R"([.^$|()\[\]{}*+?\\])");
    for (std::size_t i = 0; i < want.size(); ++i) {
        std::string pattern;
        std::size_t at = 0;
        for (std::size_t p; (p = want[i].find("{num}", at)) != std::string::npos; at = p + 5)
            pattern += std::regex_replace(want[i].substr(at, p - at), special, R"(\$&)") + R"([-+]?[0-9]+(\.[0-9]+)?)";
        pattern += std::regex_replace(want[i].substr(at), special, R"(\$&)");
        EXPECT_TRUE(std::regex_match(got[i], std::regex(pattern)))
            << "line " << i + 1 << "\n got: " << got[i] << "\nwant: " << want[i];
    }
}

// Enough of XML to catch what a renderer gets wrong: unbalanced or crossed tags, unquoted attributes, raw < or & in
// text or attributes.
::testing::AssertionResult well_formed_xml(const std::string& x) {
    std::vector<std::string> open;
    auto entity_ok = [&](std::size_t at) {
        static const std::regex entity(R"(&(amp|lt|gt|quot|apos|#[0-9]+);)");
        const auto end = x.find(';', at);
        return end != std::string::npos && std::regex_match(x.substr(at, end - at + 1), entity);
    };
    std::size_t i = 0;
    if (x.rfind("<?xml ", 0) == 0) i = x.find("?>") + 2;
    while (i < x.size()) {
        if (x[i] == '&') {
            if (!entity_ok(i)) return ::testing::AssertionFailure() << "bad entity at " << i;
            ++i;
            continue;
        }
        if (x[i] != '<') {
            ++i;
            continue;
        }
        const auto end = x.find('>', i);
        if (end == std::string::npos) return ::testing::AssertionFailure() << "unterminated tag at " << i;
        std::string tag = x.substr(i + 1, end - i - 1);
        if (tag.find('<') != std::string::npos) return ::testing::AssertionFailure() << "< inside a tag at " << i;
        if (tag[0] == '/') {
            if (open.empty() || open.back() != tag.substr(1))
                return ::testing::AssertionFailure()
                       << "</" << tag.substr(1) << "> closes " << (open.empty() ? "nothing" : open.back());
            open.pop_back();
        } else {
            const bool self_closing = tag.back() == '/';
            if (self_closing) tag.pop_back();
            const std::string name = tag.substr(0, tag.find(' '));
            // Attributes: name="value" pairs with no raw < or &.
            static const std::regex attrs(R"(^[A-Za-z_:][-\w:.]*(\s+[A-Za-z_:][-\w:.]*="[^"<]*")*\s*$)");
            if (!std::regex_match(tag, attrs)) return ::testing::AssertionFailure() << "bad tag: <" << tag << ">";
            for (std::size_t a = tag.find('&'); a != std::string::npos; a = tag.find('&', a + 1))
                if (!entity_ok(i + 1 + a)) return ::testing::AssertionFailure() << "bad entity in <" << tag << ">";
            if (!self_closing) open.push_back(name);
        }
        i = end + 1;
    }
    if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> never closed";
    return ::testing::AssertionSuccess();
}

TEST(CheckOutput, ListsSlowNewsFirst) {
    const CheckReport report = sample_report();
    const auto order = cases_in_output_order(report);
    std::vector<Verdict> verdicts;
    for (const auto* c : order) verdicts.push_back(c->verdict);
    EXPECT_EQ(verdicts, (std::vector<Verdict>{Verdict::failed, Verdict::slower, Verdict::unclear, Verdict::faster,
                                              Verdict::same}));
}

TEST(CheckOutput, MarkdownMatchesTheGoldenSummary) {
    expect_matches_golden(format_check_markdown(sample_report()),
                          std::string(KTUNE_SOURCE_ROOT) + "/tests/unit/check/golden/check_summary.md");
}

TEST(CheckOutput, MarkdownStartsWithTheVerdictLine) {
    CheckReport r = sample_report();
    EXPECT_EQ(
        format_check_markdown(r).rfind("## ❌ ktune check failed: 1 reproduced slowdown, 1 correctness failure\n", 0),
        0u);
    r.cases.erase(r.cases.begin() + 4);  // failed
    r.cases.erase(r.cases.begin() + 1);  // slower
    EXPECT_EQ(format_check_markdown(r).rfind("## ✅ ktune check passed: no reproduced slowdown (1 unclear)\n", 0), 0u);
}

TEST(CheckOutput, MarkdownWarnsWhenDevicesWereComparedByForce) {
    CheckReport r = sample_report();
    r.device_mismatch_forced = true;
    r.current_device_key = "NVIDIA A100-SXM4-80GB|sm_80|108SM";
    EXPECT_NE(format_check_markdown(r).find("Compared across devices (forced)"), std::string::npos);
}

TEST(CheckOutput, JUnitIsWellFormedWithOneTestcasePerCase) {
    const std::string x = format_check_junit(sample_report());
    EXPECT_TRUE(well_formed_xml(x)) << x;
    std::size_t testcases = 0, testsuites = 0;
    for (auto at = x.find("<testcase "); at != std::string::npos; at = x.find("<testcase ", at + 1)) ++testcases;
    for (auto at = x.find("<testsuite "); at != std::string::npos; at = x.find("<testsuite ", at + 1)) ++testsuites;
    EXPECT_EQ(testcases, 5u);
    EXPECT_EQ(testsuites, 1u);
    EXPECT_NE(x.find("tests=\"5\" failures=\"2\" errors=\"0\" skipped=\"1\""), std::string::npos);
}

TEST(CheckOutput, JUnitFailsSlowerAndBrokenCasesAndSkipsUnclearOnes) {
    const std::string x = format_check_junit(sample_report());
    EXPECT_NE(x.find("<failure type=\"slower\" message=\"slower: +10.2 % [+8.1, +12.1] (limit ±5.4 %), reproduced in 5 "
                     "rounds\">"),
              std::string::npos)
        << x;
    EXPECT_NE(x.find("<failure type=\"correctness\" message=\"invalid_result: 1024 of 4096 outputs"),
              std::string::npos);
    EXPECT_NE(x.find("<skipped message=\"unclear: "), std::string::npos);
    EXPECT_NE(x.find("classname=\"ktune.check.rmsnorm.fwd\" name=\"bf16:M=4096,H=8192\""), std::string::npos);
}

TEST(CheckOutput, JUnitEscapesText) {
    const std::string x = format_check_junit(sample_report());
    EXPECT_EQ(x.find("<noisy>"), std::string::npos);
    EXPECT_NE(x.find("the GPU is &lt;noisy&gt; &amp; &quot;busy&quot; | &apos;today&apos;"), std::string::npos);
}

TEST(XmlEscape, EscapesMarkupAndDropsCharactersXmlCannotCarry) {
    EXPECT_EQ(xml_escape("a<b>&\"c'\n"), "a&lt;b&gt;&amp;&quot;c&apos;&#10;");
    EXPECT_EQ(xml_escape(std::string("x\x01y\x1bz", 5)), "xyz");
    EXPECT_EQ(xml_escape("±5 %"), "±5 %");
}

TEST(CheckOutput, TerminalTableAlignsColumnsAndEndsWithTheOutcome) {
    const std::string t = format_check_table(sample_report());
    std::vector<std::string> lines;
    std::stringstream ss(t);
    for (std::string l; std::getline(ss, l);) lines.push_back(l);
    ASSERT_EQ(lines.size(), 1u + 1 + 5 + 1);  // title, header, cases, outcome
    EXPECT_EQ(lines[1].rfind("verdict", 0), 0u);
    EXPECT_EQ(lines[2].rfind("FAILED ", 0), 0u);
    EXPECT_EQ(lines[3].rfind("SLOWER ", 0), 0u);
    EXPECT_EQ(lines[6].rfind("same ", 0), 0u);
    // The case column starts at the same place on every line.
    // Left-aligned text columns start, right-aligned number columns end, at the same place on every line.
    const auto case_col = lines[1].find("case");
    const auto ratio_end = lines[1].find("ratio") + 5;
    for (std::size_t i = 2; i < 7; ++i) {
        EXPECT_EQ(lines[i][case_col - 1], ' ') << lines[i];
        EXPECT_NE(lines[i][case_col], ' ') << lines[i];
        const bool measured = lines[i].rfind("FAILED", 0) != 0;
        EXPECT_EQ(lines[i].substr(ratio_end - (measured ? 1 : 3), measured ? 1 : 3), measured ? "x" : "n/a")
            << lines[i];
    }
    EXPECT_NE(lines[3].find("1.102x"), std::string::npos);
    EXPECT_NE(lines[3].find("[1.081, 1.121]"), std::string::npos);
    EXPECT_EQ(lines.back().rfind("FAILED: 1 reproduced slowdown, 1 correctness failure", 0), 0u);
}

}  // namespace
}  // namespace ktune
