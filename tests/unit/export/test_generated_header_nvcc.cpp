// A freshly generated header compiles with nvcc, with the kernel templates, in a user's translation unit that calls
// the dispatcher; two generated headers (fwd and fwd_gemma) compile together; every built-in op's header and the
// user ops' compile in the GPU check program (bench/export_check.cu). Skipped without nvcc.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

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
    const std::string cmd =
        fmt::format("{} -std=c++17 -arch=sm_90 -Xcompiler=-Wall,-Wextra -I{} -I{} -c {} -o {} > {} 2>&1", nvcc,
                    source_root(), out, cu.string(), (dir() / "user.o").string(), log);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text(log);
    EXPECT_EQ(read_text(log).find("warning"), std::string::npos) << read_text(log);
    EXPECT_TRUE(std::filesystem::exists(dir() / "user.o"));
}

// The first valid configuration of `kernel` for the first problem of each dtype that has one: one tuned
// configuration per problem class, enough to instantiate the kernel of every alternative at every dtype.
void record_one_per_dtype(Store& store, const SearchSpace& kernel) {
    std::set<Dtype> done;
    for (const Problem& p : kernel.problems()) {
        if (done.count(p.dtype)) continue;
        std::optional<Config> first;
        kernel.for_each_config([&](const Config& c) {
            if (kernel.is_valid(c, p)) first = c;
            return !first;
        });
        if (!first) continue;
        store.record(kernel_result(h100_sxm(), kernel, p, *first, 1.0));
        done.insert(p.dtype);
    }
}

struct CommandRun {
    int status = -1;
    double seconds = 0;
};

// Runs the commands on `jobs` threads, in order; the exit status and time of each.
std::vector<CommandRun> run_parallel(const std::vector<std::string>& commands, unsigned jobs) {
    std::vector<CommandRun> runs(commands.size());
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (unsigned j = 0; j < std::max(1u, jobs); ++j)
        pool.emplace_back([&] {
            for (std::size_t i; (i = next++) < commands.size();) {
                const auto start = std::chrono::steady_clock::now();
                runs[i].status = std::system(commands[i].c_str());
                runs[i].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            }
        });
    for (std::thread& t : pool) t.join();
    return runs;
}

unsigned compile_jobs() {
    const char* v = std::getenv("KTUNE_EXPORT_JOBS");
    return v != nullptr && std::atoi(v) > 0 ? static_cast<unsigned>(std::atoi(v)) : 2u;  // CI's two cores
}

ExportOptions builtin_options(const SearchSpace& s, const std::string& file, const std::string& out) {
    ExportOptions o;
    o.op = s.op();
    o.variant = s.variant();
    o.space_path = file;
    o.root = source_root();
    o.out_dir = out;
    o.generated_at = "2026-11-22T00:00:00Z";
    return o;
}

