#pragma once
// Internal to results/: a thin RAII layer over the SQLite C API. Every failure becomes Error(store) naming the
// database path. Nothing outside results/ includes this header (only results/ may see sqlite3.h).
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ktune::store_detail {

class Db;

// A cached prepared statement, borrowed for one use: bind, step, read; reset and unbound when it goes out of scope.
class Stmt {
public:
    Stmt(Db& db, std::string_view sql);
    ~Stmt();
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    Stmt& bind(int i, std::int64_t v);
    Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
    Stmt& bind(int i, double v);
    Stmt& bind(int i, std::string_view v);
    Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
    Stmt& bind_blob(int i, const std::vector<unsigned char>& v);
    Stmt& bind_null(int i);

    bool step();  // true while a row is available
    void run();   // steps to completion, ignoring any rows

    bool is_null(int col) const;
    std::int64_t int64(int col) const;
    double real(int col) const;  // NULL reads as NaN (SQLite stores NaN as NULL)
    std::string text(int col) const;
    std::vector<unsigned char> blob(int col) const;

private:
    Db& m_db;
    sqlite3_stmt* m_stmt;
};

class Db {
public:
    // sqlite3_open_v2 of `uri` when given (a file: URI of the same path, with SQLITE_OPEN_URI), else of path; throws on
    // failure. Messages always name `path`.
    Db(const std::string& path, int flags, const std::string& uri = {});
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    sqlite3* handle() { return m_db; }
    const std::string& path() const { return m_path; }

    // Throws Error(store, "<what>: <sqlite message>", path), with a plain message for a file that is not a database.
    [[noreturn]] void fail(std::string_view what) const;
    [[noreturn]] void fail_with(int code, std::string_view what) const;
    void exec(const char* sql);  // statements without parameters or results (pragmas, BEGIN/COMMIT, DDL)

    sqlite3_stmt* prepared(std::string_view sql);  // cached for the life of the connection

private:
    sqlite3* m_db = nullptr;
    std::string m_path;
    std::unordered_map<std::string, sqlite3_stmt*> m_cache;
};

// BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a write never fails half-way
// because another connection wrote first. Rolls back unless commit() was called.
class Transaction {
public:
    explicit Transaction(Db& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Db& m_db;
    bool m_open = true;
};

}  // namespace ktune::store_detail
