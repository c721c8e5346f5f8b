// Shards: --shard parsing, the index a scheduler gives an array task, and that the shards of a space cover it once.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/error.hpp"
#include "tuner/session/shard.hpp"

namespace ktune {
namespace {

Error error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected a ktune::Error";
    return Error(ErrorCategory::internal, "no error");
}

GetEnv environment(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

TEST(Shard, IndexOverCountIsParsed) {
    const Shard s = parse_shard("2/4", "--shard");
    EXPECT_EQ(s.index, 2);
    EXPECT_EQ(s.count, 4);
    EXPECT_EQ(s.text(), "2/4");
    EXPECT_TRUE(parse_shard("0/1", "--shard").whole());
}

TEST(Shard, MalformedTextIsRefusedNamingTheOption) {
    for (const char* bad : {"", "2", "/4", "2/", "a/4", "2/b", "2/4/8", " 2/4", "2 /4", "1.5/4", "0x1/4"}) {
        const Error e = error_of([&] { parse_shard(bad, "--shard"); });
        EXPECT_EQ(e.category(), ErrorCategory::bad_input) << bad;
        EXPECT_EQ(e.where(), "--shard") << bad;
        EXPECT_NE(e.message().find("INDEX/COUNT"), std::string::npos) << bad;
    }
}

TEST(Shard, AnIndexOutsideTheCountIsRefusedSayingShardsCountFromZero) {
    EXPECT_NE(error_of([] { parse_shard("4/4", "--shard"); }).message().find("0 to 3"), std::string::npos);
    EXPECT_NE(error_of([] { parse_shard("-1/4", "--shard"); }).message().find("0 to 3"), std::string::npos);
    EXPECT_NE(error_of([] { parse_shard("0/0", "--shard"); }).message().find("number of shards"), std::string::npos);
    EXPECT_NE(error_of([] { parse_shard("0/99999999999999999999", "--shard"); }).message().find("INDEX/COUNT"),
              std::string::npos);
}

TEST(Shard, EveryConfigurationOfEveryProblemFallsInExactlyOneShard) {
    for (int count : {1, 2, 3, 4, 7}) {
        std::map<std::pair<std::size_t, std::size_t>, int> taken;
        for (int i = 0; i < count; ++i) {
            const Shard s{i, count};
            for (std::size_t p = 0; p < 5; ++p)
                for (std::size_t c = 0; c < 11; ++c)
                    if (s.takes_config(p, c)) ++taken[{p, c}];
        }
        EXPECT_EQ(taken.size(), 55u) << count;
        for (const auto& [item, n] : taken) EXPECT_EQ(n, 1) << count;
    }
}

TEST(Shard, EveryShardGetsAShareOfAProblemWithEnoughConfigurations) {
    for (int i = 0; i < 4; ++i) {
        int mine = 0;
        for (std::size_t c = 0; c < 100; ++c) mine += Shard{i, 4}.takes_config(3, c);
        EXPECT_EQ(mine, 25);
    }
}

TEST(Shard, NoSchedulerMeansNoShard) { EXPECT_FALSE(shard_from_environment(environment({})).has_value()); }

TEST(Shard, ASlurmArrayTaskIsTheShardOfItsIdFromTheArraysFirst) {
    const auto s = shard_from_environment(
        environment({{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_MIN", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->text(), "1/4");
    EXPECT_EQ(
        shard_from_environment(environment({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}))->text(),
        "3/4");
}

TEST(Shard, ASlurmArrayWithoutItsCountOrWithAStepIsRefusedNamingTheVariable) {
    EXPECT_EQ(error_of([] {
                  shard_from_environment(environment({{"SLURM_ARRAY_TASK_ID", "1"}}));
              }).where(),
              "SLURM_ARRAY_TASK_COUNT");
    EXPECT_EQ(error_of([] {
                  shard_from_environment(environment(
                      {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_STEP", "4"}}));
              }).where(),
              "SLURM_ARRAY_TASK_STEP");
    const Error e = error_of([] {
        shard_from_environment(environment({{"SLURM_ARRAY_TASK_ID", "x1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
    });
    EXPECT_EQ(e.where(), "SLURM_ARRAY_TASK_ID");
    EXPECT_NE(e.message().find("'x1' is not a whole number"), std::string::npos);
    // Ids that are not consecutive from the first (--array=1,3,5): the index falls outside the count.
    EXPECT_EQ(error_of([] {
                  shard_from_environment(environment(
                      {{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}));
              }).category(),
              ErrorCategory::bad_input);
}

TEST(Shard, AKubernetesIndexedJobIsItsCompletionIndexOfTheCountTheManifestSets) {
    EXPECT_EQ(shard_from_environment(environment({{"JOB_COMPLETION_INDEX", "2"}, {"KTUNE_SHARD_COUNT", "8"}}))->text(),
              "2/8");
    EXPECT_EQ(error_of([] {
                  shard_from_environment(environment({{"JOB_COMPLETION_INDEX", "2"}}));
              }).where(),
              "KTUNE_SHARD_COUNT");
    EXPECT_EQ(error_of([] {
                  shard_from_environment(environment({{"JOB_COMPLETION_INDEX", "8"}, {"KTUNE_SHARD_COUNT", "8"}}));
              }).where(),
              "JOB_COMPLETION_INDEX");
}

}  // namespace
}  // namespace ktune
