// The results store over SQLite; peer measurements are in results/peers.cpp. Storage choices (samples as a
// little-endian binary64 BLOB, shapes as ordered JSON objects, NaN as NULL) are described with the schema in
// results/schema.cpp.
#include "results/store.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "results/schema.hpp"
#include "results/sqlite_db.hpp"

namespace ktune {

using store_detail::Db;
using store_detail::decode_samples;
using store_detail::encode_samples;

using store_detail::parse_shape_json;
using store_detail::shape_to_json;
using store_detail::Stmt;
using store_detail::Transaction;

namespace {

// Two ktune processes on one database wait for each other's write transactions instead of failing.
constexpr int k_busy_timeout_ms = 10'000;

[[noreturn]] void fail(const std::string& path, std::string message) {
    throw Error(ErrorCategory::store, std::move(message), path);
}

// Binds parameters ?1, ?2, ... in the order they are streamed in.
class Params {
public:
    explicit Params(Stmt& s) : m_s(s) {}
    template <typename T>
    Params& operator<<(const T& v) {
        if constexpr (std::is_same_v<T, std::nullopt_t>) {
            m_s.bind_null(m_i++);
        } else if constexpr (std::is_same_v<T, std::vector<unsigned char>>) {
            m_s.bind_blob(m_i++, v);
        } else if constexpr (std::is_same_v<T, bool>) {
            m_s.bind(m_i++, v ? 1 : 0);
        } else if constexpr (std::is_integral_v<T>) {
            m_s.bind(m_i++, static_cast<std::int64_t>(v));
        } else {
            m_s.bind(m_i++, v);
        }
        return *this;
    }

private:
    Stmt& m_s;
    int m_i = 1;
};

// ---- measurement rows
// ------------------------------------------------------------------------------------------------

// Insert order of the measurement columns; bind_measurement() binds in exactly this order.
constexpr std::array<std::string_view, 35> k_measurement_columns = {
    "kernel_id",
    "configuration_id",
    "problem_id",
    "device_key",
    "run_id",
    "measured_at",
    "status",
    "message",
    "n",
    "min_us",
    "p50_us",
    "p95_us",
    "p99_us",
    "max_us",
    "mean_us",
    "stddev_us",
    "iqr_us",
    "median_ci_rel",
    "samples",
    "time_cap_hit",
    "cupti_p50_us",
    "gbps",
    "dynamic_shared_bytes",
    "mismatches",
    "max_abs_error",
    "registers",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes",
    "static_shared_bytes",
    "compile_seconds",
    "compile_cache_hit",
    "cupti_samples",
    "kernel_us",
    "ranked_by",
};
constexpr std::size_t k_identity_columns = 4;  // kernel_id, configuration_id, problem_id, device_key

// With replace, a row of the same identity is overwritten in place (it keeps its id); without, the old row is kept
// and the new result is dropped, so a resumed run never duplicates or silently changes what was measured.
std::string insert_measurement_sql(bool replace) {
    std::string cols, params, updates;
    for (std::size_t i = 0; i < k_measurement_columns.size(); ++i) {
        const std::string_view c = k_measurement_columns[i];
        cols += fmt::format("{}{}", i ? ", " : "", c);
        params += fmt::format("{}?{}", i ? ", " : "", i + 1);
        if (i >= k_identity_columns) updates += fmt::format("{}{} = excluded.{}", updates.empty() ? "" : ", ", c, c);
    }
    return fmt::format(
        "INSERT INTO measurements ({}) VALUES ({}) ON CONFLICT (kernel_id, configuration_id, problem_id, device_key) "
        "DO {}",
        cols, params, replace ? "UPDATE SET " + updates : std::string("NOTHING"));
}

void bind_measurement(Stmt& s, std::int64_t kernel_id, std::int64_t config_id, std::int64_t problem_id,
                      const ResultRecord& r, const std::string& measured_at) {
    const Measurement& m = r.measurement;
    const SampleStats& st = m.stats;
    const CompileInfo& c = m.compile;
    Params p(s);
    p << kernel_id << config_id << problem_id << r.device_key;
    if (r.run_id != 0) {
        p << r.run_id;
    } else {
        p << std::nullopt;
    }
    p << measured_at << status_name(m.status) << m.message << st.n << st.min << st.p50 << st.p95 << st.p99 << st.max
      << st.mean << st.stddev << st.iqr << st.median_ci_rel << encode_samples(m.samples_us) << m.time_cap_hit
      << m.cupti_p50_us << m.gbps << m.dynamic_shared_bytes << m.mismatches << m.max_abs_error << c.registers
      << c.spill_store_bytes << c.spill_load_bytes << c.stack_bytes << c.static_shared_bytes << c.compile_seconds
      << c.cache_hit << encode_samples(m.cupti_samples_us) << m.kernel_us << rank_timer_name(m.ranked_by);
}

// Every query that returns results selects these columns, in this order (read_record() depends on it). A read-only
// open of a schema 3 database has no CUPTI samples, kernel time or ranking timer: its rows read as event-ranked with
// their CUPTI p50 as the kernel time.
std::string select_records(int version) {
    return fmt::format(
        "SELECT k.op, k.variant, k.source_path, k.source_hash, c.key, p.key, p.dtype, p.shape_json, m.device_key, "
        "m.run_id, m.measured_at, m.status, m.message, m.n, m.min_us, m.p50_us, m.p95_us, m.p99_us, m.max_us, "
        "m.mean_us, m.stddev_us, m.iqr_us, m.median_ci_rel, m.samples, m.time_cap_hit, m.cupti_p50_us, m.gbps, "
        "m.dynamic_shared_bytes, m.mismatches, m.max_abs_error, m.registers, m.spill_store_bytes, "
        "m.spill_load_bytes, m.stack_bytes, m.static_shared_bytes, m.compile_seconds, m.compile_cache_hit, {}, {} "
        "FROM measurements m JOIN kernels k ON k.id = m.kernel_id JOIN configurations c ON c.id = m.configuration_id "
        "JOIN problems p ON p.id = m.problem_id",
        version >= 4 ? "m.cupti_samples, m.kernel_us, m.ranked_by" : "NULL, m.cupti_p50_us, 'event'",
        version >= 5 ? "k.alternative" : "''");
}

// A problem from the columns p.key, p.dtype, p.shape_json starting at column i.
Problem read_problem(const Stmt& s, int i, const std::string& path) {
    const std::string problem_key = s.text(i);
    const std::string dtype = s.text(i + 1);
    const auto parsed_dtype = parse_dtype(dtype);
    if (!parsed_dtype) fail(path, fmt::format("problem {} has an unknown dtype '{}'", problem_key, dtype));
    return Problem{*parsed_dtype, parse_shape_json(s.text(i + 2), path, "problems")};
}

ResultRecord read_record(const Stmt& s, const std::string& path) {
    ResultRecord r;
    int i = 0;
    r.kernel.op = s.text(i++);
    r.kernel.variant = s.text(i++);
    r.kernel.source_path = s.text(i++);
    r.kernel.source_hash = s.text(i++);
    r.config_key = s.text(i++);
    r.problem = read_problem(s, i, path);
    i += 3;
    r.device_key = s.text(i++);
    r.run_id = s.is_null(i) ? 0 : s.int64(i);
    ++i;
    r.measured_at = s.text(i++);

    Measurement& m = r.measurement;
    const std::string status = s.text(i++);
    const auto parsed_status = parse_status(status);
    if (!parsed_status) fail(path, fmt::format("a measurement has an unknown status '{}'", status));
    m.status = *parsed_status;
    m.message = s.text(i++);
    SampleStats& st = m.stats;
    st.n = s.int64(i++);
    st.min = s.real(i++);
    st.p50 = s.real(i++);
    st.p95 = s.real(i++);
    st.p99 = s.real(i++);
    st.max = s.real(i++);
    st.mean = s.real(i++);
    st.stddev = s.real(i++);
    st.iqr = s.real(i++);
    st.median_ci_rel = s.real(i++);
    m.samples_us = decode_samples(s.blob(i++), path);
    m.time_cap_hit = s.int64(i++) != 0;
    m.cupti_p50_us = s.real(i++);
    m.gbps = s.real(i++);
    m.dynamic_shared_bytes = static_cast<unsigned>(s.int64(i++));
    m.mismatches = s.int64(i++);
    m.max_abs_error = s.real(i++);
    CompileInfo& c = m.compile;
    c.registers = static_cast<int>(s.int64(i++));
    c.spill_store_bytes = static_cast<int>(s.int64(i++));
    c.spill_load_bytes = static_cast<int>(s.int64(i++));
    c.stack_bytes = static_cast<int>(s.int64(i++));
    c.static_shared_bytes = static_cast<int>(s.int64(i++));
    c.compile_seconds = s.real(i++);
    c.cache_hit = s.int64(i++) != 0;
    m.cupti_samples_us = decode_samples(s.blob(i++), path);
    m.kernel_us = s.real(i++);
    const std::string ranked_by = s.text(i++);
    if (ranked_by != rank_timer_name(RankTimer::event) && ranked_by != rank_timer_name(RankTimer::kernel))
        fail(path, fmt::format("a measurement is ranked by an unknown timer '{}'", ranked_by));
    m.ranked_by = ranked_by == rank_timer_name(RankTimer::kernel) ? RankTimer::kernel : RankTimer::event;
    r.kernel.alternative = s.text(i++);
    return r;
}

// WHERE clause for a ResultFilter: only the structure depends on which fields are set; values are bound in order.
std::string filter_where(const ResultFilter& f) {
    std::string where;
    int n = 0;
    auto add = [&](bool present, std::string_view column) {
        if (present) where += fmt::format("{} {} = ?{}", where.empty() ? " WHERE" : " AND", column, ++n);
    };
    add(f.op.has_value(), "k.op");
    add(f.variant.has_value(), "k.variant");
    add(f.device_key.has_value(), "m.device_key");
    add(f.source_hash.has_value(), "k.source_hash");
    add(f.problem_key.has_value(), "p.key");
    add(f.status.has_value(), "m.status");
    return where;
}

void bind_filter(Stmt& s, const ResultFilter& f) {
    int n = 1;
    if (f.op) s.bind(n++, *f.op);
    if (f.variant) s.bind(n++, *f.variant);
    if (f.device_key) s.bind(n++, *f.device_key);
    if (f.source_hash) s.bind(n++, *f.source_hash);
    if (f.problem_key) s.bind(n++, *f.problem_key);
    if (f.status) s.bind(n++, status_name(*f.status));
}

// Numeric problem order: dtype (declaration order of Dtype), then the axes in order, value by value, so M=16 comes
// before M=256 (a text sort of keys would not).
bool problem_less(const Problem& a, const Problem& b) {
    if (a.dtype != b.dtype) return a.dtype < b.dtype;
    return a.shape < b.shape;  // pairs compare name then value; the names agree within one op's problems
}

// The kernel source best() ranks for each alternative on a device, and the L2 method it was measured with.
struct RankedSource {
    std::string hash, alternative, l2_state;
};

std::vector<RankedSource> ranked_sources(Db& db, int version, const std::string& op, const std::string& variant,
                                         const std::string& device_key) {
    // Per alternative, the kernel source measured most recently on this device: after an edit, the new source's
    // results stand alone instead of mixing with those of the old one. Sources measured with the default method
    // (a clean cold L2) come first: a --hot or --flush dirty tuning adds its own results but does not replace
    // these. (A read-only open of a schema 2 database has no l2_state column: none of its sources is "cold".)
    Stmt s(db,
           // CROSS JOIN keeps kernels as the outer loop: few kernel rows, then the (kernel, device) index.
           fmt::format("SELECT k.source_hash, {}, {} FROM kernels k CROSS JOIN measurements m ON m.kernel_id = k.id "
                       "WHERE k.op = ?1 AND k.variant = ?2 AND m.device_key = ?3 GROUP BY k.id ORDER BY {}"
                       "max(m.measured_at) DESC, max(m.id) DESC",
                       version >= 5 ? "k.alternative" : "''", version >= 3 ? "k.l2_state" : "''",
                       version >= 3 ? "k.l2_state = 'cold' DESC, " : ""));
    s.bind(1, op).bind(2, variant).bind(3, device_key);
    std::vector<RankedSource> out;
    std::set<std::string> alternatives;
    while (s.step())
        if (alternatives.insert(s.text(1)).second) out.push_back({s.text(0), s.text(1), s.text(2)});
    return out;
}

// ---- devices and runs
// ------------------------------------------------------------------------------------------------

// A read-only open of a schema 5 database has no CUPTI launch floor or host: they read as unknown.
std::string select_devices(int version) {
    return fmt::format(
        "SELECT key, name, cc_major, cc_minor, sm_count, l2_bytes, memory_bytes, memory_clock_khz, memory_bus_bits, "
        "sm_clock_khz, driver_version, cuda_version, nvrtc_version, uuid, pci_bus_id, copy_gbps, launch_floor_us, "
        "measured_at, {} FROM devices",
        version >= 6 ? "launch_floor_cupti_us, host" : "0, ''");
}

DeviceInfo read_device(const Stmt& s) {
    DeviceInfo d;
    int i = 0;
    d.key = s.text(i++);
    d.name = s.text(i++);
    d.cc_major = static_cast<int>(s.int64(i++));
    d.cc_minor = static_cast<int>(s.int64(i++));
    d.sm_count = static_cast<int>(s.int64(i++));
    d.l2_bytes = s.int64(i++);
    d.memory_bytes = s.int64(i++);
    d.memory_clock_khz = static_cast<int>(s.int64(i++));
    d.memory_bus_bits = static_cast<int>(s.int64(i++));
    d.sm_clock_khz = static_cast<int>(s.int64(i++));
    d.driver_version = s.text(i++);
    d.cuda_version = s.text(i++);
    d.nvrtc_version = s.text(i++);
    d.uuid = s.text(i++);
    d.pci_bus_id = s.text(i++);
    d.copy_gbps = s.real(i++);
    d.launch_floor_us = s.real(i++);
    d.measured_at = s.text(i++);
    d.launch_floor_cupti_us = s.real(i++);
    d.host = s.text(i++);
    return d;
}

// A ceiling that was never measured (or is not a number) is stored as 0, the "unknown" of DeviceInfo.
double ceiling(double v) { return std::isfinite(v) && v > 0 ? v : 0.0; }

// 128 random bits in hex: a run's name in every database it is merged into.
std::string new_run_uid() {
    std::random_device rd;
    std::string out;
    for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", rd());
    return out;
}

// ---- opening
// -----------------------------------------------------------------------------------------------------------

// The schema version and whether any table exists, read in one statement so both come from one snapshot: another
// process creating the schema between two separate reads would make a new ktune database look foreign.
struct SchemaState {
    int version = 0;
    bool has_tables = false;
};

SchemaState read_schema_state(Db& db) {
    Stmt s(db,
           "SELECT (SELECT user_version FROM pragma_user_version), "
           "(SELECT count(*) FROM sqlite_schema WHERE type = 'table')");
    if (!s.step()) db.fail_with(SQLITE_ERROR, "reading the schema version");
    return SchemaState{static_cast<int>(s.int64(0)), s.int64(1) > 0};
}

// Runs before anything is written, so a newer database is left exactly as it was.
void check_schema_readable(const Db& db, const SchemaState& state) {
    const int current = store_detail::current_schema_version();
    if (state.version > current)
        fail(db.path(), fmt::format("{} was written by a newer ktune (schema {}); this ktune reads schema {}",
                                    db.path(), state.version, current));
    if (state.version == 0 && state.has_tables)
        fail(db.path(), fmt::format("{} is a SQLite database but not a ktune results database", db.path()));
}

// Switching a new database to WAL needs an exclusive lock and SQLite does not call the busy handler for it, so a
// second process creating the same database at the same moment retries here for up to the busy timeout.
void enable_wal(Db& db) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_busy_timeout_ms);
    for (;;) {
        const int rc = sqlite3_exec(db.handle(), "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
        if (rc == SQLITE_OK) return;
        const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
        if (!busy || std::chrono::steady_clock::now() > deadline) db.fail_with(rc, "switching to WAL mode");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// Catches what SQLite would report only as "unable to open database file", or not at all (a read-only directory
// breaks WAL later, at the first write).
void check_path(const std::string& path, Store::Mode mode) {
    namespace fs = std::filesystem;
    if (path.empty()) fail("store", "the results database path is empty");
    std::error_code ec;
    const fs::path p(path);
    const bool exists = fs::exists(p, ec);
    if (exists && fs::is_directory(p, ec)) fail(path, fmt::format("{} is a directory, not a results database", path));
    if (mode == Store::Mode::read_only) {
        if (!exists) fail(path, fmt::format("no results database at {}", path));
        return;
    }
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (!fs::is_directory(dir, ec))
        fail(path, fmt::format("cannot create results database {}: directory {} does not exist", path, dir.string()));
    if (::access(dir.c_str(), W_OK) != 0)
        fail(path, fmt::format("cannot write results database {}: directory {} is not writable (the database and its "
                               "-wal and -shm files live there)",
                               path, dir.string()));
    if (exists && ::access(path.c_str(), W_OK) != 0)
        fail(path, fmt::format("cannot write results database {}: the file is not writable", path));
}

// A file: URI of the path, so that the parameters after "?" are SQLite's and no byte of the path is read as one.
std::string file_uri(const std::string& path, std::string_view parameters) {
    namespace fs = std::filesystem;
    std::string uri = "file:";
    for (const unsigned char c : fs::absolute(path).string()) {
        if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~')
            uri += char(c);
        else
            uri += fmt::format("%{:02X}", c);
    }
    return uri + "?" + std::string(parameters);
}

// How a read-only command opens the database, so that it works where it cannot write and leaves nothing behind (a
// read-only connection to a WAL database creates -wal and -shm files it cannot remove):
// - the file and its folder writable: a connection that could write but writes nothing (query_only); SQLite removes
//   the side files when the last connection closes;
// - otherwise, with no -wal file: immutable, without locks or side files (nothing can be writing a database that no
//   one can write beside);
// - otherwise (a writer's -wal is there): a plain read-only connection, which reads it.
std::unique_ptr<Db> open_for_reading(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path p(path);
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (::access(dir.c_str(), W_OK) == 0 && ::access(path.c_str(), W_OK) == 0) {
        auto db = std::make_unique<Db>(path, SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE);
        db->exec("PRAGMA query_only = ON");
        return db;
    }
    std::error_code ec;
    if (!fs::exists(path + "-wal", ec))
        return std::make_unique<Db>(path, SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                                    file_uri(path, "immutable=1"));
    return std::make_unique<Db>(path, SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READONLY);
}

}  // namespace

// ---- Store
// --------------------------------------------------------------------------------------------------------------

struct Store::Impl {
    Impl(std::unique_ptr<Db> connection, Mode m) : db_owner(std::move(connection)), db(*db_owner), mode(m) {}

    void require_writable(std::string_view what) const {
        if (mode == Mode::read_only)
            fail(db.path(), fmt::format("cannot {}: {} was opened read-only", what, db.path()));
    }

    // The id of the row whose unique column equals `key`, inserting it (with the extra columns) when missing.
    // Called inside a write transaction, so the look-up and the insert cannot race another connection.
    template <typename BindSelect, typename BindInsert>
    std::int64_t find_or_insert(std::string_view select_sql, const BindSelect& bind_select, std::string_view insert_sql,
                                const BindInsert& bind_insert) {
        {
            Stmt s(db, select_sql);
            bind_select(s);
            if (s.step()) return s.int64(0);
        }
        Stmt s(db, insert_sql);
        bind_insert(s);
        s.run();
        return sqlite3_last_insert_rowid(db.handle());
    }

    std::unique_ptr<Db> db_owner;
    Db& db;
    Mode mode;
    int version = 0;
    const std::string insert_keep_sql = insert_measurement_sql(false);
    const std::string insert_replace_sql = insert_measurement_sql(true);
};

Store::Store(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

Store Store::open(const std::string& path, Mode mode) {
    check_path(path, mode);
    auto impl = std::make_unique<Impl>(
        mode == Mode::read_only
            ? open_for_reading(path)
            : std::make_unique<Db>(path, SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE),
        mode);
    Db& db = impl->db;
    sqlite3_busy_timeout(db.handle(), k_busy_timeout_ms);
    if (mode == Mode::read_write && sqlite3_db_readonly(db.handle(), "main") == 1)
        fail(path, fmt::format("cannot write results database {}: SQLite opened it read-only", path));

    SchemaState state = read_schema_state(db);  // the first read: a file that is not a database fails here
    check_schema_readable(db, state);

    if (mode == Mode::read_write) {
        // WAL: readers never block the writer and vice versa. NORMAL sync is safe in WAL mode: a power cut may lose
        // the last transactions but never corrupts the database.
        enable_wal(db);
        db.exec("PRAGMA synchronous = NORMAL");
    }
    db.exec("PRAGMA foreign_keys = ON");

    const int current = store_detail::current_schema_version();
    int version = state.version;
    if (version < current) {
        if (mode == Mode::read_only && version == 0)
            fail(path, fmt::format("{} has no ktune results schema yet", path));
    }
    // Read-only opens of an older schema read what it has (tables added later read as empty) and change nothing.
    if (version < current && mode == Mode::read_write) {
        Transaction t(db);
        state = read_schema_state(db);  // another process may have created or migrated it meanwhile
        check_schema_readable(db, state);
        store_detail::migrate(db, state.version);
        t.commit();
        version = current;
    }
    impl->version = version;
    return Store(std::move(impl));
}

const std::string& Store::path() const { return m_impl->db.path(); }

store_detail::Db& Store::db() const { return m_impl->db; }

void Store::require_writable(std::string_view what) const { m_impl->require_writable(what); }

int Store::schema_version() const { return m_impl->version; }

// ---- devices
// ----------------------------------------------------------------------------------------------------------

void Store::upsert_device(const DeviceInfo& in) {
    m_impl->require_writable("store a device");
    DeviceInfo d = in;
    if (d.key.empty()) d.key = make_device_key(d);
    d.copy_gbps = ceiling(d.copy_gbps);
    d.launch_floor_us = ceiling(d.launch_floor_us);
    d.launch_floor_cupti_us = ceiling(d.launch_floor_cupti_us);
    // Descriptive fields follow the newest report; the calibration (ceilings, the host and time they were measured) is
    // replaced only by a new measurement of it.
    constexpr std::string_view sql =
        "INSERT INTO devices (key, name, cc_major, cc_minor, sm_count, l2_bytes, memory_bytes, memory_clock_khz, "
        "memory_bus_bits, sm_clock_khz, driver_version, cuda_version, nvrtc_version, uuid, pci_bus_id, copy_gbps, "
        "launch_floor_us, measured_at, launch_floor_cupti_us, host) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20) ON CONFLICT (key) DO UPDATE SET name = excluded.name, "
        "cc_major = excluded.cc_major, cc_minor = excluded.cc_minor, sm_count = excluded.sm_count, "
        "l2_bytes = excluded.l2_bytes, memory_bytes = excluded.memory_bytes, "
        "memory_clock_khz = excluded.memory_clock_khz, memory_bus_bits = excluded.memory_bus_bits, "
        "sm_clock_khz = excluded.sm_clock_khz, driver_version = excluded.driver_version, "
        "cuda_version = excluded.cuda_version, nvrtc_version = excluded.nvrtc_version, uuid = excluded.uuid, "
        "pci_bus_id = excluded.pci_bus_id, "
        "copy_gbps = CASE WHEN excluded.copy_gbps > 0 THEN excluded.copy_gbps ELSE devices.copy_gbps END, "
        "launch_floor_us = CASE WHEN excluded.launch_floor_us > 0 THEN excluded.launch_floor_us "
        "ELSE devices.launch_floor_us END, "
        "launch_floor_cupti_us = CASE WHEN excluded.launch_floor_cupti_us > 0 THEN excluded.launch_floor_cupti_us "
        "ELSE devices.launch_floor_cupti_us END, "
        "measured_at = CASE WHEN excluded.copy_gbps > 0 OR excluded.launch_floor_us > 0 THEN excluded.measured_at "
        "ELSE devices.measured_at END, "
        "host = CASE WHEN excluded.copy_gbps > 0 OR excluded.launch_floor_us > 0 THEN excluded.host "
        "ELSE devices.host END";
    Transaction t(m_impl->db);
    {
        Stmt s(m_impl->db, sql);
        Params p(s);
        p << d.key << d.name << d.cc_major << d.cc_minor << d.sm_count << d.l2_bytes << d.memory_bytes
          << d.memory_clock_khz << d.memory_bus_bits << d.sm_clock_khz << d.driver_version << d.cuda_version
          << d.nvrtc_version << d.uuid << d.pci_bus_id << d.copy_gbps << d.launch_floor_us << d.measured_at
          << d.launch_floor_cupti_us << d.host;
        s.run();
    }
    t.commit();
}

std::optional<DeviceInfo> Store::device(const std::string& key) const {
    Stmt s(m_impl->db, fmt::format("{} WHERE key = ?1", select_devices(m_impl->version)));
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return read_device(s);
}

std::string Store::filing_key(const DeviceInfo& d, std::string* difference) const {
    const std::vector<std::string> candidates = {d.key, distinct_device_key(d, false), distinct_device_key(d, true)};
    std::string first_difference;
    for (std::size_t i = 0;; ++i) {
        const std::string key = i < candidates.size() ? candidates[i] : fmt::format("{}#{}", candidates.back(), i);
        const auto held = device(key);
        const std::string differs = held ? calibration_difference(*held, d) : "";
        if (!differs.empty()) {
            if (first_difference.empty()) first_difference = differs;
            continue;
        }
        if (difference) *difference = key == d.key ? "" : first_difference;
        return key;
    }
}

std::vector<DeviceInfo> Store::devices() const {
    Stmt s(m_impl->db, fmt::format("{} ORDER BY key", select_devices(m_impl->version)));
    std::vector<DeviceInfo> out;
    while (s.step()) out.push_back(read_device(s));
    return out;
}

// ---- runs
// -------------------------------------------------------------------------------------------------------------

std::int64_t Store::begin_run(const RunInfo& r) {
    m_impl->require_writable("begin a run");
    Transaction t(m_impl->db);
    std::int64_t id = 0;
    {
        Stmt s(m_impl->db,
               "INSERT INTO runs (started_at, finished_at, git_revision, command_line, environment_json, device_key, "
               "status, uid, host) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
        s.bind(1, r.started_at.empty() ? utc_now_iso() : r.started_at).bind(2, r.finished_at);
        s.bind(3, r.git_revision).bind(4, r.command_line).bind(5, r.environment_json).bind(6, r.device_key);
        s.bind(7, r.status.empty() ? std::string("running") : r.status);
        s.bind(8, r.uid.empty() ? new_run_uid() : r.uid).bind(9, r.host);
        s.run();
        id = sqlite3_last_insert_rowid(m_impl->db.handle());
    }
    t.commit();
    return id;
}

void Store::finish_run(std::int64_t run_id, const std::string& status) {
    m_impl->require_writable("finish a run");
    Transaction t(m_impl->db);
    {
        Stmt s(m_impl->db, "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3");
        s.bind(1, status).bind(2, utc_now_iso()).bind(3, run_id);
        s.run();
    }
    if (sqlite3_changes(m_impl->db.handle()) == 0)
        fail(path(), fmt::format("cannot finish run {}: no such run", run_id));
    t.commit();
}

std::optional<RunInfo> Store::run(std::int64_t run_id) const {
    Stmt s(m_impl->db, fmt::format("SELECT id, started_at, finished_at, git_revision, command_line, environment_json, "
                                   "device_key, status, {} FROM runs WHERE id = ?1",
                                   m_impl->version >= 6 ? "uid, host" : "'', ''"));
    s.bind(1, run_id);
    if (!s.step()) return std::nullopt;
    RunInfo r;
    r.id = s.int64(0);
    r.started_at = s.text(1);
    r.finished_at = s.text(2);
    r.git_revision = s.text(3);
    r.command_line = s.text(4);
    r.environment_json = s.text(5);
    r.device_key = s.text(6);
    r.status = s.text(7);
    r.uid = s.text(8);
    r.host = s.text(9);
    return r;
}

// ---- results
// ----------------------------------------------------------------------------------------------------------

bool Store::has_result(const KernelInfo& kernel, const std::string& config_key, const std::string& problem_key,
                       const std::string& device_key) const {
    // Resolving the ids first lets SQLite use the measurements UNIQUE index for the whole look-up.
    Stmt s(m_impl->db,
           "SELECT 1 FROM measurements WHERE kernel_id = (SELECT id FROM kernels WHERE op = ?1 AND variant = ?2 AND "
           "source_hash = ?3) AND configuration_id = (SELECT id FROM configurations WHERE key = ?4) "
           "AND problem_id = (SELECT id FROM problems WHERE key = ?5) AND device_key = ?6 LIMIT 1");
    s.bind(1, kernel.op)
        .bind(2, kernel.variant)
        .bind(3, kernel.source_hash)
        .bind(4, config_key)
        .bind(5, problem_key)
        .bind(6, device_key);
    return s.step();
}

void Store::record(const ResultRecord& r, bool replace) {
    Impl& im = *m_impl;
    im.require_writable("record a result");
    if (r.kernel.op.empty() || r.kernel.source_hash.empty() || r.device_key.empty())
        fail(path(), fmt::format("cannot record a result without an op, a kernel source hash and a device key "
                                 "(op '{}', source hash '{}', device '{}')",
                                 r.kernel.op, r.kernel.source_hash, r.device_key));
    // measured_at orders kernel sources in best(); an unset one means "now".
    const std::string measured_at = r.measured_at.empty() ? utc_now_iso() : r.measured_at;
    const std::string problem_key = r.problem.key();

    Transaction t(im.db);
    const std::int64_t kernel_id = im.find_or_insert(
        "SELECT id FROM kernels WHERE op = ?1 AND variant = ?2 AND source_hash = ?3",
        [&](Stmt& s) { s.bind(1, r.kernel.op).bind(2, r.kernel.variant).bind(3, r.kernel.source_hash); },
        // The path is the one under which the source was first seen; the hash is what identifies it.
        "INSERT INTO kernels (op, variant, source_hash, source_path, l2_state, alternative) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [&](Stmt& s) {
            s.bind(1, r.kernel.op).bind(2, r.kernel.variant).bind(3, r.kernel.source_hash);
            s.bind(4, r.kernel.source_path).bind(5, r.kernel.l2_state).bind(6, r.kernel.alternative);
        });
    const std::int64_t problem_id = im.find_or_insert(
        "SELECT id FROM problems WHERE key = ?1", [&](Stmt& s) { s.bind(1, problem_key); },
        "INSERT INTO problems (key, dtype, shape_json) VALUES (?1, ?2, ?3)",
        [&](Stmt& s) {
            s.bind(1, problem_key).bind(2, dtype_name(r.problem.dtype)).bind(3, shape_to_json(r.problem.shape));
        });
    const std::int64_t config_id = im.find_or_insert(
        "SELECT id FROM configurations WHERE key = ?1", [&](Stmt& s) { s.bind(1, r.config_key); },
        "INSERT INTO configurations (key) VALUES (?1)", [&](Stmt& s) { s.bind(1, r.config_key); });
    {
        // A device that was never upserted gets a bare row, filled in by a later upsert_device().
        Stmt s(im.db, "INSERT INTO devices (key) VALUES (?1) ON CONFLICT (key) DO NOTHING");
        s.bind(1, r.device_key);
        s.run();
    }
    {
        Stmt s(im.db, replace ? im.insert_replace_sql : im.insert_keep_sql);
        bind_measurement(s, kernel_id, config_id, problem_id, r, measured_at);
        try {
            s.run();
        } catch (const Error&) {
            // The other references are created above; only the run can be missing.
            if (sqlite3_extended_errcode(im.db.handle()) == SQLITE_CONSTRAINT_FOREIGNKEY)
                fail(path(), fmt::format("cannot record a result for run {}: no such run", r.run_id));
            throw;
        }
    }
    t.commit();
}

std::vector<ResultRecord> Store::results(const ResultFilter& f) const {
    Stmt s(m_impl->db, fmt::format("{}{} ORDER BY m.id", select_records(m_impl->version), filter_where(f)));
    bind_filter(s, f);
    std::vector<ResultRecord> out;
    while (s.step()) out.push_back(read_record(s, path()));
    return out;
}

std::int64_t Store::count_results(const ResultFilter& f) const {
    Stmt s(m_impl->db, fmt::format("SELECT count(*) FROM measurements m JOIN kernels k ON k.id = m.kernel_id "
                                   "JOIN problems p ON p.id = m.problem_id{}",
                                   filter_where(f)));
    bind_filter(s, f);
    return s.step() ? s.int64(0) : 0;
}

std::vector<ResultRecord> Store::best(const std::string& op, const std::string& variant, const std::string& device_key,
                                      const std::vector<std::string>& source_hashes) const {
    Db& db = m_impl->db;
    std::vector<std::string> hashes = source_hashes;
    if (hashes.empty()) {
        for (const RankedSource& r : ranked_sources(db, m_impl->version, op, variant, device_key))
            hashes.push_back(r.hash);
        if (hashes.empty()) return {};
    }
    // The order of best_rank (core/measurement.hpp), then the earlier row. Rows ranked by kernel time (decode
    // sizes, where the GPU front end's ~2.3 us dwarfs the kernel) by their trimmed-mean CUPTI time, then the event p50;
    // the others by the event p50, whose 32 ns ticks tie exactly at small sizes, then by the kernel time (a row
    // without one, 0 or NULL, after those with one). An ok row without a timing (p50 NULL or 0) is never the best.
    std::string hash_placeholders;
    for (std::size_t i = 0; i < hashes.size(); ++i) hash_placeholders += fmt::format("{}?{}", i ? ", " : "", 6 + i);
    const std::string by_kernel =
        m_impl->version >= 4 ? "(b.ranked_by = 'kernel' AND b.kernel_us > 0)" : std::string("0");
    const std::string kernel_time = m_impl->version >= 4 ? "b.kernel_us" : "b.cupti_p50_us";
    Stmt s(db, fmt::format("{0} WHERE m.id IN (SELECT id FROM (SELECT b.id, row_number() OVER (PARTITION BY "
                           "b.problem_id ORDER BY CASE WHEN {1} THEN {2} ELSE b.p50_us END, "
                           "CASE WHEN {1} THEN 0 ELSE ({2} IS NULL OR {2} <= 0) END, "
                           "CASE WHEN {1} THEN b.p50_us ELSE coalesce({2}, 0) END, b.id) AS rank "
                           "FROM measurements b JOIN kernels bk ON "
                           "bk.id = b.kernel_id WHERE bk.op = ?1 AND bk.variant = ?2 AND "
                           "bk.source_hash IN ({3}) AND "
                           "b.device_key = ?4 AND b.status = ?5 AND b.p50_us > 0) WHERE rank = 1)",
                           select_records(m_impl->version), by_kernel, kernel_time, hash_placeholders));
    s.bind(1, op).bind(2, variant).bind(4, device_key).bind(5, status_name(Status::ok));
    for (std::size_t i = 0; i < hashes.size(); ++i) s.bind(static_cast<int>(6 + i), hashes[i]);
    std::vector<ResultRecord> out;
    while (s.step()) out.push_back(read_record(s, path()));
    std::sort(out.begin(), out.end(),
              [](const ResultRecord& a, const ResultRecord& b) { return problem_less(a.problem, b.problem); });
    return out;
}

std::vector<StaleResults> Store::stale_results(const std::string& op, const std::string& variant,
                                               const std::string& device_key) const {
    const std::vector<RankedSource> ranked = ranked_sources(m_impl->db, m_impl->version, op, variant, device_key);
    if (ranked.empty()) return {};
    std::string hash_placeholders;
    for (std::size_t i = 0; i < ranked.size(); ++i) hash_placeholders += fmt::format("{}?{}", i ? ", " : "", 5 + i);
    const auto bind_all = [&](Stmt& s) {
        s.bind(1, op).bind(2, variant).bind(3, device_key).bind(4, status_name(Status::ok));
        for (std::size_t i = 0; i < ranked.size(); ++i) s.bind(static_cast<int>(5 + i), ranked[i].hash);
    };
    const std::string where =
        "WHERE k.op = ?1 AND k.variant = ?2 AND m.device_key = ?3 AND m.status = ?4 AND m.p50_us > 0 AND k.source_hash";
    // The problems each ranked source measured: there its older results are superseded, not lost, and not said.
    std::set<std::pair<std::string, std::int64_t>> measured;
    {
        Stmt s(m_impl->db, fmt::format("SELECT DISTINCT k.source_hash, m.problem_id FROM kernels k CROSS JOIN "
                                       "measurements m ON m.kernel_id = k.id {} IN ({})",
                                       where, hash_placeholders));
        bind_all(s);
        while (s.step()) measured.emplace(s.text(0), s.int64(1));
    }
    // The older sources' rows (the ranked sources' own are left out in SQL: on a database tuned once, nothing is
    // counted).
    Stmt s(m_impl->db, fmt::format("SELECT k.source_hash, {}, {}, p.key, p.dtype, p.shape_json, count(*), m.problem_id "
                                   "FROM kernels k CROSS JOIN measurements m ON m.kernel_id = k.id JOIN problems p ON "
                                   "p.id = m.problem_id {} NOT IN ({}) GROUP BY k.id, m.problem_id",
                                   m_impl->version >= 5 ? "k.alternative" : "''",
                                   m_impl->version >= 3 ? "k.l2_state" : "''", where, hash_placeholders));
    bind_all(s);
    std::vector<StaleResults> out;
    while (s.step()) {
        const auto same = std::find_if(ranked.begin(), ranked.end(),
                                       [&](const RankedSource& r) { return r.alternative == s.text(1); });
        if (same == ranked.end() || same->l2_state != s.text(2)) continue;  // another method: left out, not stale
        if (measured.contains({same->hash, s.int64(7)})) continue;          // superseded by the ranked source
        out.push_back(StaleResults{s.text(1), s.text(0), same->hash, read_problem(s, 3, path()), s.int64(6)});
    }
    std::sort(out.begin(), out.end(), [](const StaleResults& a, const StaleResults& b) {
        if (a.alternative != b.alternative) return a.alternative < b.alternative;
        if (a.problem != b.problem) return problem_less(a.problem, b.problem);
        return a.source_hash < b.source_hash;
    });
    return out;
}

std::vector<TunedOp> Store::tuned_ops() const {
    Stmt s(m_impl->db,
           "SELECT DISTINCT k.op, k.variant, m.device_key FROM measurements m JOIN kernels k ON k.id = m.kernel_id "
           "WHERE m.status = ?1 AND m.p50_us > 0 ORDER BY k.op, k.variant, m.device_key");
    s.bind(1, status_name(Status::ok));
    std::vector<TunedOp> out;
    while (s.step()) out.push_back(TunedOp{s.text(0), s.text(1), s.text(2)});
    return out;
}

}  // namespace ktune
