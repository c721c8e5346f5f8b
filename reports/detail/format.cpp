#include "reports/detail/format.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace ktune::report_detail {
namespace {

bool known(double v) { return std::isfinite(v); }

}  // namespace

std::string format_us(double us, std::string_view missing) {
    if (!known(us)) return std::string(missing);
    // Timings are good to about 1 %: keep three significant digits, more only below 1000 us.
    const double a = std::fabs(us);
    if (a < 1) return fmt::format("{:.3f}", us);
    if (a < 100) return fmt::format("{:.2f}", us);
    if (a < 1000) return fmt::format("{:.1f}", us);
    return fmt::format("{:.0f}", us);
}

std::string format_gbps(double gbps, std::string_view missing) {
    return known(gbps) ? fmt::format("{:.0f}", gbps) : std::string(missing);
}

std::string format_percent(double pct, std::string_view missing) {
    return known(pct) ? fmt::format("{:.1f}", pct) : std::string(missing);
}

std::string format_speedup(double x, std::string_view missing) {
    return known(x) ? fmt::format("{:.2f}x", x) : std::string(missing);
}

std::string format_improvement(double pct, std::string_view missing) {
    return known(pct) ? fmt::format("{:+.1f} %", pct) : std::string(missing);
}

std::string format_tflops(double tflops, std::string_view missing) {
    if (!known(tflops)) return std::string(missing);
    return tflops < 10 ? fmt::format("{:.3f}", tflops) : fmt::format("{:.1f}", tflops);
}

std::string format_bytes(double bytes) {
    if (!known(bytes)) return std::string(k_missing);
    constexpr const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (std::fabs(bytes) >= 1000 && u < 4) {
        bytes /= 1000;
        ++u;
    }
    // 1 MB, 10 MB, 16.8 MB: whole numbers stay whole, others get one decimal.
    if (std::fabs(bytes - std::round(bytes)) < 1e-9 || std::fabs(bytes) >= 100)
        return fmt::format("{:.0f} {}", bytes, units[u]);
    return fmt::format("{:.1f} {}", bytes, units[u]);
}

std::string format_exact(double v) { return known(v) ? fmt::format("{}", v) : std::string(); }

double improvement_pct(double ktune_us, double peer_us) {
    if (!known(ktune_us) || !known(peer_us) || peer_us <= 0) return k_report_nan;
    return 100.0 * (peer_us - ktune_us) / peer_us;
}

std::string device_title(const ReportDevice& d) {
    if (d.name.empty()) return d.key;
    if (d.sm_count > 0) return fmt::format("{} ({}, {} SMs)", d.name, d.arch, d.sm_count);
    return d.name;
}

std::string device_summary(const ReportDevice& d) {
    std::vector<std::string> parts;
    if (d.copy_gbps > 0) {
        parts.push_back(fmt::format("copy ceiling {} GB/s", format_gbps(d.copy_gbps)));
    } else {
        parts.push_back("copy ceiling not measured (ktune devices measures it)");
    }
    if (d.launch_floor_us > 0) parts.push_back(fmt::format("launch floor {} us", format_us(d.launch_floor_us)));
    if (!d.driver_version.empty()) parts.push_back("driver " + d.driver_version);
    if (!d.cuda_version.empty()) parts.push_back("CUDA " + d.cuda_version);
    return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<OpGroup> group_by_op(const ReportData& data) {
    std::vector<OpGroup> groups;
    for (const OpSection& s : data.sections) {
        if (groups.empty() || groups.back().op != s.op || groups.back().variant != s.variant)
            groups.push_back(OpGroup{s.op, s.variant, {}});
        groups.back().sections.push_back(&s);
    }
    return groups;
}

bool any_flops(const OpSection& s) {
    for (const ProblemRow& r : s.rows)
        if (r.flops > 0 && known(r.tflops)) return true;
    return false;
}

std::vector<std::string> peer_sources(const OpSection& s) {
    std::vector<std::string> out;
    for (const std::string& label : s.peer_labels) {
        for (const ProblemRow& r : s.rows) {
            const PeerTiming* p = r.peer(label);
            if (!p) continue;
            std::vector<std::string> parts = {p->method};
            // The environment is whatever object the peer file gave: show its scalar members.
            const auto env = nlohmann::ordered_json::parse(p->environment_json, nullptr, false);
            if (env.is_object())
                for (const auto& [k, v] : env.items())
                    if (v.is_primitive()) parts.push_back(k + " " + (v.is_string() ? v.get<std::string>() : v.dump()));
            out.push_back(fmt::format("{}: {} ({})", label, fmt::join(parts, ", "), p->source));
            break;
        }
    }
    return out;
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string markdown_cell(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        if (c == '|' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n' || c == '\r') {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

}  // namespace ktune::report_detail
