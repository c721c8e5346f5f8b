// JSON report: the whole ReportData with stable keys in a stable order, raw samples included, unknown numbers null.
// "format_version" changes only when a key changes meaning or disappears; new keys may be added.
#include <cmath>

#include <nlohmann/json.hpp>

#include "reports/detail/format.hpp"

namespace ktune::report_detail {
namespace {

using Json = nlohmann::ordered_json;

constexpr int k_format_version = 1;

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json numbers(const std::vector<double>& v) {
    Json a = Json::array();
    for (const double x : v) a.push_back(number(x));
    return a;
}

Json device_json(const ReportDevice& d) {
    return Json{{"key", d.key},
                {"name", d.name},
                {"arch", d.arch},
                {"sm_count", d.sm_count},
                {"memory_bytes", d.memory_bytes},
                {"driver_version", d.driver_version},
                {"cuda_version", d.cuda_version},
                {"copy_gbps", d.copy_gbps > 0 ? Json(d.copy_gbps) : Json(nullptr)},
                {"launch_floor_us", d.launch_floor_us > 0 ? Json(d.launch_floor_us) : Json(nullptr)}};
}

// The peer file's environment object as it was; text that is not a JSON object stays text.
Json environment(const std::string& text) {
    Json j = Json::parse(text, nullptr, false);
    return j.is_object() ? j : Json(text);
}

Json peer_json(const PeerTiming& p) {
    return Json{{"label", p.label},
                {"impl", p.impl},
                {"method", p.method},
                {"n", p.n},
                {"p50_us", number(p.p50_us)},
                {"p95_us", number(p.p95_us)},
                {"p99_us", number(p.p99_us)},
                {"mean_us", number(p.mean_us)},
                {"speedup", number(p.speedup)},
                {"source", p.source},
                {"environment", environment(p.environment_json)},
                {"samples_us", numbers(p.samples_us)}};
}

Json row_json(const ProblemRow& r) {
    Json shape = Json::object();
    for (const auto& [axis, value] : r.problem.shape) shape[axis] = value;
    Json peers = Json::array();
    for (const PeerTiming& p : r.peers) peers.push_back(peer_json(p));
    const SampleStats& s = r.stats;
    return Json{{"problem", r.problem.key()},
                {"dtype", dtype_name(r.problem.dtype)},
                {"shape", shape},
                {"config", r.config_key},
                {"n", s.n},
                {"min_us", number(s.min)},
                {"p50_us", number(s.p50)},
                {"p95_us", number(s.p95)},
                {"p99_us", number(s.p99)},
                {"max_us", number(s.max)},
                {"mean_us", number(s.mean)},
                {"stddev_us", number(s.stddev)},
                {"iqr_us", number(s.iqr)},
                {"median_ci_rel", number(s.median_ci_rel)},
                {"cupti_p50_us", number(r.cupti_p50_us)},
                {"time_cap_hit", r.time_cap_hit},
                {"gbps", number(r.gbps)},
                {"bytes_moved", number(r.bytes_moved)},
                {"pct_of_copy", number(r.pct_of_copy)},
                {"copy_floor_us", number(r.copy_floor_us)},
                {"read_floor_us", number(r.read_floor_us)},
                {"pct_of_copy_floor", number(r.pct_of_copy_floor)},
                {"flops", r.flops > 0 ? Json(r.flops) : Json(nullptr)},
                {"tflops", number(r.tflops)},
                {"best_peer", r.best_peer.empty() ? Json(nullptr) : Json(r.best_peer)},
                {"peers", peers},
                {"samples_us", numbers(r.samples_us)}};
}

}  // namespace

std::string render_json(const ReportData& data) {
    Json devices = Json::array();
    for (const ReportDevice& d : data.devices) devices.push_back(device_json(d));
    Json sections = Json::array();
    for (const OpSection& s : data.sections) {
        Json rows = Json::array();
        for (const ProblemRow& r : s.rows) rows.push_back(row_json(r));
        sections.push_back(Json{{"op", s.op},
                                {"variant", s.variant},
                                {"device_key", data.devices.at(s.device).key},
                                {"source_path", s.source_path},
                                {"source_hash", s.source_hash},
                                {"peers", s.peer_labels},
                                {"unmatched_peers", s.unmatched_peers},
                                {"problems", rows}});
    }
    Json unmatched = Json::array();
    for (const UnmatchedPeer& u : data.unmatched_peers)
        unmatched.push_back(Json{{"op", u.op},
                                 {"variant", u.variant},
                                 {"device_name", u.device_name},
                                 {"problem", u.problem.key()},
                                 {"impl", u.impl},
                                 {"method", u.method},
                                 {"p50_us", number(u.p50_us)},
                                 {"p95_us", number(u.p95_us)},
                                 {"p99_us", number(u.p99_us)},
                                 {"n", u.n},
                                 {"source", u.source}});
    const Json doc{{"format", "ktune-report"},  {"format_version", k_format_version},
                   {"title", data.title},       {"generated_at", data.generated_at},
                   {"database", data.database}, {"devices", devices},
                   {"sections", sections},      {"unmatched_peers", unmatched}};
    // Invalid UTF-8 in a name is replaced rather than thrown: a report is still worth having.
    return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace ktune::report_detail
