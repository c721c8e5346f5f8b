// Every configuration of every search space compiles for sm_90, and a configuration that breaks a constraint which
// depends only on the parameters and the dtype fails to compile (the kernel repeats it as a static_assert).
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ktune_test_config.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/space/search_space.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

std::vector<std::string> space_files() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(fs::path(KTUNE_SOURCE_ROOT) / "search_spaces"))
        if (e.path().extension() == ".yaml") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// One kernel of a search space: the file and, in a file of alternative kernels, the alternative's name.
struct SpaceKernel {
    std::string file;         // YAML path
    std::string alternative;  // "" for a file of one kernel
};

// The kernels of the search spaces grouped by the kernel template they instantiate: spaces that share one
// (linear_int4 and its _k14336 and _tails spaces; the alternatives that several glu spaces share) compile the union of
// their instantiations once. A space that does not load is a family of its own, so that its test reports the loader's
// error.
struct KernelFamily {
    std::string name;  // the kernel source's stem, or the space's when it does not load
    std::vector<SpaceKernel> kernels;
};

void PrintTo(const KernelFamily& f, std::ostream* os) {
    *os << f.name << " (";
    for (std::size_t i = 0; i < f.kernels.size(); ++i)
        *os << (i ? ", " : "") << fs::path(f.kernels[i].file).filename().string()
            << (f.kernels[i].alternative.empty() ? "" : ":" + f.kernels[i].alternative);
    *os << ")";
}

std::vector<KernelFamily> kernel_families() {
    std::map<std::string, KernelFamily> by_source;
    for (const std::string& file : space_files()) {
        std::vector<std::pair<std::string, SpaceKernel>> kernels;  // (source, kernel)
        try {
            for (const SearchSpace& k : SearchSpace::load_alternatives(file))
                kernels.push_back({k.kernel_source(), {file, k.alternative()}});
        } catch (const std::exception&) {
            kernels = {{file, {file, ""}}};
        }
        for (auto& [source, kernel] : kernels) {
            KernelFamily& f = by_source[source];
            f.name = fs::path(source).stem().string();
            f.kernels.push_back(std::move(kernel));
        }
    }
    std::vector<KernelFamily> out;
    for (auto& [source, f] : by_source) out.push_back(std::move(f));
    return out;
}

// The kernel `alternative` of `file` (throws as the loader does).
SearchSpace load_kernel(const SpaceKernel& k) {
    for (SearchSpace& s : SearchSpace::load_alternatives(k.file))
        if (s.alternative() == k.alternative) return std::move(s);
    throw std::runtime_error(k.file + " has no alternative " + k.alternative);
}

