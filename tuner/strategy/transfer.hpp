#pragma once
// Transfer between the problems of one space: the fastest configuration of a problem is usually fast, often the
// fastest, at a problem of similar shape. A search starts from those winners, the most similar problem's first, before
// its own proposals; docs/search.md has what that does on ktune's own spaces, replayed.
#include <cstddef>
#include <functional>
#include <vector>

#include "core/types.hpp"

namespace ktune {

struct TunedProblem {
    Problem problem;
    Config best;
};

// How alike two problems are, smaller is closer: another dtype is farther than any shape; then the sum over the axes
// of |log2 a - log2 b| (an axis only one of them has counts as 1 against it).
double problem_distance(const Problem& a, const Problem& b);

// The best configurations of `tuned` (other problems of the same space), the most similar problem's first, each once,
// only those `is_candidate` keeps (valid at `problem`), at most `limit`. The problem itself is skipped if it is in
// `tuned`.
std::vector<Config> transfer_hints(const Problem& problem, const std::vector<TunedProblem>& tuned,
                                   const std::function<bool(const Config&)>& is_candidate, std::size_t limit);

// How many hints a search of `candidates` configurations starts with: 10 % of the space, at least 2 and at most 16.
// The winners of the nearest problems come first, so the first few carry nearly all of the gain.
std::size_t transfer_hint_limit(std::size_t candidates);

}  // namespace ktune
