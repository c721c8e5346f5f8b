// Every file in tests/data/spaces/bad/ holds exactly one mistake. Its first line says what the error message must
// contain ("# expect: <substring>"); the line the error must point at, if any, carries the comment "# <-".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path bad_dir = fs::path(KTUNE_TEST_DATA) / "spaces" / "bad";

std::vector<std::string> bad_files() {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(bad_dir))
        if (entry.path().extension() == ".yaml") names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

struct Expectation {
    std::string message;
    int line = 0;  // 0: any line
};

Expectation read_expectation(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    Expectation e;
    for (int n = 1; std::getline(in, line); ++n) {
        const std::string tag = "# expect: ";
        if (n == 1 && line.rfind(tag, 0) == 0) e.message = line.substr(tag.size());
        if (line.find("# <-") != std::string::npos) e.line = n;
    }
    return e;
}

class BadSpace : public ::testing::TestWithParam<std::string> {};

TEST_P(BadSpace, IsRejectedWithTheExpectedMessageFileAndLine) {
    const fs::path path = bad_dir / GetParam();
    const Expectation expected = read_expectation(path);
    ASSERT_FALSE(expected.message.empty()) << path << " must start with '# expect: <message substring>'";
    try {
        SearchSpace::load_file(path.string());
        FAIL() << path << " loaded without an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input) << e.what();
        EXPECT_THAT(e.message(), HasSubstr(expected.message)) << e.what();
        const std::string file = "bad/" + GetParam();
        if (expected.line > 0)
            EXPECT_THAT(e.where(), HasSubstr(file + ":" + std::to_string(expected.line))) << e.what();
        else
            EXPECT_TRUE(std::regex_search(e.where(),
                                          std::regex(std::regex_replace(file, std::regex("\\."), "\\.") + ":[0-9]+")))
                << e.what();
    }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
    return info.param.substr(0, info.param.size() - std::string(".yaml").size());
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadSpace, ::testing::ValuesIn(bad_files()), test_name);

TEST(BadSpaceCorpus, HasAtLeastTwentyFiles) { EXPECT_GE(bad_files().size(), 20u); }

}  // namespace
}  // namespace ktune
