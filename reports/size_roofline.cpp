#include "reports/size_roofline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ktune {
namespace {

bool positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

SizeRoofline::SizeRoofline(std::vector<Point> points) {
    std::erase_if(points, [](const Point& p) { return !positive(p.bytes) || !positive(p.us); });
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.bytes != b.bytes ? a.bytes < b.bytes : a.us < b.us; });
    for (const Point& p : points)
        if (m_points.empty() || m_points.back().bytes != p.bytes) m_points.push_back(p);  // the fastest of a size
}

double SizeRoofline::at(double bytes) const {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (m_points.size() < 2 || !(bytes >= m_points.front().bytes && bytes <= m_points.back().bytes)) return nan;
    const auto hi =
        std::lower_bound(m_points.begin(), m_points.end(), bytes, [](const Point& p, double b) { return p.bytes < b; });
    if (hi->bytes == bytes) return hi->us;  // exact, without a round trip through logarithms
    const auto lo = hi - 1;
    const double f = (std::log(bytes) - std::log(lo->bytes)) / (std::log(hi->bytes) - std::log(lo->bytes));
    return std::exp(std::log(lo->us) + f * (std::log(hi->us) - std::log(lo->us)));
}

}  // namespace ktune
