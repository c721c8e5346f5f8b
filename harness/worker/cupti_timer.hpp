#pragma once
// CUPTI activity tracing of kernel durations: the cross-check of the event timer. Enabled only around its own
// samples, because tracing slows very large grids by several percent (docs/design.md, "Measuring").
#include <string>
#include <vector>

namespace ktune::worker {

class CuptiKernelTimer {
public:
    // Starts recording kernel activity. Returns false (and says why in error()) when CUPTI is unavailable.
    bool start();
    ~CuptiKernelTimer();  // stops recording if stop() was not reached (an error while sampling), dropping the records
    struct Record {
        std::string name;  // the kernel's lowered name
        unsigned long long start_ns = 0;
        double duration_us = 0;
    };
    // Stops, flushes and returns every kernel recorded since start(), in the order they started.
    std::vector<Record> stop();
    const std::string& error() const { return m_error; }

private:
    std::string m_error;
    bool m_recording = false;
};

}  // namespace ktune::worker
