// CSV report: one row per (device, op, problem), RFC 4180 (CRLF line ends, fields quoted when they must be). The
// fixed columns come first and never change meaning; then four columns per peer label, named <label>_p50_us,
// <label>_p95_us, <label>_p99_us and <label>_speedup, for every peer in the report. Unknown numbers are empty fields.
// Peers without ktune results (ReportData::unmatched_peers) have no row to sit in: the other formats list them.
#include <fmt/format.h>

#include "reports/detail/format.hpp"

namespace ktune::report_detail {
namespace {

void line(std::string& out, const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) out += ',';
        out += csv_field(fields[i]);
    }
    out += "\r\n";
}

}  // namespace

std::string render_csv(const ReportData& data) {
    const std::vector<std::string> peers = data.peer_labels();
    std::vector<std::string> head = {
        "device_key",      "device_name", "op",          "variant",       "problem",          "dtype",
        "shape",           "config",      "n",           "min_us",        "p50_us",           "p95_us",
        "p99_us",          "max_us",      "mean_us",     "median_ci_rel", "time_cap_hit",     "gbps",
        "bytes_moved",     "copy_gbps",   "pct_of_copy", "copy_floor_us", "read_floor_us",    "pct_of_copy_floor",
        "launch_floor_us", "flops",       "tflops",      "best_peer",     "best_peer_speedup"};
    for (const std::string& p : peers)
        for (const char* suffix : {"_p50_us", "_p95_us", "_p99_us", "_speedup"}) head.push_back(p + suffix);

    std::string out;
    line(out, head);
    for (const OpSection& s : data.sections) {
        const ReportDevice& d = data.devices.at(s.device);
        for (const ProblemRow& r : s.rows) {
            const PeerTiming* best = r.peer(r.best_peer);
            std::vector<std::string> f = {d.key,
                                          d.name,
                                          s.op,
                                          s.variant,
                                          r.problem.key(),
                                          std::string(dtype_name(r.problem.dtype)),
                                          format_named_values(r.problem.shape),
                                          r.config_key,
                                          fmt::format("{}", r.stats.n),
                                          format_exact(r.stats.min),
                                          format_exact(r.stats.p50),
                                          format_exact(r.stats.p95),
                                          format_exact(r.stats.p99),
                                          format_exact(r.stats.max),
                                          format_exact(r.stats.mean),
                                          format_exact(r.stats.median_ci_rel),
                                          r.time_cap_hit ? "1" : "0",
                                          format_exact(r.gbps),
                                          format_exact(r.bytes_moved),
                                          d.copy_gbps > 0 ? format_exact(d.copy_gbps) : "",
                                          format_exact(r.pct_of_copy),
                                          format_exact(r.copy_floor_us),
                                          format_exact(r.read_floor_us),
                                          format_exact(r.pct_of_copy_floor),
                                          d.launch_floor_us > 0 ? format_exact(d.launch_floor_us) : "",
                                          r.flops > 0 ? format_exact(r.flops) : "",
                                          format_exact(r.tflops),
                                          best ? best->label : "",
                                          best ? format_exact(best->speedup) : ""};
            for (const std::string& label : peers) {
                const PeerTiming* p = r.peer(label);
                f.push_back(p ? format_exact(p->p50_us) : "");
                f.push_back(p ? format_exact(p->p95_us) : "");
                f.push_back(p ? format_exact(p->p99_us) : "");
                f.push_back(p ? format_exact(p->speedup) : "");
            }
            line(out, f);
        }
    }
    return out;
}

}  // namespace ktune::report_detail
