// collect_report_data: from the results store to the plain structs of reports/report_data.hpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "reports/report.hpp"
#include "reports/size_roofline.hpp"
#include "results/store.hpp"

namespace ktune {
namespace {

bool op_matches(const std::string& filter, const TunedOp& t) {
    return filter == t.op || filter == t.op + "/" + t.variant;
}

bool device_matches(const std::string& filter, const DeviceInfo& d) {
    return d.key.find(filter) != std::string::npos || d.name.find(filter) != std::string::npos;
}

// Peers and ktune may list a problem's axes in different orders; the dtype and the sorted axes identify it.
std::string canonical_problem(const Problem& p) {
    NamedValues shape = p.shape;
    std::sort(shape.begin(), shape.end());
    return Problem{p.dtype, std::move(shape)}.key();
}

bool positive(double v) { return std::isfinite(v) && v > 0; }

// The store keeps the bandwidth, not the bytes: bytes moved = bandwidth x p50.
double bytes_moved(const Measurement& m) { return positive(m.gbps) ? m.gbps * 1e9 * m.stats.p50 * 1e-6 : k_report_nan; }

// The roofline op, tuned like any other (search_spaces/copy.yaml: variant fwd; copy_read.yaml: variant read).
const std::string k_roofline_op = "copy";

struct SameSizeRooflines {
    SizeRoofline copy, read;
};

// From the store whatever the report's op filter: the best copy per size on this device key only.
SameSizeRooflines same_size_rooflines(const Store& store, const std::string& device_key) {
    auto curve = [&](const std::string& variant) {
        std::vector<SizeRoofline::Point> points;
        for (const ResultRecord& r : store.best(k_roofline_op, variant, device_key))
            points.push_back({bytes_moved(r.measurement), r.measurement.stats.p50});
        return SizeRoofline(std::move(points));
    };
    return {curve("fwd"), curve("read")};
}

void set_floors(ProblemRow& row, const SameSizeRooflines& rooflines) {
    row.copy_floor_us = rooflines.copy.at(row.bytes_moved);
    row.read_floor_us = rooflines.read.at(row.bytes_moved);
    if (positive(row.copy_floor_us) && positive(row.stats.p50))
        row.pct_of_copy_floor = 100.0 * row.copy_floor_us / row.stats.p50;
}

ReportDevice report_device(const DeviceInfo& d) {
    ReportDevice r;
    r.key = d.key;
    r.name = d.name;
    r.arch = d.cc_major > 0 ? d.arch() : std::string();
    r.sm_count = d.sm_count;
    r.memory_bytes = d.memory_bytes;
    r.driver_version = d.driver_version;
    r.cuda_version = d.cuda_version;
    r.copy_gbps = positive(d.copy_gbps) ? d.copy_gbps : 0;
    r.launch_floor_us = positive(d.launch_floor_us) ? d.launch_floor_us : 0;
    return r;
}

ProblemRow problem_row(const ResultRecord& best, const ReportDevice& device, const ReportOptions& o) {
    ProblemRow row;
    const Measurement& m = best.measurement;
    row.problem = best.problem;
    row.config_key = best.config_key;
    row.stats = m.stats;
    row.samples_us = m.samples_us;
    if (m.cupti_p50_us > 0) row.cupti_p50_us = m.cupti_p50_us;
    row.time_cap_hit = m.time_cap_hit;
    if (positive(m.gbps)) {
        row.gbps = m.gbps;
        row.bytes_moved = bytes_moved(m);
        if (device.copy_gbps > 0) row.pct_of_copy = 100.0 * m.gbps / device.copy_gbps;
    }
    if (o.flops) {
        const double f = o.flops(best.kernel.op, best.kernel.variant, best.problem);
        if (positive(f)) {
            row.flops = f;
            row.tflops = f / (m.stats.p50 * 1e-6) / 1e12;
        }
    }
    return row;
}

// A section before peer labels are known: the label of an impl depends on every method the report holds for it.
struct Pending {
    OpSection section;
    std::vector<std::vector<PeerRecord>> peers;  // per row: its problem's peer measurements, one per (impl, method)
};

UnmatchedPeer unmatched_peer(const PeerRecord& r) {
    return UnmatchedPeer{r.op,     r.variant, r.device_name, r.problem, r.impl,  r.method,
                         r.p50_us, r.p95_us,  r.p99_us,      r.n,       r.source};
}

void match_peers(Pending& p, std::vector<PeerRecord> peers, std::vector<UnmatchedPeer>& unmatched) {
    std::map<std::string, std::size_t> row_of;
    for (std::size_t i = 0; i < p.section.rows.size(); ++i) row_of[canonical_problem(p.section.rows[i].problem)] = i;
    p.peers.resize(p.section.rows.size());
    for (PeerRecord& peer : peers) {
        const auto it = row_of.find(canonical_problem(peer.problem));
        if (it == row_of.end()) {
            ++p.section.unmatched_peers;
            unmatched.push_back(unmatched_peer(peer));
            continue;
        }
        auto& list = p.peers[it->second];
        // The same problem imported with its axes in two orders is two rows in the store: the newer one counts.
        const auto same = std::find_if(list.begin(), list.end(), [&](const PeerRecord& q) {
            return q.impl == peer.impl && q.method == peer.method;
        });
        if (same == list.end()) {
            list.push_back(std::move(peer));
        } else if (peer.imported_at >= same->imported_at) {
            *same = std::move(peer);
        }
    }
}

PeerTiming peer_timing(const PeerRecord& p, std::string label, const ProblemRow& row) {
    const double ktune_p50 = is_kernel_duration_method(p.method) ? row.cupti_p50_us : row.stats.p50;
    PeerTiming t;
    t.label = std::move(label);
    t.impl = p.impl;
    t.method = p.method;
    t.p50_us = p.p50_us;
    t.p95_us = p.p95_us;
    t.p99_us = p.p99_us;
    t.mean_us = p.mean_us;
    t.n = p.n;
    t.samples_us = p.samples_us;
    t.source = p.source;
    t.environment_json = p.environment_json;
    if (positive(p.p50_us) && positive(ktune_p50)) t.speedup = p.p50_us / ktune_p50;
    return t;
}

void finish_section(Pending& p, const std::map<std::string, std::set<std::string>>& methods_of_impl) {
    auto label_of = [&](const PeerRecord& r) {
        const auto it = methods_of_impl.find(r.impl);
        return it != methods_of_impl.end() && it->second.size() > 1 ? r.impl + "@" + r.method : r.impl;
    };
    std::set<std::string> labels;
    for (const auto& list : p.peers)
        for (const PeerRecord& r : list) labels.insert(label_of(r));
    p.section.peer_labels.assign(labels.begin(), labels.end());

    for (std::size_t i = 0; i < p.section.rows.size(); ++i) {
        ProblemRow& row = p.section.rows[i];
        for (const PeerRecord& r : p.peers[i]) row.peers.push_back(peer_timing(r, label_of(r), row));
        std::sort(row.peers.begin(), row.peers.end(),
                  [](const PeerTiming& a, const PeerTiming& b) { return a.label < b.label; });
        // The best peer is the one ktune leads least, like for like (times from different methods differ by the
        // timer's own floor, so the smallest p50 across methods would compare a kernel duration with an event time).
        double best = 0;
        for (const PeerTiming& t : row.peers) {
            if (positive(t.speedup) && (row.best_peer.empty() || t.speedup < best)) {
                best = t.speedup;
                row.best_peer = t.label;
            }
        }
    }
}

}  // namespace

bool is_kernel_duration_method(const std::string& method) { return method.find("cupti") != std::string::npos; }

ReportData collect_report_data(const Store& store, const ReportOptions& o) {
    ReportData data;
    data.title = o.title;
    data.generated_at = utc_now_iso();
    data.database = store.path();

    const std::vector<TunedOp> tuned = store.tuned_ops();
    for (const std::string& f : o.ops) {
        if (std::none_of(tuned.begin(), tuned.end(), [&](const TunedOp& t) { return op_matches(f, t); })) {
            std::set<std::string> known;
            for (const TunedOp& t : tuned) known.insert(t.op + "/" + t.variant);
            throw Error(ErrorCategory::bad_input,
                        fmt::format("no results for op '{}' in {} (ops with results: {})", f, store.path(),
                                    known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))),
                        "--op");
        }
    }

    std::map<std::string, DeviceInfo> devices;  // by key, read once
    std::map<std::string, std::size_t> device_index;
    std::set<std::string> device_filters_used;
    std::map<std::string, SameSizeRooflines> rooflines;  // by device key, read once
    std::vector<Pending> pending;
    for (const TunedOp& t : tuned) {
        if (!o.ops.empty() &&
            std::none_of(o.ops.begin(), o.ops.end(), [&](const std::string& f) { return op_matches(f, t); }))
            continue;
        auto dev_it = devices.find(t.device_key);
        if (dev_it == devices.end()) {
            DeviceInfo d = store.device(t.device_key).value_or(DeviceInfo{});
            d.key = t.device_key;
            dev_it = devices.emplace(t.device_key, std::move(d)).first;
        }
        const DeviceInfo& dev = dev_it->second;
        if (!o.devices.empty()) {
            bool selected = false;
            for (const std::string& f : o.devices) {
                if (device_matches(f, dev)) {
                    selected = true;
                    device_filters_used.insert(f);
                }
            }
            if (!selected) continue;
        }
        const std::vector<ResultRecord> best = store.best(t.op, t.variant, t.device_key);
        if (best.empty()) continue;  // the latest kernel source has no timed result yet

        auto [idx_it, added] = device_index.emplace(t.device_key, data.devices.size());
        if (added) data.devices.push_back(report_device(dev));
        const ReportDevice& rdev = data.devices[idx_it->second];

        Pending p;
        p.section.op = t.op;
        p.section.variant = t.variant;
        p.section.device = idx_it->second;
        p.section.source_path = best.front().kernel.source_path;
        p.section.source_hash = best.front().kernel.source_hash;
        for (const ResultRecord& r : best) p.section.rows.push_back(problem_row(r, rdev, o));
        if (t.op != k_roofline_op) {  // a copy measured against itself says nothing
            auto roof_it = rooflines.find(t.device_key);
            if (roof_it == rooflines.end())
                roof_it = rooflines.emplace(t.device_key, same_size_rooflines(store, t.device_key)).first;
            for (ProblemRow& row : p.section.rows) set_floors(row, roof_it->second);
        }
        std::vector<PeerRecord> peers;
        if (!dev.name.empty()) peers = store.peers(PeerFilter{t.op, t.variant, dev.name, std::nullopt});
        match_peers(p, std::move(peers), data.unmatched_peers);
        pending.push_back(std::move(p));
    }
    // Peers of an (op, variant, device name) without any section: nothing of ktune's to set them against.
    std::set<std::string> with_section;
    for (const Pending& p : pending)
        with_section.insert(p.section.op + "/" + p.section.variant + "\n" + data.devices[p.section.device].name);
    for (const PeerRecord& r : store.peers(PeerFilter{})) {
        if (with_section.count(r.op + "/" + r.variant + "\n" + r.device_name)) continue;
        const TunedOp as_op{r.op, r.variant, r.device_key};
        if (!o.ops.empty() &&
            std::none_of(o.ops.begin(), o.ops.end(), [&](const std::string& f) { return op_matches(f, as_op); }))
            continue;
        DeviceInfo as_device;
        as_device.key = r.device_key;
        as_device.name = r.device_name;
        if (!o.devices.empty() && std::none_of(o.devices.begin(), o.devices.end(),
                                               [&](const std::string& f) { return device_matches(f, as_device); }))
            continue;
        data.unmatched_peers.push_back(unmatched_peer(r));
    }
    const auto order = [](const UnmatchedPeer& u) {
        return std::make_tuple(u.op, u.variant, u.device_name, u.problem.key(), u.impl, u.method);
    };
    std::sort(data.unmatched_peers.begin(), data.unmatched_peers.end(),
              [&](const UnmatchedPeer& a, const UnmatchedPeer& b) { return order(a) < order(b); });
    for (const std::string& f : o.devices) {
        if (!device_filters_used.count(f))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("no device with results matches '{}' in {} (a device matches when this is part "
                                    "of its name or key)",
                                    f, store.path()),
                        "--device");
    }

    std::map<std::string, std::set<std::string>> methods_of_impl;
    for (const Pending& p : pending)
        for (const auto& list : p.peers)
            for (const PeerRecord& r : list) methods_of_impl[r.impl].insert(r.method);
    for (Pending& p : pending) {
        finish_section(p, methods_of_impl);
        data.sections.push_back(std::move(p.section));
    }
    return data;
}

}  // namespace ktune
