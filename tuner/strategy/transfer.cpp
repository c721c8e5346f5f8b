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
    // Per problem key: the fastest result of the current source, and of any other.
    std::map<std::string, std::pair<const StoredResult*, const StoredResult*>> by_problem;
    for (const StoredResult& r : stored) {
        if (r.run_id >= before_run || r.problem == problem || std::ranges::find(exclude, r.problem) != exclude.end())
            continue;
        auto& [current, other] = by_problem[r.problem.key()];
        const StoredResult*& fastest = r.current_source ? current : other;
        if (!fastest || r.rank < fastest->rank) fastest = &r;
    }
    std::vector<TunedProblem> out;
    for (const auto& [key, fastest] : by_problem) {
        const StoredResult* r = fastest.first ? fastest.first : fastest.second;
        out.push_back({r->problem, r->config, true});
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
    for (const TunedProblem* t : order) {
        if (out.size() >= limit) break;
        const std::string key = t->best.key();
        if (!taken.contains(key) && is_candidate(t->best)) {
            taken.insert(key);
            out.push_back(t->best);
            if (from_history && t->stored) ++*from_history;
        }
    }
    return out;
}

std::size_t transfer_hint_limit(std::size_t candidates) {
    return std::clamp<std::size_t>(std::size_t(std::ceil(0.10 * double(candidates))), 2, 16);
}

}  // namespace ktune
