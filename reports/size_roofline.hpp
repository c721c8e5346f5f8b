#pragma once
// A roofline measured per size: the best time of a reference kernel (copy/fwd, copy/read) at each of the sizes it was
// tuned at, read at any size in between. A device's copy ceiling is measured on 1 GiB, which a problem of a few MB
// cannot approach (launch, DRAM latency and the last wave dominate); the best copy of the same bytes, timed the same
// way, is the floor such a problem can be held to.
#include <vector>

namespace ktune {

class SizeRoofline {
public:
    struct Point {
        double bytes = 0;  // bytes moved
        double us = 0;     // the time to move them
    };

    SizeRoofline() = default;
    // Points in any order; at a size given more than once the smallest time counts (the best of them). Points
    // without a positive, finite size and time are dropped: they have no logarithm.
    explicit SizeRoofline(std::vector<Point> points);

    // The time at `bytes`, interpolated log-log (log time against log bytes, straight between the neighbouring
    // sizes); NaN outside the measured sizes (never extrapolated) and when fewer than two sizes were measured.
    double at(double bytes) const;

    const std::vector<Point>& points() const { return m_points; }  // by bytes, one per size

private:
    std::vector<Point> m_points;
};

}  // namespace ktune
