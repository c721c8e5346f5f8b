#pragma once
// Best-so-far curves of search strategies (ktune replay): one inline <svg> per chart, the best time found so far
// relative to the space's optimum against evaluations or seconds, a line per strategy, random search's expectation
// dashed, and the methodology's budget marked. Plain inputs, so the replay module hands over what it computed.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ktune {

struct SearchCurve {
    std::string label;
    std::vector<std::pair<double, double>> points;  // (evaluations or seconds, best value so far)
    bool dashed = false;
};

struct SearchChart {
    std::string title, x_label;
    double optimum = 0;                // values are drawn as value / optimum
    std::optional<double> budget_end;  // the methodology's cutoff on the x axis
    std::vector<SearchCurve> curves;
};

std::string search_chart_svg(const SearchChart& chart);
// Charts one above the other in one standalone SVG document.
std::string search_charts_document(const std::vector<SearchChart>& charts);

}  // namespace ktune
