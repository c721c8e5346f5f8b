// export_header() for kernels that take TMA descriptors (kernel.tensor_maps): the dispatcher encodes each one per
// launch and passes them after the op's arguments; only such headers carry the encoding helper. The op is
// tests/data/export/tma_root/spaces/scale_rows.yaml (a plain kernel and one with three descriptors); the GEMM's
// wgmma_tma kernel is checked for what it shares with it. The headers are compiled with nvcc for sm_90a (skipped
// without nvcc); nothing runs here.
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

namespace fs = std::filesystem;

std::string tma_root() { return source_root() + "/tests/data/export/tma_root"; }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + part.size())) ++n;
    return n;
}

const SearchSpace& named(const std::vector<SearchSpace>& kernels, const std::string& alternative) {
    for (const SearchSpace& k : kernels)
        if (k.alternative() == alternative) return k;
    throw Error(ErrorCategory::internal, "no kernel " + alternative);
}

class ExportTensorMaps : public ExportTest {
protected:
    // tma_root copied to the test folder with `edit` applied to the space's YAML; its root and space path.
    std::string copy_root(const std::function<void(std::string&)>& edit) {
        const fs::path root = dir() / "tma_root";
        fs::copy(tma_root(), root, fs::copy_options::recursive);
        std::string yaml = read_text((root / "spaces/scale_rows.yaml").string());
        edit(yaml);
        std::ofstream((root / "spaces/scale_rows.yaml").string(), std::ios::trunc) << yaml;
        return root.string();
    }

    ExportOptions options(const std::string& root, const std::string& out = {}) const {
        ExportOptions o;
        o.op = "scale_rows";
        o.variant = "fwd";
        o.space_path = root + "/spaces/scale_rows.yaml";
        o.root = root;
        o.out_dir = out;
        o.generated_at = "2026-11-22T00:00:00Z";
        return o;
    }

    // fp16 64 x 4096 won by the tma kernel at ROWS=2, fp16 1 x 1024 by the plain one, fp32 64 x 1024 by tma at ROWS=4.
    void fill(Store& store, const std::vector<SearchSpace>& kernels) const {
        const DeviceInfo sxm = h100_sxm();
        store.upsert_device(sxm);
        const SearchSpace& plain = named(kernels, "plain");
        const SearchSpace& tma = named(kernels, "tma");
        store.record(
            kernel_result(sxm, tma, Problem{Dtype::fp16, {{"R", 64}, {"C", 4096}}}, Config{{{"ROWS", 2}}}, 3.0));
        store.record(
            kernel_result(sxm, plain, Problem{Dtype::fp16, {{"R", 64}, {"C", 4096}}}, Config{{{"BLOCK", 128}}}, 4.0));
        store.record(
            kernel_result(sxm, plain, Problem{Dtype::fp16, {{"R", 1}, {"C", 1024}}}, Config{{{"BLOCK", 128}}}, 1.0));
        store.record(
            kernel_result(sxm, tma, Problem{Dtype::fp32, {{"R", 64}, {"C", 1024}}}, Config{{{"ROWS", 4}}}, 2.0));
    }

    RenderedHeader render(const std::string& root) {
        const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(root + "/spaces/scale_rows.yaml");
        Store store = Store::open(db_path());
        fill(store, kernels);
        return render_header(store, pointers(kernels), options(root));
    }
};

