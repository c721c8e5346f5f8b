#pragma once
// The GPU side of `ktune check` and `ktune baseline save`: measures a baseline case's kernel, as it is in the
// current tree, at a given configuration, with the baseline's method, on this machine's GPU.
#include <map>
#include <memory>
#include <string>

#include "results/store.hpp"
#include "tuner/check/check_runner.hpp"
#include "tuner/session/space_measurer.hpp"

namespace ktune {

class GpuCaseMeasurer final : public CaseMeasurer {
public:
    // `store` (optional) answers best_config_now() from the current tuning results of this device.
    GpuCaseMeasurer(std::string root, CompileService& jit, GpuWorker& gpu, const Store* store, BaselineMethod method,
                    std::uint64_t seed = 1);
    ~GpuCaseMeasurer() override;

    std::vector<double> measure(const BaselineCase& c, const std::string& config_key, int min_samples) override;
    std::optional<std::string> best_config_now(const BaselineCase& c) override;
    std::optional<std::string> current_source_hash(const BaselineCase& c) override;
    std::string timer_for(const BaselineCase& c) override;

private:
    struct Space;
    Space& space_for(const BaselineCase& c);

    std::string m_root;
    CompileService& m_jit;
    GpuWorker& m_gpu;
    const Store* m_store;
    BaselineMethod m_method;
    std::uint64_t m_seed;
    std::map<std::string, std::unique_ptr<Space>> m_spaces;  // by "op/variant/kernel"
};

}  // namespace ktune
