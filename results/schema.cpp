#include "results/schema.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "results/sqlite_db.hpp"

namespace ktune::store_detail {
namespace {

[[noreturn]] void fail(const std::string& path, std::string message) {
    throw Error(ErrorCategory::store, std::move(message), path);
}

// Schema version 1. Storage choices:
// - Statuses and dtypes are their text names (status_name(), dtype_name()), readable from the sqlite3 shell.
// - problems.shape_json is a JSON object whose members follow the order of the axes: {"M":4096,"H":8192}.
// - measurements.samples is a BLOB of IEEE-754 binary64 values, little-endian, 8 bytes each, in sampling order:
//   exact, compact, and read by e.g. numpy.frombuffer(blob, "<f8").
// - REAL columns are nullable: SQLite stores NaN as NULL, and the store reads NULL back as NaN.
// - measurements.run_id is NULL when the result belongs to no run.
// - measurements.device_key references devices(key); record() inserts a bare device row when the device was never
//   upserted, and upsert_device() fills it in later.
constexpr std::string_view k_schema_v1 = R"sql(
CREATE TABLE devices (
    key              TEXT PRIMARY KEY NOT NULL,
    name             TEXT NOT NULL DEFAULT '',
    cc_major         INTEGER NOT NULL DEFAULT 0,
    cc_minor         INTEGER NOT NULL DEFAULT 0,
    sm_count         INTEGER NOT NULL DEFAULT 0,
    l2_bytes         INTEGER NOT NULL DEFAULT 0,
    memory_bytes     INTEGER NOT NULL DEFAULT 0,
    memory_clock_khz INTEGER NOT NULL DEFAULT 0,
    memory_bus_bits  INTEGER NOT NULL DEFAULT 0,
    sm_clock_khz     INTEGER NOT NULL DEFAULT 0,
    driver_version   TEXT NOT NULL DEFAULT '',
    cuda_version     TEXT NOT NULL DEFAULT '',
    nvrtc_version    TEXT NOT NULL DEFAULT '',
    uuid             TEXT NOT NULL DEFAULT '',
    pci_bus_id       TEXT NOT NULL DEFAULT '',
    copy_gbps        REAL NOT NULL DEFAULT 0,
    launch_floor_us  REAL NOT NULL DEFAULT 0,
    measured_at      TEXT NOT NULL DEFAULT ''
);

CREATE TABLE runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at       TEXT NOT NULL,
    finished_at      TEXT NOT NULL DEFAULT '',
    git_revision     TEXT NOT NULL DEFAULT '',
    command_line     TEXT NOT NULL DEFAULT '',
    environment_json TEXT NOT NULL DEFAULT '{}',
    device_key       TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL DEFAULT 'running'
);

CREATE TABLE kernels (
    id          INTEGER PRIMARY KEY,
    op          TEXT NOT NULL,
    variant     TEXT NOT NULL DEFAULT '',
    source_path TEXT NOT NULL DEFAULT '',
    source_hash TEXT NOT NULL,
    UNIQUE (op, variant, source_hash)
);
CREATE INDEX kernels_by_source_hash ON kernels (source_hash);

CREATE TABLE problems (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL UNIQUE,
    dtype      TEXT NOT NULL,
    shape_json TEXT NOT NULL
);

CREATE TABLE configurations (
    id  INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE
);

CREATE TABLE measurements (
    id                   INTEGER PRIMARY KEY,
    kernel_id            INTEGER NOT NULL REFERENCES kernels (id),
    configuration_id     INTEGER NOT NULL REFERENCES configurations (id),
    problem_id           INTEGER NOT NULL REFERENCES problems (id),
    device_key           TEXT NOT NULL REFERENCES devices (key),
    run_id               INTEGER REFERENCES runs (id),
    measured_at          TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL,
    message              TEXT NOT NULL DEFAULT '',
    n                    INTEGER NOT NULL DEFAULT 0,
    min_us               REAL,
    p50_us               REAL,
    p95_us               REAL,
    p99_us               REAL,
    max_us               REAL,
    mean_us              REAL,
    stddev_us            REAL,
    iqr_us               REAL,
    median_ci_rel        REAL,
    samples              BLOB,
    time_cap_hit         INTEGER NOT NULL DEFAULT 0,
    cupti_p50_us         REAL,
    gbps                 REAL,
    dynamic_shared_bytes INTEGER NOT NULL DEFAULT 0,
    mismatches           INTEGER NOT NULL DEFAULT 0,
    max_abs_error        REAL,
    registers            INTEGER NOT NULL DEFAULT 0,
    spill_store_bytes    INTEGER NOT NULL DEFAULT 0,
    spill_load_bytes     INTEGER NOT NULL DEFAULT 0,
    stack_bytes          INTEGER NOT NULL DEFAULT 0,
    static_shared_bytes  INTEGER NOT NULL DEFAULT 0,
    compile_seconds      REAL,
    compile_cache_hit    INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kernel_id, configuration_id, problem_id, device_key)
);
-- has_result() resolves the three ids and hits the UNIQUE index above. best() and the "latest kernel source" query
-- scan one kernel's rows on one device, by status, per problem, cheapest p50 first.
CREATE INDEX measurements_for_best ON measurements (kernel_id, device_key, status, problem_id, p50_us);
CREATE INDEX measurements_by_device ON measurements (device_key);
CREATE INDEX measurements_by_run ON measurements (run_id);
)sql";

