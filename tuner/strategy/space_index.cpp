#include "tuner/strategy/space_index.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {

std::size_t SpaceIndex::PointHash::operator()(const GridPoint& p) const {
    std::size_t h = 0xcbf29ce484222325ull;
    for (int v : p) h = (h ^ std::size_t(v)) * 0x100000001b3ull;
    return h;
}

SpaceIndex::SpaceIndex(const std::vector<Config>& candidates) {
    if (candidates.empty()) return;
    const NamedValues& first = candidates.front().values;
    m_values.resize(first.size());
    for (const Config& c : candidates) {
        if (c.values.size() != first.size())
            throw Error(ErrorCategory::internal, fmt::format("configuration {} does not have the parameters of {}",
                                                             c.key(), candidates.front().key()));
        for (std::size_t d = 0; d < first.size(); ++d) {
            if (c.values[d].first != first[d].first)
                throw Error(ErrorCategory::internal, fmt::format("configuration {} does not have the parameters of {}",
                                                                 c.key(), candidates.front().key()));
            m_values[d].push_back(c.values[d].second);
        }
    }
    for (auto& v : m_values) {
        std::ranges::sort(v);
        v.erase(std::unique(v.begin(), v.end()), v.end());
    }
    m_points.reserve(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        GridPoint p(first.size());
        for (std::size_t d = 0; d < first.size(); ++d)
            p[d] = int(std::ranges::lower_bound(m_values[d], candidates[i].values[d].second) - m_values[d].begin());
        m_by_point.emplace(p, i);
        m_by_key.emplace(candidates[i].key(), i);
        m_points.push_back(std::move(p));
    }
}

std::optional<std::size_t> SpaceIndex::find(const GridPoint& p) const {
    const auto it = m_by_point.find(p);
    if (it == m_by_point.end()) return std::nullopt;
    return it->second;
}

std::optional<std::size_t> SpaceIndex::find(const Config& c) const {
    const auto it = m_by_key.find(c.key());
    if (it == m_by_key.end()) return std::nullopt;
    return it->second;
}

std::vector<std::size_t> SpaceIndex::neighbours(std::size_t i, int radius) const {
    std::vector<std::size_t> out;
    GridPoint p = m_points[i];
    for (int step = 1; step <= radius; ++step)
        for (std::size_t d = 0; d < dims(); ++d)
            for (int sign : {-1, 1}) {
                const int v = m_points[i][d] + sign * step;
                if (v < 0 || v >= levels(d)) continue;
                p[d] = v;
                if (auto j = find(p)) out.push_back(*j);
                p[d] = m_points[i][d];
            }
    return out;
}

std::vector<std::size_t> SpaceIndex::axis_neighbours(std::size_t i) const {
    std::vector<std::pair<int, std::size_t>> found;  // (steps away, candidate)
    GridPoint p = m_points[i];
    for (std::size_t d = 0; d < dims(); ++d) {
        for (int v = 0; v < levels(d); ++v) {
            if (v == m_points[i][d]) continue;
            p[d] = v;
            if (auto j = find(p)) found.emplace_back(std::abs(v - m_points[i][d]), *j);
        }
        p[d] = m_points[i][d];
    }
    std::ranges::stable_sort(found, {}, &std::pair<int, std::size_t>::first);
    std::vector<std::size_t> out;
    for (const auto& f : found) out.push_back(f.second);
    return out;
}

}  // namespace ktune
