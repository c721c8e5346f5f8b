#pragma once
// What an op's declaration (kernels/<op>/*.op.yaml, tuner/space/op_spec.hpp) cannot say: its CPU reference, used by
// tests at small sizes, and the helpers the references share. The op itself (buffers, arguments, bytes, flops, shape
// checks) is the declaration; the interface the tuner sees, OpDescription, is in core/op.hpp.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/op.hpp"
#include "core/types.hpp"

namespace ktune {

// Host arrays for the CPU reference, as doubles regardless of the storage type (already rounded to it).
using HostBuffers = std::map<std::string, std::vector<double>>;

struct CpuReference {
    std::string_view op;       // "rmsnorm": the YAML's op
    std::string_view variant;  // "fwd"
    // Computes the outputs (and inouts) from the inputs, in double. `p` has every axis of the op, optional ones at
    // their defaults, and passes the op's checks: the problem its declaration resolves (DeclaredOp::resolved).
    // Throws Error(bad_input) for a missing or mis-sized input.
    void (*run)(const Problem& p, HostBuffers& buffers);
};

// The registry: kernels/registry.cpp lists every CPU reference (one line per op variant).
const std::vector<CpuReference>& cpu_references();
// Throws Error(bad_input) listing the known ones when there is no such op/variant.
const CpuReference& find_cpu_reference(std::string_view op, std::string_view variant);

// Axis `name` of a resolved problem; Error(bad_input) naming `op_key` ("rmsnorm/fwd") when it is missing.
std::int64_t axis(const Problem& p, std::string_view name, std::string_view op_key);

// A CPU reference's input: Error(bad_input) naming `op_key` when it is missing or not `elements` long.
const std::vector<double>& host_input(const HostBuffers& buffers, const std::string& name, std::int64_t elements,
                                      std::string_view op_key);
// An inout of a CPU reference, checked as host_input() checks an input.
std::vector<double>& host_inout(HostBuffers& buffers, const std::string& name, std::int64_t elements,
                                std::string_view op_key);
// A CPU reference's output, created (NaN-filled) when missing or of another size.
std::vector<double>& host_output(HostBuffers& buffers, const std::string& name, std::int64_t elements);

// Seed of one buffer's generator stream: a stable hash of the run seed and the buffer name.
std::uint64_t buffer_seed(std::uint64_t run_seed, std::string_view buffer_name);

}  // namespace ktune
