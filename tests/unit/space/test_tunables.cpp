// Parameters of every kind (tests/data/spaces/good/tunables.yaml): a bool, named choices, and integers of any sign.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "tests/unit/space/space_test_util.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SearchSpace tunables() { return SearchSpace::load_file(std::string(KTUNE_TEST_DATA) + "/spaces/good/tunables.yaml"); }

const Problem k_problem{Dtype::fp32, {{"N", 1000}}};

Config find(const SearchSpace& s, const std::string& key) {
    for (const Config& c : s.all_configs())
        if (c.key() == key) return c;
    ADD_FAILURE() << "no configuration " << key;
    return {};
}

TEST(Tunables, LoadsABoolTwoChoicesAndIntegersOfAnySign) {
    const SearchSpace s = tunables();
    ASSERT_EQ(s.parameters().size(), 4u);
    const ParameterSpec& flag = s.parameters()[0];
    EXPECT_EQ(flag.kind, ParameterKind::boolean);
    EXPECT_THAT(flag.values, ElementsAre(0, 1));
    EXPECT_THAT(flag.labels, ElementsAre("false", "true"));
    EXPECT_EQ(s.parameters()[1].kind, ParameterKind::choice);
    EXPECT_THAT(s.parameters()[1].labels, ElementsAre("simt", "wgmma"));
    EXPECT_EQ(s.parameters()[3].kind, ParameterKind::integer);
    EXPECT_THAT(s.parameters()[3].values, ElementsAre(-1, 0, 2));
    EXPECT_TRUE(s.parameters()[3].labels.empty());
}

TEST(Tunables, GivesEveryDistinctChoiceNameItsOwnConstant) {
    const SearchSpace s = tunables();
    std::set<std::int64_t> numbers;
    for (const ParameterSpec& p : s.parameters())
        if (p.kind == ParameterKind::choice) numbers.insert(p.values.begin(), p.values.end());
    EXPECT_EQ(numbers.size(), 4u);  // simt, wgmma, float4, float2
}

TEST(Tunables, EnumeratesEveryKindWithReadableKeysInDeclarationOrder) {
    const SearchSpace s = tunables();
    const std::vector<Config> all = s.all_configs();
    ASSERT_EQ(all.size(), 24u);
    EXPECT_EQ(all.front().key(), "FLAG=false,ENGINE=simt,VT=float4,OFFSET=-1");
    EXPECT_EQ(all.back().key(), "FLAG=true,ENGINE=wgmma,VT=float2,OFFSET=2");
}

TEST(Tunables, EvaluatesConstraintsWithChoiceNamesAsConstantsAndBoolsAsZeroOrOne) {
    const SearchSpace s = tunables();
    EXPECT_EQ(s.valid_configs(k_problem).size(), 15u);
    EXPECT_EQ(s.failed_constraint(find(s, "FLAG=false,ENGINE=simt,VT=float2,OFFSET=0"), k_problem),
              "ENGINE == wgmma || VT == float4");
    EXPECT_EQ(s.failed_constraint(find(s, "FLAG=true,ENGINE=wgmma,VT=float2,OFFSET=-1"), k_problem),
              "!FLAG || OFFSET >= 0");
    EXPECT_TRUE(s.is_valid(find(s, "FLAG=false,ENGINE=simt,VT=float4,OFFSET=-1"), k_problem));
}

TEST(Tunables, ReadsChoicesInLaunchExpressions) {
    const SearchSpace s = tunables();
    EXPECT_EQ(s.launch(find(s, "FLAG=false,ENGINE=wgmma,VT=float2,OFFSET=0"), k_problem, SearchSpace::nominal_sm_count)
                  .block[0],
              128u);
    EXPECT_EQ(s.launch(find(s, "FLAG=false,ENGINE=simt,VT=float4,OFFSET=0"), k_problem, SearchSpace::nominal_sm_count)
                  .block[0],
              256u);
    EXPECT_NO_THROW(s.check_launches());
}

TEST(Tunables, SubstitutesLabelsAndSignedIntegersIntoTheKernelName) {
    const SearchSpace s = tunables();
    EXPECT_EQ(s.kernel_name(find(s, "FLAG=true,ENGINE=wgmma,VT=float2,OFFSET=2"), Dtype::bf16),
              "tunables<__nv_bfloat16, true, Engine::wgmma, float2, 2>");
    EXPECT_EQ(s.kernel_name(find(s, "FLAG=false,ENGINE=simt,VT=float4,OFFSET=-1"), Dtype::fp32),
              "tunables<float, false, Engine::simt, float4, -1>");
}

