#pragma once
// `ktune report`: collects ktune's best results and the imported peer measurements from the results store
// (collect_report_data) and renders them as Markdown, one self-contained HTML file with SVG charts, CSV or JSON
// (render_report). Peer files are imported with import_peers() (reports/peer_import.hpp).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report_data.hpp"

namespace ktune {

class Store;

struct ReportOptions {
    // Ops to report: "rmsnorm" (every variant) or "rmsnorm/fwd". Empty: all.
    std::vector<std::string> ops;
    // Devices to report: a device matches when one of these is a substring of its key or its name ("H100"). Empty:
    // all.
    std::vector<std::string> devices;
    // FLOPs of one call, for ops where FLOP/s matter; the reports module cannot see kernels/, so the caller passes
    // the op's declared flops (tuner/session/op_lookup.hpp: op_flops). Unset, or returning 0: no FLOP/s column. Its
    // exceptions propagate: return 0 for an op that no longer has a declaration.
    std::function<double(const std::string& op, const std::string& variant, const Problem& problem)> flops;
    std::string title = "ktune report";
};

// Per device and op/variant: the best ok result per problem (Store::best, i.e. of the latest kernel source measured
// on that device), the device's ceilings, and the peer measurements of the same (op, variant, problem) on a device of
// the same name, with speedup = peer p50 / ktune p50. Sections without any timed result are left out.
ReportData collect_report_data(const Store& store, const ReportOptions& options = {});

enum class ReportFormat { markdown, html, csv, json };

// "md" or "markdown", "html", "csv", "json" (any case). Throws Error(bad_input, where "--format") otherwise.
ReportFormat parse_report_format(std::string_view name);
// The format an output file's extension names (.md, .markdown, .html, .htm, .csv, .json); nullopt for others.
std::optional<ReportFormat> report_format_for_path(std::string_view path);
std::string_view report_format_name(ReportFormat f);  // "md", "html", "csv", "json"

std::string render_report(const ReportData& data, ReportFormat format);

}  // namespace ktune
