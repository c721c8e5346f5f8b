#pragma once
// Internal to results/: the database schema as SQL text and the migrations that bring an older database up to date.
#include <string_view>

namespace ktune::store_detail {

class Db;

// The schema version this code writes and reads (stored in PRAGMA user_version; 0 means "no ktune schema yet").
int current_schema_version();

// Applies migrations from `from_version` up to current_schema_version() and sets user_version. The caller holds a
// write transaction, so a database is either fully migrated or untouched.
void migrate(Db& db, int from_version);

}  // namespace ktune::store_detail
