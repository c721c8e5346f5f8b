#include "tuner/cli/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace ktune::cli {

ProgressBar::ProgressBar(bool enabled) : m_enabled(enabled), m_tty(isatty(STDERR_FILENO) != 0) {}
ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(const ProgressEvent& e) {
    if (!e.notice.empty()) {
        finish();
        fmt::print(stderr, "{}\n", e.notice);
    }
    if (!m_enabled) return;
    const bool last = e.done >= e.total;
    if (!m_tty && !last && e.elapsed_s - m_last_print_s < 5.0) return;
    if (m_tty && !last && e.elapsed_s - m_last_print_s < 0.1) return;
    m_last_print_s = e.elapsed_s;
    const double frac = e.total > 0 ? double(e.done) / double(e.total) : 1.0;
    // Resumed items cost nothing, so the rate counts only the work done in this run.
    const double rate = e.elapsed_s > 0 ? double(e.done - e.skipped) / e.elapsed_s : 0.0;
    const std::int64_t left = e.total - e.done;
    const std::string eta = rate > 0 ? fmt::format("{:.0f}s", double(left) / rate) : "?";
    constexpr int width = 24;
    const int filled = static_cast<int>(frac * width);
    const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
    // With several GPUs, what each has measured (or that it was dropped), before the problem and configuration.
    std::string gpus;
    if (e.gpus.size() > 1)
        for (const GpuProgress& g : e.gpus)
            gpus += fmt::format("{}{}:{}", gpus.empty() ? " | GPU " : " ", g.ordinal,
                                g.dropped ? std::string("dropped") : std::to_string(g.measured));
    const std::string line = fmt::format(
        "{} [{}] {}/{} {:3.0f}% {:.1f}/s ETA {} | {} failed{}{} | {} {}", e.phase, bar, e.done, e.total, 100 * frac,
        rate, eta, e.failed, e.skipped ? fmt::format(", {} resumed", e.skipped) : "", gpus, e.problem, e.config);
    if (m_tty) {
        fmt::print(stderr, "\r\033[K{}", line.substr(0, 160));
        m_drawn = true;
    } else {
        fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
}

void ProgressBar::finish() {
    if (m_drawn) fmt::print(stderr, "\n");
    m_drawn = false;
}

}  // namespace ktune::cli
