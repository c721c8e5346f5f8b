#pragma once
// The GPU worker's state: one device context, the loaded modules, the current problem's buffers, and the
// measurement loop. Each public method serves one protocol command (harness/protocol/protocol.hpp).
#include <cuda.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness/protocol/protocol.hpp"

namespace ktune::worker {

class Worker {
public:
    Worker();
    ~Worker();

    nlohmann::json hello();
    nlohmann::json open(int ordinal);
    nlohmann::json load_utility(const std::string& cubin, const std::map<std::string, std::string>& names);
    nlohmann::json ceilings(std::size_t copy_bytes);
    nlohmann::json setup(const std::vector<wire::Buffer>& buffers, const std::vector<wire::Arg>& args,
                         const wire::Launch& reference);
    wire::EvaluateResult evaluate(const wire::Launch& launch, const Tolerance& tol, const wire::TimingOptions& timing);

    // True once a kernel fault poisoned the CUDA context: nothing more can run in this process.
    bool poisoned() const { return m_poisoned; }

private:
    struct DeviceBuffer {
        wire::Buffer spec;
        CUdeviceptr ptr = 0;
        CUdeviceptr reference = 0;          // outputs/inouts: the reference kernel's result
        CUdeviceptr pristine = 0;           // inouts: the generated input, restored before each validation run
        std::vector<CUdeviceptr> replicas;  // small problems: more copies that timing samples rotate through
        std::size_t bytes = 0;
    };
    // Kernel arguments for one launch; `pointers` point into `values` and `maps`, which a move keeps in place.
    struct LaunchParams {
        std::vector<std::uint64_t> values;
        std::vector<CUtensorMap> maps;  // the launch's TMA descriptors, passed by value (128 bytes each)
        std::vector<void*> pointers;
    };

    // Enqueues the measured thing once (a kernel launch or a library call) with the given arguments.
    using Runner = std::function<void(LaunchParams&)>;
    // Which of the kernels CUPTI saw belong to the measured thing (by name).
    using KernelFilter = std::function<bool(const std::string&)>;

    CUfunction function(const std::string& cubin, const std::string& lowered);
    CUfunction utility(const std::string& what);
    void launch(CUfunction f, const wire::Launch& l, LaunchParams& params);
    // replica 0 is the buffers themselves; 1..n the rotation copies of a small problem. The problem's arguments, then
    // the tensor maps of the launch being evaluated (m_tensor_maps), each over the same copy of its buffer.
    LaunchParams build_params(bool reference_outputs, std::size_t replica = 0);
    const DeviceBuffer& buffer_named(const std::string& name) const;  // throws for a name the problem lacks
    // The device address of a buffer's copy: the buffer, its reference outputs, or rotation copy `replica`.
    static CUdeviceptr buffer_address(const DeviceBuffer& b, bool reference_outputs, std::size_t replica);
    // The timed launch's arguments for the buffers and each of their rotation copies, in rotation order: sample i
    // uses element i % size().
    std::vector<LaunchParams> rotation_params();
    void free_problem();
    void run_utility_grid(const std::string& what, std::vector<void*> params);
    // NaN in the rows of padded inputs past their sequences' lengths (wire::Buffer::pad_lengths), every copy: after
    // all buffers are generated, since the lengths are one of them.
    void pad_inputs();
    void poison_outputs();
    void restore_inouts();
    void validate(const Runner& run, const Tolerance& tol, wire::EvaluateResult& r);
    void time_events(const Runner& run, const wire::TimingOptions& t, wire::EvaluateResult& r);
    // A sample's kernel time is the sum of the durations of its kernels that `timed` accepts (a library call may
    // launch several); samples are told apart by the utility kernels between them.
    void time_cupti(const Runner& run, const KernelFilter& timed, const wire::TimingOptions& t,
                    wire::EvaluateResult& r);
    void flush_l2(bool clean);  // clean: no dirty line left in the L2 (wire::TimingOptions::clean_flush)
    float elapsed_ms(CUevent a, CUevent b);

    CUdevice m_device = 0;
    CUcontext m_context = nullptr;
    CUstream m_stream = nullptr;
    bool m_open = false;
    bool m_poisoned = false;
    wire::DeviceProps m_props;

    std::map<std::string, CUmodule> m_modules;          // by cubin path
    std::map<CUfunction, unsigned> m_dynamic_smem_set;  // the dynamic shared memory each function was checked for
    CUmodule m_utility_module = nullptr;
    std::map<std::string, CUfunction> m_utility;  // "empty", "spin", "fill.bf16", "poison.f32", "compare.f16", ...
    std::set<std::string> m_utility_names;        // their lowered names, as CUPTI reports them

    CUdeviceptr m_flush = 0;  // twice the L2 size, written before each cold sample
    std::size_t m_flush_bytes = 0;
    unsigned m_flush_counter = 0;
    volatile int* m_spin_flag = nullptr;  // host-mapped: the blocking kernel spins until the host sets it
    CUdeviceptr m_spin_flag_device = 0;
    CUdeviceptr m_compare_result = 0;  // 3 x u64 for ktune_compare

    std::vector<DeviceBuffer> m_buffers;
    std::vector<wire::Arg> m_args;
    const std::vector<wire::Arg>* m_tensor_maps = nullptr;  // during evaluate(): the launch's kernel.tensor_maps
    std::size_t m_replicas = 0;                             // rotation copies per buffer of the current problem
};

}  // namespace ktune::worker
