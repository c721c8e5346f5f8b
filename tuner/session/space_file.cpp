#include "tuner/session/space_file.hpp"

#include "tuner/interop/t1.hpp"

namespace ktune {

bool is_t1_file(const std::string& path) { return path.ends_with(".json"); }

std::vector<SearchSpace> load_space_file(const std::string& path) {
    if (is_t1_file(path)) return load_t1_space(path);
    return SearchSpace::load_alternatives(path);
}

}  // namespace ktune