TEST_F(ExportTensorMaps, EncodesEachDescriptorOfTheConfigurationAndPassesThemAfterTheOpsArguments) {
    const std::string text = render(tma_root()).text;
    // Configurations in (dtype, alternative) order: 0 fp32 tma ROWS=4, 1 fp16 plain, 2 fp16 tma ROWS=2.
    EXPECT_TRUE(has(text, "/* 2 */ {Dtype::fp16, 1, {2}, \"ROWS=2\", \"scale_rows_tma<__half, 2>\"},")) << text;
    // The extents over the dispatcher's shape, the box of the configuration, the element type of the instance's
    // dtype (or the buffer's own), the swizzle, the buffer's pointer and its size.
    EXPECT_TRUE(has(text,
                    "        // The tensor map over x [R, C], swizzle 128\n"
                    "        const double ktune_extents0[] = {(static_cast<double>(shape[0])), "
                    "(static_cast<double>(shape[1]))};\n"
                    "        const unsigned ktune_box0[] = {2u, 32u};\n"
                    "        ktune_status = detail::encode_tensor_map(&ktune_maps[0], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, "
                    "2, x, 2, ktune_extents0, ktune_box0,\n"
                    "                                                CU_TENSOR_MAP_SWIZZLE_128B, "
                    "scale_rows_fwd_table::buffer_elements(1, shape, dtype), &ktune_driver_error);\n"
                    "        if (ktune_status != Status::ok) return detail::tensor_map_status(ktune_status, "
                    "ktune_driver_error, choice);"))
        << text;
    EXPECT_TRUE(has(text, "const unsigned ktune_box1[] = {2u, 32u};"));
    EXPECT_TRUE(has(text, "&ktune_maps[1], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, y, 2, ktune_extents1"));
    EXPECT_TRUE(has(text, "CU_TENSOR_MAP_SWIZZLE_NONE, scale_rows_fwd_table::buffer_elements(0, shape, dtype)"));
    EXPECT_TRUE(has(text,
                    "const double ktune_extents2[] = {(static_cast<double>(shape[1]))};\n"
                    "        const unsigned ktune_box2[] = {16u};"));
    EXPECT_TRUE(has(text, "&ktune_maps[2], CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, scale, 1, ktune_extents2"));
    // fp32 at ROWS=4: its own box and element type.
    EXPECT_TRUE(has(text, "const unsigned ktune_box0[] = {4u, 32u};"));
    EXPECT_TRUE(has(text, "&ktune_maps[0], CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, x, 2, ktune_extents0"));
    EXPECT_TRUE(has(text, "const unsigned ktune_box2[] = {32u};"));
    // The kernel takes them after the op's arguments; the plain kernel and the reference take none.
    EXPECT_EQ(count(text,
                    "kernel<<<grid, block, g.shared_bytes, stream>>>(static_cast<__half*>(y), "
                    "static_cast<const __half*>(x), scale, static_cast<int>(ktune_arg3), static_cast<int>(ktune_arg4), "
                    "ktune_maps[0], ktune_maps[1], ktune_maps[2]);"),
              1u);
    EXPECT_EQ(count(text, "ktune_maps[0], ktune_maps[1], ktune_maps[2]);"), 2u);
    EXPECT_EQ(count(text, "detail::TensorMapArg ktune_maps[3];"), 2u);
    // The helper, once, found through the runtime.
    EXPECT_EQ(count(text, "#define KTUNE_TUNED_TENSOR_MAPS_V1"), 1u);
    EXPECT_TRUE(has(text, "cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\""));
    EXPECT_TRUE(has(text, "#include <cudaTypedefs.h>"));
    EXPECT_TRUE(has(text, "// Some kernels take TMA descriptors (kernel.tensor_maps)"));
}

TEST_F(ExportTensorMaps, LeavesTheHelperOutOfAHeaderWithoutTensorMaps) {
    // The plain kernel alone won: nothing to encode, nothing of the helper (so other ops' headers stay as they were).
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(tma_root() + "/spaces/scale_rows.yaml");
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    store.record(kernel_result(h100_sxm(), named(kernels, "plain"), Problem{Dtype::fp16, {{"R", 1}, {"C", 1024}}},
                               Config{{{"BLOCK", 128}}}, 1.0));
    const std::string text = render_header(store, pointers(kernels), options(tma_root())).text;
    EXPECT_FALSE(has(text, "TensorMap")) << text;
    EXPECT_FALSE(has(text, "cuda.h"));
    EXPECT_FALSE(has(text, "tensor_map"));
}

TEST_F(ExportTensorMaps, PassesThemToAProgrammaticLaunchToo) {
    const std::string root = copy_root([](std::string& yaml) {
        const std::size_t p = yaml.find("      tensor_maps:");
        ASSERT_NE(p, std::string::npos);
        yaml.insert(p, "      programmatic_launch: true\n");
    });
    const std::string text = render(root).text;
    EXPECT_EQ(count(text,
                    "err = cudaLaunchKernelEx(&launch, kernel, static_cast<__half*>(y), static_cast<const __half*>(x), "
                    "scale, static_cast<int>(ktune_arg3), static_cast<int>(ktune_arg4), ktune_maps[0], ktune_maps[1], "
                    "ktune_maps[2]);"),
              1u)
        << text;
}

