#include "tuner/session/gpu_worker.hpp"

#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "tuner/session/environment.hpp"

namespace ktune {
namespace {

// Element types the utility kernels are instantiated for, with their C++ spelling under NVRTC.
const std::vector<std::pair<std::string, std::string>> kUtilityTypes = {
    {"f32", "float"},     {"f16", "__half"},     {"bf16", "__nv_bfloat16"}, {"i32", "int"},
    {"i64", "long long"}, {"i8", "signed char"}, {"u8", "unsigned char"}};

constexpr const char* kUtilitySource = "kernels/common/harness_kernels.cuh";

}  // namespace

CompileRequest utility_compile_request(const std::string& arch, std::vector<std::string>& roles) {
    CompileRequest req;
    req.source_path = kUtilitySource;
    req.arch = arch;
    roles.clear();
    auto add = [&](const std::string& role, const std::string& expr) {
        roles.push_back(role);
        req.name_expressions.push_back(expr);
    };
    add("empty", "ktune_empty");
    add("spin", "ktune_spin_wait");
    add("flush", "ktune_flush_l2");
    add("flush_evict_last", "ktune_flush_l2_evict_last");
    add("discard", "ktune_discard_l2");
    for (const auto& [elem, cpp] : kUtilityTypes) {
        add("fill." + elem, fmt::format("ktune_fill_uniform<{}>", cpp));
        add("poison." + elem, fmt::format("ktune_poison<{}>", cpp));
        add("compare." + elem, fmt::format("ktune_compare<{}>", cpp));
        if (elem == "f32" || elem == "f16" || elem == "bf16")  // NaN rows: floating-point types only
            add("pad." + elem, fmt::format("ktune_pad_nan<{}>", cpp));
    }
    return req;
}

std::string nvidia_kernel_module_version() {
    std::ifstream f("/proc/driver/nvidia/version");
    std::string line;
    std::getline(f, line);
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"((\d+\.\d+(\.\d+)?))"))) return m[1];
    return {};
}

GpuWorker::GpuWorker(std::string worker_path, int ordinal, CompileService& jit)
    : m_worker_path(std::move(worker_path)), m_ordinal(ordinal), m_jit(jit), m_client(m_worker_path) {}

void GpuWorker::start() {
    const nlohmann::json hello = m_client.start();
    const auto& devices = hello.at("devices");
    if (devices.empty()) throw Error(ErrorCategory::no_gpu, "the NVIDIA driver is loaded but sees no GPU");
    if (m_ordinal < 0 || m_ordinal >= int(devices.size()))
        throw Error(
            ErrorCategory::bad_input,
            fmt::format("no GPU {}: this machine has {} (0 to {})", m_ordinal, devices.size(), devices.size() - 1),
            "--device");
    m_props = m_client.request({{"cmd", "open"}, {"device", m_ordinal}}, 60).at("device").get<wire::DeviceProps>();

    m_device = DeviceInfo{};
    m_device.name = m_props.name;
    m_device.cc_major = m_props.cc_major;
    m_device.cc_minor = m_props.cc_minor;
    m_device.sm_count = m_props.sm_count;
    m_device.l2_bytes = m_props.l2_bytes;
    m_device.memory_bytes = m_props.memory_bytes;
    m_device.memory_clock_khz = m_props.memory_clock_khz;
    m_device.memory_bus_bits = m_props.memory_bus_bits;
    m_device.sm_clock_khz = m_props.sm_clock_khz;
    const std::string module = nvidia_kernel_module_version();
    m_device.driver_version =
        fmt::format("{}.{}{}", m_props.driver_version / 1000, (m_props.driver_version % 1000) / 10,
                    module.empty() ? "" : " (" + module + ")");
    m_device.cuda_version = cuda_toolkit_version();
    m_device.nvrtc_version = CompileService::nvrtc_version();
    m_device.uuid = m_props.uuid;
    m_device.pci_bus_id = m_props.pci_bus_id;
    m_device.key = make_device_key(m_device);

    std::vector<std::string> roles;
    const CompileRequest req = utility_compile_request(m_device.arch(), roles);
    const CompileResult compiled = m_jit.compile(req);
    if (!compiled.ok)
        throw Error(ErrorCategory::compile, "the worker's utility kernels do not compile:\n" + compiled.log,
                    kUtilitySource);
    nlohmann::json names = nlohmann::json::object();
    for (std::size_t i = 0; i < roles.size(); ++i) names[roles[i]] = compiled.kernels[i].lowered_name;
    m_utility_request = {{"cmd", "load_utility"}, {"cubin", compiled.cubin_path}, {"names", names}};
    m_client.request(m_utility_request, 60);
}

void GpuWorker::restart() {
    ++m_restarts;
    m_client.start();
    m_client.request({{"cmd", "open"}, {"device", m_ordinal}}, 60);
    m_client.request(m_utility_request, 60);
    if (m_setup) setup(*m_setup);
}

DeviceInfo with_ceilings(DeviceInfo d, const DeviceCeilings& c) {
    d.copy_gbps = c.copy_gbps;
    d.launch_floor_us = c.launch_floor_us;
    d.launch_floor_cupti_us = c.launch_floor_cupti_us;
    d.measured_at = utc_now_iso();
    return d;
}

DeviceCeilings GpuWorker::measure_ceilings(std::size_t copy_bytes) {
    const auto r = m_client.request({{"cmd", "ceilings"}, {"copy_bytes", copy_bytes}}, 120);
    DeviceCeilings c;
    c.copy_gbps = r.at("copy_gbps").get<double>();
    c.launch_floor_us = r.at("launch_floor_us").get<double>();
    c.launch_floor_cupti_us = r.value("launch_floor_cupti_us", 0.0);
    c.copy_bytes = copy_bytes;
    return c;
}

void GpuWorker::setup(const ProblemSetup& setup) {
    m_setup = setup;
    nlohmann::json req = {
        {"cmd", "setup"}, {"buffers", setup.buffers}, {"args", setup.args}, {"reference", setup.reference}};
    try {
        m_client.request(req, 300);
    } catch (const WorkerLost& lost) {
        throw Error(ErrorCategory::device, "the reference kernel failed while setting up the problem: " + lost.message,
                    "ktune-worker");
    }
}

wire::EvaluateResult GpuWorker::evaluate(const wire::Launch& launch, const Tolerance& tol,
                                         const wire::TimingOptions& timing, double timeout_s) {
    if (!m_client.running()) restart();
    nlohmann::json req = {{"cmd", "evaluate"}, {"launch", launch}, {"tolerance", tol}, {"timing", timing}};
    try {
        nlohmann::json r = m_client.request(req, timeout_s);
        wire::EvaluateResult result = r.at("result").get<wire::EvaluateResult>();
        if (!m_client.running()) restart();  // the kernel poisoned the context: a fresh worker for the next one
        return result;
    } catch (const WorkerLost& lost) {
        wire::EvaluateResult result;
        result.status = lost.timed_out ? "timeout" : "launch_error";
        result.message = lost.message;
        restart();
        return result;
    }
}

}  // namespace ktune
