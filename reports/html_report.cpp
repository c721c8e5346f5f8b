// HTML report: one self-contained file (inline CSS and SVG, no JavaScript, no external URL), readable offline. Per op a
// section per device: the results table, the latency table against the peers, the bandwidth and speedup charts, and
// the latency distributions of every problem.
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "reports/detail/charts.hpp"
#include "reports/detail/format.hpp"

namespace ktune::report_detail {
namespace {

constexpr std::string_view k_style = R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; margin: 0 auto;
       max-width: 1360px; padding: 1.5rem 1.5rem 3rem; line-height: 1.45; }
h1 { margin: 0 0 .25rem; font-size: 1.7rem; }
h2 { margin: 2.2rem 0 .4rem; padding-bottom: .3rem; border-bottom: 1px solid #d0d7de; font-size: 1.35rem; }
h3 { margin: 1.6rem 0 .3rem; font-size: 1.1rem; }
h4 { margin: 1.2rem 0 .4rem; font-size: .95rem; }
.meta, figcaption, .note { color: #57606a; font-size: 13px; }
code { font-size: 12px; background: #f6f8fa; padding: 1px 4px; border-radius: 4px; word-break: break-all; }
.table { overflow-x: auto; max-width: 100%; margin: .4rem 0 .8rem; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; white-space: nowrap; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.config { white-space: normal; min-width: 12rem; }
td.better { color: #1a7f37; }
td.worse { color: #cf222e; }
.charts, .grid { display: flex; flex-wrap: wrap; gap: .8rem; align-items: flex-start; }
figure { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px; background: #fff; }
figcaption { margin-bottom: 4px; }
nav ul { margin: .3rem 0; padding-left: 1.2rem; font-size: 14px; }
footer { margin-top: 2.5rem; border-top: 1px solid #d0d7de; padding-top: .6rem; }
)css";

std::string td(const std::string& text, bool numeric = false, std::string_view extra_class = {}) {
    std::string cls = numeric ? "num" : "";
    if (!extra_class.empty()) cls += cls.empty() ? std::string(extra_class) : " " + std::string(extra_class);
    return cls.empty() ? fmt::format("<td>{}</td>", html_escape(text))
                       : fmt::format("<td class=\"{}\">{}</td>", cls, html_escape(text));
}

// A configuration key may break after its commas, so wide tables still fit the page.
std::string config_td(const std::string& key) {
    std::string out = "<td class=\"config\">";
    for (const char c : html_escape(key)) {
        out += c;
        if (c == ',') out += "<wbr>";
    }
    return out + "</td>";
}

std::string th(const std::string& text) { return fmt::format("<th>{}</th>", html_escape(text)); }

std::string_view speedup_class(double x) {
    if (!std::isfinite(x)) return {};
    return x >= 1 ? "better" : "worse";
}

std::string triple(double p50, double p95, double p99) {
    if (!std::isfinite(p50)) return std::string(k_missing);
    return fmt::format("{} / {} / {}", format_us(p50), format_us(p95), format_us(p99));
}

void results_table(std::string& out, const OpSection& s) {
    const bool flops = any_flops(s);
    out += "<div class=\"table\"><table>\n<thead><tr>";
    for (const char* h :
         {"problem", "config", "p50 (us)", "p95 (us)", "p99 (us)", "GB/s", "% of copy", "% of same-size copy"})
        out += th(h);
    if (flops) out += th("TFLOP/s");
    for (const std::string& p : s.peer_labels) out += th("vs " + p);
    if (!s.peer_labels.empty()) out += th("best peer");
    out += "</tr></thead>\n<tbody>\n";
    for (const ProblemRow& r : s.rows) {
        out += "<tr>" + td(r.problem.key()) + config_td(r.config_key) +
               td(format_us(r.stats.p50) + (r.time_cap_hit ? "*" : ""), true) + td(format_us(r.stats.p95), true) +
               td(format_us(r.stats.p99), true) + td(format_gbps(r.gbps), true) +
               td(format_percent(r.pct_of_copy), true) + td(format_percent(r.pct_of_copy_floor), true);
        if (flops) out += td(format_tflops(r.tflops), true);
        for (const std::string& label : s.peer_labels) {
            const PeerTiming* p = r.peer(label);
            out +=
                p ? td(format_speedup(p->speedup), true, speedup_class(p->speedup)) : td(std::string(k_missing), true);
        }
        if (!s.peer_labels.empty()) {
            const PeerTiming* best = r.peer(r.best_peer);
            out += best ? td(fmt::format("{} {}", best->label, format_speedup(best->speedup)), false,
                             speedup_class(best->speedup))
                        : td(std::string(k_missing));
        }
        out += "</tr>\n";
    }
    out += "</tbody>\n</table></div>\n";
    for (const ProblemRow& r : s.rows) {
        if (r.time_cap_hit) {
            out +=
                "<p class=\"note\">* sampling stopped at the time cap before the median's 95 % confidence interval "
                "reached its target.</p>\n";
            break;
        }
    }
}

void latency_table(std::string& out, const OpSection& s) {
    out += "<h4>Latency p50 / p95 / p99 (us), and how much less time ktune takes than each peer</h4>\n";
    out += "<div class=\"table\"><table>\n<thead><tr>" + th("problem") + th("ktune");
    for (const std::string& p : s.peer_labels) out += th(p) + th("improvement");
    out += "</tr></thead>\n<tbody>\n";
    for (const ProblemRow& r : s.rows) {
        out += "<tr>" + td(r.problem.key()) + td(triple(r.stats.p50, r.stats.p95, r.stats.p99), true);
        for (const std::string& label : s.peer_labels) {
            const PeerTiming* p = r.peer(label);
            if (!p) {
                out += td(std::string(k_missing), true) + td(std::string(k_missing), true);
                continue;
            }
            // ktune's percentiles are event-timed: a kernel-duration peer has no like-for-like p95/p99.
            const double a =
                is_kernel_duration_method(p->method) ? k_report_nan : improvement_pct(r.stats.p50, p->p50_us);
            auto one = [](double v) { return std::isfinite(v) ? fmt::format("{:+.1f}", v) : std::string(k_missing); };
            const std::string imp =
                std::isfinite(a) ? fmt::format("{} / {} / {} %", one(a), one(improvement_pct(r.stats.p95, p->p95_us)),
                                               one(improvement_pct(r.stats.p99, p->p99_us)))
                                 : std::string(k_missing);
            out += td(triple(p->p50_us, p->p95_us, p->p99_us), true) +
                   td(imp, true, std::isfinite(a) ? (a >= 0 ? "better" : "worse") : "");
        }
        out += "</tr>\n";
    }
    out += "</tbody>\n</table></div>\n";
}

void figure(std::string& out, const std::string& caption, const std::string& svg) {
    out += fmt::format("<figure>\n<figcaption>{}</figcaption>\n{}</figure>\n", html_escape(caption), svg);
}

void section(std::string& out, const ReportData& data, const OpSection& s, std::size_t index,
             const std::map<std::string, std::string>& colours) {
    const ReportDevice& d = data.devices.at(s.device);
    out += fmt::format("<section id=\"s{}\">\n<h3>{}</h3>\n", index, html_escape(device_title(d)));
    out += fmt::format(
        "<p class=\"meta\">{}.<br>Device key <code>{}</code>. Kernel <code>{}</code> (source "
        "<code>{}</code>).</p>\n",
        html_escape(device_summary(d)), html_escape(d.key), html_escape(s.source_path),
        html_escape(s.source_hash.substr(0, 12)));
    results_table(out, s);
    if (s.peer_labels.empty()) {
        out +=
            "<p class=\"note\">No peer measurements of these problems on this device; import some with "
            "<code>ktune import-peers</code>.</p>\n";
    } else {
        latency_table(out, s);
        out += "<p class=\"note\">Peers:</p>\n<ul class=\"note\">\n";
        for (const std::string& p : peer_sources(s)) out += "<li>" + html_escape(p) + "</li>\n";
        out += "</ul>\n";
    }
    if (s.unmatched_peers > 0)
        out += fmt::format(
            "<p class=\"note\">{} peer measurement{} on this device {} for problems without ktune "
            "results (listed at the end).</p>\n",
            s.unmatched_peers, s.unmatched_peers == 1 ? "" : "s", s.unmatched_peers == 1 ? "is" : "are");

    out += "<div class=\"charts\">\n";
    const std::string bw = bandwidth_chart(s, d);
    if (!bw.empty())
        figure(out,
               d.copy_gbps > 0 ? "Achieved bandwidth against bytes moved; dashed: the device's copy ceiling"
                               : "Achieved bandwidth against bytes moved (copy ceiling not measured)",
               bw);
    const std::string sp = speedup_chart(s, colours);
    if (!sp.empty()) figure(out, "Speedup of ktune over each peer (peer p50 / ktune p50)", sp);
    out += "</div>\n";

    std::string panels;
    for (const ProblemRow& r : s.rows) panels += latency_chart(r, colours);
    if (!panels.empty()) {
        out +=
            "<h4>Latency distributions</h4>\n<p class=\"note\">Box: p25 to p75, thick line: median, whiskers: p1 to "
            "p99 of the raw samples; a peer without samples shows p50 (bar), p95 (tick) and p99.</p>\n";
        out += "<div class=\"grid\">\n" + panels + "</div>\n";
    }
    out += "</section>\n";
}

void unmatched_peers(std::string& out, const ReportData& data) {
    if (data.unmatched_peers.empty()) return;
    out +=
        "<h2>Peers without ktune results</h2>\n<p class=\"note\">Imported peer measurements of problems that ktune "
        "has not timed on a device of that name: tune them to see the speedups.</p>\n";
    out += "<div class=\"table\"><table>\n<thead><tr>";
    for (const char* h : {"op", "device", "problem", "peer", "method", "p50 (us)", "p95 (us)", "p99 (us)", "n", "from"})
        out += th(h);
    out += "</tr></thead>\n<tbody>\n";
    for (const UnmatchedPeer& u : data.unmatched_peers)
        out += "<tr>" + td(u.op + " " + u.variant) + td(u.device_name) + td(u.problem.key()) + td(u.impl) +
               td(u.method) + td(format_us(u.p50_us), true) + td(format_us(u.p95_us), true) +
               td(format_us(u.p99_us), true) + td(fmt::format("{}", u.n), true) + td(u.source) + "</tr>\n";
    out += "</tbody></table></div>\n";
}

}  // namespace

std::string render_html(const ReportData& data) {
    std::string out =
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    // An empty data: icon keeps browsers from asking for /favicon.ico: the file needs nothing but itself.
    out += fmt::format("<title>{}</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>{}</style>\n</head>\n<body>\n",
                       html_escape(data.title), k_style);
    out += fmt::format("<header>\n<h1>{}</h1>\n<p class=\"meta\">Generated {} from <code>{}</code>.</p>\n</header>\n",
                       html_escape(data.title), html_escape(data.generated_at), html_escape(data.database));
    if (data.sections.empty()) {
        out += "<p>No timed results in the database.</p>\n";
        unmatched_peers(out, data);
        out += "</body>\n</html>\n";
        return out;
    }
    const std::vector<OpGroup> groups = group_by_op(data);
    const std::map<std::string, std::string> colours = peer_colours(data);

    out += "<nav>\n<ul>\n";
    std::size_t index = 0;
    for (const OpGroup& g : groups) {
        out += fmt::format("<li>{} {}<ul>\n", html_escape(g.op), html_escape(g.variant));
        for (const OpSection* s : g.sections)
            out += fmt::format("<li><a href=\"#s{}\">{}</a></li>\n", index++,
                               html_escape(device_title(data.devices.at(s->device))));
        out += "</ul></li>\n";
    }
    out += "</ul>\n</nav>\n";

    index = 0;
    for (const OpGroup& g : groups) {
        out += fmt::format("<h2>{} {}</h2>\n", html_escape(g.op), html_escape(g.variant));
        for (const OpSection* s : g.sections) section(out, data, *s, index++, colours);
    }
    unmatched_peers(out, data);
    out +=
        "<footer class=\"note\">p50 / p95 / p99: percentiles of the kernel's event-timed duration. GB/s: bytes the "
        "op must move / p50; % of copy: of the device's measured device-to-device copy bandwidth. % of same-size "
        "copy: the p50 of the best <code>copy/fwd</code> of the same bytes on the same device (tuned with "
        "<code>ktune tune copy</code>, interpolated log-log between its sizes, never extrapolated) / ktune's p50; "
        "CSV and JSON also give that time and the read floor of ops that mostly read (<code>ktune tune "
        "copy_read</code>). Speedup: peer p50 / ktune p50 (above 1, ktune is faster); best peer: the fastest "
        "peer. Improvement: (peer - ktune) / peer, per percentile. Peers are matched to ktune's results by op, "
        "variant, problem and device name.</footer>\n</body>\n</html>\n";
    return out;
}

}  // namespace ktune::report_detail
