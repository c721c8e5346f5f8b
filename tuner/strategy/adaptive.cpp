#include "tuner/strategy/adaptive.hpp"

#include <algorithm>
#include <string>

namespace ktune {

void AdaptiveStrategy::begin(const Problem& problem, std::vector<Config> candidates) {
    // As the random strategy does: the problem mixed into the seed, so problems do not all start alike.
    std::seed_seq seq{m_options.seed, std::hash<std::string>{}(problem.key())};
    m_rng.seed(seq);
    m_problem = problem;
    m_index.emplace(candidates);
    m_candidates = std::move(candidates);
    m_proposed.assign(m_candidates.size(), false);
    m_cost.assign(m_candidates.size(), std::nullopt);
    m_observed.clear();
    m_first.clear();
    m_hinted = false;
    m_last_batch_begin = 0;
    m_proposed_count = 0;
    start();
}

void AdaptiveStrategy::start_with(const std::vector<Config>& first) {
    for (const Config& c : first)
        if (const auto i = m_index->find(c)) m_first.push_back(*i);
}

std::size_t AdaptiveStrategy::batch_size() const { return std::size_t(std::max(1, m_options.batch.value_or(8))); }

std::vector<Config> AdaptiveStrategy::propose() {
    std::size_t n = std::min(batch_size(), m_candidates.size() - m_proposed_count);
    if (m_options.budget) n = std::min<std::size_t>(n, std::size_t(*m_options.budget) - m_proposed_count);
    std::vector<Config> out;
    if (n == 0) return out;
    std::vector<std::size_t> chosen;
    auto take = [&](std::size_t i) {
        if (chosen.size() == n || i >= m_candidates.size() || m_proposed[i]) return;
        m_proposed[i] = true;
        chosen.push_back(i);
    };
    // start_with()'s configurations make batches of their own, so their results are in before the first idea.
    while (!m_first.empty() && chosen.size() < n) {
        take(m_first.front());
        m_first.erase(m_first.begin());
    }
    m_hinted = m_hinted || !chosen.empty();
    if (chosen.empty()) {
        for (std::size_t i : choose(n)) take(i);
        for (std::size_t i : random_unproposed(n - chosen.size())) take(i);
    }
    m_proposed_count += chosen.size();
    m_last_batch_begin = m_observed.size();
    for (std::size_t i : chosen) out.push_back(m_candidates[i]);
    return out;
}

void AdaptiveStrategy::observe(const Config& config, const Measurement& m) {
    const auto i = m_index->find(config);
    if (!i) return;
    if (m.status != Status::ok)
        m_cost[*i] = kInfeasible;
    else if (m.rank_us() > 0)
        m_cost[*i] = m.rank_us();
    else
        return;  // no time: nothing to learn
    m_observed.push_back(*i);
}

std::optional<std::size_t> AdaptiveStrategy::best() const {
    std::optional<std::size_t> b;
    for (std::size_t i : m_observed)
        if (*m_cost[i] < kInfeasible && (!b || *m_cost[i] < *m_cost[*b])) b = i;
    return b;
}

std::vector<std::size_t> AdaptiveStrategy::ranked() const {
    std::vector<std::size_t> out;
    for (std::size_t i : m_observed)
        if (*m_cost[i] < kInfeasible) out.push_back(i);
    std::ranges::stable_sort(out, {}, [&](std::size_t i) { return *m_cost[i]; });
    return out;
}

double AdaptiveStrategy::penalty() const {
    double worst = 0;
    for (std::size_t i : m_observed)
        if (*m_cost[i] < kInfeasible) worst = std::max(worst, *m_cost[i]);
    return worst > 0 ? 2 * worst : 1.0;
}

std::vector<std::size_t> AdaptiveStrategy::random_unproposed(std::size_t n) {
    std::vector<std::size_t> out;
    const std::size_t left = m_candidates.size() - m_proposed_count;
    if (n == 0 || left == 0) return out;
    // Rejection sampling while most of the space is left; a shuffle of what is left otherwise.
    if (left * 2 > m_candidates.size()) {
        std::uniform_int_distribution<std::size_t> pick(0, m_candidates.size() - 1);
        while (out.size() < std::min(n, left)) {
            const std::size_t i = pick(m_rng);
            if (!m_proposed[i] && std::ranges::find(out, i) == out.end()) out.push_back(i);
        }
        return out;
    }
    for (std::size_t i = 0; i < m_candidates.size(); ++i)
        if (!m_proposed[i]) out.push_back(i);
    std::shuffle(out.begin(), out.end(), m_rng);
    out.resize(std::min(n, out.size()));
    return out;
}

std::vector<std::size_t> AdaptiveStrategy::unproposed(const std::vector<std::size_t>& ids) const {
    std::vector<std::size_t> out;
    for (std::size_t i : ids)
        if (!m_proposed[i]) out.push_back(i);
    return out;
}

double AdaptiveStrategy::progress() const {
    const double total = m_options.budget
                             ? double(std::min<std::int64_t>(*m_options.budget, std::int64_t(m_candidates.size())))
                             : double(m_candidates.size());
    return total > 0 ? double(m_proposed_count) / total : 1.0;
}

}  // namespace ktune
