#pragma once
// What `ktune check` prints and writes: a terminal table, a Markdown summary for the pull request, JUnit XML for CI
// systems. Renderers see only the plain CheckReport. Every output lists the cases slowest news first: failed, slower,
// unclear, faster, same (ties: larger ratio first).
#include <string>
#include <string_view>
#include <vector>

#include "tuner/check/check_runner.hpp"

namespace ktune {

// Aligned columns: verdict, case, config, baseline p50, current p50, ratio, 95 % CI, limit, re-measurement rounds,
// note; then a one-line summary. Verdicts that fail the check are upper case (SLOWER, FAILED).
std::string format_check_table(const CheckReport& report);

// A verdict line first ("## ✅ ktune check passed: ..." / "## ❌ ktune check failed: ..."), then the device and
// baseline, the counts, a table (change in percent with its 95 % CI) and a short "how to read this" footer.
std::string format_check_markdown(const CheckReport& report);

// One <testsuite> inside <testsuites>, one <testcase> per case (classname "ktune.check.<op>[.<variant>]", name the
// problem key): <failure type="slower"> for reproduced slowdowns, <failure type="correctness"> for failed cases,
// <skipped> for unclear ones, with a message; <system-out> carries the numbers and notes.
std::string format_check_junit(const CheckReport& report);

// The cases in output order (see above).
std::vector<const CaseResult*> cases_in_output_order(const CheckReport& report);
std::vector<const CaseResult*> cases_in_output_order(const CheckReport&&) = delete;  // would dangle

// XML-escapes text for attribute values and character data: & < > " ' and newlines/tabs as character references;
// other control characters, which XML 1.0 cannot carry, are dropped.
std::string xml_escape(std::string_view s);

}  // namespace ktune
