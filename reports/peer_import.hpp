#pragma once
// `ktune import-peers FILE...`: reads a peer-measurement file (the format is reports/PEERS_FORMAT.md; bench/peers/
// scripts write it) and stores its results with Store::record_peers(). A file with any bad field imports nothing.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "results/peers.hpp"

namespace ktune {

class Store;

struct PeerImportResult {
    std::size_t inserted = 0;  // results new to the store
    std::size_t replaced = 0;  // results that replaced a stored one of the same identity
    std::string device_name;   // the device the file is about
};

// Parses and validates a peer file's text. Throws Error(bad_input) whose where() is "<source>: <JSON path>"
// (e.g. "peers.json: results[3].p50_us") and whose message says what is wrong with that field.
std::vector<PeerRecord> parse_peers(std::string_view text, const std::string& source);

// Reads `path`, parses it and records every result in one transaction. Throws Error(bad_input) for an unreadable or
// bad file (nothing is written), Error(store) when the store fails.
PeerImportResult import_peers(Store& store, const std::string& path);

}  // namespace ktune
