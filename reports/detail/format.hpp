#pragma once
// Internal to reports/: the four renderers, and the number formatting and escaping they share.
#include <string>
#include <string_view>
#include <vector>

#include "reports/report_data.hpp"

namespace ktune::report_detail {

std::string render_markdown(const ReportData& data);
std::string render_html(const ReportData& data);
std::string render_csv(const ReportData& data);
std::string render_json(const ReportData& data);

// Human-readable numbers for tables and charts; a NaN (unknown) becomes `missing`.
inline constexpr std::string_view k_missing = "-";
std::string format_us(double us, std::string_view missing = k_missing);            // 3 significant digits or more
std::string format_gbps(double gbps, std::string_view missing = k_missing);        // "2950"
std::string format_percent(double pct, std::string_view missing = k_missing);      // "91.2"
std::string format_speedup(double x, std::string_view missing = k_missing);        // "1.52x"
std::string format_improvement(double pct, std::string_view missing = k_missing);  // "+34.2 %"
std::string format_tflops(double tflops, std::string_view missing = k_missing);    // "12.3"
std::string format_bytes(double bytes);                                            // "16.8 MB" (powers of 1000)
// Machine-readable numbers (CSV): the shortest text that reads back to the same double; "" for NaN.
std::string format_exact(double v);

// (peer - ktune) / peer of one percentile, in percent: how much less time ktune takes.
double improvement_pct(double ktune_us, double peer_us);

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", or the key when the device has no name.
std::string device_title(const ReportDevice& d);
// "sm_90, 132 SMs, 79 GiB; copy ceiling 3012 GB/s; launch floor 2.10 us", leaving out what is unknown.
std::string device_summary(const ReportDevice& d);

// Sections grouped by op and variant, keeping their order: a heading per op, a table per device.
struct OpGroup {
    std::string op, variant;
    std::vector<const OpSection*> sections;
};
std::vector<OpGroup> group_by_op(const ReportData& data);

bool any_flops(const OpSection& s);

// Where each peer of a section came from: "torch_compile: cold_l2_events, torch 2.5.1, triton 3.1.0 (peers.json)".
std::vector<std::string> peer_sources(const OpSection& s);

std::string html_escape(std::string_view s);
std::string markdown_cell(std::string_view s);  // escapes | and \, folds line breaks into spaces
std::string csv_field(std::string_view s);      // RFC 4180: quoted when it holds a comma, quote, CR or LF

}  // namespace ktune::report_detail
