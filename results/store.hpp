#pragma once
// The results store: one SQLite database (WAL, busy timeout, one transaction per result) holding devices, runs,
// kernels, problems, configurations and measurements, and peer measurements (results/peers.hpp). Only this module
// includes sqlite3.h.
//
// A measurement's identity is (kernel source hash, configuration key, problem key, device key): re-running a tuning
// finds what was measured already and skips it (resume), unless forced.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "core/measurement.hpp"
#include "core/types.hpp"
#include "results/peers.hpp"

namespace ktune {

namespace store_detail {
class Db;
}
struct MergeCounts;  // results/merge.hpp

struct RunInfo {
    std::int64_t id = 0;
    std::string started_at;  // ISO-8601 UTC
    std::string finished_at;
    std::string git_revision;
    std::string command_line;
    std::string environment_json;  // versions, clocks, hostname, other GPU processes...
    std::string device_key;
    std::string status;  // "running", "finished", "interrupted", "failed"
    std::string uid;     // names the run in every database it is merged into; begin_run() draws one when empty
    std::string host;    // where it ran
};

struct KernelInfo {
    std::string op, variant;
    std::string source_path;
    // Hash of the kernel source, every header it includes, the kernel name template and the L2 state (the
    // measurement's identity: tuner/session/space_measurer.cpp kernel_identity).
    std::string source_hash;
    std::string l2_state;     // "cold", "cold-dirty", "hot" (wire::l2_state); "" when not known (schema < 3)
    std::string alternative;  // which kernel of a space of alternatives (SearchSpace::alternative()); "" for one
};

// One row of results: identity plus what was measured.
struct ResultRecord {
    KernelInfo kernel;
    std::string config_key;  // Config::key()
    Problem problem;
    std::string device_key;
    std::int64_t run_id = 0;
    std::string measured_at;
    Measurement measurement;
};

// An (op, variant, device) with at least one timed ok result: one section of a report.
struct TunedOp {
    std::string op, variant, device_key;
};

// Ok, timed results of one problem that best() (without source hashes) passes over because they are of an older
// source of their alternative: one measured earlier, with the same L2 method, than the source best() ranks.
struct StaleResults {
    std::string alternative;  // "" for a space of one kernel
    std::string source_hash;  // the older source
    std::string ranked_hash;  // the alternative's source best() ranks instead
    Problem problem;
    std::int64_t results = 0;
};

struct ResultFilter {
    std::optional<std::string> op, variant, device_key, source_hash;
    std::optional<std::string> problem_key;  // Problem::key()
    std::optional<Status> status;
};

class Store {
public:
    enum class Mode { read_write, read_only };
    // Creates the file and schema when missing (read_write). Throws Error(store) with the path on failure, including
    // a database written by a newer ktune schema.
    static Store open(const std::string& path, Mode mode = Mode::read_write);
    ~Store();
    Store(Store&&) noexcept;
    Store& operator=(Store&&) noexcept;

    const std::string& path() const;
    int schema_version() const;

    void upsert_device(const DeviceInfo& d);  // by key; keeps measured ceilings unless the new ones are non-zero
    std::optional<DeviceInfo> device(const std::string& key) const;
    // The key a device with this calibration is filed under here: its own, unless the store holds that key with a
    // calibration that differs beyond noise; then distinct_device_key() by host, then by host and GPU (numbered as a
    // last resort). `difference` receives what differed ("" when the device's own key is used).
    std::string filing_key(const DeviceInfo& d, std::string* difference = nullptr) const;
    std::vector<DeviceInfo> devices() const;

    std::int64_t begin_run(const RunInfo& r);
    void finish_run(std::int64_t run_id, const std::string& status);
    std::optional<RunInfo> run(std::int64_t run_id) const;

    // True when a result exists for this identity (any status: a compile error or a fault is a result too). The
    // kernel is its op, variant and source hash: two variants built from one source file are different kernels.
    bool has_result(const KernelInfo& kernel, const std::string& config_key, const std::string& problem_key,
                    const std::string& device_key) const;
    // Inserts or, with replace=true (--force), replaces; one transaction.
    void record(const ResultRecord& r, bool replace = false);
    std::vector<ResultRecord> results(const ResultFilter& f) const;
    std::int64_t count_results(const ResultFilter& f) const;

    // The best ok result per problem (best_rank's order) for (op, variant, device) among the kernel sources given;
    // without any, among the newest source of each alternative kernel on that device (one, for a space of one
    // kernel). Ordered by dtype then shape values numerically; each row's kernel says which alternative won.
    std::vector<ResultRecord> best(const std::string& op, const std::string& variant, const std::string& device_key,
                                   const std::vector<std::string>& source_hashes = {}) const;
    // What best() without source hashes passes over as of older sources (StaleResults) at the problems where the
    // alternative's ranked source has no ok result (elsewhere they are superseded, not lost), ordered by alternative,
    // problem (as best()) and source hash. Results of another L2 method (a --hot tuning beside a cold one) are not
    // stale: best() leaves them out by method, not by age.
    std::vector<StaleResults> stale_results(const std::string& op, const std::string& variant,
                                            const std::string& device_key) const;

    // Every (op, variant, device key) with at least one ok, timed result (of any kernel source), ordered by op,
    // variant, device key.
    std::vector<TunedOp> tuned_ops() const;

    // Peer measurements (results/peers.hpp), defined in results/peers.cpp. record_peers() writes all or nothing in
    // one transaction; a row of the same identity is replaced. peers() orders by op, variant, device name, problem
    // key, impl, method.
    PeerWriteCounts record_peers(const std::vector<PeerRecord>& peers);
    std::vector<PeerRecord> peers(const PeerFilter& f) const;

    // Adds the devices, runs, results and peer measurements of another ktune database of this schema version, in one
    // transaction (results/merge.cpp; merge_databases() checks the source first and says what is merged how).
    // `source_name` is what messages call it (default: its path).
    MergeCounts merge_from(const std::string& source_path, const std::string& source_name = {});

private:
    struct Impl;
    // For the parts of Store defined in other files of results/ (peers.cpp).
    store_detail::Db& db() const;
    void require_writable(std::string_view what) const;
    explicit Store(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace ktune
