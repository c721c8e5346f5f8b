#pragma once
// Shared by the export tests: a per-test temporary directory and the synthetic store that the golden header
// (golden/ktune_tuned_rmsnorm_fwd.hpp) is generated from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "results/store.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/export/export_header.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune::test {

inline std::string source_root() { return KTUNE_SOURCE_ROOT; }
inline std::string rmsnorm_space_path() { return source_root() + "/search_spaces/rmsnorm.yaml"; }
inline std::string golden_header_path() {
    return source_root() + "/tests/unit/export/golden/ktune_tuned_rmsnorm_fwd.hpp";
}

class ExportTest : public ::testing::Test {
protected:
    std::string db_path() const { return (dir() / "results.db").string(); }
    const std::filesystem::path& dir() const { return m_dir.path(); }

private:
    TempDir m_dir{"ktune-export-test"};
};

// An H100 SXM as the worker describes it.
inline DeviceInfo h100_sxm() {
    DeviceInfo d;
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    d.cc_minor = 0;
    d.sm_count = 132;
    d.l2_bytes = 52428800;
    d.memory_bytes = 85028896768LL;  // 79 GiB
    d.memory_clock_khz = 2619000;
    d.memory_bus_bits = 5120;
    d.sm_clock_khz = 1980000;
    d.driver_version = "13.0 (580.159.04)";
    d.cuda_version = "13.0";
    d.nvrtc_version = "13.0";
    d.key = make_device_key(d);
    return d;
}

// Another Hopper chip: same architecture, different name and SM count.
inline DeviceInfo h100_pcie() {
    DeviceInfo d = h100_sxm();
    d.name = "NVIDIA H100 PCIe";
    d.sm_count = 114;
    d.memory_bus_bits = 5120;
    d.memory_clock_khz = 1593000;
    d.key = make_device_key(d);
    return d;
}

inline ResultRecord tuned(const DeviceInfo& d, Dtype dtype, std::int64_t m, std::int64_t h, const std::string& config,
                          double p50, const std::string& variant = "fwd") {
    ResultRecord r;
    r.kernel = KernelInfo{"rmsnorm", variant, "kernels/rmsnorm/rmsnorm_fwd.cuh", "0123456789abcdef0123", "", ""};
    r.config_key = config;
    r.problem = Problem{dtype, {{"M", m}, {"H", h}}};
    r.device_key = d.key;
    r.measured_at = "2026-11-22T00:00:00Z";
    r.measurement.status = Status::ok;
    r.measurement.stats.n = 3;
    r.measurement.stats.p50 = p50;
    r.measurement.samples_us = {p50, p50, p50};
    return r;
}

inline const char* const k_small = "BLOCK=128,VEC=8,UNROLL=4,ROWS_PER_BLOCK=1";
inline const char* const k_medium = "BLOCK=256,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1";
inline const char* const k_large = "BLOCK=512,VEC=8,UNROLL=1,ROWS_PER_BLOCK=1";
inline const char* const k_wide = "BLOCK=1024,VEC=8,UNROLL=1,ROWS_PER_BLOCK=1";
inline const char* const k_fp32 = "BLOCK=256,VEC=4,UNROLL=4,ROWS_PER_BLOCK=1";
inline const char* const k_pcie = "BLOCK=256,VEC=4,UNROLL=8,ROWS_PER_BLOCK=2";

// The golden store: the SXM tuned bf16 at M in {1, 16, 256, 4096} x H in {4096, 8192} and fp32 at two shapes; the
// PCIe card bf16 at two shapes only. Configurations differ per bucket so that tests can tell buckets apart.
inline void fill_golden_store(Store& store) {
    const DeviceInfo sxm = h100_sxm(), pcie = h100_pcie();
    store.upsert_device(sxm);
    store.upsert_device(pcie);
    for (std::int64_t h : {4096, 8192}) {
        store.record(tuned(sxm, Dtype::bf16, 1, h, h == 4096 ? k_small : k_medium, 2.0));
        store.record(tuned(sxm, Dtype::bf16, 16, h, k_medium, 2.5));
        store.record(tuned(sxm, Dtype::bf16, 256, h, k_medium, 4.0));
        store.record(tuned(sxm, Dtype::bf16, 4096, h, h == 4096 ? k_large : k_wide, 25.0));
    }
    store.record(tuned(sxm, Dtype::fp32, 16, 4096, k_fp32, 3.0));
    store.record(tuned(sxm, Dtype::fp32, 4096, 4096, k_fp32, 40.0));
    store.record(tuned(pcie, Dtype::bf16, 16, 4096, k_pcie, 3.5));
    store.record(tuned(pcie, Dtype::bf16, 4096, 4096, k_pcie, 30.0));
}

inline ExportOptions golden_options(const std::string& out_dir = {}) {
    ExportOptions o;
    o.op = "rmsnorm";
    o.variant = "fwd";
    o.space_path = rmsnorm_space_path();
    o.root = source_root();
    o.out_dir = out_dir;
    o.generated_at = "2026-11-22T00:00:00Z";
    o.note = "synthetic test data (tests/unit/export/export_test_util.hpp), not a tuning";
    return o;
}

