// A freshly generated header compiles with nvcc, with the kernel templates, in a user's translation unit that calls
// the dispatcher; two generated headers (fwd and fwd_gemma) compile together. Skipped without nvcc.
#include <cstdlib>

#include <fmt/format.h>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

std::string find_nvcc() {
    for (const char* env : {"KTUNE_NVCC", "CUDACXX"}) {
        const char* v = std::getenv(env);
        if (v != nullptr && std::filesystem::exists(v)) return v;
    }
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
        const char* v = std::getenv(env);
        if (v != nullptr && std::filesystem::exists(std::filesystem::path(v) / "bin" / "nvcc"))
            return (std::filesystem::path(v) / "bin" / "nvcc").string();
    }
    if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
    return std::system("nvcc --version > /dev/null 2>&1") == 0 ? "nvcc" : "";
}

using GeneratedHeaderNvcc = ExportTest;

TEST_F(GeneratedHeaderNvcc, CompilesWithTheKernelsIntoAUserTranslationUnit) {
    const std::string nvcc = find_nvcc();
    if (nvcc.empty()) GTEST_SKIP() << "nvcc not found (set KTUNE_NVCC)";

    Store store = Store::open(db_path());
    fill_golden_store(store);
    store.record(tuned(h100_sxm(), Dtype::bf16, 16, 2048, k_medium, 2.0, "fwd_gemma"));
    const std::string out = (dir() / "include").string();
    export_header(store, golden_options(out));
    ExportOptions gemma = golden_options(out);
    gemma.variant = "fwd_gemma";
    gemma.space_path = source_root() + "/search_spaces/rmsnorm_gemma.yaml";
    export_header(store, gemma);

    const auto cu = dir() / "user.cu";
    std::ofstream(cu) << R"(#include "ktune_tuned_rmsnorm_fwd.hpp"
#include "ktune_tuned_rmsnorm_fwd_gemma.hpp"
int run(void* y, const void* x, const void* w, int rows, int hidden, cudaStream_t stream) {
    ktune_tuned::DeviceProps props;
    if (ktune_tuned::query_device_props(0, &props) != ktune_tuned::Status::ok) return -1;
    ktune_tuned::Choice choice;
    ktune_tuned::Status s = ktune_tuned::rmsnorm_fwd(props, ktune_tuned::Dtype::bf16, y, x, w, rows, hidden, hidden,
                                                     hidden, 1e-6f, stream, &choice);
    if (s != ktune_tuned::Status::ok) return static_cast<int>(s);
    s = ktune_tuned::rmsnorm_fwd_gemma(props, ktune_tuned::Dtype::bf16, y, x, w, rows, hidden, hidden, hidden, 1e-6f);
    return static_cast<int>(s) + static_cast<int>(choice.level);
}
)";
    const std::string log = (dir() / "nvcc.log").string();
    const std::string cmd = fmt::format("{} -std=c++17 -arch=sm_90 -Xcompiler=-Wall,-Wextra -I{} -I{} -c {} -o {} > {} 2>&1",
                                        nvcc, source_root(), out, cu.string(), (dir() / "user.o").string(), log);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text(log);
    EXPECT_EQ(read_text(log).find("warning"), std::string::npos) << read_text(log);
    EXPECT_TRUE(std::filesystem::exists(dir() / "user.o"));
}

}  // namespace
}  // namespace ktune::test
