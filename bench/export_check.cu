// Runs an exported header's dispatcher at every problem it was tuned at and compares its outputs with the op's
// reference kernel, as the tuner validated the JIT-compiled configuration: the same generator ranges, NaN in a padded
// batch's rows past each length (<table>::buffer_pad), the same reference, the same tolerances (the header's
// <table>::tolerances), the same comparison (ktune_compare).
//
// Compiled once per exported header (bench/export_vs_jit.sh on a GPU host; tests/unit/export compiles it without one):
//   nvcc -std=c++17 -arch=sm_90 -I<ktune root> -I<header folder> [-I<user kernels>]
//        -DKTUNE_CHECK_HEADER='"ktune_tuned_rmsnorm_fwd.hpp"' -DKTUNE_CHECK_STEM=rmsnorm_fwd bench/export_check.cu
//   ./a.out            one line per problem tuned on this GPU's chip: op, problem, status, choice, max |out - ref|
// Exit status: 0 when every problem ran and matched, 1 otherwise, 2 without a GPU.
#define KTUNE_TUNED_WITH_REFERENCE
#include KTUNE_CHECK_HEADER

#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/common/harness_kernels.cuh"

#define KTUNE_CHECK_CAT2(a, b) a##b
#define KTUNE_CHECK_CAT(a, b) KTUNE_CHECK_CAT2(a, b)
#define KTUNE_CHECK_TABLE KTUNE_CHECK_CAT(KTUNE_CHECK_STEM, _table)
#define KTUNE_CHECK_LAUNCH KTUNE_CHECK_CAT(KTUNE_CHECK_STEM, _launch)
#define KTUNE_CHECK_REFERENCE KTUNE_CHECK_CAT(KTUNE_CHECK_STEM, _reference_launch)