TEST_F(ExportTensorMaps, RefusesABoxThatDependsOnTheProblem) {
    const std::string root = copy_root([](std::string& yaml) {
        const std::size_t p = yaml.find("box: [\"ROWS\", 32], swizzle: 128");
        ASSERT_NE(p, std::string::npos);
        yaml.replace(p, 17, "box: [\"ROWS\", \"C / 128\"]");
    });
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(root + "/spaces/scale_rows.yaml");
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    for (std::int64_t c : {1024, 4096})
        store.record(kernel_result(h100_sxm(), named(kernels, "tma"), Problem{Dtype::fp32, {{"R", 64}, {"C", c}}},
                                   Config{{{"ROWS", 2}}}, 1.0));
    const Error e = error_of([&] { render_header(store, pointers(kernels), options(root)); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(std::string(e.what()).find("the box of the tensor map over x differs between problems"),
              std::string::npos)
        << e.what();
}

std::string find_nvcc() {
    for (const char* env : {"KTUNE_NVCC", "CUDACXX"}) {
        const char* v = std::getenv(env);
        if (v != nullptr && fs::exists(v)) return v;
    }
    if (fs::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
    return std::system("nvcc --version > /dev/null 2>&1") == 0 ? "nvcc" : "";
}

// The kernels fed by TMA in ktune's own spaces: the GEMM's warp-specialized kernel, alone and in clusters of two
// (three descriptors of two dimensions: x, w, y; the pair's w box half the tile), the dense skinny linear's (x, w)
// and prefill attention's (q, k, v and out over [B, L, H, D]: four dimensions), whatever their spaces' exact text:
// each descriptor as the search space evaluates it; the header compiles.
TEST_F(ExportTensorMaps, EncodesTheTmaKernelsDescriptorsAsTheSearchSpaceEvaluatesThemAndCompiles) {
    struct Case {
        const char* space;
        const char* alternative;
        std::size_t maps;
    };
    for (const Case& c : {Case{"gemm_act_none", "wgmma_tma", 3}, Case{"gemm_act_none", "wgmma_tma_pair", 3},
                          Case{"linear_skinny", "wgmma_tma", 2}, Case{"prefill_attention", "wgmma_ws", 4}}) {
        SCOPED_TRACE(c.space);
        const std::string space_path = source_root() + "/search_spaces/" + c.space + ".yaml";
        const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(space_path);
        const SearchSpace& tma = named(kernels, c.alternative);
        ASSERT_EQ(tma.tensor_maps().size(), c.maps);
        std::optional<Problem> problem;
        std::optional<Config> config;
        for (const Problem& p : tma.problems()) {
            if (p.dtype != Dtype::bf16) continue;
            tma.for_each_config([&](const Config& cf) {
                if (tma.is_valid(cf, p)) config = cf;
                return !config;
            });
            if (config) {
                problem = p;
                break;
            }
        }
        ASSERT_TRUE(config && problem);
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db_path() + suffix);  // each case its own database
        Store store = Store::open(db_path());
        store.upsert_device(h100_sxm());
        store.record(kernel_result(h100_sxm(), tma, *problem, *config, 10.0));
        ExportOptions o = options(source_root());
        o.op = tma.op();
        o.variant = tma.variant();
        o.space_path = space_path;
        const std::string text = render_header(store, pointers(kernels), o).text;
        const std::vector<TensorMapValue> values = tma.tensor_map_values(*config, *problem);
        std::string maps;
        for (std::size_t i = 0; i < values.size(); ++i) {
            std::string box;
            for (const std::int64_t b : values[i].box) box += fmt::format("{}{}u", box.empty() ? "" : ", ", b);
            EXPECT_TRUE(has(text, fmt::format("const unsigned ktune_box{}[] = {{{}}};", i, box))) << box << "\n"
                                                                                                  << text;
            EXPECT_TRUE(has(text, fmt::format("&ktune_maps[{}], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, {}, {},", i,
                                              values[i].buffer, values[i].shape.size())));
            maps += fmt::format(", ktune_maps[{}]", i);
        }
        EXPECT_TRUE(has(text, maps + ");")) << maps;

        // The header as `ktune export-header` writes it compiles in a user's translation unit (the kernel's own
        // diagnostics aside: only the header's are counted).
        const std::string nvcc = find_nvcc();
        if (nvcc.empty()) continue;  // the descriptors of every case checked; skipped after the loop
        o.out_dir = (dir() / c.space / "include").string();
        const ExportResult r = export_header(store, o);
        const fs::path cu = dir() / c.space / "use.cu";
        std::ofstream(cu) << fmt::format(R"(#include "{0}"
int run(void* const* buffers, const long long* shape, cudaStream_t stream) {{
    ktune_tuned::DeviceProps props;
    if (ktune_tuned::query_device_props(0, &props) != ktune_tuned::Status::ok) return -1;
    return static_cast<int>(ktune_tuned::{1}_launch(props, ktune_tuned::Dtype::bf16, buffers, shape, stream));
}}
)",
                                         r.file_name, r.function.substr(r.function.find("::") + 2));
        const std::string log = (dir() / c.space / "use.log").string();
        const std::string cmd =
            fmt::format("{} -std=c++17 -arch=sm_90a -Xcompiler=-Wall,-Wextra -I{} -I{} -c {} -o {} > {} 2>&1", nvcc,
                        source_root(), o.out_dir, cu.string(), (dir() / c.space / "use.o").string(), log);
        EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text(log);
        EXPECT_FALSE(has(read_text(log), r.file_name)) << read_text(log);
    }
    if (find_nvcc().empty()) GTEST_SKIP() << "nvcc not found (set KTUNE_NVCC): the headers were not compiled";
}

// A user's translation unit calls the dispatcher and its generic entry, with the reference; one more the same with
// the programmatic launch. Both compile for sm_90a without a warning (nothing links libcuda).
TEST_F(ExportTensorMaps, CompilesWithNvccForBothLaunchPaths) {
    const std::string nvcc = find_nvcc();
    if (nvcc.empty()) GTEST_SKIP() << "nvcc not found (set KTUNE_NVCC)";
    const std::string programmatic = copy_root(
        [](std::string& yaml) { yaml.insert(yaml.find("      tensor_maps:"), "      programmatic_launch: true\n"); });
    std::vector<std::string> commands;
    for (const std::string& root : {tma_root(), programmatic}) {
        const std::string name = root == tma_root() ? "plain_launch" : "programmatic";
        const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(root + "/spaces/scale_rows.yaml");
        Store store = Store::open((dir() / (name + ".db")).string());
        fill(store, kernels);
        const std::string out = (dir() / name).string();
        export_header(store, options(root, out));
        const fs::path cu = dir() / (name + ".cu");
        std::ofstream(cu) << R"(#define KTUNE_TUNED_WITH_REFERENCE
#include "ktune_tuned_scale_rows_fwd.hpp"
int run(void* y, const void* x, const float* scale, long long rows, long long cols, cudaStream_t stream) {
    ktune_tuned::DeviceProps props;
    if (ktune_tuned::query_device_props(0, &props) != ktune_tuned::Status::ok) return -1;
    ktune_tuned::Choice choice;
    ktune_tuned::Status s =
        ktune_tuned::scale_rows_fwd(props, ktune_tuned::Dtype::fp16, y, x, scale, rows, cols, stream, &choice);
    if (s != ktune_tuned::Status::ok) return static_cast<int>(s) + 100 * choice.cuda_error;
    void* buffers[] = {y, const_cast<void*>(x), const_cast<float*>(scale)};
    const long long shape[] = {rows, cols};
    s = ktune_tuned::scale_rows_fwd_launch(props, ktune_tuned::Dtype::fp32, buffers, shape, stream);
    if (s != ktune_tuned::Status::ok) return static_cast<int>(s);
    return static_cast<int>(ktune_tuned::scale_rows_fwd_reference_launch(ktune_tuned::Dtype::fp16, buffers, shape));
}
)";
        const std::string log = (dir() / (name + ".log")).string();
        const std::string cmd =
            fmt::format("{} -std=c++17 -arch=sm_90a -Xcompiler=-Wall,-Wextra -I{} -I{} -c {} -o {} > {} 2>&1", nvcc,
                        root, out, cu.string(), (dir() / (name + ".o")).string(), log);
        EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text(log);
        EXPECT_EQ(read_text(log).find("warning"), std::string::npos) << read_text(log);
        EXPECT_TRUE(fs::exists(dir() / (name + ".o")));
    }
}

