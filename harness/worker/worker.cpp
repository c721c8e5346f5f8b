#include "harness/worker/worker.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/stats.hpp"
#include "harness/worker/cupti_timer.hpp"
#include "harness/worker/driver.hpp"
#include "harness/worker/library_baseline.hpp"

namespace ktune::worker {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::size_t elem_size(const std::string& e) {
    if (e == "f32" || e == "i32") return 4;
    if (e == "f16" || e == "bf16") return 2;
    if (e == "i64") return 8;
    if (e == "i8" || e == "u8") return 1;
    throw std::invalid_argument("unknown element type '" + e + "'");
}

CUtensorMapDataType tensor_map_type(const std::string& e) {
    if (e == "f32") return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    if (e == "f16") return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    if (e == "bf16") return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    if (e == "i32") return CU_TENSOR_MAP_DATA_TYPE_INT32;
    if (e == "i64") return CU_TENSOR_MAP_DATA_TYPE_INT64;
    if (e == "i8" || e == "u8") return CU_TENSOR_MAP_DATA_TYPE_UINT8;  // TMA copies bytes: signedness is the kernel's
    throw std::invalid_argument("unknown element type '" + e + "'");
}

// A TMA descriptor over a dense row-major tensor at `address`. The host checked the extents against the buffer and
// the box against TMA's limits (SearchSpace::tensor_map_values); the driver checks them again.
CUtensorMap encode_tensor_map(const wire::Arg& a, const wire::Buffer& buffer, CUdeviceptr address) {
    const std::size_t rank = a.dims.size();
    if (rank < 1 || rank > 5 || a.box.size() != rank)
        throw std::invalid_argument("tensor map over " + a.buffer + ": needs 1 to 5 dimensions and a box of as many");
    // The driver takes the innermost dimension first and the strides of the outer ones in bytes.
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5], element_strides[5];
    std::uint64_t stride = elem_size(buffer.elem);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::size_t d = rank - 1 - i;
        dims[i] = static_cast<cuuint64_t>(a.dims[d]);
        box[i] = static_cast<cuuint32_t>(a.box[d]);
        element_strides[i] = 1;
        stride *= static_cast<std::uint64_t>(a.dims[d]);
        if (i + 1 < rank) strides[i] = stride;
    }
    const CUtensorMapSwizzle swizzle = a.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                       : a.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                       : a.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                         : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUtensorMap map;
    // Elements outside the extents read as zeros (the tails of M, N and K).
    KTUNE_CU(cuTensorMapEncodeTiled(&map, tensor_map_type(buffer.elem), static_cast<cuuint32_t>(rank),
                                    reinterpret_cast<void*>(address), dims, strides, box, element_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return map;
}

// Grid for the grid-stride utility kernels: enough blocks to fill any current GPU, few enough to stay cheap.
constexpr unsigned kUtilityBlocks = 1024, kUtilityThreads = 256;
constexpr unsigned long long kSpinTimeoutNs = 2'000'000'000ull;  // the blocking kernel gives up after 2 s
constexpr int kMaxSamplesPerBatch = 8;
// A problem smaller than this gets rotation copies of its buffers, so that its timing samples average over several
// physical placements: a microsecond kernel's time shifts by several percent from one allocation to another (seen on
// an H100: the same configuration's p50 moved 5 to 7 % between two sessions at 0.25 MB, under 1 % at 64 MB and up).
constexpr std::size_t kRotateBelowBytes = 64u << 20;
constexpr std::size_t kMaxReplicas = 7;
// Every problem buffer starts on its own 2 MiB boundary (the GPU's large page). Smaller allocations are packed into
// shared pages at offsets that depend on what the process allocated before, so the pages and TLB entries a
// microsecond kernel touches, and its time, differed from one process to the next (two tunings in one H100 session
// were 2-4 % apart at 5 us, the same sign for every small problem).
constexpr std::size_t kBufferAlignment = 2u << 20;

// Samples queued behind one blocking kernel: one by default, as bench/peers/measure_peers.py times. With eight queued
// back to back, the event time of a 5 us kernel was 0.3-0.4 us longer (its CUPTI duration the same) and moved by
// 1-2 % from one process to the next (H100, docs/measuring.md). KTUNE_WORKER_SAMPLES_PER_BATCH (1..8) overrides it, for
// experiments on the method.
int samples_per_batch() {
    static const int n = [] {
        const char* env = std::getenv("KTUNE_WORKER_SAMPLES_PER_BATCH");
        const int v = env != nullptr ? std::atoi(env) : 0;
        return v >= 1 && v <= kMaxSamplesPerBatch ? v : 1;
    }();
    return n;
}

CUdeviceptr alloc_page_aligned(std::size_t bytes) {
    CUdeviceptr p = 0;
    KTUNE_CU(cuMemAlloc(&p, (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment));
    return p;
}

}  // namespace

Worker::Worker() { KTUNE_CU(cuInit(0)); }

Worker::~Worker() {
    if (!m_open) return;
    // Best effort: the process is ending; errors here change nothing.
    free_problem();
    for (auto& [path, m] : m_modules) cuModuleUnload(m);
    if (m_utility_module) cuModuleUnload(m_utility_module);
    if (m_flush) cuMemFree(m_flush);
    if (m_compare_result) cuMemFree(m_compare_result);
    if (m_spin_flag) cuMemFreeHost(const_cast<int*>(m_spin_flag));
    if (m_stream) cuStreamDestroy(m_stream);
    cuDevicePrimaryCtxRelease(m_device);
}

static wire::DeviceProps read_props(int ordinal) {
    CUdevice d;
    KTUNE_CU(cuDeviceGet(&d, ordinal));
    wire::DeviceProps p;
    p.ordinal = ordinal;
    char name[256] = {};
    KTUNE_CU(cuDeviceGetName(name, sizeof name, d));
    p.name = name;
    auto attr = [&](CUdevice_attribute a) {
        int v = 0;
        KTUNE_CU(cuDeviceGetAttribute(&v, a, d));
        return v;
    };
    p.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    p.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    p.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    p.sm_clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    p.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    size_t mem = 0;
    KTUNE_CU(cuDeviceTotalMem(&mem, d));
    p.memory_bytes = static_cast<std::int64_t>(mem);
    CUuuid uuid;
    if (cuDeviceGetUuid(&uuid, d) == CUDA_SUCCESS) {
        static const char* hex = "0123456789abcdef";
        for (int i = 0; i < 16; ++i) {
            const auto b = static_cast<unsigned char>(uuid.bytes[i]);
            p.uuid += hex[b >> 4];
            p.uuid += hex[b & 15];
            if (i == 3 || i == 5 || i == 7 || i == 9) p.uuid += '-';
        }
    }
    char bus[64] = {};
    if (cuDeviceGetPCIBusId(bus, sizeof bus, d) == CUDA_SUCCESS) p.pci_bus_id = bus;
    KTUNE_CU(cuDriverGetVersion(&p.driver_version));
    return p;
}

json Worker::hello() {
    int count = 0;
    KTUNE_CU(cuDeviceGetCount(&count));
    json devices = json::array();
    for (int i = 0; i < count; ++i) devices.push_back(read_props(i));
    int driver = 0;
    KTUNE_CU(cuDriverGetVersion(&driver));
    return {{"devices", devices}, {"driver_version", driver}};
}

json Worker::open(int ordinal) {
    if (m_open) throw std::runtime_error("a device is already open in this worker");
    m_props = read_props(ordinal);
    KTUNE_CU(cuDeviceGet(&m_device, ordinal));
    KTUNE_CU(cuDevicePrimaryCtxRetain(&m_context, m_device));
    KTUNE_CU(cuCtxSetCurrent(m_context));
    KTUNE_CU(cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING));
    m_flush_bytes = std::max<std::size_t>(2 * static_cast<std::size_t>(m_props.l2_bytes), 16u << 20);
    KTUNE_CU(cuMemAlloc(&m_flush, m_flush_bytes));
    void* flag = nullptr;
    KTUNE_CU(cuMemHostAlloc(&flag, sizeof(int), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    m_spin_flag = static_cast<volatile int*>(flag);
    *m_spin_flag = 1;
    KTUNE_CU(cuMemHostGetDevicePointer(&m_spin_flag_device, flag, 0));
    KTUNE_CU(cuMemAlloc(&m_compare_result, 3 * sizeof(std::uint64_t)));
    m_open = true;
    return {{"device", m_props}};
}

json Worker::load_utility(const std::string& cubin, const std::map<std::string, std::string>& names) {
    KTUNE_CU(cuModuleLoad(&m_utility_module, cubin.c_str()));
    for (const auto& [what, lowered] : names) {
        CUfunction f;
        KTUNE_CU(cuModuleGetFunction(&f, m_utility_module, lowered.c_str()));
        m_utility[what] = f;
        m_utility_names.insert(lowered);
    }
    return json::object();
}

CUfunction Worker::utility(const std::string& what) {
    auto it = m_utility.find(what);
    if (it == m_utility.end()) throw std::runtime_error("utility kernel '" + what + "' was not loaded");
    return it->second;
}

CUfunction Worker::function(const std::string& cubin, const std::string& lowered) {
    auto it = m_modules.find(cubin);
    if (it == m_modules.end()) {
        CUmodule m;
        KTUNE_CU(cuModuleLoad(&m, cubin.c_str()));
        it = m_modules.emplace(cubin, m).first;
    }
    CUfunction f;
    KTUNE_CU(cuModuleGetFunction(&f, it->second, lowered.c_str()));
    // Clusters of more than 8 blocks (up to 16 on an H100) must be allowed per kernel; the driver refuses the
    // attribute where the architecture has no clusters, which changes nothing for those kernels.
    (void)cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    return f;
}

void Worker::launch(CUfunction f, const wire::Launch& l, LaunchParams& params) {
    // Above 48 KiB of shared memory per block, static plus dynamic, a kernel must opt in to its dynamic part.
    if (l.shared_bytes > 0 && m_dynamic_smem_set[f] < l.shared_bytes) {
        int static_bytes = 0;
        KTUNE_CU(cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
        if (l.shared_bytes + unsigned(static_bytes) > 48 * 1024)
            KTUNE_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(l.shared_bytes)));
        m_dynamic_smem_set[f] = l.shared_bytes;
    }
    KTUNE_CU(cuLaunchKernel(f, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.shared_bytes,
                            m_stream, params.pointers.data(), nullptr));
}

void Worker::run_utility_grid(const std::string& what, std::vector<void*> params) {
    KTUNE_CU(cuLaunchKernel(utility(what), kUtilityBlocks, 1, 1, kUtilityThreads, 1, 1, 0, m_stream, params.data(),
                            nullptr));
}

float Worker::elapsed_ms(CUevent a, CUevent b) {
    float ms = 0;
    KTUNE_CU(cuEventElapsedTime(&ms, a, b));
    return ms;
}

json Worker::ceilings(std::size_t copy_bytes) {
    // Copy ceiling: device-to-device copy, counting bytes read plus written, median of 20 timed copies.
    CUdeviceptr a = 0, b = 0;
    KTUNE_CU(cuMemAlloc(&a, copy_bytes));
    KTUNE_CU(cuMemAlloc(&b, copy_bytes));
    CUevent e0, e1;
    KTUNE_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    KTUNE_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    KTUNE_CU(cuMemsetD32Async(a, 0x3f800000u, copy_bytes / 4, m_stream));
    std::vector<double> copy_us;
    for (int i = 0; i < 23; ++i) {
        KTUNE_CU(cuEventRecord(e0, m_stream));
        KTUNE_CU(cuMemcpyDtoDAsync(b, a, copy_bytes, m_stream));
        KTUNE_CU(cuEventRecord(e1, m_stream));
        KTUNE_CU(cuEventSynchronize(e1));
        if (i >= 3) copy_us.push_back(1000.0 * elapsed_ms(e0, e1));
    }
    const SampleStats copy = summarize(copy_us);
    cuMemFree(a);
    cuMemFree(b);

    // Launch floor: an empty kernel timed like every kernel (launch latency hidden behind the blocking kernel).
    wire::Launch empty_launch;
    empty_launch.grid = {1, 1, 1};
    empty_launch.block = {32, 1, 1};
    wire::TimingOptions t;
    t.cold_l2 = false;
    t.min_samples = 100;
    t.max_samples = 100;
    t.cupti_samples = 20;
    wire::EvaluateResult r;
    free_problem();  // the empty kernel takes no arguments and the copy needs the memory
    CUfunction empty = utility("empty");
    const Runner run_empty = [&](LaunchParams& params) { launch(empty, empty_launch, params); };
    time_events(run_empty, t, r);
    const SampleStats floor = summarize(r.samples_us);
    wire::EvaluateResult cupti;
    const char* empty_name = nullptr;
    KTUNE_CU(cuFuncGetName(&empty_name, empty));
    const std::string empty_lowered = empty_name ? empty_name : "";
    time_cupti(
        run_empty, [&](const std::string& name) { return name == empty_lowered; }, t, cupti);
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    return {{"copy_gbps", 2.0 * double(copy_bytes) / (copy.p50 * 1e-6) / 1e9},
            {"copy_bytes", copy_bytes},
            {"copy_p50_us", copy.p50},
            {"launch_floor_us", floor.p50},
            {"launch_floor_cupti_us", summarize(cupti.cupti_samples_us).p50}};
}

void Worker::free_problem() {
    for (auto& b : m_buffers) {
        if (b.ptr) cuMemFree(b.ptr);
        if (b.reference) cuMemFree(b.reference);
        if (b.pristine) cuMemFree(b.pristine);
        for (CUdeviceptr r : b.replicas) cuMemFree(r);
    }
    m_buffers.clear();
    m_args.clear();
    m_replicas = 0;
}

const Worker::DeviceBuffer& Worker::buffer_named(const std::string& name) const {
    auto it =
        std::find_if(m_buffers.begin(), m_buffers.end(), [&](const DeviceBuffer& b) { return b.spec.name == name; });
    if (it == m_buffers.end()) throw std::invalid_argument("argument names unknown buffer '" + name + "'");
    return *it;
}

CUdeviceptr Worker::buffer_address(const DeviceBuffer& b, bool reference_outputs, std::size_t replica) {
    if (replica > 0) return b.replicas.at(replica - 1);
    return reference_outputs && b.reference ? b.reference : b.ptr;
}

Worker::LaunchParams Worker::build_params(bool reference_outputs, std::size_t replica) {
    const std::size_t maps = m_tensor_maps ? m_tensor_maps->size() : 0;
    LaunchParams p;
    p.values.assign(m_args.size(), 0);
    p.maps.reserve(maps);  // no reallocation: the pointers below point into it
    p.pointers.resize(m_args.size() + maps);
    for (std::size_t i = 0; i < m_args.size(); ++i) {
        const wire::Arg& a = m_args[i];
        void* slot = &p.values[i];
        if (a.kind == "buffer") {
            const CUdeviceptr ptr = buffer_address(buffer_named(a.buffer), reference_outputs, replica);
            std::memcpy(slot, &ptr, sizeof ptr);
        } else if (a.kind == "i32") {
            const auto v = static_cast<std::int32_t>(a.integer);
            std::memcpy(slot, &v, sizeof v);
        } else if (a.kind == "i64") {
            const auto v = static_cast<std::int64_t>(a.integer);
            std::memcpy(slot, &v, sizeof v);
        } else if (a.kind == "f32") {
            const auto v = static_cast<float>(a.real);
            std::memcpy(slot, &v, sizeof v);
        } else {
            throw std::invalid_argument("unknown argument kind '" + a.kind + "'");
        }
        p.pointers[i] = slot;
    }
    for (std::size_t i = 0; i < maps; ++i) {
        const wire::Arg& a = (*m_tensor_maps)[i];
        const DeviceBuffer& b = buffer_named(a.buffer);
        p.maps.push_back(encode_tensor_map(a, b.spec, buffer_address(b, reference_outputs, replica)));
        p.pointers[m_args.size() + i] = &p.maps.back();
    }
    return p;
}

json Worker::setup(const std::vector<wire::Buffer>& buffers, const std::vector<wire::Arg>& args,
                   const wire::Launch& reference) {
    free_problem();
    std::size_t problem_bytes = 0;
    for (const wire::Buffer& spec : buffers)
        problem_bytes += static_cast<std::size_t>(spec.elements) * elem_size(spec.elem);
    // KTUNE_WORKER_MAX_REPLICAS overrides the number of rotation copies (0: none), for experiments on the method.
    std::size_t max_replicas = kMaxReplicas;
    if (const char* env = std::getenv("KTUNE_WORKER_MAX_REPLICAS"); env != nullptr && *env != '\0')
        max_replicas = std::strtoull(env, nullptr, 10);
    m_replicas = problem_bytes < kRotateBelowBytes
                     ? std::min(max_replicas, kRotateBelowBytes / std::max<std::size_t>(problem_bytes, 1) - 1)
                     : 0;
    for (const wire::Buffer& spec : buffers) {
        DeviceBuffer b;
        b.spec = spec;
        b.bytes = std::max<std::size_t>(1, static_cast<std::size_t>(spec.elements) * elem_size(spec.elem));
        b.ptr = alloc_page_aligned(b.bytes);
        if (spec.role == "output" || spec.role == "inout") b.reference = alloc_page_aligned(b.bytes);
        if (spec.role == "inout") b.pristine = alloc_page_aligned(b.bytes);
        m_buffers.push_back(b);
        // Inputs (and inouts) from the seeded generator, never zeros; outputs poisoned.
        long long n = spec.elements;
        unsigned long long seed = spec.seed;
        float lo = static_cast<float>(spec.lo), hi = static_cast<float>(spec.hi);
        CUdeviceptr target = spec.role == "inout" ? b.pristine : b.ptr;
        if (spec.role == "output") {
            run_utility_grid("poison." + spec.elem, {&target, &n});
            run_utility_grid("poison." + spec.elem, {&m_buffers.back().reference, &n});
        } else if (spec.role == "scratch") {
            KTUNE_CU(cuMemsetD8Async(target, 0, b.bytes, m_stream));
        } else {
            run_utility_grid("fill." + spec.elem, {&target, &n, &seed, &lo, &hi});
        }
        // Rotation copies hold the same inputs (the same generator stream) at other addresses.
        for (std::size_t i = 0; i < m_replicas; ++i) {
            CUdeviceptr r = alloc_page_aligned(b.bytes);
            m_buffers.back().replicas.push_back(r);
            if (spec.role == "scratch")
                KTUNE_CU(cuMemsetD8Async(r, 0, b.bytes, m_stream));
            else if (spec.role == "output")
                run_utility_grid("poison." + spec.elem, {&r, &n});
            else
                run_utility_grid("fill." + spec.elem, {&r, &n, &seed, &lo, &hi});
        }
    }
    pad_inputs();
    m_args = args;
    restore_inouts();
    // The reference writes into the `reference` copies of the outputs (and of the inouts, restored first).
    for (auto& b : m_buffers)
        if (b.spec.role == "inout") KTUNE_CU(cuMemcpyDtoDAsync(b.reference, b.pristine, b.bytes, m_stream));
    CUfunction ref = function(reference.cubin, reference.lowered);
    LaunchParams params = build_params(true);
    CUevent e0, e1;
    KTUNE_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    KTUNE_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    KTUNE_CU(cuEventRecord(e0, m_stream));
    launch(ref, reference, params);
    KTUNE_CU(cuEventRecord(e1, m_stream));
    KTUNE_CU(cuStreamSynchronize(m_stream));
    const float ms = elapsed_ms(e0, e1);
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    return {{"reference_ms", ms}};
}

void Worker::pad_inputs() {
    for (DeviceBuffer& b : m_buffers) {
        const wire::Buffer& spec = b.spec;
        if (spec.pad_lengths < 0) continue;
        const std::string what = "buffer " + spec.name + "'s pad: ";
        if (static_cast<std::size_t>(spec.pad_lengths) >= m_buffers.size())
            throw std::invalid_argument(what + "lengths buffer " + std::to_string(spec.pad_lengths) + " of " +
                                        std::to_string(m_buffers.size()));
        DeviceBuffer& lengths = m_buffers[static_cast<std::size_t>(spec.pad_lengths)];
        if (lengths.spec.elem != "i32" || lengths.spec.role != "input")
            throw std::invalid_argument(what + "the lengths in " + lengths.spec.name + " are not an i32 input");
        if (spec.role != "input" && spec.role != "inout")
            throw std::invalid_argument(what + "only inputs and inouts are padded");
        if (spec.elem != "f32" && spec.elem != "f16" && spec.elem != "bf16")
            throw std::invalid_argument(what + "a pad sets NaN, which " + spec.elem + " has not");
        long long sequences = lengths.spec.elements, heads = spec.pad_heads, tokens = spec.pad_tokens,
                  token_elements = spec.pad_token_elements;
        if (heads < 0 || tokens < 0 || token_elements < 0 ||
            static_cast<double>(sequences) * static_cast<double>(heads) * static_cast<double>(tokens) *
                    static_cast<double>(token_elements) >
                static_cast<double>(spec.elements))
            throw std::invalid_argument(what + "its layout does not fit in the buffer");
        // Each copy with the lengths of the same copy (rotation copies hold the same generated values).
        for (std::size_t i = 0; i <= m_replicas; ++i) {
            CUdeviceptr target = i > 0 ? b.replicas.at(i - 1) : spec.role == "inout" ? b.pristine : b.ptr;
            CUdeviceptr lens = i > 0 ? lengths.replicas.at(i - 1) : lengths.ptr;
            run_utility_grid("pad." + spec.elem, {&target, &lens, &sequences, &heads, &tokens, &token_elements});
        }
    }
}

void Worker::poison_outputs() {
    for (auto& b : m_buffers) {
        if (b.spec.role != "output") continue;
        long long n = b.spec.elements;
        run_utility_grid("poison." + b.spec.elem, {&b.ptr, &n});
    }
}

void Worker::restore_inouts() {
    for (auto& b : m_buffers) {
        if (b.spec.role == "inout") KTUNE_CU(cuMemcpyDtoDAsync(b.ptr, b.pristine, b.bytes, m_stream));
        if (b.spec.role == "scratch") KTUNE_CU(cuMemsetD8Async(b.ptr, 0, b.bytes, m_stream));
    }
}

void Worker::validate(const Runner& run, const Tolerance& tol, wire::EvaluateResult& r) {
    poison_outputs();
    restore_inouts();
    LaunchParams params = build_params(false);
    run(params);
    KTUNE_CU(cuStreamSynchronize(m_stream));
    std::vector<std::string> failures;
    for (auto& b : m_buffers) {
        if (b.spec.role != "output" && b.spec.role != "inout") continue;
        const std::uint64_t init[3] = {0, ~0ull, 0};
        KTUNE_CU(cuMemcpyHtoDAsync(m_compare_result, init, sizeof init, m_stream));
        long long n = b.spec.elements;
        float rtol = static_cast<float>(tol.rtol), atol = static_cast<float>(tol.atol);
        run_utility_grid("compare." + b.spec.elem, {&b.ptr, &b.reference, &n, &rtol, &atol, &m_compare_result});
        std::uint64_t res[3];
        KTUNE_CU(cuMemcpyDtoHAsync(res, m_compare_result, sizeof res, m_stream));
        KTUNE_CU(cuStreamSynchronize(m_stream));
        float max_err;
        const auto bits = static_cast<std::uint32_t>(res[2]);
        std::memcpy(&max_err, &bits, sizeof max_err);
        r.max_abs_error = std::max<double>(r.max_abs_error, max_err);
        if (res[0] != 0) {
            r.mismatches += static_cast<std::int64_t>(res[0]);
            failures.push_back(b.spec.name + ": " + std::to_string(res[0]) + " of " + std::to_string(n) +
                               " elements differ (first at index " + std::to_string(res[1]) +
                               ", max |out - ref| = " + std::to_string(max_err) + ")");
        }
    }
    if (!failures.empty()) {
        r.status = "invalid_result";
        for (const auto& s : failures) r.message += (r.message.empty() ? "" : "; ") + s;
    }
}

void Worker::flush_l2(bool clean) {
    // Kernels, not cuMemsetD32Async, and a different value each time (see ktune_flush_l2 for the three passes).
    CUdeviceptr p = m_flush;
    long long n = static_cast<long long>(m_flush_bytes / 16);
    unsigned value = ++m_flush_counter, other = ~value;
    run_utility_grid("flush_evict_last", {&p, &n, &value});
    run_utility_grid("flush", {&p, &n, &other});
    if (clean) run_utility_grid("discard", {&p, &n});
}

std::vector<Worker::LaunchParams> Worker::rotation_params() {
    std::vector<LaunchParams> params;
    for (std::size_t i = 0; i <= m_replicas; ++i) params.push_back(build_params(false, i));
    return params;
}

void Worker::time_events(const Runner& run, const wire::TimingOptions& t, wire::EvaluateResult& r) {
    std::vector<LaunchParams> params = rotation_params();
    for (int i = 0; i < t.warmup; ++i) run(params[0]);
    KTUNE_CU(cuStreamSynchronize(m_stream));

    CUevent start[kMaxSamplesPerBatch], stop[kMaxSamplesPerBatch];
    for (int i = 0; i < kMaxSamplesPerBatch; ++i) {
        KTUNE_CU(cuEventCreate(&start[i], CU_EVENT_DEFAULT));
        KTUNE_CU(cuEventCreate(&stop[i], CU_EVENT_DEFAULT));
    }
    StoppingRule rule;
    rule.min_samples = t.min_samples;
    rule.max_samples = t.max_samples;
    rule.target_rel = t.target_rel;
    rule.time_cap_seconds = t.time_cap_s;
    CUfunction spin = utility("spin");
    CUdeviceptr flag = m_spin_flag_device;
    unsigned long long timeout = kSpinTimeoutNs;
    std::vector<void*> spin_params{&flag, &timeout};
    const auto begin = Clock::now();
    auto verdict = StoppingRule::Verdict::more;
    while (verdict == StoppingRule::Verdict::more) {
        const int batch = std::min<int>(samples_per_batch(), t.max_samples - int(r.samples_us.size()));
        // The blocking kernel holds the stream while the host enqueues the batch, so host launch latency never
        // lands between a start event and its kernel (NVBench's method).
        *m_spin_flag = 0;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        KTUNE_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, m_stream, spin_params.data(), nullptr));
        try {
            for (int i = 0; i < batch; ++i) {
                if (t.cold_l2) flush_l2(t.clean_flush);
                KTUNE_CU(cuEventRecord(start[i], m_stream));
                run(params[(r.samples_us.size() + std::size_t(i)) % params.size()]);
                KTUNE_CU(cuEventRecord(stop[i], m_stream));
            }
        } catch (...) {
            *m_spin_flag = 1;  // release the blocking kernel rather than leave the stream to its timeout
            throw;
        }
        std::atomic_thread_fence(std::memory_order_seq_cst);
        *m_spin_flag = 1;
        KTUNE_CU(cuEventSynchronize(stop[batch - 1]));
        for (int i = 0; i < batch; ++i) r.samples_us.push_back(1000.0 * elapsed_ms(start[i], stop[i]));
        verdict = rule.check(r.samples_us, std::chrono::duration<double>(Clock::now() - begin).count());
    }
    r.time_cap_hit = verdict == StoppingRule::Verdict::time_cap;
    for (int i = 0; i < kMaxSamplesPerBatch; ++i) {
        cuEventDestroy(start[i]);
        cuEventDestroy(stop[i]);
    }
}

