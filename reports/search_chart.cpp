#include "reports/search_chart.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "reports/detail/svg.hpp"

namespace ktune {
namespace {

using report_detail::nice_ticks;
using report_detail::Scale;
using report_detail::Svg;
using report_detail::tick_label;

constexpr std::string_view k_palette[] = {"#6e7781", "#1f6feb", "#e36209", "#2da44e", "#8250df",
                                          "#cf222e", "#bf3989", "#9a6700", "#0598bc"};
constexpr double k_width = 720, k_height = 380;

}  // namespace

std::string search_chart_svg(const SearchChart& c) {
    constexpr double w = k_width, h = k_height, ml = 64, mr = 24, mt = 40, mb = 46;
    double x_hi = c.budget_end.value_or(0), y_hi = 1.1;
    for (const SearchCurve& s : c.curves)
        for (const auto& [x, v] : s.points) x_hi = std::max(x_hi, x);
    if (c.budget_end) x_hi = std::min(x_hi, 2 * *c.budget_end);  // the budget and as much again
    // Up to the slowest a strategy stood at a tenth of the way in (the first evaluations are anyone's guess).
    for (const SearchCurve& s : c.curves)
        for (const auto& [x, v] : s.points)
            if (x >= x_hi / 10 && c.optimum > 0) y_hi = std::max(y_hi, v / c.optimum);
    y_hi = std::min(y_hi, 4.0);
    const std::vector<double> xt = nice_ticks(0, x_hi > 0 ? x_hi : 1, 6);
    const std::vector<double> yt = nice_ticks(1, y_hi, 5);
    const Scale x = Scale::linear(0, xt.back(), ml, w - mr);
    const Scale y = Scale::linear(yt.front(), yt.back(), h - mb, mt);

    Svg svg(w, h, c.title);
    for (double t : yt) {
        svg.line(ml, y(t), w - mr, y(t), "#eaeef2");
        svg.text(ml - 6, y(t) + 4, tick_label(t), "end");
    }
    for (double t : xt) {
        svg.line(x(t), mt, x(t), h - mb, "#eaeef2");
        svg.text(x(t), h - mb + 16, tick_label(t), "middle");
    }
    svg.line(ml, h - mb, w - mr, h - mb, "#57606a");
    svg.line(ml, mt, ml, h - mb, "#57606a");
    svg.text((ml + w - mr) / 2, h - 8, c.x_label, "middle");
    const double mid = (mt + h - mb) / 2;
    svg.text(14, mid, "best so far / optimum", "middle", fmt::format("transform=\"rotate(-90 14 {:.1f})\"", mid));
    svg.text(ml, 14, c.title);
    if (c.budget_end) {
        svg.line(x(*c.budget_end), mt, x(*c.budget_end), h - mb, "#24292f", 1, "2 3");
        svg.text(x(*c.budget_end) - 4, mt + 12, "budget (random search at 96 %)", "end");
    }
    double lx = ml;
    for (std::size_t i = 0; i < c.curves.size(); ++i) {
        const SearchCurve& s = c.curves[i];
        const std::string colour(k_palette[i % std::size(k_palette)]);
        std::vector<std::pair<double, double>> points;
        for (const auto& [px, v] : s.points) {
            if (px > xt.back() || c.optimum <= 0) continue;
            // A point per two pixels at most: a run of thousands of evaluations stays a small file.
            const std::pair<double, double> p{x(px), y(std::min(v / c.optimum, yt.back()))};
            if (points.size() > 1 && p.first - points[points.size() - 2].first < 2)
                points.back() = p;
            else
                points.push_back(p);
        }
        if (s.dashed) {
            for (std::size_t k = 1; k < points.size(); ++k)
                svg.line(points[k - 1].first, points[k - 1].second, points[k].first, points[k].second, colour, 1.5,
                         "6 4");
        } else if (points.size() > 1) {
            svg.polyline(points, colour);
        }
        svg.rect(lx, 22, 10, 10, colour);
        svg.text(lx + 14, 31, s.label);
        lx += 28 + 7.0 * double(s.label.size());
    }
    return svg.str();
}

std::string search_charts_document(const std::vector<SearchChart>& charts) {
    std::string body;
    double y = 0;
    for (const SearchChart& c : charts) {
        std::string one = search_chart_svg(c);
        // Nest each chart at its offset: an <svg> inside an <svg> takes x and y.
        one.replace(0, 4, fmt::format("<svg x=\"0\" y=\"{:.0f}\"", y));
        body += one;
        y += k_height;
    }
    return fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
        "viewBox=\"0 0 {:.0f} {:.0f}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{}"
        "</svg>\n",
        k_width, y, k_width, y, body);
}

}  // namespace ktune