// A user's op outside the repository, declared inline (op_spec) with two alternative kernels (flat, rows), and the
// root its kernel sources are relative to.
inline std::string user_root() { return source_root() + "/tests/data/export/user_root"; }
inline std::string user_space_path() { return user_root() + "/spaces/bias_gelu.yaml"; }

// A result of one kernel of a space (its alternative, if any) for one problem and configuration.
inline ResultRecord kernel_result(const DeviceInfo& d, const SearchSpace& kernel, const Problem& p, const Config& c,
                                  double p50) {
    ResultRecord r = tuned(d, p.dtype, 1, 1, c.key(), p50);
    r.kernel = KernelInfo{kernel.op(), kernel.variant(),    kernel.kernel_source(), "hash-" + kernel.alternative(),
                          "",          kernel.alternative()};
    r.problem = p;
    return r;
}

inline std::vector<const SearchSpace*> pointers(const std::vector<SearchSpace>& spaces) {
    std::vector<const SearchSpace*> out;
    for (const SearchSpace& s : spaces) out.push_back(&s);
    return out;
}

inline ExportOptions user_options(const std::string& out_dir = {}) {
    ExportOptions o;
    o.op = "bias_gelu";
    o.variant = "fwd";
    o.space_path = user_space_path();
    o.root = user_root();
    o.out_dir = out_dir;
    o.generated_at = "2026-11-22T00:00:00Z";
    return o;
}

// The user op's synthetic tuning on the SXM: fp16 buckets won by both kernels, fp32 by the flat one.
inline void fill_user_store(Store& store, const std::vector<SearchSpace>& kernels) {
    const DeviceInfo sxm = h100_sxm();
    store.upsert_device(sxm);
    const SearchSpace& flat = kernels.at(0);
    const SearchSpace& rows = kernels.at(1);
    const Config flat_config{{{"VEC", 2}, {"BLOCK", 128}}};
    const Config rows_config{{{"VEC", 2}, {"WARPS", 2}}};
    store.record(kernel_result(sxm, flat, Problem{Dtype::fp16, {{"R", 64}, {"C", 4096}}}, flat_config, 3.0));
    store.record(kernel_result(sxm, rows, Problem{Dtype::fp16, {{"R", 64}, {"C", 4096}}}, rows_config, 4.0));
    store.record(kernel_result(sxm, flat, Problem{Dtype::fp16, {{"R", 1}, {"C", 1024}}}, flat_config, 2.0));
    store.record(kernel_result(sxm, rows, Problem{Dtype::fp16, {{"R", 1}, {"C", 1024}}}, rows_config, 1.5));
    store.record(kernel_result(sxm, flat, Problem{Dtype::fp32, {{"R", 1}, {"C", 1024}}}, flat_config, 2.5));
}

// The second golden header: decode_attention/fwd, an op spec with named values (let:), a scratch buffer, a square
// root and a real-valued argument; one synthetic best configuration per dtype on the SXM.
inline std::string decode_attention_space_path() { return source_root() + "/search_spaces/decode_attention.yaml"; }
inline std::string decode_attention_golden_path() {
    return source_root() + "/tests/unit/export/golden/ktune_tuned_decode_attention_fwd.hpp";
}
// decode_attention.yaml is a space of four alternative kernels; the fixture's best is the mma_l2 kernel's.
inline const char* const k_attention_kernel = "mma_l2";
inline const char* const k_attention = "HEAD_DIM=128,GROUP=4,WARPS=4,TOKENS=1,STAGES=3,SPLITS=16";

struct DecodeAttentionKernels {
    std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(decode_attention_space_path());
    // As render_header takes them, in file order.
    std::vector<const SearchSpace*> pointers() const {
        std::vector<const SearchSpace*> out;
        for (const SearchSpace& k : kernels) out.push_back(&k);
        return out;
    }
    const SearchSpace& named(const std::string& alternative) const {
        for (const SearchSpace& k : kernels)
            if (k.alternative() == alternative) return k;
        throw Error(ErrorCategory::internal, "no kernel " + alternative + " in decode_attention.yaml");
    }
};

inline void fill_decode_attention_store(Store& store, const DecodeAttentionKernels& kernels) {
    const DeviceInfo sxm = h100_sxm();
    store.upsert_device(sxm);
    const SearchSpace& space = kernels.named(k_attention_kernel);
    const Config c = space.parse_config(k_attention, "test");
    for (const Dtype dt : {Dtype::fp16, Dtype::bf16}) {
        ResultRecord r = tuned(sxm, dt, 1, 1, c.key(), 12.5);
        r.kernel = KernelInfo{space.op(), space.variant(),    space.kernel_source(), "0123456789abcdef0123",
                              "",         space.alternative()};
        r.problem = Problem{dt, {{"B", 1}, {"L", 8192}, {"HQ", 32}, {"HK", 8}, {"D", 128}, {"U", 1}}};
        store.record(r);
    }
}

inline ExportOptions decode_attention_options() {
    ExportOptions o = golden_options();
    o.op = "decode_attention";
    o.variant = "fwd";
    o.space_path = decode_attention_space_path();
    return o;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The Error thrown by f, or a test failure when it throws none.
inline Error error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected a ktune::Error";
    return Error(ErrorCategory::internal, "no error");
}

}  // namespace ktune::test