namespace {

namespace table = ktune_tuned::KTUNE_CHECK_TABLE;
using ktune_tuned::BufferRole;
using ktune_tuned::Dtype;
using ktune_tuned::Status;

int elem_size(const char* type) {
    if (type == nullptr) return 0;
    if (!std::strcmp(type, "f32") || !std::strcmp(type, "i32")) return 4;
    if (!std::strcmp(type, "f16") || !std::strcmp(type, "bf16")) return 2;
    if (!std::strcmp(type, "i64")) return 8;
    return 1;  // i8, u8
}

constexpr unsigned k_block = 256;
unsigned grid_for(long long n) {
    const long long blocks = (n + k_block - 1) / k_block;
    return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

// One generic kernel per element type: fill, poison, compare (kernels/common/harness_kernels.cuh).
template <typename T>
struct Typed {
    static void fill(void* p, long long n, unsigned long long seed, double lo, double hi) {
        ktune_fill_uniform<T>
            <<<grid_for(n), k_block>>>(static_cast<T*>(p), n, seed, static_cast<float>(lo), static_cast<float>(hi));
    }
    static void poison(void* p, long long n) { ktune_poison<T><<<grid_for(n), k_block>>>(static_cast<T*>(p), n); }
    static void pad(void* p, const void* lengths, long long sequences, long long heads, long long tokens,
                    long long token_elements) {
        // Only floating-point buffers are padded (the op spec refuses others).
        if constexpr (!std::is_integral_v<T>)
            ktune_pad_nan<T><<<grid_for(sequences * heads * tokens * token_elements), k_block>>>(
                static_cast<T*>(p), static_cast<const int*>(lengths), sequences, heads, tokens, token_elements);
    }
    static void compare(const void* out, const void* ref, long long n, float rtol, float atol,
                        unsigned long long* result) {
        ktune_compare<T>
            <<<grid_for(n), k_block>>>(static_cast<const T*>(out), static_cast<const T*>(ref), n, rtol, atol, result);
    }
};

template <typename F>
bool with_type(const char* type, F&& f) {
    if (!std::strcmp(type, "f32")) return f(Typed<float>{}), true;
    if (!std::strcmp(type, "f16")) return f(Typed<__half>{}), true;
    if (!std::strcmp(type, "bf16")) return f(Typed<__nv_bfloat16>{}), true;
    if (!std::strcmp(type, "i32")) return f(Typed<int>{}), true;
    if (!std::strcmp(type, "i64")) return f(Typed<long long>{}), true;
    if (!std::strcmp(type, "i8")) return f(Typed<signed char>{}), true;
    if (!std::strcmp(type, "u8")) return f(Typed<unsigned char>{}), true;
    return false;
}

struct Buffers {
    std::vector<void*> tuned, reference;  // inputs are shared; outputs, inouts and scratch have one copy each
    ~Buffers() {
        for (std::size_t i = 0; i < tuned.size(); ++i) {
            if (reference[i] != tuned[i]) cudaFree(reference[i]);
            cudaFree(tuned[i]);
        }
    }
};

// Runs the dispatcher and the reference at entry `e`; prints one line; true when the outputs match.
bool check_entry(const ktune_tuned::DeviceProps& props, int e) {
    const table::Entry& entry = table::entries[e];
    const Dtype dtype = entry.dtype;
    const int dt = static_cast<int>(dtype);
    Buffers b;
    std::vector<long long> counts;
    for (int i = 0; i < table::buffer_count; ++i) {
        const char* type = table::buffer_types[i][dt];
        const long long n = table::buffer_elements(i, entry.shape, dtype);
        double lo = 0, hi = 0;
        if (type == nullptr || n < 0 || !table::buffer_range(i, entry.shape, dtype, &lo, &hi)) {
            std::printf("%s %s FAIL buffer %s: no size or type for this problem\n", table::op, entry.problem,
                        table::buffer_names[i]);
            return false;
        }
        const std::size_t bytes = static_cast<std::size_t>(n > 0 ? n : 1) * elem_size(type);
        const BufferRole role = table::buffer_roles[i];
        void* t = nullptr;
        void* r = nullptr;
        if (cudaMalloc(&t, bytes) != cudaSuccess)
            return std::printf("%s %s FAIL cudaMalloc\n", table::op, entry.problem), false;
        r = t;
        if (role != BufferRole::input && cudaMalloc(&r, bytes) != cudaSuccess)
            return cudaFree(t), std::printf("%s %s FAIL cudaMalloc\n", table::op, entry.problem), false;
        b.tuned.push_back(t);
        b.reference.push_back(r);
        counts.push_back(n);
        const unsigned long long seed = 0x6b74756e65ull + static_cast<unsigned long long>(i) * 7919ull;
        with_type(type, [&](auto ops) {
            if (role == BufferRole::input || role == BufferRole::inout) {
                ops.fill(t, n, seed, lo, hi);
                if (r != t) ops.fill(r, n, seed, lo, hi);
            } else if (role == BufferRole::output) {
                ops.poison(t, n);
                ops.poison(r, n);
            }
        });
        if (role == BufferRole::scratch) {
            cudaMemset(t, 0, bytes);
            cudaMemset(r, 0, bytes);
        }
    }
    // Once every input is filled, the lengths among them: NaN past each sequence's length.
    for (int i = 0; i < table::buffer_count; ++i) {
        int lengths = -1;
        long long heads = 0, tokens = 0, token_elements = 0;
        if (!table::buffer_pad(i, entry.shape, dtype, &lengths, &heads, &tokens, &token_elements)) continue;
        with_type(table::buffer_types[i][dt], [&](auto ops) {
            ops.pad(b.tuned[i], b.tuned[lengths], counts[lengths], heads, tokens, token_elements);
            if (b.reference[i] != b.tuned[i])
                ops.pad(b.reference[i], b.tuned[lengths], counts[lengths], heads, tokens, token_elements);
        });
    }
    const Status rs = KTUNE_CHECK_REFERENCE(dtype, b.reference.data(), entry.shape);
    ktune_tuned::Choice choice;
    const Status ts = KTUNE_CHECK_LAUNCH(props, dtype, b.tuned.data(), entry.shape, nullptr, &choice);
    const cudaError_t sync = cudaDeviceSynchronize();
    if (rs != Status::ok || ts != Status::ok || sync != cudaSuccess) {
        std::printf("%s %s FAIL reference: %s, header: %s, CUDA: %s\n", table::op, entry.problem,
                    ktune_tuned::status_message(rs), ktune_tuned::status_message(ts), cudaGetErrorString(sync));
        return false;
    }
    unsigned long long* result = nullptr;
    cudaMallocManaged(&result, 3 * sizeof(unsigned long long));
    unsigned long long mismatches = 0;
    float max_err = 0;
    bool identical = true;
    for (int i = 0; i < table::buffer_count; ++i) {
        const BufferRole role = table::buffer_roles[i];
        if (role != BufferRole::output && role != BufferRole::inout) continue;
        for (int exact = 0; exact < 2; ++exact) {
            result[0] = 0;
            result[1] = ~0ull;
            result[2] = 0;
            const float rtol = exact ? 0.0f : static_cast<float>(table::tolerances[dt][0]);
            const float atol = exact ? 0.0f : static_cast<float>(table::tolerances[dt][1]);
            with_type(table::buffer_types[i][dt],
                      [&](auto ops) { ops.compare(b.tuned[i], b.reference[i], counts[i], rtol, atol, result); });
            cudaDeviceSynchronize();
            if (exact) {
                identical = identical && result[0] == 0;
            } else {
                mismatches += result[0];
                float err;
                const unsigned bits = static_cast<unsigned>(result[2]);
                std::memcpy(&err, &bits, sizeof err);
                if (err > max_err) max_err = err;
            }
        }
    }
    cudaFree(result);
    const bool ok = mismatches == 0;
    std::printf("%s %s %s level=%s%s kernel=%s config=%s mismatches=%llu max_abs_err=%.3g%s\n", table::op,
                entry.problem, ok ? "ok" : "FAIL", ktune_tuned::level_name(choice.level),
                choice.exact_bucket ? "" : "(nearest bucket)", choice.kernel, choice.config_key, mismatches,
                static_cast<double>(max_err), identical ? " identical_to_reference" : "");
    return ok;
}

}  // namespace

int main() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("%s: no CUDA device\n", table::op);
        return 2;
    }
    ktune_tuned::DeviceProps props;
    if (ktune_tuned::query_device_props(0, &props) != Status::ok) return 2;
    // The problems tuned on this GPU (its chip's tables); every tuned problem when none is.
    std::vector<int> mine;
    for (const ktune_tuned::detail::DeviceRecord& d : table::devices)
        if (ktune_tuned::detail::device_matches(d, props, ktune_tuned::Level::same_chip))
            for (int e = d.first_entry; e < d.first_entry + d.entry_count; ++e) mine.push_back(e);
    if (mine.empty()) {
        std::printf("%s: no tuned device is this GPU's chip (%s): checking every tuned problem\n", table::op,
                    props.name);
        for (int e = 0; e < table::entry_count; ++e) mine.push_back(e);
    }
    bool all = true;
    for (int e : mine) all = check_entry(props, e) && all;
    return all ? 0 : 1;
}
