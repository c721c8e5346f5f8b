// The loader's bad-YAML corpus (tests/data/spaces/bad/, one mistake per file, checked at the library level by
// tests/unit/space/test_bad_spaces.cpp) through the command line: `ktune space FILE` and `ktune tune FILE
// --compile-only` must exit 2 with the file's expected message at its file and line, name the field where the
// mistake has one, and write nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "ktune_test_config.hpp"
#include "tests/unit/cli/cli_runner.hpp"

namespace ktune::cli_test {
namespace {

using ::testing::HasSubstr;

const fs::path bad_dir = fs::path(KTUNE_TEST_DATA) / "spaces" / "bad";

// Mistakes that have no field to name: the file as a whole, or YAML that does not parse.
const std::vector<std::string> without_field = {"empty_file.yaml", "root_is_a_list.yaml", "malformed_yaml.yaml",
                                                "malformed_indentation.yaml"};

std::vector<std::string> bad_files() {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(bad_dir))
        if (entry.path().extension() == ".yaml") names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The same conventions as the library test: line 1 "# expect: <substring>", the offending line marked "# <-".
struct Expectation {
    std::string message;
    int line = 0;
};
Expectation read_expectation(const fs::path& path) {
    std::istringstream in(read_text(path));
    std::string line;
    Expectation e;
    for (int n = 1; std::getline(in, line); ++n) {
        const std::string tag = "# expect: ";
        if (n == 1 && line.rfind(tag, 0) == 0) e.message = line.substr(tag.size());
        if (line.find("# <-") != std::string::npos) e.line = n;
    }
    return e;
}

std::string regex_escape(const std::string& s) {
    return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

void expect_rejected(const std::string& file, const std::vector<std::string>& command) {
    const fs::path path = bad_dir / file;
    const Expectation expected = read_expectation(path);
    ASSERT_FALSE(expected.message.empty()) << path << " must start with '# expect: <message substring>'";

    Sandbox box(command[0] + "_" + file);
    std::vector<std::string> args = {"--db",        (box.work() / "ktune.db").string(),
                                     "--cache-dir", (box.work() / "cache").string(),
                                     command[0],    path.string()};
    args.insert(args.end(), command.begin() + 1, command.end());
    const auto before = snapshot(box.work());
    const RunResult r = run_ktune(box, args);

    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(expected.message));
    // "<path>:<line>: <field>: <message>", the line being the marked one when the file marks one.
    const std::string line = expected.line > 0 ? std::to_string(expected.line) : "[0-9]+";
    const bool has_field = std::find(without_field.begin(), without_field.end(), file) == without_field.end();
    const std::string field = has_field ? R"( [A-Za-z_][A-Za-z0-9_.\[\]]*:)" : "";
    EXPECT_TRUE(std::regex_search(r.err, std::regex(regex_escape(path.string()) + ":" + line + ":" + field + " ")))
        << "expected " << path.string() << ":" << line << (has_field ? ": <field>" : "") << ": in\n"
        << r.err;
    const std::string changed = changes(before, snapshot(box.work()), box.work());
    EXPECT_TRUE(changed.empty()) << "ktune must write nothing for bad YAML, but:\n" << changed;
}

class BadSpaceThroughCli : public ::testing::TestWithParam<std::string> {};

TEST_P(BadSpaceThroughCli, SpaceCommandExits2NamingFileLineAndField) { expect_rejected(GetParam(), {"space"}); }

TEST_P(BadSpaceThroughCli, CompileOnlyTuneExits2NamingFileLineAndFieldAndWritesNothing) {
    expect_rejected(GetParam(), {"tune", "--compile-only"});
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadSpaceThroughCli, ::testing::ValuesIn(bad_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             return info.param.substr(0, info.param.size() - std::string(".yaml").size());
                         });

TEST(BadSpaceThroughCliCorpus, EveryFileWithoutAFieldStillExists) {
    for (const auto& f : without_field) EXPECT_TRUE(fs::exists(bad_dir / f)) << f;
}

}  // namespace
}  // namespace ktune::cli_test