std::string test_name(std::string n) {
    for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

// One cache in the build tree for every test process: a rerun compiles only what changed. Entries are keyed by the
// sources and headers, so a cached kernel is this source's kernel; they are written atomically, so parallel test
// processes can share it.
CompileService& compile_service() {
    static CompileService jit{{KTUNE_SOURCE_ROOT,
                               [] {
                                   auto d = fs::path(KTUNE_BINARY_DIR) / "nvrtc-test-cache";
                                   fs::create_directories(d);
                                   return d.string();
                               }(),
                               "", 0}};
    return jit;
}

class CompileAll : public ::testing::TestWithParam<KernelFamily> {};

// Instantiations per NVRTC program: parsing the headers (cuda_fp16.h, cuda_bf16.h, ktune_device.cuh) is paid once per
// program, which for the small kernels costs more than instantiating them; a failed batch is retried kernel by kernel
// so that the failure names its kernel.
constexpr std::size_t kKernelsPerProgram = 16;

TEST_P(CompileAll, EveryValidConfigurationCompilesForSm90) {
    CompileService& jit = compile_service();
    std::map<std::string, std::set<std::string>> kernels;  // source -> name expressions
    for (const SpaceKernel& kernel : GetParam().kernels) {
        const SearchSpace space = load_kernel(kernel);
        for (const Problem& p : space.problems()) {
            kernels[space.reference_source()].insert(space.reference_name(p.dtype));
            if (space.is_library()) continue;  // a library baseline: only its reference is compiled
            for (const Config& c : space.valid_configs(p))
                kernels[space.kernel_source()].insert(space.kernel_name(c, p.dtype));
        }
    }
    ASSERT_FALSE(kernels.empty());
    auto request = [](const std::string& source, std::vector<std::string> names) {
        CompileRequest r;
        r.source_path = source;
        r.name_expressions = std::move(names);
        r.arch = "sm_90";
        return r;
    };
    std::vector<std::pair<CompileRequest, std::shared_future<CompileResult>>> jobs;
    std::size_t total = 0;
    for (const auto& [source, names] : kernels) {
        std::vector<std::string> batch;
        for (const std::string& name : names) {
            batch.push_back(name);
            ++total;
            if (batch.size() == kKernelsPerProgram || name == *names.rbegin()) {
                CompileRequest r = request(source, std::move(batch));
                batch.clear();
                auto fut = jit.submit(r);
                jobs.emplace_back(std::move(r), std::move(fut));
            }
        }
    }
    int failed = 0;
    std::size_t compiled = 0;
    for (auto& [req, fut] : jobs) {
        const CompileResult& r = fut.get();
        if (r.ok) {
            ASSERT_EQ(r.kernels.size(), req.name_expressions.size());
            for (const CompiledKernel& k : r.kernels) EXPECT_GT(k.info.registers, 0) << k.name_expression;
            compiled += r.kernels.size();
            continue;
        }
        for (const std::string& name : req.name_expressions) {
            const CompileResult one = jit.compile(request(req.source_path, {name}));
            if (one.ok)
                ++compiled;
            else if (++failed <= 5)
                ADD_FAILURE() << name << " failed to compile:\n" << one.log;
        }
    }
    EXPECT_EQ(failed, 0) << "of " << total << " kernels";
    EXPECT_EQ(compiled + std::size_t(failed), total);
}

// Constraints that read only parameters and DTYPE_BYTES can be checked by the compiler, so the kernel must refuse them.
class SpaceConstraints : public ::testing::TestWithParam<std::string> {};

TEST_P(SpaceConstraints, ConfigurationsBreakingAStaticConstraintFailToCompile) {
    int checked = 0;
    for (const SearchSpace& space : SearchSpace::load_alternatives(GetParam())) {
        std::set<std::string> parameter_names{"DTYPE_BYTES"};
        for (const auto& p : space.parameters()) parameter_names.insert(p.name);
        for (const Expression& constraint : space.constraints()) {
            const auto vars = constraint.variables();
            if (!std::includes(parameter_names.begin(), parameter_names.end(), vars.begin(), vars.end())) continue;
            for (Dtype d : space.dtypes()) {
                Problem any{d, {}};
                for (const auto& axis : space.axes()) any.shape.emplace_back(axis.name, axis.values.front());
                int per_constraint = 0;
                for (const Config& c : space.all_configs()) {
                    if (constraint.evaluate_bool(space.variables(c, any))) continue;
                    CompileRequest r;
                    r.source_path = space.kernel_source();
                    r.name_expressions = {space.kernel_name(c, d)};
                    const CompileResult res = compile_service().compile(r);
                    EXPECT_FALSE(res.ok) << r.name_expressions[0] << " breaks '" << constraint.text()
                                         << "' but compiled";
                    ++checked;
                    if (++per_constraint == 2) break;
                }
            }
        }
    }
    if (checked == 0) GTEST_SKIP() << "no constraint of this space depends on parameters alone";
}

INSTANTIATE_TEST_SUITE_P(KernelFamilies, CompileAll, ::testing::ValuesIn(kernel_families()),
                         [](const ::testing::TestParamInfo<KernelFamily>& info) { return test_name(info.param.name); });

INSTANTIATE_TEST_SUITE_P(SearchSpaces, SpaceConstraints, ::testing::ValuesIn(space_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             return test_name(fs::path(info.param).stem().string());
                         });

}  // namespace
}  // namespace ktune
