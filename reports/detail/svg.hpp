#pragma once
// Internal to reports/: just enough SVG to draw the HTML report's charts without JavaScript or external files.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktune::report_detail {

// Maps a data interval onto a pixel interval; the log scale maps log10 of the value (values must be > 0).
class Scale {
public:
    static Scale linear(double d0, double d1, double p0, double p1) { return Scale(d0, d1, p0, p1, false); }
    static Scale log10(double d0, double d1, double p0, double p1);
    double operator()(double v) const;

private:
    Scale(double d0, double d1, double p0, double p1, bool log) : m_d0(d0), m_d1(d1), m_p0(p0), m_p1(p1), m_log(log) {}
    double m_d0, m_d1, m_p0, m_p1;
    bool m_log;
};

// About `count` round tick values (1, 2 or 5 times a power of ten apart) whose first is <= lo and last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int count);
// A tick label: as few digits as the value needs ("0.5", "20", "1500").
std::string tick_label(double v);

// One <svg> element, built an element per line. Every text and title is escaped.
class Svg {
public:
    Svg(double width, double height, std::string_view label);

    void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
              std::string_view dash = {});
    void rect(double x, double y, double w, double h, std::string_view fill, std::string_view title = {},
              std::string_view extra = {});
    void circle(double cx, double cy, double r, std::string_view fill, std::string_view title = {});
    void polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, double width = 1.5);
    void text(double x, double y, std::string_view s, std::string_view anchor = "start", std::string_view extra = {});

    std::string str() const { return m_out + "</svg>\n"; }

private:
    std::string m_out;
};

}  // namespace ktune::report_detail
