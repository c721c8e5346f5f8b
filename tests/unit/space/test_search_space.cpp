#include "ktune_test_config.hpp"
#include "tuner/space/search_space.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "tests/unit/space/space_test_util.hpp"

namespace ktune {
namespace {

using ::testing::HasSubstr;

const std::string data_dir = std::string(KTUNE_TEST_DATA) + "/spaces";

SearchSpace load_good(const std::string& name) { return SearchSpace::load_file(data_dir + "/good/" + name); }

Config config(std::int64_t block, std::int64_t vec, std::int64_t unroll) {
    return Config{{{"BLOCK", block}, {"VEC", vec}, {"UNROLL", unroll}}};
}

Problem problem(Dtype d, std::int64_t m, std::int64_t h) { return Problem{d, {{"M", m}, {"H", h}}}; }

// A small space for tests that need their own YAML; `extra` is appended at the end.
std::string small_space(const std::string& launch, const std::string& extra = "") {
    return "op: t\n"
           "kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\", reference: \"r<{T}>\"}\n"
           "parameters:\n  BLOCK: {values: [32, 2048]}\n" +
           launch +
           "problems: {axes: {M: [1, 70000]}, dtypes: [fp16]}\n"
           "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n" +
           extra;
}

TEST(SearchSpace, MinimalFileLoadsWithDefaults) {
    SearchSpace s = load_good("minimal.yaml");
    EXPECT_EQ(s.op(), "copy");
    EXPECT_EQ(s.variant(), "default");
    EXPECT_EQ(s.kernel_source(), "kernels/copy/copy.cuh");
    EXPECT_EQ(s.reference_source(), "kernels/copy/copy.cuh");  // defaults to kernel.source
    EXPECT_TRUE(s.constraints().empty());
    EXPECT_THAT(s.file(), HasSubstr("good/minimal.yaml"));
}

TEST(SearchSpace, ALibraryBaselineHasNoSourceNoLaunchAndItsReference) {
    const SearchSpace s = SearchSpace::load_file(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/linear_cublas.yaml");
    EXPECT_TRUE(s.is_library());
    EXPECT_EQ(s.library(), "cublas_gemm");
    EXPECT_EQ(s.kernel_source(), "library:cublas_gemm");
    EXPECT_EQ(s.reference_source(), "kernels/quant_linear/quant_linear_reference.cuh");
    const Problem p{Dtype::bf16, {{"M", 1}, {"N", 4096}, {"K", 4096}}};
    EXPECT_EQ(s.valid_configs(p).size(), 9u);  // cublasGemmEx and cuBLASLt's eight ranks
    EXPECT_EQ(s.kernel_name(s.valid_configs(p).front(), Dtype::bf16), "cublas_gemm<__nv_bfloat16, 1, 1>");
    EXPECT_EQ(s.reference_launch(p).grid[0], 512u);
    EXPECT_FALSE(load_good("minimal.yaml").is_library());
}

TEST(SearchSpace, TheCublasLtGemmActBaselineNamesItsEpilogueAndRanks) {
    const SearchSpace s =
        SearchSpace::load_file(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces/gemm_act_gelu_cublaslt.yaml");
    EXPECT_EQ(s.library(), "cublaslt_gemm_act");
    const Problem p{Dtype::bf16, {{"M", 2048}, {"N", 14336}, {"K", 4096}}};
    EXPECT_EQ(s.valid_configs(p).size(), 8u);  // cuBLASLt's eight ranks with the GELU_BIAS epilogue
    EXPECT_EQ(s.kernel_name(s.valid_configs(p).front(), Dtype::bf16), "cublaslt_gemm_act<__nv_bfloat16, 1, 1>");
    EXPECT_EQ(s.reference_launch(p).grid[0], 2048u * 14336u / 256u);  // one output a thread
}

TEST(SearchSpace, MinimalFileReusesLaunchForTheReference) {
    SearchSpace s = load_good("minimal.yaml");
    Problem p{Dtype::fp32, {{"N", 1000}}};
    LaunchGeometry g = s.reference_launch(p);
    EXPECT_EQ(g.grid[0], 4u);  // ceil_div(1000, 256)
    EXPECT_EQ(g.block[0], 256u);
    EXPECT_EQ(g.shared_bytes, 0u);
}

TEST(SearchSpace, FullFileLoadsEveryField) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.op(), "rowwise");
    EXPECT_EQ(s.variant(), "fwd");
    EXPECT_EQ(s.reference_source(), "kernels/rowwise/rowwise_reference.cuh");
    ASSERT_EQ(s.parameters().size(), 3u);
    EXPECT_EQ(s.parameters()[0].name, "BLOCK");
    EXPECT_EQ(s.parameters()[0].doc, "threads per block");
    EXPECT_THAT(s.parameters()[0].where, HasSubstr("full.yaml:12: parameters.BLOCK"));
    EXPECT_EQ(s.constraints().size(), 4u);
    EXPECT_EQ(s.dtypes(), (std::vector<Dtype>{Dtype::fp32, Dtype::bf16}));
}

TEST(SearchSpace, ParameterKindsExpandToTheirValues) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.parameters()[0].values, (std::vector<std::int64_t>{64, 128, 256}));  // pow2: [64, 256]
    EXPECT_EQ(s.parameters()[1].values, (std::vector<std::int64_t>{1, 2, 4, 8}));    // values
    EXPECT_EQ(s.parameters()[2].values, (std::vector<std::int64_t>{1, 3}));          // range: [1, 3, 2]
}

