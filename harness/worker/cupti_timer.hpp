#pragma once
// CUPTI activity tracing of kernel durations: the cross-check of the event timer. Enabled only around its own
// samples, because tracing slows very large grids by several percent (design.md, "Measuring").
#include <string>
#include <vector>

namespace ktune::worker {

class CuptiKernelTimer {
public:
    // Starts recording kernel activity. Returns false (and says why in error()) when CUPTI is unavailable.
    bool start();
    // Stops, flushes and returns the durations in microseconds of the kernels named `lowered_name`.
    std::vector<double> stop(const std::string& lowered_name);
    const std::string& error() const { return m_error; }

private:
    std::string m_error;
};

}  // namespace ktune::worker
