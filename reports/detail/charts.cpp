#include "reports/detail/charts.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/stats.hpp"
#include "reports/detail/format.hpp"
#include "reports/detail/svg.hpp"

namespace ktune::report_detail {
namespace {

constexpr std::string_view k_grid = "#e1e4e8";
constexpr std::string_view k_axis = "#57606a";
constexpr std::string_view k_peer_palette[] = {"#d1242f", "#e36209", "#2da44e", "#8250df",
                                               "#bf3989", "#6e7781", "#9a6700", "#0598bc"};

bool finite_positive(double v) { return std::isfinite(v) && v > 0; }

// Roughly how wide an 11 px label is: enough to leave room for it without measuring fonts.
double text_width(std::string_view s) { return 7.0 * static_cast<double>(s.size()); }

// A legend as a row of swatches, left to right from (x, y).
void legend(Svg& svg, double x, double y, const std::vector<std::pair<std::string, std::string>>& entries) {
    for (const auto& [label, colour] : entries) {
        svg.rect(x, y - 9, 10, 10, colour);
        svg.text(x + 14, y, label);
        x += 24 + text_width(label);
    }
}

}  // namespace

std::string_view dtype_colour(Dtype d) {
    switch (d) {
        case Dtype::bf16:
            return "#1f6feb";
        case Dtype::fp16:
            return "#e36209";
        case Dtype::fp32:
            return "#2da44e";
    }
    return "#6e7781";
}

std::map<std::string, std::string> peer_colours(const ReportData& data) {
    std::map<std::string, std::string> out;
    const std::vector<std::string> labels = data.peer_labels();
    for (std::size_t i = 0; i < labels.size(); ++i)
        out[labels[i]] = std::string(k_peer_palette[i % std::size(k_peer_palette)]);
    return out;
}

std::string bandwidth_chart(const OpSection& s, const ReportDevice& device) {
    std::vector<const ProblemRow*> rows;
    for (const ProblemRow& r : s.rows)
        if (finite_positive(r.bytes_moved) && finite_positive(r.gbps)) rows.push_back(&r);
    if (rows.empty()) return {};

    constexpr double w = 640, h = 360, ml = 64, mr = 24, mt = 34, mb = 46;
    double lo = rows.front()->bytes_moved, hi = lo, top = device.copy_gbps;
    for (const ProblemRow* r : rows) {
        lo = std::min(lo, r->bytes_moved);
        hi = std::max(hi, r->bytes_moved);
        top = std::max(top, r->gbps);
    }
    double d0 = std::floor(std::log10(lo)), d1 = std::ceil(std::log10(hi));
    if (d1 <= d0) d1 = d0 + 1;
    const Scale x = Scale::log10(std::pow(10.0, d0), std::pow(10.0, d1), ml, w - mr);
    const std::vector<double> yt = nice_ticks(0, top * 1.08, 5);
    const Scale y = Scale::linear(0, yt.back(), h - mb, mt);

    Svg svg(w, h, fmt::format("Achieved bandwidth of {} {} against bytes moved", s.op, s.variant));
    for (const double t : yt) {
        svg.line(ml, y(t), w - mr, y(t), k_grid);
        svg.text(ml - 6, y(t) + 4, tick_label(t), "end");
    }
    for (double d = d0; d <= d1 + 1e-9; d += 1) {
        const double v = std::pow(10.0, d);
        svg.line(x(v), mt, x(v), h - mb, k_grid);
        svg.text(x(v), h - mb + 16, format_bytes(v), "middle");
        if (d + 1 <= d1)  // faint minor lines at 2x and 5x
            for (const double m : {2.0, 5.0}) svg.line(x(m * v), mt, x(m * v), h - mb, "#f3f4f6");
    }
    svg.line(ml, h - mb, w - mr, h - mb, k_axis);
    svg.line(ml, mt, ml, h - mb, k_axis);
    svg.text((ml + w - mr) / 2, h - 8, "bytes moved per call (log scale)", "middle");
    const double mid = (mt + h - mb) / 2;
    svg.text(14, mid, "GB/s", "middle", fmt::format("transform=\"rotate(-90 14 {:.1f})\"", mid));

    if (device.copy_gbps > 0) {
        svg.line(ml, y(device.copy_gbps), w - mr, y(device.copy_gbps), "#24292f", 1.5, "6 4");
        svg.text(w - mr - 4, y(device.copy_gbps) - 5,
                 fmt::format("copy ceiling {} GB/s", format_gbps(device.copy_gbps)), "end");
    }

    std::vector<std::pair<std::string, std::string>> entries;
    for (const Dtype dt : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
        std::vector<const ProblemRow*> series;
        for (const ProblemRow* r : rows)
            if (r->problem.dtype == dt) series.push_back(r);
        if (series.empty()) continue;
        std::stable_sort(series.begin(), series.end(),
                         [](const ProblemRow* a, const ProblemRow* b) { return a->bytes_moved < b->bytes_moved; });
        const std::string colour(dtype_colour(dt));
        entries.emplace_back(std::string(dtype_name(dt)), colour);
        std::vector<std::pair<double, double>> points;
        for (const ProblemRow* r : series) points.emplace_back(x(r->bytes_moved), y(r->gbps));
        if (points.size() > 1) svg.polyline(points, colour);
        for (const ProblemRow* r : series)
            svg.circle(x(r->bytes_moved), y(r->gbps), 3.5, colour,
                       fmt::format("{}: {} GB/s ({} % of copy), {} moved, p50 {} us, {}", r->problem.key(),
                                   format_gbps(r->gbps), format_percent(r->pct_of_copy), format_bytes(r->bytes_moved),
                                   format_us(r->stats.p50), r->config_key));
    }
    legend(svg, ml, 16, entries);
    return svg.str();
}

std::string speedup_chart(const OpSection& s, const std::map<std::string, std::string>& colours) {
    struct Group {
        const ProblemRow* row;
        std::vector<const PeerTiming*> bars;
    };
    std::vector<Group> groups;
    double top = 1;
    for (const ProblemRow& r : s.rows) {
        Group g{&r, {}};
        for (const PeerTiming& p : r.peers) {
            if (!finite_positive(p.speedup)) continue;
            g.bars.push_back(&p);
            top = std::max(top, p.speedup);
        }
        if (!g.bars.empty()) groups.push_back(std::move(g));
    }
    if (groups.empty()) return {};

    constexpr double mr = 56, mt = 34, mb = 40, bar = 12, gap = 3, group_gap = 12;
    double h = mt + mb, ml = 120;
    for (const Group& g : groups) {
        h += static_cast<double>(g.bars.size()) * (bar + gap) - gap + group_gap;
        ml = std::max(ml, text_width(g.row->problem.key()) + 16);
    }
    const double w = ml + 450 + mr;
    const std::vector<double> xt = nice_ticks(0, top * 1.05, 5);
    const Scale x = Scale::linear(0, xt.back(), ml, w - mr);

    Svg svg(w, h, fmt::format("Speedup of ktune over each peer for {} {}", s.op, s.variant));
    for (const double t : xt) {
        svg.line(x(t), mt, x(t), h - mb, k_grid);
        svg.text(x(t), h - mb + 16, tick_label(t) + "x", "middle");
    }
    svg.line(ml, h - mb, w - mr, h - mb, k_axis);
    svg.line(ml, mt, ml, h - mb, k_axis);
    svg.text((ml + w - mr) / 2, h - 8, "peer p50 / ktune p50 (above 1x: ktune is faster)", "middle");

    double top_y = mt + group_gap / 2;
    for (const Group& g : groups) {
        const double gh = static_cast<double>(g.bars.size()) * (bar + gap) - gap;
        svg.text(ml - 8, top_y + gh / 2 + 4, g.row->problem.key(), "end");
        double by = top_y;
        for (const PeerTiming* p : g.bars) {
            const auto it = colours.find(p->label);
            const std::string colour = it != colours.end() ? it->second : std::string(k_peer_palette[0]);
            svg.rect(x(0), by, x(p->speedup) - x(0), bar, colour,
                     fmt::format("{}: {} p50 {} us / ktune p50 {} us = {}", g.row->problem.key(), p->label,
                                 format_us(p->p50_us), format_us(g.row->stats.p50), format_speedup(p->speedup)));
            svg.text(x(p->speedup) + 4, by + bar - 2, format_speedup(p->speedup));
            by += bar + gap;
        }
        top_y += gh + group_gap;
    }
    svg.line(x(1), mt, x(1), h - mb, "#24292f", 1.5, "6 4");

    std::vector<std::pair<std::string, std::string>> entries;
    for (const std::string& label : s.peer_labels) {
        const auto it = colours.find(label);
        entries.emplace_back(label, it != colours.end() ? it->second : std::string(k_peer_palette[0]));
    }
    legend(svg, ml, 16, entries);
    return svg.str();
}

std::string latency_chart(const ProblemRow& row, const std::map<std::string, std::string>& colours) {
    struct Box {
        std::string label, colour;
        bool has_box = false;
        double p1 = 0, q1 = 0, p50 = 0, q3 = 0, p99 = 0, p95 = 0;  // without a box: p50, p95, p99 only
        std::int64_t n = 0;
    };
    auto make = [](std::string label, std::string colour, const std::vector<double>& samples, double p50, double p95,
                   double p99) {
        Box b{std::move(label), std::move(colour)};
        std::vector<double> sorted;
        for (const double v : samples)
            if (std::isfinite(v)) sorted.push_back(v);
        std::sort(sorted.begin(), sorted.end());
        b.n = static_cast<std::int64_t>(sorted.size());
        if (sorted.size() >= 5) {
            b.has_box = true;
            b.p1 = percentile_sorted(sorted, 0.01);
            b.q1 = percentile_sorted(sorted, 0.25);
            b.p50 = percentile_sorted(sorted, 0.5);
            b.q3 = percentile_sorted(sorted, 0.75);
            b.p95 = percentile_sorted(sorted, 0.95);
            b.p99 = percentile_sorted(sorted, 0.99);
        } else {
            b.p50 = p50;
            b.p95 = std::isfinite(p95) ? p95 : p50;
            b.p99 = std::isfinite(p99) ? p99 : b.p95;
            b.p1 = b.p50;
        }
        return b;
    };
    std::vector<Box> boxes;
    if (finite_positive(row.stats.p50))
        boxes.push_back(
            make("ktune", std::string(k_ktune_colour), row.samples_us, row.stats.p50, row.stats.p95, row.stats.p99));
    for (const PeerTiming& p : row.peers) {
        if (!finite_positive(p.p50_us)) continue;
        const auto it = colours.find(p.label);
        boxes.push_back(make(p.label, it != colours.end() ? it->second : std::string(k_peer_palette[0]), p.samples_us,
                             p.p50_us, p.p95_us, p.p99_us));
    }
    if (boxes.empty()) return {};

    double lo = boxes.front().p1, hi = boxes.front().p99;
    for (const Box& b : boxes) {
        lo = std::min(lo, b.p1);
        hi = std::max(hi, b.p99);
    }
    const double pad = hi > lo ? (hi - lo) * 0.08 : std::max(lo * 0.05, 1e-3);
    const std::vector<double> xt = nice_ticks(std::max(0.0, lo - pad), hi + pad, 4);

    constexpr double mr = 18, mt = 26, mb = 34, row_h = 24, box_h = 12;
    double ml = 80;
    for (const Box& b : boxes) ml = std::max(ml, text_width(b.label) + 16);
    const double w = ml + 320 + mr;
    const double h = mt + mb + row_h * static_cast<double>(boxes.size());
    const Scale x = Scale::linear(xt.front(), xt.back(), ml, w - mr);

    Svg svg(w, h, fmt::format("Latency distributions of {}", row.problem.key()));
    svg.text(4, 15, row.problem.key(), "start", "font-weight=\"600\"");
    for (const double t : xt) {
        svg.line(x(t), mt, x(t), h - mb, k_grid);
        svg.text(x(t), h - mb + 14, tick_label(t), "middle");
    }
    svg.line(ml, h - mb, w - mr, h - mb, k_axis);
    svg.text(w - mr, h - 6, "us", "end");

    double cy = mt + row_h / 2;
    for (const Box& b : boxes) {
        svg.text(ml - 8, cy + 4, b.label, "end");
        if (b.has_box) {
            const std::string title =
                fmt::format("{}: p1 {} / p25 {} / p50 {} / p75 {} / p99 {} us, {} samples", b.label, format_us(b.p1),
                            format_us(b.q1), format_us(b.p50), format_us(b.q3), format_us(b.p99), b.n);
            svg.line(x(b.p1), cy, x(b.q1), cy, b.colour);
            svg.line(x(b.q3), cy, x(b.p99), cy, b.colour);
            svg.line(x(b.p1), cy - 4, x(b.p1), cy + 4, b.colour);
            svg.line(x(b.p99), cy - 4, x(b.p99), cy + 4, b.colour);
            svg.rect(x(b.q1), cy - box_h / 2, std::max(x(b.q3) - x(b.q1), 1.0), box_h, b.colour, title,
                     fmt::format("fill-opacity=\"0.3\" stroke=\"{}\"", b.colour));
            svg.line(x(b.p50), cy - box_h / 2, x(b.p50), cy + box_h / 2, b.colour, 2.5);
        } else {
            // Only percentiles are known: p50 as a bar, p95 as a tick, a whisker to p99.
            svg.line(x(b.p50), cy, x(b.p99), cy, b.colour);
            svg.line(x(b.p95), cy - 4, x(b.p95), cy + 4, b.colour);
            svg.line(x(b.p99), cy - 4, x(b.p99), cy + 4, b.colour);
            svg.rect(x(b.p50) - 1.5, cy - box_h / 2, 3, box_h, b.colour,
                     fmt::format("{}: p50 {} / p95 {} / p99 {} us (no samples)", b.label, format_us(b.p50),
                                 format_us(b.p95), format_us(b.p99)));
        }
        cy += row_h;
    }
    return svg.str();
}

}  // namespace ktune::report_detail
