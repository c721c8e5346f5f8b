#include "results/sqlite_db.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace ktune::store_detail {

// ---- Db -------------------------------------------------------------------------------------------------------------

Db::Db(const std::string& path, int flags, const std::string& uri) : m_path(path) {
    const int rc = sqlite3_open_v2(uri.empty() ? path.c_str() : uri.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw Error(ErrorCategory::store, fmt::format("cannot open results database {}: {}", path, msg), path);
    }
    sqlite3_extended_result_codes(m_db, 1);
}

Db::~Db() {
    for (auto& [sql, stmt] : m_cache) sqlite3_finalize(stmt);
    sqlite3_close_v2(m_db);
}

void Db::fail(std::string_view what) const { fail_with(sqlite3_extended_errcode(m_db), what); }

void Db::fail_with(int code, std::string_view what) const {
    const std::string msg = sqlite3_errmsg(m_db);
    switch (code & 0xff) {
        case SQLITE_NOTADB:
            throw Error(ErrorCategory::store, fmt::format("{} is not a SQLite database", m_path), m_path);
        case SQLITE_CORRUPT:
            throw Error(ErrorCategory::store, fmt::format("{} is corrupt ({}: {})", m_path, what, msg), m_path);
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            throw Error(ErrorCategory::store,
                        fmt::format("{}: {} is locked by another connection (waited 10 s): {}", what, m_path, msg),
                        m_path);
        case SQLITE_READONLY:
            throw Error(ErrorCategory::store, fmt::format("{}: {} cannot be written: {}", what, m_path, msg), m_path);
        default:
            throw Error(ErrorCategory::store, fmt::format("{}: {}", what, msg), m_path);
    }
}

void Db::exec(const char* sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &err);
    sqlite3_free(err);  // sqlite3_errmsg() still holds the message
    if (rc != SQLITE_OK) {
        std::string_view what(sql);
        what = what.substr(0, std::min<std::size_t>(what.size(), 80));  // a whole migration is too long to quote
        fail_with(sqlite3_extended_errcode(m_db), what);
    }
}

sqlite3_stmt* Db::prepared(std::string_view sql) {
    auto it = m_cache.find(std::string(sql));
    if (it != m_cache.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(m_db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) !=
        SQLITE_OK)
        fail(fmt::format("preparing \"{}\"", sql));
    m_cache.emplace(std::string(sql), stmt);
    return stmt;
}

// ---- Stmt -----------------------------------------------------------------------------------------------------------

Stmt::Stmt(Db& db, std::string_view sql) : m_db(db), m_stmt(db.prepared(sql)) {}

Stmt::~Stmt() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
    if (sqlite3_bind_int64(m_stmt, i, v) != SQLITE_OK) m_db.fail("binding a parameter");
    return *this;
}

Stmt& Stmt::bind(int i, double v) {
    if (sqlite3_bind_double(m_stmt, i, v) != SQLITE_OK) m_db.fail("binding a parameter");
    return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
    // A null data pointer would bind SQL NULL; an empty string must stay an empty string.
    const char* data = v.data() ? v.data() : "";
    if (sqlite3_bind_text64(m_stmt, i, data, v.size(), SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK)
        m_db.fail("binding a parameter");
    return *this;
}

Stmt& Stmt::bind_blob(int i, const std::vector<unsigned char>& v) {
    const int rc = v.empty() ? sqlite3_bind_zeroblob(m_stmt, i, 0)
                             : sqlite3_bind_blob64(m_stmt, i, v.data(), v.size(), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) m_db.fail("binding a parameter");
    return *this;
}

Stmt& Stmt::bind_null(int i) {
    if (sqlite3_bind_null(m_stmt, i) != SQLITE_OK) m_db.fail("binding a parameter");
    return *this;
}

bool Stmt::step() {
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // With the legacy interface the error code comes from reset; with v2/v3 statements step returns it directly.
    m_db.fail_with(rc, sqlite3_sql(m_stmt));
}

void Stmt::run() {
    while (step()) {
    }
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }

std::int64_t Stmt::int64(int col) const { return sqlite3_column_int64(m_stmt, col); }

double Stmt::real(int col) const {
    if (is_null(col)) return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(m_stmt, col);
}

std::string Stmt::text(int col) const {
    const auto* p = sqlite3_column_text(m_stmt, col);
    const int n = sqlite3_column_bytes(m_stmt, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

std::vector<unsigned char> Stmt::blob(int col) const {
    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(m_stmt, col));
    const int n = sqlite3_column_bytes(m_stmt, col);
    return p ? std::vector<unsigned char>(p, p + n) : std::vector<unsigned char>();
}

// ---- Transaction ----------------------------------------------------------------------------------------------------

Transaction::Transaction(Db& db) : m_db(db) { m_db.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
    if (m_open) sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    m_db.exec("COMMIT");
    m_open = false;
}

}  // namespace ktune::store_detail