// Schema version 2: peer measurements (results/peers.hpp), imported from files written by bench/peers/ scripts.
// - Not tied to the problems or devices tables: a peer may be measured on problems ktune never tuned, and it is
//   matched to ktune's results by problem key and device NAME (a script cannot reproduce ktune's device key).
// - problem_key is Problem::key() of the shape in the order the file gave; shape_json and samples are encoded as in
//   version 1. REAL columns are NULL when unknown.
constexpr std::string_view k_schema_v2 = R"sql(
CREATE TABLE peer_measurements (
    id               INTEGER PRIMARY KEY,
    op               TEXT NOT NULL,
    variant          TEXT NOT NULL DEFAULT '',
    problem_key      TEXT NOT NULL,
    dtype            TEXT NOT NULL,
    shape_json       TEXT NOT NULL,
    device_name      TEXT NOT NULL,
    device_key       TEXT NOT NULL DEFAULT '',
    impl             TEXT NOT NULL,
    method           TEXT NOT NULL DEFAULT '',
    n                INTEGER NOT NULL DEFAULT 0,
    p50_us           REAL,
    p95_us           REAL,
    p99_us           REAL,
    mean_us          REAL,
    samples          BLOB,
    environment_json TEXT NOT NULL DEFAULT '{}',
    source           TEXT NOT NULL DEFAULT '',
    imported_at      TEXT NOT NULL DEFAULT '',
    UNIQUE (op, variant, problem_key, device_name, impl, method)
);
CREATE INDEX peer_measurements_by_device ON peer_measurements (device_name, op, variant);
)sql";

// Schema version 3: the L2 state a kernel's measurements found (wire::l2_state: "cold", "cold-dirty", "hot"), which is
// also part of its source_hash; '' for rows written before (they were measured with the dirty flush or hot). best()
// prefers the "cold" rows, so a --hot or --flush dirty tuning does not replace what best, export and report show.
constexpr std::string_view k_schema_v3 = R"sql(
ALTER TABLE kernels ADD COLUMN l2_state TEXT NOT NULL DEFAULT '';
)sql";

// Schema version 4: the CUPTI kernel durations themselves (encoded like samples), their 10 %-trimmed mean (kernel_us,
// below the clock's 32 ns tick) and the timer that ranks the row for best() ("event" or "kernel": Measurement's
// RankTimer). Rows written before are event-ranked, with their CUPTI p50 standing in as the kernel time.
constexpr std::string_view k_schema_v4 = R"sql(
ALTER TABLE measurements ADD COLUMN cupti_samples BLOB;
ALTER TABLE measurements ADD COLUMN kernel_us REAL;
ALTER TABLE measurements ADD COLUMN ranked_by TEXT NOT NULL DEFAULT 'event';
UPDATE measurements SET kernel_us = cupti_p50_us;
)sql";

// Schema version 5: which of a space's alternative kernels a kernel row is (SearchSpace::alternative(); '' for a space
// of one kernel, and for rows written before). best() ranks the newest source of every alternative together.
constexpr std::string_view k_schema_v5 = R"sql(
ALTER TABLE kernels ADD COLUMN alternative TEXT NOT NULL DEFAULT '';
)sql";

// Schema version 6: what makes results from several GPUs and hosts joinable (docs/design.md, "Scale").
// - devices: the rest of the calibration beside the key (the CUPTI launch floor, the host it was measured on), so
//   pooling, merging and checks can tell two devices with one key apart.
// - runs: a uid that names a run in every database it is merged into (ids are per database; rows written before get
//   their start time and id, the same in every copy of one database), and the host it ran on.
constexpr std::string_view k_schema_v6 = R"sql(
ALTER TABLE devices ADD COLUMN launch_floor_cupti_us REAL NOT NULL DEFAULT 0;
ALTER TABLE devices ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN uid TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
UPDATE runs SET uid = printf('%s#%d', started_at, id);
UPDATE runs SET host = coalesce(json_extract(environment_json, '$.hostname'), '') WHERE json_valid(environment_json);
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);
)sql";

