#pragma once
// `ktune db merge`: joins results databases written on several GPUs and hosts (shards of one tuning, or separate
// tunings) into one. Each source is merged in one transaction, so a killed merge leaves the output as it was before
// that source, and merging again completes it: what is already there is recognised and skipped (idempotent).
//
// Identity: a measurement is (kernel source, configuration, problem, device), as in the store; a run is its uid, so
// every measurement keeps its run (with its host and environment) whatever ids the databases gave it. A measurement
// of an identity the output already holds is a duplicate when it comes from the same run at the same time, and a
// conflict otherwise: the output keeps the row it had (the first database given wins) and the conflict is reported.
// A device whose key the output holds with another calibration (calibration_difference) is kept apart under
// distinct_device_key(), with a notice.
#include <cstdint>
#include <string>
#include <vector>

namespace ktune {

struct MergeCounts {
    std::string source;
    std::int64_t devices_added = 0, runs_added = 0, measurements_added = 0, peers_added = 0;
    std::int64_t duplicates = 0;  // measurements already in the output, from the same run
    std::int64_t conflicts = 0;   // measurements of an identity the output holds from another run: not taken
    std::vector<std::string> conflict_examples;  // "op variant | problem | config | device: kept ..., not ..."
    std::vector<std::string> notices;            // devices kept apart, schemas migrated
};

// At most this many conflicts are described per source; the count has them all.
inline constexpr std::size_t kMergeConflictExamples = 10;

// Checks every source first (it exists, is a ktune database, of a schema this ktune knows, and is not `out`), so bad
// input writes nothing: Error(bad_input) for a missing file or `out` among the sources, Error(store) for a database it
// cannot read (a newer schema, not a ktune database). A source of an older schema is merged from a migrated copy, left
// as it was. Then merges each in order into `out` (created when missing).
std::vector<MergeCounts> merge_databases(const std::vector<std::string>& sources, const std::string& out);

}  // namespace ktune
