#pragma once
// A problem's valid configurations as points of a grid: each parameter's distinct values in ascending order, each
// configuration as the position of its value on every axis. Adaptive strategies move on this grid (neighbours,
// crossover, mutation) and map a point back to a configuration only when it is valid (a candidate).
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/types.hpp"

namespace ktune {

using GridPoint = std::vector<int>;  // a position on every parameter's axis of values

class SpaceIndex {
public:
    // Every candidate has the same parameters in the same order (Config::values of one search space).
    explicit SpaceIndex(const std::vector<Config>& candidates);

    std::size_t size() const { return m_points.size(); }
    std::size_t dims() const { return m_values.size(); }
    int levels(std::size_t dim) const { return int(m_values[dim].size()); }
    const GridPoint& point(std::size_t i) const { return m_points[i]; }
    std::optional<std::size_t> find(const GridPoint& p) const;
    std::optional<std::size_t> find(const Config& c) const;

    // Candidates that differ from candidate i in one parameter by at most `radius` steps along its axis, nearest
    // first.
    std::vector<std::size_t> neighbours(std::size_t i, int radius = 1) const;
    // Candidates that differ from candidate i in exactly one parameter, by any number of steps.
    std::vector<std::size_t> axis_neighbours(std::size_t i) const;

private:
    struct PointHash {
        std::size_t operator()(const GridPoint& p) const;
    };
    std::vector<std::vector<std::int64_t>> m_values;  // per parameter, ascending
    std::vector<GridPoint> m_points;
    std::unordered_map<GridPoint, std::size_t, PointHash> m_by_point;
    std::unordered_map<std::string, std::size_t> m_by_key;
};

}  // namespace ktune
