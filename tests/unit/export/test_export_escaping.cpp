// Database strings (device keys and names, notes, dates) reach the generated header only as escaped string literals
// or as comment text that cannot end its comment: a hostile device key cannot inject code that nvcc compiles.
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

using ExportEscaping = ExportTest;

const std::string k_hostile =
    "evil \"quoted\" back\\slash\n#include </etc/passwd>\n#error injected */ /* ?\?/ tail\\\n}; int x = 1; //\\";

DeviceInfo hostile_device() {
    DeviceInfo d = h100_sxm();
    d.name = "NVIDIA " + k_hostile;
    d.key = "key " + k_hostile;
    return d;
}

RenderedHeader render_hostile(const std::string& db) {
    Store store = Store::open(db);
    fill_golden_store(store);
    const DeviceInfo d = hostile_device();
    store.upsert_device(d);
    store.record(tuned(d, Dtype::bf16, 16, 4096, k_medium, 2.0));
    ExportOptions o = golden_options();
    o.note = "a note\n#error from the note */";
    o.generated_at = "2026\n#error from the date";
    return render_header(store, SearchSpace::load_file(rmsnorm_space_path()), o);
}

std::set<std::string> directive_lines(const std::string& text) {
    std::set<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const std::size_t i = line.find_first_not_of(" \t");
        if (i != std::string::npos && line[i] == '#') out.insert(line);
    }
    return out;
}

TEST_F(ExportEscaping, LeavesThePreprocessorLinesOfTheHeaderUnchangedByAHostileDevice) {
    const RenderedHeader hostile = render_hostile(db_path());
    ASSERT_EQ(hostile.result.device_keys.size(), 3u);
    Store store = Store::open((dir() / "golden.db").string());
    fill_golden_store(store);
    const RenderedHeader golden = render_header(store, SearchSpace::load_file(rmsnorm_space_path()), golden_options());
    EXPECT_EQ(directive_lines(hostile.text), directive_lines(golden.text));
}

TEST_F(ExportEscaping, EndsNoCommentLineWithABackslash) {
    std::istringstream in(render_hostile(db_path()).text);
    for (std::string line; std::getline(in, line);) {
        if (line.find("//") != std::string::npos) {
            EXPECT_NE(line.back(), '\\') << line;
        }
    }
}

TEST_F(ExportEscaping, HoldsTheHostileStringsExactlyAsTheHostCompilerReadsThem) {
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
    const std::filesystem::path out = dir() / "include";
    std::filesystem::create_directories(out);
    std::ofstream(out / "ktune_tuned_rmsnorm_fwd.hpp", std::ios::binary) << render_hostile(db_path()).text;
    std::ofstream(dir() / "main.cpp") << R"(#define KTUNE_TUNED_HOST_ONLY
#include "ktune_tuned_rmsnorm_fwd.hpp"
#include <cstdio>
int main() {
    for (const auto& d : ktune_tuned::rmsnorm_fwd_table::devices) {
        std::fputs(d.key, stdout);
        std::fputc('\0', stdout);
        std::fputs(d.name, stdout);
        std::fputc('\0', stdout);
    }
}
)";
    const std::string log = (dir() / "cxx.log").string();
    const std::string exe = (dir() / "read_back").string();
    const std::string cmd =
        fmt::format("c++ -std=c++17 -I{} -I{} {} -o {} > {} 2>&1 && {} > {}", source_root(), out.string(),
                    (dir() / "main.cpp").string(), exe, log, exe, (dir() / "strings.bin").string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text(log);
    const std::string strings = read_text((dir() / "strings.bin").string());
    const DeviceInfo d = hostile_device();
    EXPECT_NE(strings.find(std::string(1, '\0') + d.key + '\0' + d.name + '\0'), std::string::npos);
}

TEST_F(ExportEscaping, RefusesAKernelSourceThatAQuotedIncludeCannotHold) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    std::string yaml = read_text(rmsnorm_space_path());
    const std::string source = "source: kernels/rmsnorm/rmsnorm_fwd.cuh";
    yaml.replace(yaml.find(source), source.size(), "source: kernels/rms\\\"norm.cuh");
    const std::string spec = "op_spec: ../kernels/";  // the copy lives elsewhere: name the tree's declaration
    yaml.replace(yaml.find(spec), spec.size(), "op_spec: " + source_root() + "/kernels/");
    const std::string path = (dir() / "rmsnorm.yaml").string();
    std::ofstream(path) << yaml;
    ExportOptions o = golden_options();
    o.space_path = path;
    const Error e = error_of([&] { render_header(store, SearchSpace::load_file(path), o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(e.message().find("cannot be #included"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace ktune::test