TEST(SearchSpace, CartesianProductOfThreeByFourByTwoHasTwentyFourConfigurations) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.cartesian_size(), 24u);
    EXPECT_EQ(s.all_configs().size(), 24u);
}

TEST(SearchSpace, ConfigurationsAreInDeclarationOrderFirstParameterOutermost) {
    auto configs = load_good("full.yaml").all_configs();
    EXPECT_EQ(configs[0], config(64, 1, 1));
    EXPECT_EQ(configs[1], config(64, 1, 3));
    EXPECT_EQ(configs[2], config(64, 2, 1));
    EXPECT_EQ(configs[8], config(128, 1, 1));
    EXPECT_EQ(configs[23], config(256, 8, 3));
    EXPECT_EQ(configs[0].key(), "BLOCK=64,VEC=1,UNROLL=1");
}

TEST(SearchSpace, ProblemsHaveDtypesOutermostThenAxesInOrder) {
    auto problems = load_good("full.yaml").problems();
    ASSERT_EQ(problems.size(), 8u);
    std::vector<std::string> keys;
    for (const auto& p : problems) keys.push_back(p.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"fp32:M=1,H=1000", "fp32:M=1,H=4608", "fp32:M=4096,H=1000",
                                              "fp32:M=4096,H=4608", "bf16:M=1,H=1000", "bf16:M=1,H=4608",
                                              "bf16:M=4096,H=1000", "bf16:M=4096,H=4608"}));
}

// Worked by hand in full.yaml's terms: BLOCK*VEC <= 1024 drops (256, 8); H % (VEC*UNROLL) drops UNROLL=3 when
// H=1000; !(BLOCK == 64 && UNROLL == 3) drops 64/3; VEC*DTYPE_BYTES <= 16 drops VEC=8 for fp32.
TEST(SearchSpace, ConstraintsReduceTheSpaceToTheCountWorkedByHand) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.valid_configs(problem(Dtype::fp32, 1, 4608)).size(), 15u);     // 3*3*2 - 3
    EXPECT_EQ(s.valid_configs(problem(Dtype::fp32, 1, 1000)).size(), 9u);      // 3*3*1
    EXPECT_EQ(s.valid_configs(problem(Dtype::bf16, 1, 4608)).size(), 18u);     // 11*2 - 4
    EXPECT_EQ(s.valid_configs(problem(Dtype::bf16, 4096, 1000)).size(), 11u);  // 11*1
}

