// The GEMM library baselines' configurations: what the worker calls for each (core/library.hpp, gemm_call), decided
// without cuBLAS so that it is tested where there is no GPU.
#include "core/library.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"

namespace ktune {
namespace {

using ::testing::HasSubstr;

std::string refusal(std::string_view library, const NamedValues& config) {
    try {
        gemm_call(library, config);
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        return e.message();
    }
    ADD_FAILURE() << library << " " << format_named_values(config) << " was not refused";
    return "";
}

TEST(GemmCall, CublasGemmApi1IsGemmExAndApi2TheRankedLtAlgorithmWithoutEpilogue) {
    const GemmCall ex = gemm_call("cublas_gemm", {{"API", 1}, {"RANK", 1}});
    EXPECT_FALSE(ex.lt);
    EXPECT_EQ(ex.epilogue, GemmEpilogue::none);
    EXPECT_EQ(ex.first_size_argument(), 3u);  // y, x, w, M, N, K
    const GemmCall lt = gemm_call("cublas_gemm", {{"API", 2}, {"RANK", 5}});
    EXPECT_TRUE(lt.lt);
    EXPECT_EQ(lt.rank, 5);
    EXPECT_EQ(lt.epilogue, GemmEpilogue::none);
}

TEST(GemmCall, CublasGemmRefusesAnUnknownApiAndARankBelowOne) {
    EXPECT_THAT(refusal("cublas_gemm", {{"API", 3}, {"RANK", 1}}), HasSubstr("API is 1"));
    EXPECT_THAT(refusal("cublas_gemm", {{"API", 2}, {"RANK", 0}}), HasSubstr("RANK is 1 or more"));
}

TEST(GemmCall, GemmActFusesTheBiasAndGeluIntoCublasLtsEpilogueAndTakesTheBiasArgument) {
    const GemmCall none = gemm_call("cublaslt_gemm_act", {{"ACT", 0}, {"RANK", 3}});
    EXPECT_TRUE(none.lt);
    EXPECT_EQ(none.rank, 3);
    EXPECT_EQ(none.epilogue, GemmEpilogue::bias);
    EXPECT_TRUE(none.has_bias());
    EXPECT_EQ(none.first_size_argument(), 4u);  // y, x, w, b, M, N, K
    const GemmCall gelu = gemm_call("cublaslt_gemm_act", {{"ACT", 1}, {"RANK", 1}});
    EXPECT_EQ(gelu.epilogue, GemmEpilogue::gelu_bias);
    EXPECT_TRUE(gelu.lt);
}

TEST(GemmCall, GemmActRefusesSiluWhichCublasLtHasNoEpilogueForAndAMissingAct) {
    EXPECT_THAT(refusal("cublaslt_gemm_act", {{"ACT", 2}, {"RANK", 1}}), HasSubstr("no SiLU epilogue"));
    EXPECT_THAT(refusal("cublaslt_gemm_act", {{"ACT", 7}, {"RANK", 1}}), HasSubstr("ACT is 0"));
    EXPECT_THAT(refusal("cublaslt_gemm_act", {{"RANK", 1}}), HasSubstr("needs ACT"));
    EXPECT_THAT(refusal("cublaslt_gemm_act", {{"ACT", 1}, {"RANK", -1}}), HasSubstr("RANK is 1 or more"));
}

TEST(GemmCall, ALibraryThatIsNoGemmIsRefused) {
    EXPECT_THAT(refusal("cudnn_attention", {}), HasSubstr("not a GEMM library baseline"));
}

TEST(LibraryBaselines, GemmActIsListedWithTheParametersItReads) {
    const LibraryBaseline* lib = find_library_baseline("cublaslt_gemm_act");
    ASSERT_NE(lib, nullptr);
    EXPECT_THAT(lib->parameters, ::testing::ElementsAre("ACT", "RANK"));
    EXPECT_THAT(std::string(lib->arguments), HasSubstr("y, x, w, b, M, N, K"));
}

}  // namespace
}  // namespace ktune
