#include "tuner/strategy/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

namespace ktune {

double problem_distance(const Problem& a, const Problem& b) {
    // Another width first: the accesses, the vector widths and the bytes moved all differ. A type of the same width
    // (fp16 and bf16) moves the same bytes the same way: as far as one axis doubled.
    constexpr double kOtherWidth = 1e9, kSameWidth = 1;
    double d = a.dtype == b.dtype ? 0 : dtype_bytes(a.dtype) == dtype_bytes(b.dtype) ? kSameWidth : kOtherWidth;
    std::set<std::string> axes;
    for (const auto& [name, v] : a.shape) axes.insert(name);
    for (const auto& [name, v] : b.shape) axes.insert(name);
    auto value = [](const Problem& p, const std::string& axis) -> const std::int64_t* {
        for (const auto& [name, v] : p.shape)
            if (name == axis) return &v;
        return nullptr;
    };
    for (const std::string& axis : axes) {
        const std::int64_t* x = value(a, axis);
        const std::int64_t* y = value(b, axis);
        if (!x || !y) {
            d += 1;
            continue;
        }
        d += std::abs(std::log2(double(std::max<std::int64_t>(*x, 1))) -
                      std::log2(double(std::max<std::int64_t>(*y, 1))));
    }
    return d;
}

std::vector<TunedProblem> history_winners(const std::vector<StoredResult>& stored, const Problem& problem,
                                          const std::vector<Problem>& exclude, std::int64_t before_run) {
    // Per problem key: its results of the current source, and of any other.
    std::map<std::string, std::pair<std::vector<const StoredResult*>, std::vector<const StoredResult*>>> by_problem;
    for (const StoredResult& r : stored) {
        if (r.run_id >= before_run || r.problem == problem || std::ranges::find(exclude, r.problem) != exclude.end())
            continue;
        auto& [current, other] = by_problem[r.problem.key()];
        (r.current_source ? current : other).push_back(&r);
    }
    std::vector<TunedProblem> out;
    for (auto& [key, results] : by_problem) {
        std::vector<const StoredResult*>& rs = results.first.empty() ? results.second : results.first;
        std::ranges::stable_sort(rs, {}, [](const StoredResult* r) { return r->rank; });
        TunedProblem t{rs.front()->problem, {}, true};
        std::unordered_set<std::string> taken;  // another source may have measured a configuration again
        for (const StoredResult* r : rs)
            if (t.fastest.size() < kTransferDepth && taken.insert(r->config.key()).second)
                t.fastest.push_back(r->config);
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<Config> transfer_hints(const Problem& problem, const std::vector<TunedProblem>& tuned,
                                   const std::function<bool(const Config&)>& is_candidate, std::size_t limit,
                                   std::size_t* from_history) {
    std::vector<const TunedProblem*> order;
    for (const TunedProblem& t : tuned)
        if (!(t.problem == problem)) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [&](const TunedProblem* x, const TunedProblem* y) {
        return problem_distance(problem, x->problem) < problem_distance(problem, y->problem);
    });
    std::vector<Config> out;
    std::unordered_set<std::string> taken;
    if (from_history) *from_history = 0;
    std::size_t depth = 0;
    for (const TunedProblem* t : order) depth = std::max(depth, t->fastest.size());
    for (std::size_t rank = 0; rank < depth; ++rank) {
        for (const TunedProblem* t : order) {
            if (out.size() >= limit) return out;
            if (rank >= t->fastest.size()) continue;
            const Config& c = t->fastest[rank];
            const std::string key = c.key();
            if (!taken.contains(key) && is_candidate(c)) {
                taken.insert(key);
                out.push_back(c);
                if (from_history && t->stored) ++*from_history;
            }
        }
    }
    return out;
}

std::size_t transfer_hint_limit(std::size_t candidates, std::optional<std::int64_t> budget) {
    const std::size_t share = std::clamp<std::size_t>(std::size_t(std::ceil(0.10 * double(candidates))), 2, 16);
    if (!budget) return share;
    // Hints that fill the budget would leave a search nothing of its own: a run of small-budget searches would then
    // hand on its first problems' random draws for ever.
    return std::min(share, std::size_t(std::max<std::int64_t>(1, (*budget + 1) / 2)));
}

}  // namespace ktune