TEST(SearchSpace, IsValidAgreesWithValidConfigs) {
    SearchSpace s = load_good("full.yaml");
    Problem p = problem(Dtype::bf16, 1, 4608);
    EXPECT_TRUE(s.is_valid(config(128, 8, 3), p));
    EXPECT_FALSE(s.is_valid(config(256, 8, 1), p));
    EXPECT_FALSE(s.is_valid(config(64, 1, 3), p));
}

TEST(SearchSpace, FailedConstraintNamesTheFirstOneThatDoesNotHold) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.failed_constraint(config(256, 8, 3), problem(Dtype::bf16, 1, 1000)), "BLOCK * VEC <= 1024");
    EXPECT_EQ(s.failed_constraint(config(128, 8, 3), problem(Dtype::bf16, 1, 1000)), "H % (VEC * UNROLL) == 0");
    EXPECT_EQ(s.failed_constraint(config(128, 8, 1), problem(Dtype::fp32, 1, 1000)), "VEC * DTYPE_BYTES <= 16");
    EXPECT_EQ(s.failed_constraint(config(128, 8, 1), problem(Dtype::bf16, 1, 1000)), "");
}

TEST(SearchSpace, KernelNameSubstitutesTheElementTypeAndEveryParameter) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.kernel_name(config(256, 8, 3), Dtype::bf16), "rowwise_fwd<__nv_bfloat16, 256, 8, 3>");
    EXPECT_EQ(s.kernel_name(config(64, 1, 1), Dtype::fp32), "rowwise_fwd<float, 64, 1, 1>");
}

TEST(SearchSpace, ReferenceNameSubstitutesTheElementType) {
    EXPECT_EQ(load_good("full.yaml").reference_name(Dtype::fp16), "rowwise_reference<__half>");
}

TEST(SearchSpace, LaunchGeometryEvaluatesGridBlockAndSharedBytes) {
    LaunchGeometry g = load_good("full.yaml")
                           .launch(config(128, 4, 1), problem(Dtype::bf16, 4096, 4608), SearchSpace::nominal_sm_count);
    EXPECT_EQ(g.grid[0], 9u);  // ceil_div(4608, 128 * 4 * 1)
    EXPECT_EQ(g.grid[1], 4096u);
    EXPECT_EQ(g.grid[2], 1u);
    EXPECT_EQ(g.block[0], 128u);
    EXPECT_EQ(g.threads(), 128);
    EXPECT_EQ(g.shared_bytes, 16u);  // 128 / 32 * 4
}

TEST(SearchSpace, ReferenceLaunchUsesItsOwnExpressions) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_EQ(s.reference_launch(problem(Dtype::fp32, 7, 4608)).block[0], 1024u);  // min(H, 1024)
    EXPECT_EQ(s.reference_launch(problem(Dtype::fp32, 7, 1000)).block[0], 1000u);
    EXPECT_EQ(s.reference_launch(problem(Dtype::fp32, 7, 1000)).grid[0], 7u);
}

TEST(SearchSpace, ToleranceIsTheOneDeclaredForTheDtype) {
    SearchSpace s = load_good("full.yaml");
    EXPECT_DOUBLE_EQ(s.tolerance(Dtype::bf16).rtol, 1.6e-2);
    EXPECT_DOUBLE_EQ(s.tolerance(Dtype::bf16).atol, 1e-3);
    EXPECT_DOUBLE_EQ(s.tolerance(Dtype::fp32).rtol, 1e-5);
}

TEST(SearchSpace, ToleranceForAnUndeclaredDtypeIsAnError) {
    SearchSpace s = load_good("minimal.yaml");
    EXPECT_THROW(s.tolerance(Dtype::bf16), Error);
}

