#pragma once
// Shared by the store tests: a per-test temporary directory, result records, raw SQLite access.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "results/store.hpp"
#include "tests/common/temp_dir.hpp"

namespace ktune::test {

// Each test gets its own empty directory under the system temp directory, removed afterwards.
class StoreTest : public ::testing::Test {
protected:
    std::string db_path(const std::string& name = "results.db") const { return (dir() / name).string(); }
    const std::filesystem::path& dir() const { return m_dir.path(); }

private:
    TempDir m_dir{"ktune-store-test"};
};

inline Problem problem(NamedValues shape, Dtype dtype = Dtype::bf16) { return Problem{dtype, std::move(shape)}; }

// A result with the identity given and plausible numbers around `p50`.
// The kernel identity make_record() writes by default (op rmsnorm, variant fwd).
inline KernelInfo kernel(const std::string& source_hash, const std::string& op = "rmsnorm",
                         const std::string& variant = "fwd") {
    return KernelInfo{op, variant, "kernels/" + op + "/" + op + ".cuh", source_hash, ""};
}

inline ResultRecord make_record(const std::string& config_key, const Problem& p, double p50, Status status = Status::ok,
                                const std::string& device_key = "dev-A", const std::string& source_hash = "hash-1",
                                const std::string& op = "rmsnorm", const std::string& variant = "fwd") {
    ResultRecord r;
    r.kernel = KernelInfo{op, variant, "kernels/" + op + "/" + op + ".cuh", source_hash, ""};
    r.config_key = config_key;
    r.problem = p;
    r.device_key = device_key;
    r.measured_at = "2025-01-01T00:00:00Z";
    r.measurement.status = status;
    r.measurement.stats.n = 3;
    r.measurement.stats.p50 = p50;
    r.measurement.stats.min = p50 * 0.9;
    r.measurement.stats.max = p50 * 1.1;
    r.measurement.samples_us = {p50 * 0.9, p50, p50 * 1.1};
    if (status != Status::ok) r.measurement.message = "failed: " + std::string(status_name(status));
    return r;
}

// The Error thrown by f, or a test failure when it throws none.
inline Error error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected a ktune::Error";
    return Error(ErrorCategory::internal, "no error");
}

// A raw SQLite connection, for what the Store API deliberately does not expose.
class RawDb {
public:
    explicit RawDb(const std::string& path) {
        if (sqlite3_open(path.c_str(), &m_db) != SQLITE_OK) ADD_FAILURE() << "sqlite3_open " << path;
    }
    ~RawDb() { sqlite3_close(m_db); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    void exec(const std::string& sql) {
        char* err = nullptr;
        if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK)
            ADD_FAILURE() << sql << ": " << (err ? err : "?");
        sqlite3_free(err);
    }
    // The first column of the first row as text ("" when there is no row).
    std::string scalar(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        std::string out;
        if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
            ADD_FAILURE() << sql << ": " << sqlite3_errmsg(m_db);
            return out;
        }
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
            out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        return out;
    }

private:
    sqlite3* m_db = nullptr;
};

}  // namespace ktune::test
