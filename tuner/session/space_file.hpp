#pragma once
// What a search-space file holds, whatever its format: ktune's YAML (one kernel or alternatives), or a Kernel Tuner /
// KTT T1 input file (JSON, tuner/interop/t1.hpp), told apart by the name (*.json).
#include <string>
#include <vector>

#include "tuner/space/search_space.hpp"

namespace ktune {

// The kernels a space file declares, in file order (SearchSpace::load_alternatives). Throws Error(bad_input) naming
// the file, and its line and field where the format has lines.
std::vector<SearchSpace> load_space_file(const std::string& path);

// True for a name that load_space_file reads as a T1 file.
bool is_t1_file(const std::string& path);

}  // namespace ktune