TEST(SearchSpace, BlockOverTheThreadLimitIsAnErrorNamingTheExpression) {
    SearchSpace s = SearchSpace::load_string(
        small_space("launch: {grid: [M], block: [BLOCK]}\n", "reference_launch: {grid: [M], block: ['1']}\n"),
        "mem.yaml");
    EXPECT_EQ(
        s.launch(Config{{{"BLOCK", 32}}}, Problem{Dtype::fp16, {{"M", 1}}}, SearchSpace::nominal_sm_count).block[0],
        32u);
    try {
        s.launch(Config{{{"BLOCK", 2048}}}, Problem{Dtype::fp16, {{"M", 1}}}, SearchSpace::nominal_sm_count);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_THAT(e.message(), HasSubstr("'BLOCK' is 2048"));
        EXPECT_THAT(e.where(), HasSubstr("mem.yaml:5: launch.block[0]"));
    }
}

TEST(SearchSpace, ThreadsOverTheLimitAcrossDimensionsIsAnError) {
    SearchSpace s = SearchSpace::load_string(small_space("launch: {grid: [M], block: ['32', '64']}\n"), "mem.yaml");
    try {
        s.launch(Config{{{"BLOCK", 32}}}, Problem{Dtype::fp16, {{"M", 1}}}, SearchSpace::nominal_sm_count);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_THAT(e.message(), HasSubstr("2048 threads"));
    }
}

TEST(SearchSpace, GridDimensionOfZeroIsAnError) {
    SearchSpace s = SearchSpace::load_string(small_space("launch: {grid: ['M - 1'], block: ['32']}\n"), "mem.yaml");
    try {
        s.launch(Config{{{"BLOCK", 32}}}, Problem{Dtype::fp16, {{"M", 1}}}, SearchSpace::nominal_sm_count);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_THAT(e.message(), HasSubstr("grid.x 'M - 1' is 0"));
    }
}

TEST(SearchSpace, GridYOverItsLimitIsAnError) {
    SearchSpace s = SearchSpace::load_string(small_space("launch: {grid: ['1', M], block: ['32']}\n"), "mem.yaml");
    EXPECT_THROW(s.launch(Config{{{"BLOCK", 32}}}, Problem{Dtype::fp16, {{"M", 70000}}}, SearchSpace::nominal_sm_count),
                 Error);
}

TEST(SearchSpace, TheLaunchGridMayReadTheGpusStreamingMultiprocessors) {
    // A kernel that strides over its tiles launches one block per SM: the grid follows the GPU it runs on.
    const std::string reference = "reference_launch: {grid: [M], block: ['1']}\n";
    const SearchSpace s = SearchSpace::load_string(
        small_space("launch: {grid: ['min(ceil_div(M, 4), SMS)'], block: [BLOCK]}\n", reference), "mem.yaml");
    const Config c{{{"BLOCK", 32}}};
    EXPECT_EQ(s.launch(c, Problem{Dtype::fp16, {{"M", 70000}}}, 132).grid[0], 132u);
    EXPECT_EQ(s.launch(c, Problem{Dtype::fp16, {{"M", 70000}}}, 114).grid[0], 114u);
    EXPECT_EQ(s.launch(c, Problem{Dtype::fp16, {{"M", 1}}}, 132).grid[0], 1u);
    EXPECT_NE(s.launch_text().find("SMS"), std::string::npos);  // part of the kernel's identity, as any launch text
    EXPECT_TRUE(s.grid_reads_sm_count());
    EXPECT_FALSE(SearchSpace::load_string(small_space("launch: {grid: [M], block: [BLOCK]}\n", reference), "mem.yaml")
                     .grid_reads_sm_count());
}

