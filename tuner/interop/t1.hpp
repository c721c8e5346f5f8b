#pragma once
// Kernel Tuner's and KTT's T1 input format (JSON; schema kernel_tuner/schema/T1/1.0.0/input-schema.json) read as a
// ktune search space where it maps.
#include <string>
#include <string_view>
#include <vector>

#include "tuner/space/search_space.hpp"

namespace ktune {

// The ktune search-space document (JSON, which the YAML loader reads) that a T1 file's text maps to; `path` names the
// file in errors and places the kernel source beside it. Throws Error(bad_input) naming the file and the T1 field of
// what does not map.
std::string t1_space_document(std::string_view json_text, const std::string& path);

// Reads a T1 file as the one kernel of a search space.
std::vector<SearchSpace> load_t1_space(const std::string& path);

}  // namespace ktune