// Every op ktune ships (the first search space of each op and variant; a library baseline has no kernel to export),
// the user op of examples/user_op and the one under tests/data: each exported from a small store (one configuration
// per dtype and alternative) and compiled with nvcc with what bench/export_check.cu, the program that runs a header
// against the reference kernel on a GPU host, uses of it: the dispatcher, its generic entry, the buffer tables and
// the reference launch. Four translation units, compiled KTUNE_EXPORT_JOBS (2) at a time.
TEST_F(GeneratedHeaderNvcc, CompilesTheHeaderOfEveryBuiltInOpAndOfTheUserOpsWithTheirReferences) {
    const std::string nvcc = find_nvcc();
    if (nvcc.empty()) GTEST_SKIP() << "nvcc not found (set KTUNE_NVCC)";
    const std::string out = (dir() / "include").string();
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());

    struct Exported {
        ExportResult result;
        std::string include;  // the folder the op's kernel sources are relative to
    };
    std::vector<Exported> exported;
    const std::vector<SearchSpace> user = SearchSpace::load_alternatives(user_space_path());
    fill_user_store(store, user);
    exported.push_back({export_header(store, user_options(out + "/data_op")), user_root()});

    const std::string example = source_root() + "/examples/user_op";
    const std::vector<SearchSpace> example_op = SearchSpace::load_alternatives(example + "/bias_gelu.yaml");
    ExportOptions example_options = builtin_options(example_op.front(), example + "/bias_gelu.yaml", out + "/user_op");
    example_options.root = example;
    Store example_store = Store::open((dir() / "user_op.db").string());
    example_store.upsert_device(h100_sxm());
    for (const SearchSpace& k : example_op) record_one_per_dtype(example_store, k);
    exported.push_back({export_header(example_store, example_options), example});

    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(source_root() + "/search_spaces"))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::set<std::string> seen, declared, library, programmatic;
    std::vector<std::string> builtin;
    for (const auto& f : files) {
        const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(f.string());
        const SearchSpace& s = kernels.front();
        declared.insert(s.op() + "/" + s.variant());
        if (s.is_library()) library.insert(s.op() + "/" + s.variant());
        if (s.is_library() || !seen.insert(s.op() + "/" + s.variant()).second) continue;
        for (const SearchSpace& k : kernels) {
            record_one_per_dtype(store, k);
            if (k.programmatic_launch()) programmatic.insert("ktune_tuned_" + s.op() + "_" + s.variant() + ".hpp");
        }
        exported.push_back({export_header(store, builtin_options(s, f.string(), out)), source_root()});
        builtin.push_back(s.op() + "/" + s.variant());
    }
    std::cout << "built-in ops exported: " << builtin.size() << "\n";
    // Every op and variant with a kernel: every one the spaces tune but those only a library tunes (linear/fwd,
    // cuBLAS's baseline). At least the 28 of this writing. gemm_act's and ffn_gated's wgmma kernels need sm_90a: every
    // unit is compiled for it.
    std::size_t library_only = 0;
    for (const std::string& v : library) library_only += seen.contains(v) ? 0 : 1;
    EXPECT_EQ(builtin.size(), declared.size() - library_only);
    EXPECT_GE(builtin.size(), 28u);

    // Two translation units hold every header (the two user ops, which share a name, one in each), each odr-using
    // what bench/export_check.cu uses of a header: nvcc's fixed cost is paid per unit, not per op. The check program
    // itself compiles for decode attention (scratch, named values, a cluster launch), and examples/user_op's program
    // against its op's header.
    std::vector<std::string> commands, logs;
    const auto nvcc_command = [&](const std::string& name, const std::string& includes, const std::string& flags,
                                  const std::string& source) {
        logs.push_back((dir() / (name + ".log")).string());
        commands.push_back(
            fmt::format("{} -std=c++17 -arch=sm_90a -Xcompiler=-Wall,-Wextra {} {} -c {} -o {} > {} 2>&1", nvcc,
                        includes, flags, source, (dir() / (name + ".o")).string(), logs.back()));
    };
    const auto stem_of = [](const ExportResult& r) { return r.function.substr(r.function.find("::") + 2); };
    const auto folder_of = [](const ExportResult& r) {
        return std::filesystem::path(r.header_path).parent_path().string();
    };
    for (std::size_t unit = 0; unit < 2; ++unit) {
        std::string code = "#define KTUNE_TUNED_WITH_REFERENCE\n", uses;
        std::set<std::string> includes = {"-I" + source_root()};
        for (std::size_t i = unit; i < exported.size(); i += 2) {
            const ExportResult& r = exported[i].result;
            const std::string stem = stem_of(r);
            includes.insert("-I" + exported[i].include);
            includes.insert("-I" + folder_of(r));
            code += fmt::format("#include \"{}\"\n", r.file_name);
            uses += fmt::format(
                "void use_{0}() {{\n    namespace t = ktune_tuned::{0}_table;\n    keep(&ktune_tuned::{0}_launch, "
                "&ktune_tuned::{0}_reference_launch, &t::buffer_elements, &t::buffer_range, &t::buffer_pad, "
                "t::buffer_types[0][0], t::buffer_roles[0], t::tolerances[0][0], t::entries[0].shape[0]);\n}}\n",
                stem);
        }
        const auto cu = dir() / fmt::format("unit{}.cu", unit);
        std::ofstream(cu) << code << "template <typename... F>\nvoid keep(F...) {}\n" << uses;
        std::string flags;
        for (const std::string& i : includes) flags += (flags.empty() ? "" : " ") + i;
        nvcc_command(fmt::format("unit{}", unit), flags, "", cu.string());
    }
    // The ops with a wgmma kernel (kernel.arch_specific) tell their user the target; the others keep sm_90.
    for (const Exported& e : exported) {
        const std::string stem = stem_of(e.result);
        const bool wgmma = stem.rfind("gemm_act_", 0) == 0 || stem.rfind("ffn_gated_", 0) == 0 ||
                           stem.rfind("prefill_attention_", 0) == 0 || stem == "linear_skinny_fwd";
        EXPECT_EQ(read_text(e.result.header_path).find("-arch=sm_90a") != std::string::npos, wgmma) << stem;
    }
    // The kernels that wait for the kernel before them (kernel.programmatic_launch) launch with the attribute, the
    // others as plain launches: the decode path's weight-streaming and small kernels at least.
    EXPECT_GE(programmatic.size(), 5u);
    for (const Exported& e : exported) {
        const std::string text = read_text(e.result.header_path);
        EXPECT_EQ(text.find("cudaLaunchAttributeProgrammaticStreamSerialization") != std::string::npos,
                  programmatic.contains(e.result.file_name))
            << e.result.file_name;
    }
    const auto attention = std::find_if(exported.begin(), exported.end(),
                                        [&](const Exported& e) { return stem_of(e.result) == "decode_attention_fwd"; });
    EXPECT_NE(attention, exported.end());
    if (attention != exported.end())
        nvcc_command("export_check", fmt::format("-I{} -I{}", source_root(), folder_of(attention->result)),
                     fmt::format("-DKTUNE_CHECK_HEADER='\"{}\"' -DKTUNE_CHECK_STEM=decode_attention_fwd",
                                 attention->result.file_name),
                     source_root() + "/bench/export_check.cu");
    nvcc_command("user_op_main", fmt::format("-I{} -I{}", folder_of(exported[1].result), example), "",
                 example + "/main.cu");
    const auto start = std::chrono::steady_clock::now();
    const std::vector<CommandRun> runs = run_parallel(commands, compile_jobs());
    std::cout << "compiled " << commands.size() << " translation units in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s, "
              << compile_jobs() << " at a time:";
    for (std::size_t i = 0; i < commands.size(); ++i)
        std::cout << fmt::format(" {} {:.0f} s", std::filesystem::path(logs[i]).stem().string(), runs[i].seconds);
    std::cout << "\n";
    for (std::size_t i = 0; i < commands.size(); ++i) {
        EXPECT_EQ(runs[i].status, 0) << commands[i] << "\n" << read_text(logs[i]);
        EXPECT_EQ(read_text(logs[i]).find("warning"), std::string::npos) << commands[i] << "\n" << read_text(logs[i]);
    }
}

}  // namespace
}  // namespace ktune::test
