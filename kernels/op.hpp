#pragma once
// The ops written in C++ (kernels/registry.cpp) and the helpers their descriptions share. The interface itself,
// OpDescription, is in core/op.hpp.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/op.hpp"
#include "core/types.hpp"

namespace ktune {

// Problems over M rows of H elements with an optional row stride S in elements (default H): the axes of every
// row-wise op. Throws Error(bad_input) naming `op_key` ("rmsnorm/fwd") and the problem for an unknown or missing axis,
// M or H outside [1, 2^31), S < H, or M*S overflowing.
struct RowShape {
    std::int64_t m = 0;  // rows
    std::int64_t h = 0;  // elements per row
    std::int64_t s = 0;  // row stride in elements
};
RowShape row_shape(const Problem& p, std::string_view op_key);

// A CPU reference's input: Error(bad_input) naming `op_key` when it is missing or not `elements` long.
const std::vector<double>& host_input(const HostBuffers& buffers, const std::string& name, std::int64_t elements,
                                      std::string_view op_key);
// A CPU reference's output, created (NaN-filled) when missing or of another size.
std::vector<double>& host_output(HostBuffers& buffers, const std::string& name, std::int64_t elements);

// The registry: kernels/registry.cpp lists every op (one line per op).
const std::vector<const OpDescription*>& all_ops();
// Throws Error(bad_input) listing the known ops when there is no such op/variant.
const OpDescription& find_op(std::string_view name, std::string_view variant);

// Seed of one buffer's generator stream: a stable hash of the run seed and the buffer name.
std::uint64_t buffer_seed(std::uint64_t run_seed, std::string_view buffer_name);

}  // namespace ktune