void Worker::time_cupti(const Runner& run, const KernelFilter& timed, const wire::TimingOptions& t,
                        wire::EvaluateResult& r) {
    if (t.cupti_samples <= 0) return;
    CuptiKernelTimer timer;
    if (!timer.start()) return;  // CUPTI unavailable: the event timer stands alone
    // The same rotation over the buffers' copies as the event samples, not one placement (H100, 2026-11-23: the
    // kernel-time p50s of 2 us kernels moved by up to 9 % between processes with 5 samples on one
    // placement, up to 6 % with 64 over the rotation).
    std::vector<LaunchParams> params = rotation_params();
    CUdeviceptr flag = m_spin_flag_device;  // set: the blocking kernel returns at once
    unsigned long long timeout = kSpinTimeoutNs;
    std::vector<void*> spin_params{&flag, &timeout};
    for (int i = 0; i < t.cupti_samples; ++i) {
        // Between two samples a kernel that is not timed: the flush, or without one the blocking kernel, released.
        if (t.cold_l2)
            flush_l2(t.clean_flush);
        else
            KTUNE_CU(cuLaunchKernel(utility("spin"), 1, 1, 1, 1, 1, 1, 0, m_stream, spin_params.data(), nullptr));
        run(params[std::size_t(i) % params.size()]);
    }
    KTUNE_CU(cuStreamSynchronize(m_stream));
    // A sample: consecutive timed kernels, ended by any other.
    std::vector<double>& us = r.cupti_samples_us;
    us.clear();
    double sample = 0;
    bool in_sample = false;
    for (const CuptiKernelTimer::Record& k : timer.stop()) {
        if (timed(k.name)) {
            sample += k.duration_us;
            in_sample = true;
        } else if (in_sample) {
            us.push_back(sample);
            sample = 0;
            in_sample = false;
        }
    }
    if (in_sample) us.push_back(sample);
}

