// Peer measurements in the store (schema version 2, table peer_measurements; see results/schema.cpp).
#include "results/peers.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "results/schema.hpp"
#include "results/sqlite_db.hpp"
#include "results/store.hpp"

namespace ktune {

using store_detail::Stmt;

namespace {

// NaN and infinities are "unknown": stored as NULL, read back as NaN.
void bind_real(Stmt& s, int i, double v) {
    if (std::isfinite(v)) {
        s.bind(i, v);
    } else {
        s.bind_null(i);
    }
}

}  // namespace

PeerWriteCounts Store::record_peers(const std::vector<PeerRecord>& peers) {
    require_writable("record peer measurements");
    for (const PeerRecord& p : peers) {
        if (p.op.empty() || p.device_name.empty() || p.impl.empty() || p.problem.shape.empty())
            throw Error(ErrorCategory::store,
                        fmt::format("cannot record a peer measurement without an op, a problem, a device name and an "
                                    "impl (op '{}', problem '{}', device '{}', impl '{}')",
                                    p.op, p.problem.key(), p.device_name, p.impl),
                        path());
    }
    const std::string now = utc_now_iso();
    store_detail::Db& d = db();
    store_detail::Transaction t(d);
    PeerWriteCounts counts;
    for (const PeerRecord& p : peers) {
        const std::string problem_key = p.problem.key();
        {
            Stmt s(d,
                   "SELECT 1 FROM peer_measurements WHERE op = ?1 AND variant = ?2 AND problem_key = ?3 AND "
                   "device_name = ?4 AND impl = ?5 AND method = ?6");
            s.bind(1, p.op).bind(2, p.variant).bind(3, problem_key).bind(4, p.device_name).bind(5, p.impl);
            s.bind(6, p.method);
            if (s.step()) {
                ++counts.replaced;
            } else {
                ++counts.inserted;
            }
        }
        // Replacing in place keeps the row's id; every column but the identity follows the new measurement.
        Stmt s(d,
               "INSERT INTO peer_measurements (op, variant, problem_key, dtype, shape_json, device_name, device_key, "
               "impl, method, n, p50_us, p95_us, p99_us, mean_us, samples, environment_json, source, imported_at) "
               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) "
               "ON CONFLICT (op, variant, problem_key, device_name, impl, method) DO UPDATE SET "
               "dtype = excluded.dtype, shape_json = excluded.shape_json, device_key = excluded.device_key, "
               "n = excluded.n, p50_us = excluded.p50_us, p95_us = excluded.p95_us, p99_us = excluded.p99_us, "
               "mean_us = excluded.mean_us, samples = excluded.samples, environment_json = excluded.environment_json, "
               "source = excluded.source, imported_at = excluded.imported_at");
        s.bind(1, p.op).bind(2, p.variant).bind(3, problem_key).bind(4, dtype_name(p.problem.dtype));
        s.bind(5, store_detail::shape_to_json(p.problem.shape)).bind(6, p.device_name).bind(7, p.device_key);
        s.bind(8, p.impl).bind(9, p.method).bind(10, p.n);
        bind_real(s, 11, p.p50_us);
        bind_real(s, 12, p.p95_us);
        bind_real(s, 13, p.p99_us);
        bind_real(s, 14, p.mean_us);
        s.bind_blob(15, store_detail::encode_samples(p.samples_us));
        s.bind(16, p.environment_json.empty() ? std::string("{}") : p.environment_json);
        s.bind(17, p.source).bind(18, p.imported_at.empty() ? now : p.imported_at);
        s.run();
    }
    t.commit();
    return counts;
}

std::vector<PeerRecord> Store::peers(const PeerFilter& f) const {
    if (schema_version() < 2) return {};  // an older database opened read-only: no peer table yet
    std::string where;
    int n = 0;
    auto add = [&](bool present, std::string_view column) {
        if (present) where += fmt::format("{} {} = ?{}", where.empty() ? " WHERE" : " AND", column, ++n);
    };
    add(f.op.has_value(), "op");
    add(f.variant.has_value(), "variant");
    add(f.device_name.has_value(), "device_name");
    add(f.impl.has_value(), "impl");
    Stmt s(db(), fmt::format("SELECT op, variant, problem_key, dtype, shape_json, device_name, device_key, impl, "
                             "method, n, p50_us, p95_us, p99_us, mean_us, samples, environment_json, source, "
                             "imported_at FROM peer_measurements{} ORDER BY op, variant, device_name, problem_key, "
                             "impl, method",
                             where));
    int b = 1;
    if (f.op) s.bind(b++, *f.op);
    if (f.variant) s.bind(b++, *f.variant);
    if (f.device_name) s.bind(b++, *f.device_name);
    if (f.impl) s.bind(b++, *f.impl);

    std::vector<PeerRecord> out;
    while (s.step()) {
        PeerRecord p;
        int i = 0;
        p.op = s.text(i++);
        p.variant = s.text(i++);
        const std::string problem_key = s.text(i++);
        const std::string dtype = s.text(i++);
        const auto parsed = parse_dtype(dtype);
        if (!parsed)
            throw Error(ErrorCategory::store,
                        fmt::format("peer measurement of problem {} has an unknown dtype '{}'", problem_key, dtype),
                        path());
        p.problem.dtype = *parsed;
        p.problem.shape = store_detail::parse_shape_json(s.text(i++), path(), "peer_measurements");
        p.device_name = s.text(i++);
        p.device_key = s.text(i++);
        p.impl = s.text(i++);
        p.method = s.text(i++);
        p.n = s.int64(i++);
        p.p50_us = s.real(i++);
        p.p95_us = s.real(i++);
        p.p99_us = s.real(i++);
        p.mean_us = s.real(i++);
        p.samples_us = store_detail::decode_samples(s.blob(i++), path());
        p.environment_json = s.text(i++);
        p.source = s.text(i++);
        p.imported_at = s.text(i++);
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace ktune
