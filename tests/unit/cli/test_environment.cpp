// Where ktune finds its root, what a search-space name stands for, and the git revision (tuner/session/environment).
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "tests/common/temp_dir.hpp"
#include "tests/unit/cli/cli_runner.hpp"
#include "tuner/session/environment.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Sets an environment variable for one test (unset when value is null), restoring it afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        value ? ::setenv(name, value, 1) : ::unsetenv(name);
    }
    ~ScopedEnv() { m_old ? ::setenv(m_name, m_old->c_str(), 1) : ::unsetenv(m_name); }

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

class ScopedCwd {
public:
    explicit ScopedCwd(const fs::path& dir) : m_old(fs::current_path()) { fs::current_path(dir); }
    ~ScopedCwd() { fs::current_path(m_old); }

private:
    fs::path m_old;
};

TEST(GitRevision, OfARootWhoseNameHoldsAQuoteRunsNoShell) {
    const test::TempDir dir("ktune-git");
    const fs::path mark = dir.path() / "injected";
    const ScopedEnv revision("KTUNE_GIT_REVISION", nullptr);
    const ScopedEnv env("KTUNE_TEST_MARK", mark.c_str());
    const fs::path root = dir.path() / "it's'; touch \"$KTUNE_TEST_MARK\"; '";
    fs::create_directories(root);
    EXPECT_EQ(git_revision(root.string()), "unknown");  // not a repository
    EXPECT_FALSE(fs::exists(mark)) << "a shell ran the root's name as a command";
}

TEST(GitRevision, ReadsTheCommitOfARootWhoseNameHoldsAQuote) {
    const test::TempDir dir("ktune-git");
    const ScopedEnv revision("KTUNE_GIT_REVISION", nullptr);
    const fs::path root = dir.path() / "o'brien";
    fs::create_directories(root);
    const std::string q = cli_test::shell_quote(root.string());
    const std::string setup = "git init -q " + q + " && git -C " + q +
                              " -c user.name=t -c user.email=t@t commit -q "
                              "--allow-empty -m x && git -C " +
                              q + " rev-parse --short=12 HEAD > " +
                              cli_test::shell_quote((dir.path() / "head").string());
    if (std::system(setup.c_str()) != 0) GTEST_SKIP() << "git cannot make a repository here";
    std::string head = cli_test::read_text(dir.path() / "head");
    head.erase(head.find_last_not_of('\n') + 1);
    EXPECT_EQ(git_revision(root.string()), head);
}

TEST(ResolveRoot, OutsideACheckoutSaysWhereItLookedAndHowToNameTheRoot) {
    const test::TempDir dir("ktune-noroot");
    const ScopedEnv env("KTUNE_ROOT", nullptr);
    const ScopedCwd cwd(dir.path());
    try {
        resolve_root("");
        FAIL() << "no root was expected under " << dir.path();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_EQ(e.where(), "--root");
        EXPECT_THAT(e.message(), HasSubstr(fs::current_path().string() + " and the folders above it"));
        EXPECT_THAT(e.message(), HasSubstr("--root DIR or KTUNE_ROOT=DIR"));
    }
}

TEST(ResolveRoot, OutsideACheckoutFindsNoneWithoutFailing) {
    const test::TempDir dir("ktune-noroot");
    const ScopedEnv env("KTUNE_ROOT", nullptr);
    const ScopedCwd cwd(dir.path());
    EXPECT_FALSE(find_root("").has_value());
}

TEST(ResolveSpace, ASpaceNameIsItsFile) {
    const SpaceRef ref = resolve_space(KTUNE_SOURCE_ROOT, "rmsnorm_bwd");
    EXPECT_EQ(ref.filter(), "rmsnorm/bwd");
    EXPECT_THAT(ref.files, ElementsAre(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/rmsnorm_bwd.yaml"));
}

TEST(ResolveSpace, OpSlashVariantIsEverySpaceThatTunesIt) {
    const SpaceRef ref = resolve_space(KTUNE_SOURCE_ROOT, "linear_int4/fwd");
    EXPECT_EQ(ref.filter(), "linear_int4/fwd");
    EXPECT_EQ(ref.files.size(), 3u);
}

TEST(ResolveSpace, AnOpWithSeveralVariantsNamesThemAll) {
    const SpaceRef ref = resolve_space(KTUNE_SOURCE_ROOT, "glu");
    EXPECT_EQ(ref.filter(), "glu");
    EXPECT_THAT(ref.variants, ElementsAre("geglu", "geglu_cat", "swiglu", "swiglu_bwd", "swiglu_cat"));
}

TEST(ResolveSpace, AYamlFileIsThatFile) {
    const std::string path = std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/rmsnorm_gemma.yaml";
    EXPECT_EQ(resolve_space("", path).filter(), "rmsnorm/fwd_gemma");
}

TEST(ResolveSpacePath, ANameOfSeveralSpacesNamesTheCandidates) {
    try {
        resolve_space_path(KTUNE_SOURCE_ROOT, "linear_int8/fwd");
        FAIL() << "several spaces tune linear_int8/fwd";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_THAT(e.message(), HasSubstr("linear_int8, linear_int8_k14336, linear_int8_tails"));
    }
}

}  // namespace
}  // namespace ktune
