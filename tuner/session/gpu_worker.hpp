#pragma once
// One GPU as the tuning session sees it: the worker process that owns its context, the utility kernels it needs, and
// the problem currently set up on it. A worker lost to a fault or a hang is restarted and the problem set up again,
// so the session only sees a result with status launch_error or timeout.
#include <optional>
#include <string>
#include <vector>

#include "harness/protocol/protocol.hpp"
#include "results/store.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/worker_client.hpp"

namespace ktune {

struct ProblemSetup {
    std::vector<wire::Buffer> buffers;
    std::vector<wire::Arg> args;
    wire::Launch reference;
};

struct DeviceCeilings {
    double copy_gbps = 0;
    double launch_floor_us = 0;
    double launch_floor_cupti_us = 0;
    std::size_t copy_bytes = 0;
};

// d with the ceilings just measured (its calibration), stamped now.
DeviceInfo with_ceilings(DeviceInfo d, const DeviceCeilings& c);

class GpuWorker {
public:
    GpuWorker(std::string worker_path, int ordinal, CompileService& jit);

    // Starts the worker, opens the device, compiles (cached) and loads the utility kernels. Throws Error(no_gpu).
    void start();
    const DeviceInfo& device() const { return m_device; }
    const wire::DeviceProps& props() const { return m_props; }
    int restarts() const { return m_restarts; }
    int ordinal() const { return m_ordinal; }

    DeviceCeilings measure_ceilings(std::size_t copy_bytes);
    // Allocates and fills the problem's buffers and runs its reference; remembered for restarts.
    void setup(const ProblemSetup& setup);
    // Validates then times one kernel. Never throws for the kernel's own failures: they come back as the status.
    wire::EvaluateResult evaluate(const wire::Launch& launch, const Tolerance& tol, const wire::TimingOptions& timing,
                                  double timeout_s);

private:
    void restart();
    std::string m_worker_path;
    int m_ordinal;
    CompileService& m_jit;
    WorkerClient m_client;
    wire::DeviceProps m_props;
    DeviceInfo m_device;
    nlohmann::json m_utility_request;
    std::optional<ProblemSetup> m_setup;
    int m_restarts = 0;
};

// The worker's own kernels (blocking kernel, flush, generator, poison, pad, compare), compiled through NVRTC like
// every kernel; roles[i] is what the worker calls name_expressions[i].
CompileRequest utility_compile_request(const std::string& arch, std::vector<std::string>& roles);

// The kernel-module version from /proc/driver/nvidia/version ("580.159.04"), or "" when not readable.
std::string nvidia_kernel_module_version();

}  // namespace ktune