TEST(SearchSpace, OnlyTheKernelsLaunchGridMayReadTheStreamingMultiprocessors) {
    // The space, its constraints, the block and shared memory are the same on every GPU; the reference's launch too.
    const std::string reference = "reference_launch: {grid: [M], block: ['1']}\n";
    for (const auto& [launch, extra] : std::vector<std::pair<std::string, std::string>>{
             {"launch: {grid: [M], block: ['min(BLOCK, SMS)']}\n", reference},
             {"launch: {grid: [M], block: [BLOCK], shared_bytes: 'SMS'}\n", reference},
             {"launch: {grid: [M], block: [BLOCK]}\nconstraints: ['BLOCK < SMS']\n", reference},
             {"launch: {grid: [M], block: [BLOCK]}\n", "reference_launch: {grid: ['SMS'], block: ['1']}\n"}}) {
        try {
            SearchSpace::load_string(small_space(launch, extra), "mem.yaml");
            FAIL() << "no error for " << launch << extra;
        } catch (const Error& e) {
            EXPECT_EQ(e.category(), ErrorCategory::bad_input);
            EXPECT_THAT(e.message(), HasSubstr("only the kernel's launch grid may")) << launch << extra;
        }
    }
}

TEST(SearchSpace, EmptyConstraintsSectionMeansEveryConfigurationIsValid) {
    SearchSpace s =
        SearchSpace::load_string(small_space("launch: {grid: [M], block: ['32']}\n", "constraints:\n"), "c.yaml");
    EXPECT_TRUE(s.constraints().empty());
    EXPECT_EQ(s.valid_configs(Problem{Dtype::fp16, {{"M", 1}}}).size(), 2u);
}

TEST(SearchSpace, ConstraintDividingByZeroMakesIsValidThrow) {
    SearchSpace s = SearchSpace::load_string(
        small_space("launch: {grid: [M], block: ['32']}\n", "constraints: [\"M / (BLOCK - 32) > 1\"]\n"), "div.yaml");
    EXPECT_THROW(s.is_valid(Config{{{"BLOCK", 32}}}, Problem{Dtype::fp16, {{"M", 1}}}), Error);
    EXPECT_TRUE(s.is_valid(Config{{{"BLOCK", 2048}}}, Problem{Dtype::fp16, {{"M", 70000}}}));
}

TEST(SearchSpace, LoadStringNamesTheGivenPathInErrors) {
    try {
        SearchSpace::load_string("op: [", "virtual/space.yaml");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_THAT(e.where(), HasSubstr("virtual/space.yaml:1"));
    }
}

TEST(SearchSpace, MissingFileIsBadInputNamingThePath) {
    try {
        SearchSpace::load_file(data_dir + "/no_such_file.yaml");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_THAT(e.where(), HasSubstr("no_such_file.yaml"));
    }
}

TEST(SearchSpace, SpaceIsMovable) {
    SearchSpace a = load_good("full.yaml");
    SearchSpace b = std::move(a);
    EXPECT_EQ(b.valid_configs(problem(Dtype::fp32, 1, 1000)).size(), 9u);
}