wire::EvaluateResult Worker::evaluate(const wire::Launch& l, const Tolerance& tol, const wire::TimingOptions& timing) {
    wire::EvaluateResult r;
    m_tensor_maps = &l.tensor_maps;  // build_params appends them while this launch is evaluated
    struct Reset {
        const std::vector<wire::Arg>*& maps;
        ~Reset() { maps = nullptr; }
    } const reset{m_tensor_maps};
    Runner run;
    KernelFilter timed;
    std::unique_ptr<LibraryCall> call;
    try {
        if (!l.library.empty()) {
            std::vector<wire::Buffer> specs;
            for (const DeviceBuffer& b : m_buffers) specs.push_back(b.spec);
            call = make_library_call(l, m_args, specs);
            run = [&](LaunchParams& params) { call->launch(params.values, m_stream); };
            // Whatever the library launches; the utility kernels are the worker's own.
            timed = [&](const std::string& name) { return m_utility_names.count(name) == 0; };
        } else {
            const CUfunction f = function(l.cubin, l.lowered);
            const char* name = nullptr;
            KTUNE_CU(cuFuncGetName(&name, f));
            const std::string lowered = name ? name : "";
            run = [this, f, &l](LaunchParams& params) { launch(f, l, params); };
            timed = [lowered](const std::string& n) { return n == lowered; };
        }
    } catch (const DriverError& e) {
        r.status = "launch_error";
        r.message = std::string("loading the kernel: ") + e.what();
        return r;
    } catch (const LibraryError& e) {
        r.status = "launch_error";
        r.message = e.what();
        return r;
    }
    try {
        validate(run, tol, r);
        if (r.status != "ok") return r;
        time_events(run, timing, r);
        time_cupti(run, timed, timing, r);
    } catch (const DriverError& e) {
        r.status = "launch_error";
        r.message = e.what();
        // The context is gone: the host records this result, sees `fatal` and restarts the worker.
        if (e.sticky()) m_poisoned = true;
    } catch (const LibraryError& e) {
        // The library's own error (its launches are asynchronous: a fault shows up later as a DriverError).
        r.status = "launch_error";
        r.message = e.what();
    }
    return r;
}

}  // namespace ktune::worker
