#pragma once
// The wire protocol between ktune (the host) and ktune-worker (one process per GPU, the only one that loads libcuda).
// One JSON object per line on the worker's stdin (requests) and stdout (responses); the worker's stderr is passed
// through as diagnostics. Large data never crosses the pipe: cubins travel as paths into the compile cache, inputs
// are generated on the device from seeds.
//
// Requests carry "cmd"; every response carries "ok" and, when false, "error" and "fatal" (fatal: the CUDA context is
// poisoned or the worker cannot go on; the host restarts it).
//   hello                        -> {devices: [DeviceProps], driver_version}
//   open {device}                -> {device: DeviceProps}
//   load_utility {cubin, names}  -> {}                  names: {"empty": lowered, "spin": ..., "fill.bf16": ...}
//   ceilings {copy_bytes}        -> {copy_gbps, launch_floor_us}
//   setup {buffers, args, reference: Launch, seed} -> {reference_ms}
//   evaluate {launch: Launch, args?, tolerance, timing: TimingOptions} -> EvaluateResult
//   shutdown                     -> {} and exit
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/measurement.hpp"

namespace ktune::wire {

using nlohmann::json;

struct DeviceProps {
    int ordinal = 0;
    std::string name, uuid, pci_bus_id;
    int cc_major = 0, cc_minor = 0, sm_count = 0;
    std::int64_t l2_bytes = 0, memory_bytes = 0;
    int memory_clock_khz = 0, memory_bus_bits = 0, sm_clock_khz = 0;
    int max_shared_per_block_optin = 0;
    int driver_version = 0;  // cuDriverGetVersion: 13000 for 13.0
};

struct Buffer {
    std::string name;
    std::string elem;  // "f32" "f16" "bf16" "i32" "i64" "i8" "u8"
    std::int64_t elements = 0;
    std::string role;  // "input" "output" "inout" "scratch"
    double lo = -1, hi = 1;
    std::uint64_t seed = 0;
    // A padded batch (core/op.hpp: BufferPad): once every buffer is generated, the worker sets to NaN each token t >=
    // clamp(lengths[b], 0, tokens) of each sequence b, reading the buffer as [sequences, heads, tokens,
    // token_elements], the lengths from buffer pad_lengths (an index into setup's buffers, of as many elements as
    // there are sequences). -1: no pad.
    int pad_lengths = -1;
    std::int64_t pad_heads = 1, pad_tokens = 0, pad_token_elements = 0;
};

struct Arg {
    std::string kind;  // "buffer" "i32" "i64" "f32" "tensor_map"
    std::string buffer;
    std::int64_t integer = 0;
    double real = 0;
    // tensor_map: a TMA descriptor (CUtensorMap, passed by value) over `buffer`, row-major, outermost dimension first:
    // the tensor's extents, the box one copy moves, and the shared-memory swizzle span in bytes (0, 32, 64, 128).
    std::vector<std::int64_t> dims, box;
    int swizzle = 0;
};

struct Launch {
    std::string cubin;    // path
    std::string lowered;  // symbol in the cubin
    std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
    unsigned shared_bytes = 0;
    // A library baseline (core/library.hpp) called instead of a cubin's kernel, with its configuration; grid,
    // block and shared_bytes are then unused.
    std::string library;
    NamedValues config;
    // Arguments this kernel takes after the problem's (search space: kernel.tensor_maps): TMA descriptors.
    std::vector<Arg> tensor_maps;
};

struct TimingOptions {
    bool cold_l2 = true;
    // With cold_l2: the flush also drops its own lines from the L2, so the timed kernel starts with nothing dirty to
    // write back (kernels/common/harness_kernels.cuh says why); false leaves them dirty, as a flush of writes alone.
    bool clean_flush = true;
    int warmup = 2;
    int min_samples = 10;
    int max_samples = 2000;
    double target_rel = 0.01;
    double time_cap_s = 1.0;
    int cupti_samples = 5;  // 0: no CUPTI cross-check
};

// How the samples found the L2, for the measurement's identity and for reports: "cold" (clean flush), "cold-dirty",
// "hot".
std::string l2_state(const TimingOptions& t);

struct EvaluateResult {
    std::string status = "ok";  // status_name() values
    std::string message;
    std::int64_t mismatches = 0;
    double max_abs_error = 0;
    std::vector<double> samples_us;
    bool time_cap_hit = false;
    std::vector<double> cupti_samples_us;  // CUPTI kernel durations, one per sample; empty when not taken
};

void to_json(json& j, const DeviceProps& d);
void from_json(const json& j, DeviceProps& d);
void to_json(json& j, const Buffer& b);
void from_json(const json& j, Buffer& b);
void to_json(json& j, const Arg& a);
void from_json(const json& j, Arg& a);
void to_json(json& j, const Launch& l);
void from_json(const json& j, Launch& l);
void to_json(json& j, const TimingOptions& t);
void from_json(const json& j, TimingOptions& t);
void to_json(json& j, const EvaluateResult& r);
void from_json(const json& j, EvaluateResult& r);

}  // namespace ktune::wire

namespace ktune {
// ktune::Tolerance travels as {rtol, atol}.
void to_json(nlohmann::json& j, const Tolerance& t);
void from_json(const nlohmann::json& j, Tolerance& t);
}  // namespace ktune