TEST(SearchSpace, ConcurrentValidityChecksAgree) {
    SearchSpace s = load_good("full.yaml");
    auto configs = s.all_configs();
    auto problems = s.problems();
    std::vector<std::size_t> expected;
    for (const auto& p : problems) expected.push_back(s.valid_configs(p).size());
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t)
        threads.emplace_back([&] {
            for (int round = 0; round < 20; ++round)
                for (std::size_t i = 0; i < problems.size(); ++i) {
                    std::size_t n = 0;
                    for (const auto& c : configs) n += s.is_valid(c, problems[i]) ? 1 : 0;
                    if (n != expected[i]) ++wrong;
                }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

TEST(SearchSpacePrune, PruneRulesExcludeConfigurationsButAreNotLegalityConstraints) {
    const SearchSpace s = SearchSpace::load_string(
        "op: t\n"
        "kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\", reference: \"r<{T}>\"}\n"
        "parameters:\n  BLOCK: {values: [32, 64, 128, 256]}\n"
        "constraints: ['BLOCK <= 128']\n"
        "prune: ['BLOCK >= 64']\n"
        "launch: {grid: [M], block: [BLOCK]}\n"
        "reference_launch: {grid: [M], block: ['32']}\n"
        "problems: {axes: {M: [1]}, dtypes: [fp16]}\n"
        "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n",
        "prune.yaml");
    ASSERT_EQ(s.constraints().size(), 1u);
    ASSERT_EQ(s.prune().size(), 1u);
    const Problem p{Dtype::fp16, {{"M", 1}}};
    const auto valid = s.valid_configs(p);
    ASSERT_EQ(valid.size(), 2u);
    EXPECT_EQ(valid[0].key(), "BLOCK=64");
    EXPECT_EQ(valid[1].key(), "BLOCK=128");
    EXPECT_EQ(s.failed_constraint(Config{{{"BLOCK", 32}}}, p), "BLOCK >= 64");
    EXPECT_EQ(s.failed_constraint(Config{{{"BLOCK", 256}}}, p), "BLOCK <= 128");
}

TEST(SearchSpacePrune, APruneRuleNamingAnUnknownVariableIsAnError) {
    try {
        SearchSpace::load_string(
            "op: t\n"
            "kernel: {source: k.cuh, name: \"k<{T}, {BLOCK}>\", reference: \"r<{T}>\"}\n"
            "parameters:\n  BLOCK: {values: [32]}\n"
            "prune: ['BLOKC >= 64']\n"
            "launch: {grid: [M], block: ['32']}\n"
            "problems: {axes: {M: [1]}, dtypes: [fp16]}\n"
            "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n",
            "prune.yaml");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("BLOKC"));
        EXPECT_THAT(e.where(), ::testing::HasSubstr("prune.yaml:5"));
    }
}

TEST(SearchSpaceBounds, ChecksTheLaunchOfEveryValidPairAndNamesTheFirstBadOneWithItsLine) {
    // A zero grid only for M = 1: a GPU run of M = 70000 alone would never see it.
    const SearchSpace s = SearchSpace::load_string(small_space("launch: {grid: [\"M / 2\"], block: [\"256\"]}\n",
                                                               "reference_launch: {grid: [\"M\"], block: [\"1\"]}\n"),
                                                   "mem.yaml");
    const Error e = bad_input_of([&] { s.check_launches(); });
    EXPECT_THAT(e.message(), HasSubstr("grid.x 'M / 2' is 0"));
    EXPECT_THAT(e.message(), HasSubstr("fp16:M=1"));
    EXPECT_EQ(e.where(), "mem.yaml:5: launch.grid[0]");
}

TEST(SearchSpaceBounds, RefusesABlockOfMoreThan1024ThreadsForAnyValidConfiguration) {
    const SearchSpace s = SearchSpace::load_string(small_space("launch: {grid: [\"M\"], block: [\"BLOCK\"]}\n",
                                                               "reference_launch: {grid: [\"M\"], block: [\"1\"]}\n"),
                                                   "mem.yaml");
    EXPECT_THAT(bad_input_of([&] { s.check_launches(); }).message(), HasSubstr("block.x 'BLOCK' is 2048"));
}

TEST(SearchSpaceBounds, RefusesSharedMemoryBeyondWhatABlockCanHave) {
    const SearchSpace s = SearchSpace::load_string(
        small_space("launch: {grid: [\"M\"], block: [\"32\"], shared_bytes: \"BLOCK * 128\"}\n",
                    "reference_launch: {grid: [\"M\"], block: [\"1\"]}\n"),
        "mem.yaml");
    EXPECT_THAT(bad_input_of([&] { s.check_launches(); }).message(), HasSubstr("shared_bytes 'BLOCK * 128' is 262144"));
}

TEST(SearchSpaceBounds, AcceptsTheLaunchesOfEveryShippedSpace) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(KTUNE_SOURCE_ROOT) + "/search_spaces")) {
        if (entry.path().extension() != ".yaml") continue;
        for (const SearchSpace& s : SearchSpace::load_alternatives(entry.path().string()))
            EXPECT_NO_THROW(s.check_launches()) << entry.path() << " " << s.alternative();
    }
}

