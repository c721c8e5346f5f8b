#pragma once
// A progress line on stderr for long runs: count, percentage, rate, ETA, failures and what is being measured.
// On a terminal it redraws one line; otherwise (CI logs, pipes) it prints a line every few seconds.
#include <string>

#include "tuner/session/tuning_session.hpp"

namespace ktune::cli {

class ProgressBar {
public:
    explicit ProgressBar(bool enabled);
    ~ProgressBar();
    void update(const ProgressEvent& e);
    void finish();

private:
    bool m_enabled;
    bool m_tty;
    bool m_drawn = false;
    double m_last_print_s = -1e9;
};

}  // namespace ktune::cli
