#include "tuner/strategy/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <unordered_set>

namespace ktune {

double problem_distance(const Problem& a, const Problem& b) {
    constexpr double kOtherDtype = 1e9;  // dtype first: the widths of the accesses differ
    double d = a.dtype == b.dtype ? 0 : kOtherDtype;
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

std::vector<Config> transfer_hints(const Problem& problem, const std::vector<TunedProblem>& tuned,
                                   const std::function<bool(const Config&)>& is_candidate, std::size_t limit) {
    std::vector<const TunedProblem*> order;
    for (const TunedProblem& t : tuned)
        if (!(t.problem == problem)) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [&](const TunedProblem* x, const TunedProblem* y) {
        return problem_distance(problem, x->problem) < problem_distance(problem, y->problem);
    });
    std::vector<Config> out;
    std::unordered_set<std::string> taken;
    for (const TunedProblem* t : order) {
        if (out.size() >= limit) break;
        const std::string key = t->best.key();
        if (!taken.contains(key) && is_candidate(t->best)) {
            taken.insert(key);
            out.push_back(t->best);
        }
    }
    return out;
}

std::size_t transfer_hint_limit(std::size_t candidates) {
    return std::clamp<std::size_t>(std::size_t(std::ceil(0.10 * double(candidates))), 2, 16);
}

}  // namespace ktune
