#include "reports/detail/svg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "reports/detail/format.hpp"

namespace ktune::report_detail {
namespace {

// Pixel coordinates with one decimal: sharp enough, and stable text for tests.
std::string px(double v) { return fmt::format("{:.1f}", v); }

std::string title_element(std::string_view title) {
    return title.empty() ? std::string() : fmt::format("<title>{}</title>", html_escape(title));
}

}  // namespace

Scale Scale::log10(double d0, double d1, double p0, double p1) {
    return Scale(std::log10(d0), std::log10(d1), p0, p1, true);
}

double Scale::operator()(double v) const {
    const double d = m_log ? std::log10(v) : v;
    if (m_d1 == m_d0) return (m_p0 + m_p1) / 2;
    return m_p0 + (d - m_d0) / (m_d1 - m_d0) * (m_p1 - m_p0);
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
    if (!(hi > lo)) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
    const double raw = (hi - lo) / std::max(count, 1);
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = magnitude;
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
        step = m * magnitude;
        if (step >= raw) break;
    }
    std::vector<double> ticks;
    const double first = std::floor(lo / step + 1e-9) * step;
    for (double t = first; t < hi + step * (1 - 1e-9); t += step) {
        ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);  // no "-0"
        if (ticks.size() > 100) break;
    }
    if (ticks.size() < 2) ticks.push_back(first + step);
    return ticks;
}

std::string tick_label(double v) { return fmt::format("{:.6g}", v); }

Svg::Svg(double width, double height, std::string_view label) {
    m_out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
        "aria-label=\"{2}\" font-family=\"system-ui, sans-serif\" font-size=\"11\">\n",
        px(width), px(height), html_escape(label));
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view dash) {
    m_out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                         px(x1), px(y1), px(x2), px(y2), stroke, px(width),
                         dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", dash));
}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view title,
               std::string_view extra) {
    const std::string attrs =
        fmt::format("x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}{}", px(x), px(y), px(std::max(w, 0.0)),
                    px(std::max(h, 0.0)), fill, extra.empty() ? "" : " ", extra);
    if (title.empty()) {
        m_out += fmt::format("<rect {}/>\n", attrs);
    } else {
        m_out += fmt::format("<rect {}>{}</rect>\n", attrs, title_element(title));
    }
}

void Svg::circle(double cx, double cy, double r, std::string_view fill, std::string_view title) {
    const std::string attrs = fmt::format("cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"", px(cx), px(cy), px(r), fill);
    if (title.empty()) {
        m_out += fmt::format("<circle {}/>\n", attrs);
    } else {
        m_out += fmt::format("<circle {}>{}</circle>\n", attrs, title_element(title));
    }
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, double width) {
    std::string pts;
    for (const auto& [x, y] : points) pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", px(x), px(y));
    m_out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"/>\n", pts, stroke,
                         px(width));
}

void Svg::text(double x, double y, std::string_view s, std::string_view anchor, std::string_view extra) {
    m_out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}{}>{}</text>\n", px(x), px(y), anchor,
                         extra.empty() ? "" : " ", extra, html_escape(s));
}

}  // namespace ktune::report_detail
