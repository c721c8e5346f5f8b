// Merging results databases (results/merge.hpp): the source is attached to the output's connection and copied table by
// table in SQL, every id mapped through the identity it stands for (kernels by op, variant and source hash, problems
// and configurations by key, runs by uid, devices by key or the key they are kept apart under).
#include "results/merge.hpp"

#include <unistd.h>

#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "core/device.hpp"
#include "core/error.hpp"
#include "results/schema.hpp"
#include "results/sqlite_db.hpp"
#include "results/store.hpp"

namespace ktune {

using store_detail::Db;
using store_detail::Stmt;

namespace {

constexpr std::string_view kSource = "merge_src";

// The columns of a table of the output's schema but its id, in order: the source has the same schema (a source of an
// older one is merged from a migrated copy), so the merge copies every column without naming them.
std::vector<std::string> columns_but_id(Db& db, std::string_view table) {
    Stmt s(db, "SELECT name FROM pragma_table_info(?1, 'main') WHERE name <> 'id' ORDER BY cid");
    s.bind(1, table);
    std::vector<std::string> out;
    while (s.step()) out.push_back(s.text(0));
    return out;
}

std::string joined(const std::vector<std::string>& items, std::string_view prefix = "") {
    std::string out;
    for (const std::string& c : items) out += fmt::format("{}{}{}", out.empty() ? "" : ", ", prefix, c);
    return out;
}

// Copies the rows of `table` whose unique identity the output does not hold yet; returns how many.
std::int64_t copy_new_rows(Db& db, std::string_view table) {
    const std::string cols = joined(columns_but_id(db, table));
    // "WHERE true" tells SQLite's parser that ON CONFLICT belongs to the INSERT, not to a join.
    db.exec(fmt::format("INSERT INTO main.{0} ({1}) SELECT {1} FROM {2}.{0} WHERE true ON CONFLICT DO NOTHING", table,
                        cols, kSource)
                .c_str());
    return sqlite3_changes(db.handle());
}

std::int64_t count(Db& db, const std::string& sql) {
    Stmt s(db, sql);
    return s.step() ? s.int64(0) : 0;
}

// ATTACH and DETACH happen outside a transaction; the source is detached whatever happens in between.
class Attached {
public:
    Attached(Db& db, const std::string& path) : m_db(db) {
        Stmt s(db, fmt::format("ATTACH DATABASE ?1 AS {}", kSource));
        s.bind(1, path);
        s.run();
    }
    ~Attached() {
        sqlite3_exec(m_db.handle(), fmt::format("DETACH DATABASE {}", kSource).c_str(), nullptr, nullptr, nullptr);
    }
    Attached(const Attached&) = delete;
    Attached& operator=(const Attached&) = delete;

private:
    Db& m_db;
};

}  // namespace

MergeCounts Store::merge_from(const std::string& source_path, const std::string& source_name) {
    require_writable("merge a database into it");
    MergeCounts counts;
    counts.source = source_name.empty() ? source_path : source_name;
    const std::vector<DeviceInfo> source_devices = Store::open(source_path, Mode::read_only).devices();
    Db& d = db();
    const Attached attached(d, source_path);
    store_detail::Transaction t(d);

    d.exec("DROP TABLE IF EXISTS temp.merge_devices");
    d.exec("CREATE TEMP TABLE merge_devices (src_key TEXT PRIMARY KEY, out_key TEXT NOT NULL)");
    const std::vector<std::string> device_cols = columns_but_id(d, "devices");
    for (const DeviceInfo& dev : source_devices) {
        std::string difference;
        const std::string key = filing_key(dev, &difference);
        if (key != dev.key)
            counts.notices.push_back(fmt::format(
                "device {} of {} has another calibration than the one {} holds ({}): its results are kept apart as {}",
                dev.key, counts.source, path(), difference, key));
        if (!device(key)) {
            std::string select;
            for (const std::string& c : device_cols)
                select += fmt::format("{}{}", select.empty() ? "" : ", ", c == "key" ? "?1" : c);
            Stmt s(d, fmt::format("INSERT INTO main.devices ({}) SELECT {} FROM {}.devices WHERE key = ?2",
                                  joined(device_cols), select, kSource));
            s.bind(1, key).bind(2, dev.key);
            s.run();
            ++counts.devices_added;
        } else {
            // The same device: a calibration the output never measured is taken from the source.
            Stmt s(d, fmt::format("UPDATE main.devices SET (copy_gbps, launch_floor_us, launch_floor_cupti_us, host, "
                                  "measured_at) = (SELECT copy_gbps, launch_floor_us, launch_floor_cupti_us, host, "
                                  "measured_at FROM {}.devices WHERE key = ?2) WHERE key = ?1 AND copy_gbps = 0 AND "
                                  "launch_floor_us = 0",
                                  kSource));
            s.bind(1, key).bind(2, dev.key);
            s.run();
        }
        Stmt s(d, "INSERT INTO temp.merge_devices (src_key, out_key) VALUES (?1, ?2)");
        s.bind(1, dev.key).bind(2, key);
        s.run();
    }
    const std::string mapped_device =
        "coalesce((SELECT out_key FROM temp.merge_devices WHERE src_key = {0}.device_key), {0}.device_key)";

    {
        std::vector<std::string> cols = columns_but_id(d, "runs");
        std::string select;
        for (const std::string& c : cols)
            select += fmt::format("{}{}", select.empty() ? "" : ", ",
                                  c == "device_key" ? fmt::format(fmt::runtime(mapped_device), "r") : "r." + c);
        d.exec(fmt::format("INSERT INTO main.runs ({}) SELECT {} FROM {}.runs r WHERE r.uid NOT IN "
                           "(SELECT uid FROM main.runs)",
                           joined(cols), select, kSource)
                   .c_str());
        counts.runs_added = sqlite3_changes(d.handle());
    }
    copy_new_rows(d, "kernels");
    copy_new_rows(d, "problems");
    copy_new_rows(d, "configurations");

    // The source's measurements with the output's ids, then sorted into new ones, duplicates and conflicts.
    const std::vector<std::string> cols = columns_but_id(d, "measurements");
    std::string select;
    for (const std::string& c : cols) {
        std::string e = "m." + c;
        if (c == "kernel_id") e = "mk.id";
        if (c == "configuration_id") e = "mc.id";
        if (c == "problem_id") e = "mp.id";
        if (c == "run_id") e = "mr.id";
        if (c == "device_key") e = fmt::format(fmt::runtime(mapped_device), "m");
        select += fmt::format("{}{} AS {}", select.empty() ? "" : ", ", e, c);
    }
    d.exec("DROP TABLE IF EXISTS temp.merge_rows");
    d.exec(fmt::format(
               "CREATE TEMP TABLE merge_rows AS SELECT {0}, r.uid AS run_uid FROM {1}.measurements m "
               "JOIN {1}.kernels k ON k.id = m.kernel_id "
               "JOIN main.kernels mk ON mk.op = k.op AND mk.variant = k.variant AND mk.source_hash = k.source_hash "
               "JOIN {1}.configurations c ON c.id = m.configuration_id JOIN main.configurations mc ON mc.key = c.key "
               "JOIN {1}.problems p ON p.id = m.problem_id JOIN main.problems mp ON mp.key = p.key "
               "LEFT JOIN {1}.runs r ON r.id = m.run_id LEFT JOIN main.runs mr ON mr.uid = r.uid",
               select, kSource)
               .c_str());
    const std::string same_identity =
        "FROM temp.merge_rows n JOIN main.measurements e ON e.kernel_id = n.kernel_id AND "
        "e.configuration_id = n.configuration_id AND e.problem_id = n.problem_id AND e.device_key = n.device_key";
    const std::string same_measurement = "e.run_id IS n.run_id AND e.measured_at = n.measured_at";
    counts.duplicates = count(d, fmt::format("SELECT count(*) {} WHERE {}", same_identity, same_measurement));
    counts.conflicts = count(d, fmt::format("SELECT count(*) {} WHERE NOT ({})", same_identity, same_measurement));
    {
        Stmt s(d,
               fmt::format("SELECT k.op, k.variant, p.key, c.key, n.device_key, coalesce(er.uid, ''), e.measured_at, "
                           "e.status, coalesce(n.run_uid, ''), n.measured_at, n.status {} "
                           "JOIN main.kernels k ON k.id = n.kernel_id JOIN main.problems p ON p.id = n.problem_id "
                           "JOIN main.configurations c ON c.id = n.configuration_id "
                           "LEFT JOIN main.runs er ON er.id = e.run_id WHERE NOT ({}) ORDER BY e.id LIMIT {}",
                           same_identity, same_measurement, kMergeConflictExamples));
        while (s.step())
            counts.conflict_examples.push_back(
                fmt::format("{}{} | {} | {} | {}: kept {} (run {}, {}), not {} (run {}, {})", s.text(0),
                            s.text(1).empty() ? "" : "/" + s.text(1), s.text(2), s.text(3), s.text(4), s.text(7),
                            s.text(5), s.text(6), s.text(10), s.text(8), s.text(9)));
    }
    d.exec(fmt::format("INSERT INTO main.measurements ({0}) SELECT {0} FROM temp.merge_rows WHERE true "
                       "ON CONFLICT DO NOTHING",
                       joined(cols))
               .c_str());
    counts.measurements_added = sqlite3_changes(d.handle());
    d.exec("DROP TABLE temp.merge_rows");
    d.exec("DROP TABLE temp.merge_devices");
    counts.peers_added = copy_new_rows(d, "peer_measurements");
    t.commit();
    return counts;
}

namespace {

// A copy of an older database, migrated to this schema, for merging from without changing the source.
class MigratedCopy {
public:
    MigratedCopy(const std::string& source, const std::string& out, std::size_t index) {
        namespace fs = std::filesystem;
        const fs::path dir = fs::absolute(out).parent_path();
        m_path =
            (dir / fmt::format(".{}.merge-{}-{}.db", fs::path(out).filename().string(), ::getpid(), index)).string();
        remove();
        {
            Db src(source, SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READONLY);
            Stmt s(src, "VACUUM INTO ?1");  // a consistent snapshot, the -wal included
            s.bind(1, m_path);
            s.run();
        }
        Store::open(m_path);  // migrates it
    }
    ~MigratedCopy() { remove(); }
    MigratedCopy(const MigratedCopy&) = delete;
    MigratedCopy& operator=(const MigratedCopy&) = delete;
    const std::string& path() const { return m_path; }

private:
    void remove() {
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(m_path + suffix, ec);
    }
    std::string m_path;
};

}  // namespace

std::vector<MergeCounts> merge_databases(const std::vector<std::string>& sources, const std::string& out) {
    namespace fs = std::filesystem;
    if (sources.empty()) throw Error(ErrorCategory::bad_input, "name at least one database to merge", "db merge");
    std::vector<int> versions;
    for (const std::string& src : sources) {
        std::error_code ec;
        if (!fs::is_regular_file(src, ec))
            throw Error(ErrorCategory::bad_input, fmt::format("no results database at {}", src), "db merge");
        if (fs::exists(out, ec) && fs::equivalent(src, out, ec))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} is the output database too: a database cannot be merged into itself", src),
                        "--out");
        versions.push_back(Store::open(src, Store::Mode::read_only).schema_version());
    }
    Store target = Store::open(out);
    std::vector<MergeCounts> all;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        if (versions[i] < store_detail::current_schema_version()) {
            const MigratedCopy copy(sources[i], out, i);
            MergeCounts c = target.merge_from(copy.path(), sources[i]);
            c.notices.push_back(fmt::format("{} has schema {}: merged from a copy migrated to schema {}", sources[i],
                                            versions[i], store_detail::current_schema_version()));
            all.push_back(std::move(c));
        } else {
            all.push_back(target.merge_from(sources[i]));
        }
    }
    return all;
}

}  // namespace ktune
