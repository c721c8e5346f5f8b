#include "results/schema.hpp"

#include <array>
#include <string>

#include "results/sqlite_db.hpp"

namespace ktune::store_detail {
namespace {

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

// migrations[i] takes a database from schema version i to i + 1. Append new steps; never edit a released one.
constexpr std::array<std::string_view, 1> k_migrations = {k_schema_v1};

}  // namespace

int current_schema_version() { return static_cast<int>(k_migrations.size()); }

void migrate(Db& db, int from_version) {
    for (int v = from_version; v < current_schema_version(); ++v) {
        db.exec(std::string(k_migrations[static_cast<std::size_t>(v)]).c_str());
        // The version is a constant of this code, not a user value; PRAGMA takes no bound parameters.
        db.exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
    }
}

}  // namespace ktune::store_detail
