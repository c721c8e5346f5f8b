#pragma once
// Which description an op has: the one its search space declares (op_spec), else the C++ one of that name.
#include <string>

#include "core/op.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {

// The op a search space tunes: declared in its YAML (op_spec), else the C++ op of its name and variant
// (kernels/registry.cpp). Throws Error(bad_input) naming the space file when there is neither. The reference lives as
// long as the space.
const OpDescription& op_of(const SearchSpace& space);

// An op's FLOPs at a problem, for reports: the C++ op's, else the op declared by a space under <root>/search_spaces;
// 0 when neither knows the op (it has no FLOP/s column then).
double op_flops(const std::string& root, const std::string& op, const std::string& variant, const Problem& p);

}  // namespace ktune