TEST(SearchSpaceBounds, RefusesMoreConfigurationProblemPairsThanItCanCheckWithAClearError) {
    // 2^22 configurations (the most allowed) times 1024 problems: refused on load, not a std::bad_alloc later.
    const std::string yaml =
        "op: t\n"
        "kernel: {source: k.cuh, name: \"k<{T}, {A}, {B}>\", reference: \"r<{T}>\"}\n"
        "parameters:\n  A: {range: [1, 2048]}\n  B: {range: [1, 2048]}\n"
        "launch: {grid: [\"M\"], block: [\"32\"]}\n"
        "problems: {axes: {M: {range_placeholder}}, dtypes: [fp16]}\n"
        "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n";
    std::string axis = "[";
    for (int m = 1; m <= 1024; ++m) axis += (m > 1 ? ", " : "") + std::to_string(m);
    axis += "]";
    std::string text = yaml;
    text.replace(text.find("{range_placeholder}"), std::string("{range_placeholder}").size(), axis);
    const Error e = bad_input_of([&] { SearchSpace::load_string(text, "big.yaml"); });
    EXPECT_THAT(e.message(), HasSubstr("4194304 configurations x 1024 problems"));
    EXPECT_THAT(e.where(), HasSubstr(": parameters"));
}

TEST(SearchSpaceBounds, EnumeratesValidConfigurationsWithoutMaterialisingTheCartesianProduct) {
    const SearchSpace s = load_good("full.yaml");
    const Problem p = s.problems().front();
    std::uint64_t visited = 0;
    s.for_each_config([&](const Config&) { return ++visited < 3; });
    EXPECT_EQ(visited, 3u);  // stopped when asked
    EXPECT_EQ(s.count_valid_configs(p), s.valid_configs(p).size());
}

TEST(SearchSpaceBounds, VisitsConfigurationsInTheOrderOfAllConfigs) {
    const SearchSpace s = load_good("full.yaml");
    std::vector<Config> visited;
    s.for_each_config([&](const Config& c) {
        visited.push_back(c);
        return true;
    });
    EXPECT_EQ(visited, s.all_configs());
    EXPECT_EQ(visited.size(), s.cartesian_size());
}

TEST(SearchSpaceBounds, FindsADuplicateAmongManyValuesQuickly) {
    std::string values = "[";
    for (int v = 1; v <= 65536; ++v) values += std::to_string(v) + ", ";
    values += "65536]";
    const std::string yaml =
        "op: t\n"
        "kernel: {source: k.cuh, name: \"k<{T}, {A}>\", reference: \"r<{T}>\"}\n"
        "parameters:\n  A: {values: " +
        values +
        "}\n"
        "launch: {grid: [\"M\"], block: [\"32\"]}\n"
        "problems: {axes: {M: [1]}, dtypes: [fp16]}\n"
        "tolerances: {fp16: {rtol: 1e-3, atol: 1e-3}}\n";
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT(bad_input_of([&] { SearchSpace::load_string(yaml, "dup.yaml"); }).message(),
                HasSubstr("duplicate value 65536 in parameter A (also values[65535])"));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST(SearchSpaceBounds, QuotesAtMostAnExcerptOfAHugeValueInItsError) {
    // Not an identifier, so the op is refused and quoted.
    const std::string huge = "a" + std::string((1 << 22) - 1, '.');
    std::string yaml = small_space("launch: {grid: [M], block: ['32']}\n");
    yaml.replace(yaml.find("op: t"), 5, "op: " + huge);
    const Error e = bad_input_of([&] { SearchSpace::load_string(yaml, "huge.yaml"); });
    EXPECT_LT(e.message().size(), 400u);
    EXPECT_THAT(e.message(), HasSubstr("(4194304 characters)"));
}

}  // namespace
}  // namespace ktune
