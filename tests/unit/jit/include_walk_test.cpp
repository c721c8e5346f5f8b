// collect_sources() confines what a search space and its kernels can make ktune read: the kernel root and the explicit
// include folders, symlinks resolved; a refusal names the path and never quotes the file.
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/jit/include_walk.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* k_secret = "SECRET-FIRST-LINE not a kernel";

// A kernel root under root/ and a file outside it holding k_secret.
class IncludeWalk : public ::testing::Test {
protected:
    IncludeWalk() {
        m_dir.write("outside/secret.txt", std::string(k_secret) + "\n");
        m_dir.write("root/kernels/ok/ok.cuh", "#pragma once\n#include \"kernels/ok/helper.cuh\"\n");
        m_dir.write("root/kernels/ok/helper.cuh", "#pragma once\n#include <cuda_fp16.h>\n");
    }
    fs::path root() const { return m_dir.path() / "root"; }
    fs::path secret() const { return m_dir.path() / "outside" / "secret.txt"; }

    Error refusal(const std::string& source, const std::vector<fs::path>& include_dirs = {}) const {
        try {
            detail::collect_sources(root(), source, {}, include_dirs);
        } catch (const Error& e) {
            EXPECT_EQ(e.category(), ErrorCategory::bad_input) << e.what();
            EXPECT_THAT(std::string(e.what()), Not(HasSubstr("SECRET"))) << "the file's contents were echoed";
            return e;
        }
        ADD_FAILURE() << source << " was read";
        return Error(ErrorCategory::internal, "not thrown");
    }

    test::TempDir m_dir{"ktune-include-walk"};
};

TEST_F(IncludeWalk, ReadsASourceAndItsQuotedHeadersUnderTheRoot) {
    const auto files = detail::collect_sources(root(), "kernels/ok/ok.cuh", {});
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].name, "kernels/ok/ok.cuh");
    EXPECT_EQ(files[1].name, "kernels/ok/helper.cuh");
}

TEST_F(IncludeWalk, RefusesAnAbsoluteKernelSource) {
    EXPECT_THAT(refusal(secret().string()).message(), HasSubstr("relative to the kernel root"));
}

TEST_F(IncludeWalk, RefusesAKernelSourceThatStepsOutOfTheRoot) {
    const Error e = refusal("kernels/../../outside/secret.txt");
    EXPECT_EQ(e.where(), "kernels/../../outside/secret.txt");
}

TEST_F(IncludeWalk, RefusesASymlinkInsideTheRootThatPointsOutside) {
    fs::create_symlink(secret(), root() / "kernels" / "link.cuh");
    EXPECT_THAT(refusal("kernels/link.cuh").message(), HasSubstr("outside the kernel root"));
}

TEST_F(IncludeWalk, RefusesAQuotedIncludeThatLeavesTheRoot) {
    m_dir.write("root/kernels/bad/up.cuh", "#include \"../../../outside/secret.txt\"\n");
    const Error e = refusal("kernels/bad/up.cuh");
    EXPECT_THAT(e.message(), HasSubstr("outside the kernel root"));
    EXPECT_EQ(e.where(), "kernels/bad/up.cuh:1");
}

TEST_F(IncludeWalk, RefusesAnAbsoluteQuotedInclude) {
    m_dir.write("root/kernels/bad/abs.cuh", "// header\n#include \"" + secret().string() + "\"\n");
    const Error e = refusal("kernels/bad/abs.cuh");
    EXPECT_THAT(e.message(), HasSubstr("absolute path"));
    EXPECT_EQ(e.where(), "kernels/bad/abs.cuh:2");
}

TEST_F(IncludeWalk, RefusesAnAngleIncludeThatStepsUp) {
    m_dir.write("root/kernels/bad/angle.cuh", "#include <../outside/secret.txt>\n");
    EXPECT_THAT(refusal("kernels/bad/angle.cuh").message(), HasSubstr("may not step up"));
}

TEST_F(IncludeWalk, FindsASourceInAnExplicitIncludeFolder) {
    m_dir.write("extra/kernels/more.cuh", "#pragma once\n");
    const auto files = detail::collect_sources(root(), "kernels/more.cuh", {}, {m_dir.path() / "extra"});
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].path, fs::canonical(m_dir.path() / "extra" / "kernels" / "more.cuh"));
}

TEST_F(IncludeWalk, AcceptsAQuotedIncludeFromAnExplicitIncludeFolder) {
    m_dir.write("extra/shared/common.cuh", "#pragma once\n");
    m_dir.write("root/kernels/uses/uses.cuh", "#include \"shared/common.cuh\"\n");
    const auto files = detail::collect_sources(root(), "kernels/uses/uses.cuh", {}, {m_dir.path() / "extra"});
    EXPECT_EQ(files.size(), 2u);
}

TEST(FindIncludes, TellsQuotedFromAngleIncludes) {
    const auto includes = detail::find_includes("#include <a.h>\n#include \"b.h\"\n// #include \"c.h\"\n");
    ASSERT_EQ(includes.size(), 2u);
    EXPECT_TRUE(includes[0].angle);
    EXPECT_EQ(includes[0].target, "a.h");
    EXPECT_FALSE(includes[1].angle);
    EXPECT_EQ(includes[1].line, 2);
}

}  // namespace
}  // namespace ktune
