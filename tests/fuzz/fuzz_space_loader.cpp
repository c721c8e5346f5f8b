// libFuzzer target: the YAML search-space loader (SearchSpace::load_string) and, for spaces small enough to enumerate,
// what the CLI does next (problems, valid configurations, launch geometry, kernel names). Bad input may only ever
// throw ktune::Error; any other exception, a crash, a hang or a sanitizer report is a finding.
// Built and run by scripts/fuzz.sh; seeds: tests/fuzz/corpus/space_loader, tests/data/spaces, search_spaces.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "tuner/space/search_space.hpp"

namespace {

// Enumeration costs (configurations x problems) expression evaluations: beyond a few thousand it only slows the
// fuzzer down (a product of 10^12 says nothing more about the code than one of 10^3).
constexpr std::uint64_t k_max_pairs = 2048;

void exercise(const ktune::SearchSpace& s) {
    const auto problems = s.problems();
    if (problems.empty() || s.cartesian_size() > k_max_pairs / problems.size()) return;
    for (const ktune::Problem& p : problems) {
        (void)s.reference_name(p.dtype);
        (void)s.tolerance(p.dtype);
        try {
            (void)s.reference_launch(p);
        } catch (const ktune::Error&) {
        }
        for (const ktune::Config& c : s.valid_configs(p)) {
            (void)s.kernel_name(c, p.dtype);
            // Keys are stored and read back: every configuration's key must parse into that configuration.
            if (!(s.parse_config(c.key(), "fuzz") == c)) __builtin_trap();
            try {
                (void)s.launch(c, p, ktune::SearchSpace::nominal_sm_count);
            } catch (const ktune::Error&) {
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string yaml(reinterpret_cast<const char*>(data), size);
    try {
        exercise(ktune::SearchSpace::load_string(yaml, "fuzz.yaml"));
    } catch (const ktune::Error&) {
        // The one acceptable answer to bad input.
    }
    return 0;
}
