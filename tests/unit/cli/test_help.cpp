// `ktune --help` and every subcommand's --help exit 0 and name their options (tests/data/cli/cases.yaml, `help:`).
#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ktune_test_config.hpp"
#include "tests/unit/cli/cli_runner.hpp"

namespace ktune::cli_test {
namespace {

using ::testing::HasSubstr;

struct HelpCase {
    std::vector<std::string> args;
    std::vector<std::string> mentions;
};

std::vector<HelpCase> load_help_cases() {
    std::vector<HelpCase> out;
    const YAML::Node root = YAML::LoadFile((fs::path(KTUNE_TEST_DATA) / "cli" / "cases.yaml").string());
    for (const auto& n : root["help"]) {
        HelpCase h;
        for (const auto& a : n["args"]) h.args.push_back(a.as<std::string>());
        for (const auto& m : n["mentions"]) h.mentions.push_back(m.as<std::string>());
        out.push_back(std::move(h));
    }
    return out;
}

std::string help_name(const ::testing::TestParamInfo<HelpCase>& info) {
    std::string name = "ktune";
    for (const auto& a : info.param.args) name += "_" + a;
    for (char& ch : name)
        if (ch == '-') ch = '_';
    return name;
}

class Help : public ::testing::TestWithParam<HelpCase> {};

TEST_P(Help, ExitsZeroAndNamesEveryOption) {
    Sandbox box(help_name({GetParam(), 0}));
    std::vector<std::string> args = GetParam().args;
    args.push_back("--help");
    const RunResult r = run_ktune(box, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& m : GetParam().mentions) EXPECT_THAT(r.out, HasSubstr(m));
    EXPECT_TRUE(fs::is_empty(box.work())) << "--help must write nothing";
}

INSTANTIATE_TEST_SUITE_P(EveryCommand, Help, ::testing::ValuesIn(load_help_cases()), help_name);

}  // namespace
}  // namespace ktune::cli_test
