// Kernel Tuner / KTT T1 input files read as ktune search spaces (tuner/interop/t1.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file.hpp"
#include "ktune_test_config.hpp"
#include "tuner/interop/t1.hpp"

namespace ktune {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string k_fixture = std::string(KTUNE_TEST_DATA) + "/t1/vector_add.t1.json";

json fixture() { return json::parse(read_file(k_fixture, "the fixture")); }

SearchSpace fixture_space() {
    std::vector<SearchSpace> kernels = load_t1_space(k_fixture);
    EXPECT_EQ(kernels.size(), 1u);
    return std::move(kernels.at(0));
}

// The error a T1 document gives, as "where: message".
std::string error_of(const json& doc) {
    try {
        SearchSpace::load_alternatives_string(t1_space_document(doc.dump(), "in.t1.json"), "in.t1.json");
    } catch (const Error& e) {
        return e.where() + ": " + e.message();
    }
    return "no error";
}

TEST(T1, TunablesBecomeParametersPassedAsDefines) {
    const SearchSpace s = fixture_space();
    EXPECT_EQ(s.op(), "vector_add");
    EXPECT_EQ(s.kernel_source(), "vector_add.cu");
    ASSERT_EQ(s.parameters().size(), 2u);
    EXPECT_EQ(s.parameters()[0].name, "block_size_x");
    EXPECT_THAT(s.parameters()[0].values, ElementsAre(64, 128, 256, 512, 1024));
    EXPECT_THAT(s.parameters()[1].values, ElementsAre(1, 2, 3, 4));  // list(range(1, 5))
    const Config c = s.parse_config("block_size_x=128,tile_size_x=2", "test");
    EXPECT_EQ(s.kernel_name(c, Dtype::fp32), "vector_add");
    EXPECT_THAT(s.compile_options(c), ElementsAre("-Dblock_size_x=128", "-Dtile_size_x=2"));
}

TEST(T1, TheReferenceIsTheKernelAtEveryDefault) {
    const SearchSpace s = fixture_space();
    EXPECT_EQ(s.reference_name(Dtype::fp32), "vector_add");
    EXPECT_THAT(s.reference_compile_options(), ElementsAre("-Dblock_size_x=256", "-Dtile_size_x=1"));
    const LaunchGeometry g = s.reference_launch(s.problems().at(0));
    EXPECT_EQ(g.block[0], 256u);
    EXPECT_EQ(g.grid[0], 3907u);  // ceil(1e6 / 256)
}

TEST(T1, ProblemSizeIsTheProblemAndGridDivDividesIt) {
    const SearchSpace s = fixture_space();
    ASSERT_EQ(s.problems().size(), 1u);
    const Problem p = s.problems()[0];
    EXPECT_EQ(p.key(), "fp32:problem_size_x=1000000");
    const LaunchGeometry g =
        s.launch(s.parse_config("block_size_x=512,tile_size_x=4", "test"), p, SearchSpace::nominal_sm_count);
    EXPECT_EQ(g.grid[0], 489u);  // ceil(1e6 / 2048)
    EXPECT_EQ(g.block[0], 512u);
}

TEST(T1, ChainedAndPythonLogicConditionsMeanWhatPythonMeans) {
    const SearchSpace s = fixture_space();
    const Problem p = s.problems().at(0);
    EXPECT_FALSE(s.is_valid(s.parse_config("block_size_x=64,tile_size_x=1", "test"), p));  // 64 < 128
    EXPECT_TRUE(s.is_valid(s.parse_config("block_size_x=64,tile_size_x=2", "test"), p));
    EXPECT_FALSE(s.is_valid(s.parse_config("block_size_x=1024,tile_size_x=3", "test"), p));  // not (...)
    EXPECT_TRUE(s.is_valid(s.parse_config("block_size_x=1024,tile_size_x=2", "test"), p));
    EXPECT_EQ(s.count_valid_configs(p), 17u);
}

TEST(T1, BuffersAndScalarsBecomeTheOpsArguments) {
    const SearchSpace s = fixture_space();
    ASSERT_NE(s.declared_op(), nullptr);
    const Problem p = s.problems().at(0);
    const auto buffers = s.declared_op()->buffers(p);
    ASSERT_EQ(buffers.size(), 3u);
    EXPECT_EQ(buffers[0].name, "c");
    EXPECT_EQ(buffers[0].role, BufferRole::output);
    EXPECT_EQ(buffers[1].elements, 1000000u);
    EXPECT_EQ(s.declared_op()->arguments(p).size(), 4u);
    EXPECT_EQ(s.declared_op()->bytes_moved(p), 12e6);
}

TEST(T1, AnotherLanguageIsRefusedNamingTheField) {
    json doc = fixture();
    doc["KernelSpecification"]["Language"] = "OpenCL";
    EXPECT_THAT(error_of(doc), HasSubstr("in.t1.json: KernelSpecification.Language: ktune tunes CUDA kernels"));
}

TEST(T1, FloatTunablesAreRefused) {
    json doc = fixture();
    doc["ConfigurationSpace"]["TuningParameters"][1]["Type"] = "float";
    EXPECT_THAT(error_of(doc), HasSubstr("TuningParameters[1].Type: float tunables do not map"));
}

TEST(T1, ExactDivisionInAConditionIsRefused) {
    json doc = fixture();
    doc["ConfigurationSpace"]["Conditions"][0]["Expression"] = "block_size_x / 32 >= 2";
    EXPECT_THAT(error_of(doc), HasSubstr("Conditions[0].Expression: 'block_size_x / 32 >= 2': '/'"));
}

TEST(T1, ConstantMemoryArgumentsAreRefused) {
    json doc = fixture();
    doc["KernelSpecification"]["Arguments"][1]["MemType"] = "Constant";
    EXPECT_THAT(error_of(doc), HasSubstr("Arguments[1].MemType: constant-memory arguments do not map"));
}

TEST(T1, ReferenceDataFilesAreRefused) {
    json doc = fixture();
    doc["KernelSpecification"]["ReferenceArguments"] =
        json::array({{{"Name", "c"}, {"TargetName", "c"}, {"FillType", "BinaryRaw"}}});
    EXPECT_THAT(error_of(doc), HasSubstr("ReferenceArguments: reference data does not map"));
}

TEST(T1, ABufferSizedByAParameterIsRefused) {
    json doc = fixture();
    doc["KernelSpecification"]["Arguments"][1]["Size"] = "ProblemSize[0] * tile_size_x";
    EXPECT_THAT(error_of(doc), HasSubstr("depends on parameter tile_size_x"));
}

TEST(T1, NotJsonIsRefused) { EXPECT_THROW(t1_space_document("{ not json", "x.t1.json"), Error); }

}  // namespace
}  // namespace ktune