// With KTUNE_TUNED_HOST_ONLY (tables and selection, no CUDA) the header needs neither <cuda.h> nor the runtime: the
// encoding helper stays out with the dispatcher. A plain host compiler, no CUDA include path.
TEST_F(ExportTensorMaps, CompilesHostOnlyWithoutCuda) {
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(tma_root() + "/spaces/scale_rows.yaml");
    Store store = Store::open(db_path());
    fill(store, kernels);
    const std::string out = (dir() / "include").string();
    export_header(store, options(tma_root(), out));
    const fs::path cc = dir() / "host.cpp";
    std::ofstream(cc) << R"(#define KTUNE_TUNED_HOST_ONLY
#include "ktune_tuned_scale_rows_fwd.hpp"
int main() {
    const ktune_tuned::DeviceProps props = ktune_tuned::make_device_props("NVIDIA H100 80GB HBM3", 9, 0, 132);
    return ktune_tuned::scale_rows_fwd_select(props, ktune_tuned::Dtype::fp16, 64, 4096).config == 2 ? 0 : 1;
}
)";
    const std::string log = (dir() / "host.log").string();
    const std::string exe = (dir() / "host").string();
    const std::string cmd =
        fmt::format("c++ -std=c++17 -Wall -Wextra -I{} {} -o {} > {} 2>&1 && {}", out, cc.string(), exe, log, exe);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text(log);
    EXPECT_EQ(read_text(log).find("warning"), std::string::npos) << read_text(log);
}

}  // namespace
}  // namespace ktune::test
