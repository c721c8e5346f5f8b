// The one entry point of the renderers (one file each: markdown_report.cpp, html_report.cpp, csv_report.cpp,
// json_report.cpp) and the names of the formats.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/error.hpp"
#include "reports/detail/format.hpp"
#include "reports/report.hpp"

namespace ktune {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

}  // namespace

ReportFormat parse_report_format(std::string_view name) {
    const std::string n = lower(name);
    if (n == "md" || n == "markdown") return ReportFormat::markdown;
    if (n == "html") return ReportFormat::html;
    if (n == "csv") return ReportFormat::csv;
    if (n == "json") return ReportFormat::json;
    throw Error(ErrorCategory::bad_input,
                fmt::format("unknown report format '{}' (expected md, html, csv or json)", name), "--format");
}

std::optional<ReportFormat> report_format_for_path(std::string_view path) {
    const std::size_t dot = path.rfind('.');
    const std::size_t slash = path.find_last_of("/\\");
    if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return std::nullopt;
    const std::string ext = lower(path.substr(dot + 1));
    if (ext == "md" || ext == "markdown") return ReportFormat::markdown;
    if (ext == "html" || ext == "htm") return ReportFormat::html;
    if (ext == "csv") return ReportFormat::csv;
    if (ext == "json") return ReportFormat::json;
    return std::nullopt;
}

std::string_view report_format_name(ReportFormat f) {
    switch (f) {
        case ReportFormat::markdown:
            return "md";
        case ReportFormat::html:
            return "html";
        case ReportFormat::csv:
            return "csv";
        case ReportFormat::json:
            return "json";
    }
    return "?";
}

std::string render_report(const ReportData& data, ReportFormat format) {
    switch (format) {
        case ReportFormat::markdown:
            return report_detail::render_markdown(data);
        case ReportFormat::html:
            return report_detail::render_html(data);
        case ReportFormat::csv:
            return report_detail::render_csv(data);
        case ReportFormat::json:
            return report_detail::render_json(data);
    }
    throw Error(ErrorCategory::internal, "render_report: unknown format", "reports");
}

}  // namespace ktune
