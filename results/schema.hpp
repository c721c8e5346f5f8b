#pragma once
// Internal to results/: the database schema as SQL text, the migrations that bring an older database up to date, and
// the encodings of the columns that are not plain SQL values (samples BLOBs, shape JSON).
#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace ktune::store_detail {

class Db;

// The schema version this code writes and reads (stored in PRAGMA user_version; 0 means "no ktune schema yet").
int current_schema_version();

// Applies migrations from `from_version` up to current_schema_version() and sets user_version. The caller holds a
// write transaction, so a database is either fully migrated or untouched.
void migrate(Db& db, int from_version);

// Samples: little-endian IEEE-754 binary64, 8 bytes each, whatever the host's byte order. decode_samples() throws
// Error(store) naming `path` for a BLOB that is not a whole number of doubles.
std::vector<unsigned char> encode_samples(const std::vector<double>& samples);
std::vector<double> decode_samples(const std::vector<unsigned char>& blob, const std::string& path);

// Times: ISO-8601 UTC text, "2025-01-31T12:00:00Z"; sorts as it reads.

// Shapes: {"M":4096,"H":8192}, members in the order of the axes. parse_shape_json() reads back exactly what
// shape_to_json() writes (plus whitespace) and throws Error(store) naming `path` and `table` otherwise, so a
// hand-edited row fails loudly.
std::string shape_to_json(const NamedValues& shape);
NamedValues parse_shape_json(std::string_view text, const std::string& path, std::string_view table);

}  // namespace ktune::store_detail
