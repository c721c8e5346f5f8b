#pragma once
// The op tests check an op as its search space declares it (op_spec: kernels/<op>/*.op.yaml) and run its CPU
// reference (kernels/registry.cpp) on the problem that declaration resolves, as the tuner sees them.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/op.hpp"
#include "ktune_test_config.hpp"
#include "tuner/space/op_spec.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {

// The op of the search space under search_spaces/ that tunes `name`/`variant`, loaded once (a space of alternative
// kernels declares one op for all of them).
inline const DeclaredOp& declared_op(std::string_view name, std::string_view variant) {
    static std::map<std::pair<std::string, std::string>, SearchSpace> spaces;
    const std::pair<std::string, std::string> key{name, variant};
    auto it = spaces.find(key);
    if (it == spaces.end()) {
        std::vector<SearchSpace> kernels =
            SearchSpace::load_alternatives(find_space_file(KTUNE_SOURCE_ROOT, key.first, key.second));
        it = spaces.emplace(key, std::move(kernels.front())).first;
    }
    return *it->second.declared_op();
}

// The op's CPU reference on `p`, resolved by the declaration (optional axes at their defaults, checks passed).
inline void cpu_reference(const DeclaredOp& op, const Problem& p, HostBuffers& buffers) {
    find_cpu_reference(op.name(), op.variant()).run(op.resolved(p), buffers);
}

}  // namespace ktune
