// Every configuration of every search space compiles for sm_90, and a configuration that breaks a constraint which
// depends only on the parameters and the dtype fails to compile (the kernel repeats it as a static_assert).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

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

class CompileAll : public ::testing::TestWithParam<std::string> {
protected:
    static std::string cache_dir() {
        static const std::string dir = [] {
            auto d = fs::temp_directory_path() / ("ktune-nvrtc-test-" + std::to_string(::getpid()));
            fs::create_directories(d);
            return d.string();
        }();
        return dir;
    }
    CompileService m_jit{{KTUNE_SOURCE_ROOT, cache_dir(), "", 0}};
};

TEST_P(CompileAll, EveryValidConfigurationCompilesForSm90) {
    const SearchSpace space = SearchSpace::load_file(GetParam());
    std::set<std::pair<std::string, std::string>> kernels;  // (source, name expression)
    for (const Problem& p : space.problems()) {
        kernels.emplace(space.reference_source(), space.reference_name(p.dtype));
        for (const Config& c : space.valid_configs(p)) kernels.emplace(space.kernel_source(), space.kernel_name(c, p.dtype));
    }
    ASSERT_FALSE(kernels.empty());
    std::vector<std::pair<std::string, std::shared_future<CompileResult>>> jobs;
    for (const auto& [source, name] : kernels) {
        CompileRequest r;
        r.source_path = source;
        r.name_expressions = {name};
        r.arch = "sm_90";
        jobs.emplace_back(name, m_jit.submit(r));
    }
    int failed = 0;
    for (auto& [name, fut] : jobs) {
        const CompileResult& r = fut.get();
        if (r.ok) {
            EXPECT_GT(r.kernels.at(0).info.registers, 0) << name;
        } else if (++failed <= 5) {
            ADD_FAILURE() << name << " failed to compile:\n" << r.log;
        }
    }
    EXPECT_EQ(failed, 0) << "of " << jobs.size() << " kernels";
}

// Constraints that read only parameters and DTYPE_BYTES can be checked by the compiler, so the kernel must refuse them.
TEST_P(CompileAll, ConfigurationsBreakingAStaticConstraintFailToCompile) {
    const SearchSpace space = SearchSpace::load_file(GetParam());
    std::set<std::string> parameter_names{"DTYPE_BYTES"};
    for (const auto& p : space.parameters()) parameter_names.insert(p.name);
    int checked = 0;
    for (const Expression& constraint : space.constraints()) {
        const auto vars = constraint.variables();
        if (!std::includes(parameter_names.begin(), parameter_names.end(), vars.begin(), vars.end())) continue;
        for (Dtype d : space.dtypes()) {
            Problem any{d, {}};
            for (const auto& axis : space.axes()) any.shape.emplace_back(axis.name, axis.values.front());
            int per_constraint = 0;
            for (const Config& c : space.all_configs()) {
                if (constraint.evaluate_bool(expression_variables(c, any))) continue;
                CompileRequest r;
                r.source_path = space.kernel_source();
                r.name_expressions = {space.kernel_name(c, d)};
                const CompileResult res = m_jit.compile(r);
                EXPECT_FALSE(res.ok) << r.name_expressions[0] << " breaks '" << constraint.text()
                                     << "' but compiled";
                ++checked;
                if (++per_constraint == 2) break;
            }
        }
    }
    if (checked == 0) GTEST_SKIP() << "no constraint of this space depends on parameters alone";
}

INSTANTIATE_TEST_SUITE_P(SearchSpaces, CompileAll, ::testing::ValuesIn(space_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string n = fs::path(info.param).stem().string();
                             for (char& ch : n)
                                 if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return n;
                         });

}  // namespace
}  // namespace ktune
