#pragma once
// Library baselines: kernels that a search space names with `kernel.library` instead of a template. The GPU worker
// calls the vendor library (harness/worker/library_baseline.cpp) where it would launch a compiled kernel, and measures
// it with the same method (validation against the space's reference kernel, the same cold-L2 flush, events and CUPTI
// over every kernel the call launches), so a tuned kernel and the library it must beat are compared side by side in
// one store. The list is the contract between a search space and the worker.
#include <string_view>
#include <vector>

namespace ktune {

struct LibraryBaseline {
    std::string_view name;                     // kernel.library in the YAML
    std::string_view arguments;                // the op arguments it takes, in order (the op's arguments() must match)
    std::vector<std::string_view> parameters;  // the tunables it understands
    std::string_view doc;
};

const std::vector<LibraryBaseline>& library_baselines();
// nullptr when there is no such library baseline.
const LibraryBaseline* find_library_baseline(std::string_view name);

}  // namespace ktune
