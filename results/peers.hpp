#pragma once
// Peer measurements: what other implementations of an op (PyTorch eager, F.rms_norm, torch.compile, Liger...) took on
// a GPU, measured outside ktune by bench/peers/ and imported with `ktune import-peers` (reports/peer_import.hpp reads
// the file; reports/PEERS_FORMAT.md describes it). Reports set them beside ktune's best results to show speedups.
//
// Peers are matched to ktune results by (op, variant, problem) and the device's product NAME (DeviceInfo::name), not
// its key: a device key holds driver and toolkit versions that a Python script cannot reproduce exactly.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace ktune {

struct PeerRecord {
    // Identity: (op, variant, problem key, device name, impl, method). Recording the same identity again replaces it.
    std::string op, variant;
    Problem problem;
    std::string device_name;  // "NVIDIA H100 80GB HBM3", as torch.cuda.get_device_name() and cuDeviceGetName say
    std::string impl;         // "torch_eager", "torch_fused", "torch_compile", "liger", ...
    std::string method;       // how it was timed: "cold_l2_events", "hot_events", "cuda_graph", ...

    std::string device_key;  // the ktune device key when the script knew it; informative only
    double p50_us = std::numeric_limits<double>::quiet_NaN();
    double p95_us = std::numeric_limits<double>::quiet_NaN();
    double p99_us = std::numeric_limits<double>::quiet_NaN();
    double mean_us = std::numeric_limits<double>::quiet_NaN();
    std::int64_t n = 0;
    std::vector<double> samples_us;       // raw samples in sampling order; may be empty
    std::string environment_json = "{}";  // versions of torch, triton, liger... as the script reported them
    std::string source;                   // the file it was imported from
    std::string imported_at;              // ISO-8601 UTC; record_peers() fills it when empty
};

struct PeerFilter {
    std::optional<std::string> op, variant, device_name, impl;
};

// What Store::record_peers() did: rows new to the store, rows that replaced one of the same identity.
struct PeerWriteCounts {
    std::size_t inserted = 0, replaced = 0;
};

}  // namespace ktune
