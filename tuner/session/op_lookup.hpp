#pragma once
// Which declaration an op has: the one its search space makes (op_spec), else the built-in one of its name.
#include <memory>
#include <string>
#include <vector>

#include "core/op.hpp"
#include "tuner/space/op_spec.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {

// The built-in ops: every op spec file under <root>/kernels (kernels/<op>/*.op.yaml), loaded once per root.
// Throws Error(bad_input) naming a file that does not load.
const std::vector<std::shared_ptr<const DeclaredOp>>& builtin_ops(const std::string& root);

// The op a search space tunes: declared in its YAML (op_spec), else the built-in op of its name and variant under the
// ktune root (resolve_root). Throws Error(bad_input) naming the space file when there is neither. The reference
// lives as long as the space, or the process for a built-in op.
const OpDescription& op_of(const SearchSpace& space);

// An op's FLOPs at a problem, for reports: the built-in op's under <root>, else the op declared by a space under
// <root>/search_spaces; 0 when neither knows the op (it has no FLOP/s column then).
double op_flops(const std::string& root, const std::string& op, const std::string& variant, const Problem& p);

}  // namespace ktune
