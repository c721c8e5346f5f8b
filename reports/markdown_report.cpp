// Markdown report: a heading per op, a section per device with its results table and its latency table against the
// peers. Meant to be pasted into a pull request; GitHub renders the tables.
#include <cmath>

#include <fmt/format.h>

#include "reports/detail/format.hpp"

namespace ktune::report_detail {
namespace {

void table_row(std::string& out, const std::vector<std::string>& cells) {
    out += "|";
    for (const std::string& c : cells) out += " " + c + " |";
    out += "\n";
}

// "| :-- | --: |": text left, numbers right.
void table_rule(std::string& out, const std::vector<bool>& numeric) {
    out += "|";
    for (const bool n : numeric) out += n ? " --: |" : " :-- |";
    out += "\n";
}

std::string triple(double p50, double p95, double p99) {
    if (!std::isfinite(p50)) return std::string(k_missing);
    return fmt::format("{} / {} / {}", format_us(p50), format_us(p95), format_us(p99));
}

std::string improvement_triple(const ProblemRow& row, const PeerTiming& peer) {
    // ktune's percentiles are event-timed: a kernel-duration peer has no like-for-like p95/p99 to compare with.
    if (is_kernel_duration_method(peer.method)) return std::string(k_missing);
    const double a = improvement_pct(row.stats.p50, peer.p50_us);
    if (!std::isfinite(a)) return std::string(k_missing);
    auto one = [](double v) { return std::isfinite(v) ? fmt::format("{:+.1f}", v) : std::string(k_missing); };
    return fmt::format("{} / {} / {} %", one(a), one(improvement_pct(row.stats.p95, peer.p95_us)),
                       one(improvement_pct(row.stats.p99, peer.p99_us)));
}

void results_table(std::string& out, const OpSection& s) {
    const bool flops = any_flops(s);
    std::vector<std::string> head = {"problem",  "config", "p50 (us)",  "p95 (us)",
                                     "p99 (us)", "GB/s",   "% of copy", "% of same-size copy"};
    if (flops) head.push_back("TFLOP/s");
    for (const std::string& p : s.peer_labels) head.push_back("vs " + markdown_cell(p));
    if (!s.peer_labels.empty()) head.push_back("best peer");
    std::vector<bool> numeric(head.size(), true);
    numeric[0] = numeric[1] = false;
    if (!s.peer_labels.empty()) numeric.back() = false;
    table_row(out, head);
    table_rule(out, numeric);

    bool capped = false;
    for (const ProblemRow& r : s.rows) {
        capped = capped || r.time_cap_hit;
        std::vector<std::string> cells = {markdown_cell(r.problem.key()),
                                          markdown_cell(r.config_key),
                                          format_us(r.stats.p50) + (r.time_cap_hit ? "*" : ""),
                                          format_us(r.stats.p95),
                                          format_us(r.stats.p99),
                                          format_gbps(r.gbps),
                                          format_percent(r.pct_of_copy),
                                          format_percent(r.pct_of_copy_floor)};
        if (flops) cells.push_back(format_tflops(r.tflops));
        for (const std::string& label : s.peer_labels) {
            const PeerTiming* p = r.peer(label);
            cells.push_back(p ? format_speedup(p->speedup) : std::string(k_missing));
        }
        if (!s.peer_labels.empty()) {
            const PeerTiming* best = r.peer(r.best_peer);
            cells.push_back(best ? fmt::format("{} {}", markdown_cell(best->label), format_speedup(best->speedup))
                                 : std::string(k_missing));
        }
        table_row(out, cells);
    }
    if (capped)
        out +=
            "\n\\* sampling stopped at the time cap before the median's 95 % confidence interval reached its "
            "target.\n";
}

void latency_table(std::string& out, const OpSection& s) {
    out += "\nLatency p50 / p95 / p99 (us), and how much less time ktune takes than each peer:\n\n";
    std::vector<std::string> head = {"problem", "ktune"};
    for (const std::string& p : s.peer_labels) {
        head.push_back(markdown_cell(p));
        head.push_back("improvement");
    }
    std::vector<bool> numeric(head.size(), true);
    numeric[0] = false;
    table_row(out, head);
    table_rule(out, numeric);
    for (const ProblemRow& r : s.rows) {
        std::vector<std::string> cells = {markdown_cell(r.problem.key()),
                                          triple(r.stats.p50, r.stats.p95, r.stats.p99)};
        for (const std::string& label : s.peer_labels) {
            const PeerTiming* p = r.peer(label);
            cells.push_back(p ? triple(p->p50_us, p->p95_us, p->p99_us) : std::string(k_missing));
            cells.push_back(p ? improvement_triple(r, *p) : std::string(k_missing));
        }
        table_row(out, cells);
    }
}

void section(std::string& out, const ReportData& data, const OpSection& s) {
    const ReportDevice& d = data.devices.at(s.device);
    out += fmt::format("\n### {}\n\n", markdown_cell(device_title(d)));
    out += fmt::format("{}. Device key `{}`. Kernel `{}` (source `{}`).\n\n", device_summary(d), d.key, s.source_path,
                       s.source_hash.substr(0, 12));
    results_table(out, s);
    if (s.peer_labels.empty()) {
        out += "\nNo peer measurements of these problems on this device; import some with `ktune import-peers`.\n";
    } else {
        latency_table(out, s);
        out += "\nPeers:\n\n";
        for (const std::string& p : peer_sources(s)) out += "- " + markdown_cell(p) + "\n";
    }
    if (s.unmatched_peers > 0)
        out += fmt::format(
            "\n{} peer measurement{} on this device {} for problems without ktune results (listed at the "
            "end).\n",
            s.unmatched_peers, s.unmatched_peers == 1 ? "" : "s", s.unmatched_peers == 1 ? "is" : "are");
}

void unmatched_peers(std::string& out, const ReportData& data) {
    if (data.unmatched_peers.empty()) return;
    out +=
        "\n## Peers without ktune results\n\nImported peer measurements of problems that ktune has not timed on a "
        "device of that name: tune them to see the speedups.\n\n";
    table_row(out, {"op", "device", "problem", "peer", "method", "p50 / p95 / p99 (us)", "n", "from"});
    table_rule(out, {false, false, false, false, false, true, true, false});
    for (const UnmatchedPeer& u : data.unmatched_peers)
        table_row(out, {markdown_cell(u.op + " " + u.variant), markdown_cell(u.device_name),
                        markdown_cell(u.problem.key()), markdown_cell(u.impl), markdown_cell(u.method),
                        triple(u.p50_us, u.p95_us, u.p99_us), fmt::format("{}", u.n), markdown_cell(u.source)});
}

}  // namespace

std::string render_markdown(const ReportData& data) {
    std::string out = fmt::format("# {}\n\n", markdown_cell(data.title));
    out += fmt::format("Generated {} from `{}`.\n", data.generated_at, data.database);
    if (data.sections.empty()) {
        out += "\nNo timed results in the database.\n";
        unmatched_peers(out, data);
        return out;
    }
    for (const OpGroup& g : group_by_op(data)) {
        out += fmt::format("\n## {} {}\n", markdown_cell(g.op), markdown_cell(g.variant));
        for (const OpSection* s : g.sections) section(out, data, *s);
    }
    unmatched_peers(out, data);
    out +=
        "\n---\n\n"
        "p50 / p95 / p99: percentiles of the kernel's event-timed duration. GB/s: bytes the op must move / p50; "
        "% of copy: of the device's measured device-to-device copy bandwidth. % of same-size copy: the p50 of the "
        "best `copy/fwd` of the same bytes on the same device (tuned with `ktune tune copy`, interpolated log-log "
        "between its sizes, never extrapolated) / ktune's p50; CSV and JSON also give that time and the read "
        "floor of ops that mostly read (`ktune tune copy_read`). Speedup: peer p50 / ktune p50 (above 1, ktune is "
        "faster), like for like: event-timed peers against ktune's event p50, kernel-duration peers "
        "(`cupti_kernel_sum`) against ktune's CUPTI p50; best peer: the one ktune leads least. Improvement: "
        "(peer - ktune) / peer, per percentile, for event-timed peers only. "
        "Peers are matched to ktune's results by op, variant, problem and device name.\n";
    return out;
}

}  // namespace ktune::report_detail
