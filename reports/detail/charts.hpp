#pragma once
// Internal to reports/: the HTML report's charts, each one inline <svg> element (empty when there is nothing to draw).
#include <map>
#include <string>

#include "reports/report_data.hpp"

namespace ktune::report_detail {

// Colours: ktune's, one per dtype, and one per peer label kept across every chart of a report.
inline constexpr std::string_view k_ktune_colour = "#1f6feb";
std::string_view dtype_colour(Dtype d);
std::map<std::string, std::string> peer_colours(const ReportData& data);

// Achieved bandwidth against bytes moved (log x), a series per dtype, the copy ceiling as a dashed line.
std::string bandwidth_chart(const OpSection& s, const ReportDevice& device);
// Horizontal bars of peer p50 / ktune p50, grouped by problem, a bar per peer; parity at 1x.
std::string speedup_chart(const OpSection& s, const std::map<std::string, std::string>& colours);
// One problem's latency distributions: a box plot (p25-p75, median, whiskers p1-p99) for ktune and each peer; a
// peer without samples shows its p50, p95 and p99 only.
std::string latency_chart(const ProblemRow& row, const std::map<std::string, std::string>& colours);

}  // namespace ktune::report_detail