// migrations[i] takes a database from schema version i to i + 1. Append new steps; never edit a released one.
constexpr std::array<std::string_view, 6> k_migrations = {k_schema_v1, k_schema_v2, k_schema_v3,
                                                          k_schema_v4, k_schema_v5, k_schema_v6};

// ---- reading shape JSON ---------------------------------------------------------------------------------------------

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += c;
        }
    }
    out += '"';
}

class ShapeParser {
public:
    ShapeParser(std::string_view text, const std::string& path, std::string_view table)
        : m_text(text), m_path(path), m_table(table) {}

    NamedValues parse() {
        NamedValues shape;
        expect('{');
        if (peek() == '}') {
            ++m_pos;
        } else {
            for (;;) {
                std::string name = string();
                expect(':');
                shape.emplace_back(std::move(name), integer());
                skip_ws();
                if (peek() == ',') {
                    ++m_pos;
                    continue;
                }
                expect('}');
                break;
            }
        }
        skip_ws();
        if (m_pos != m_text.size()) bad("trailing characters");
        return shape;
    }

private:
    [[noreturn]] void bad(std::string_view why) const {
        fail(m_path,
             fmt::format("malformed shape_json '{}' in table {}: {} at offset {}", m_text, m_table, why, m_pos));
    }
    void skip_ws() {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
    }
    char peek() {
        skip_ws();
        return m_pos < m_text.size() ? m_text[m_pos] : '\0';
    }
    void expect(char c) {
        if (peek() != c) bad(fmt::format("expected '{}'", c));
        ++m_pos;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (m_pos < m_text.size() && m_text[m_pos] != '"') {
            char c = m_text[m_pos++];
            if (c == '\\') {
                if (m_pos >= m_text.size()) bad("unterminated escape");
                c = m_text[m_pos++];
                if (c == 'u') {
                    if (m_pos + 4 > m_text.size()) bad("short \\u escape");
                    const unsigned code =
                        static_cast<unsigned>(std::stoul(std::string(m_text.substr(m_pos, 4)), nullptr, 16));
                    m_pos += 4;
                    if (code > 0x7f) bad("non-ASCII \\u escape");
                    c = static_cast<char>(code);
                } else if (c != '"' && c != '\\' && c != '/') {
                    bad("unsupported escape");
                }
            }
            out += c;
        }
        if (m_pos >= m_text.size()) bad("unterminated string");
        ++m_pos;
        return out;
    }
    std::int64_t integer() {
        skip_ws();
        const std::size_t start = m_pos;
        if (m_pos < m_text.size() && m_text[m_pos] == '-') ++m_pos;
        while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
        if (m_pos == start || (m_pos == start + 1 && m_text[start] == '-')) bad("expected an integer");
        try {
            return std::stoll(std::string(m_text.substr(start, m_pos - start)));
        } catch (const std::exception&) {
            bad("integer out of range");
        }
    }

    std::string_view m_text;
    const std::string& m_path;
    std::string_view m_table;
    std::size_t m_pos = 0;
};

}  // namespace

int current_schema_version() { return static_cast<int>(k_migrations.size()); }

void migrate(Db& db, int from_version) {
    for (int v = from_version; v < current_schema_version(); ++v) {
        db.exec(std::string(k_migrations[static_cast<std::size_t>(v)]).c_str());
        // The version is a constant of this code, not a user value; PRAGMA takes no bound parameters.
        db.exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
    }
}

// ---- samples: little-endian IEEE-754 binary64, whatever the host's byte order ---------------------------------------

std::vector<unsigned char> encode_samples(const std::vector<double>& samples) {
    std::vector<unsigned char> out(samples.size() * 8);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const auto bits = std::bit_cast<std::uint64_t>(samples[i]);
        for (int b = 0; b < 8; ++b) out[i * 8 + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    return out;
}

std::vector<double> decode_samples(const std::vector<unsigned char>& blob, const std::string& path) {
    if (blob.size() % 8 != 0)
        fail(path, fmt::format("a samples BLOB of {} bytes is not a whole number of 8-byte doubles", blob.size()));
    std::vector<double> out(blob.size() / 8);
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint64_t bits = 0;
        for (int b = 0; b < 8; ++b) bits |= static_cast<std::uint64_t>(blob[i * 8 + b]) << (8 * b);
        out[i] = std::bit_cast<double>(bits);
    }
    return out;
}

// ---- shapes: {"M":4096,"H":8192}, members in the order of the axes -------------------------------------------------

std::string shape_to_json(const NamedValues& shape) {
    std::string out = "{";
    for (const auto& [name, value] : shape) {
        if (out.size() > 1) out += ',';
        append_json_string(out, name);
        out += fmt::format(":{}", value);
    }
    return out + "}";
}

NamedValues parse_shape_json(std::string_view text, const std::string& path, std::string_view table) {
    return ShapeParser(text, path, table).parse();
}

}  // namespace ktune::store_detail