TEST(Tunables, ParsesEveryKeyBackIntoTheSameConfiguration) {
    const SearchSpace s = tunables();
    for (const Config& c : s.all_configs()) EXPECT_EQ(s.parse_config(c.key(), "test"), c) << c.key();
}

TEST(Tunables, ParsesAKeyWhoseParametersComeInAnotherOrder) {
    const SearchSpace s = tunables();
    EXPECT_EQ(s.parse_config("OFFSET=0,VT=float2,ENGINE=wgmma,FLAG=true", "test").key(),
              "FLAG=true,ENGINE=wgmma,VT=float2,OFFSET=0");
}

TEST(Tunables, KeepsIntegerKeysByteIdenticalAndParsesThemBack) {
    const SearchSpace s = SearchSpace::load_file(std::string(KTUNE_TEST_DATA) + "/spaces/good/full.yaml");
    const Config c = s.all_configs().at(5);
    EXPECT_EQ(c.key(), format_named_values(c.values));
    EXPECT_EQ(c.key(), "BLOCK=64,VEC=4,UNROLL=3");
    EXPECT_TRUE(c.labels.empty());
    EXPECT_EQ(s.parse_config("BLOCK=64,VEC=4,UNROLL=3", "test"), c);
}

TEST(Tunables, ParsesAFilterByChoiceNameAndBool) {
    const SearchSpace s = tunables();
    const NamedValues f = s.parse_config_filter("ENGINE=wgmma,FLAG=true", "--config");
    const Config c = find(s, "FLAG=true,ENGINE=wgmma,VT=float4,OFFSET=0");
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0], (std::pair<std::string, std::int64_t>{"ENGINE", c.at("ENGINE")}));
    EXPECT_EQ(f[1], (std::pair<std::string, std::int64_t>{"FLAG", 1}));
}

TEST(Tunables, RefusesAKeyWithAnUnknownChoiceNamingTheChoices) {
    const SearchSpace s = tunables();
    const Error e = bad_input_of([&] { s.parse_config_filter("ENGINE=tensor", "--config"); });
    EXPECT_THAT(e.message(), HasSubstr("'tensor' is not a choice of ENGINE"));
    EXPECT_THAT(e.message(), HasSubstr("simt, wgmma"));
    EXPECT_EQ(e.where(), "--config");
}

TEST(Tunables, RefusesAKeyThatLacksAParameterOrGivesOneTwice) {
    const SearchSpace s = tunables();
    EXPECT_THAT(bad_input_of([&] { s.parse_config("FLAG=true,ENGINE=simt,VT=float4", "db"); }).message(),
                HasSubstr("lacks parameter OFFSET"));
    EXPECT_THAT(bad_input_of([&] { s.parse_config_filter("FLAG=true,FLAG=false", "--config"); }).message(),
                HasSubstr("given twice"));
    EXPECT_THAT(bad_input_of([&] { s.parse_config_filter("FLAG=maybe", "--config"); }).message(),
                HasSubstr("FLAG is a bool"));
}

TEST(Tunables, AcceptsZeroAndNegativeIntegersInValuesAndRanges) {
    const std::string yaml =
        "op: t\n"
        "kernel: {source: k.cuh, name: \"k<{T}, {A}, {B}>\", reference: \"r<{T}>\"}\n"
        "parameters:\n  A: {values: [0, -2147483648, 2147483647]}\n  B: {range: [-3, 3, 3]}\n"
        "launch: {grid: [\"M\"], block: [\"32\"]}\n"
        "problems: {axes: {M: [1]}, dtypes: [fp16]}\n"
        "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n";
    const SearchSpace s = SearchSpace::load_string(yaml, "signed.yaml");
    EXPECT_THAT(s.parameters()[0].values, ElementsAre(0, -2147483648LL, 2147483647));
    EXPECT_THAT(s.parameters()[1].values, ElementsAre(-3, 0, 3));
    EXPECT_EQ(s.kernel_name(s.all_configs().front(), Dtype::fp16), "k<__half, 0, -3>");
}

}  // namespace
}  // namespace ktune
