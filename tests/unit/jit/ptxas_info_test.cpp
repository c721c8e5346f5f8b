#include <string>

#include <gtest/gtest.h>

#include "tuner/jit/compile_service.hpp"

namespace ktune {
namespace {

// Captured from NVRTC 13.0 (-arch=sm_90 -Xptxas=-v -maxrregcount=24): one kernel that spills, one that uses shared
// memory, and a __noinline__ device function whose properties block follows the first entry's report.
const std::string k_two_kernel_log =
    R"(ptxas info    : Overriding maximum register limit 256 for '_Z5spillILi64EEvPf' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5spillILi64EEvPf' for 'sm_90'
ptxas info    : Function properties for _Z5spillILi64EEvPf
ptxas         .     816 bytes stack frame, 608 bytes spill stores, 824 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 816 bytes cumulative stack size
ptxas info    : Compile time = 34.665 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function '_Z1kI13__nv_bfloat16Li256EEvPT_PKS1_i' for 'sm_90'
ptxas info    : Function properties for _Z1kI13__nv_bfloat16Li256EEvPT_PKS1_i
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 2.231 ms
)";

TEST(ParsePtxasInfo, ReadsRegistersAndSharedMemoryOfTheNamedKernel) {
    const CompileInfo info = parse_ptxas_info(k_two_kernel_log, "_Z1kI13__nv_bfloat16Li256EEvPT_PKS1_i");
    EXPECT_EQ(info.registers, 10);
    EXPECT_EQ(info.static_shared_bytes, 1024);
    EXPECT_EQ(info.stack_bytes, 0);
    EXPECT_EQ(info.spill_store_bytes, 0);
    EXPECT_EQ(info.spill_load_bytes, 0);
}

TEST(ParsePtxasInfo, ReadsSpillsAndStackOfTheOtherKernelInTheSameLog) {
    const CompileInfo info = parse_ptxas_info(k_two_kernel_log, "_Z5spillILi64EEvPf");
    EXPECT_EQ(info.registers, 24);
    EXPECT_EQ(info.stack_bytes, 816);
    EXPECT_EQ(info.spill_store_bytes, 608);
    EXPECT_EQ(info.spill_load_bytes, 824);
    EXPECT_EQ(info.static_shared_bytes, 0);
}

TEST(ParsePtxasInfo, DoesNotTakeANonEntryFunctionsPropertiesForTheKernel) {
    // _Z6helperPfi's block sits inside _Z5spill's entry block; the kernel keeps its own numbers.
    const CompileInfo info = parse_ptxas_info(k_two_kernel_log, "_Z5spillILi64EEvPf");
    EXPECT_NE(info.spill_store_bytes, 4);
    EXPECT_NE(info.stack_bytes, 16);
}

TEST(ParsePtxasInfo, ReadsTheOlderFormatWithConstantMemoryAfterSharedMemory) {
    const std::string log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_80'
ptxas info    : Function properties for _Z3fooPf
    8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 40 registers, 4096 bytes smem, 360 bytes cmem[0]
)";
    const CompileInfo info = parse_ptxas_info(log, "_Z3fooPf");
    EXPECT_EQ(info.registers, 40);
    EXPECT_EQ(info.static_shared_bytes, 4096);
    EXPECT_EQ(info.stack_bytes, 8);
    EXPECT_EQ(info.spill_store_bytes, 12);
    EXPECT_EQ(info.spill_load_bytes, 20);
}

TEST(ParsePtxasInfo, DoesNotMatchAKernelWhoseNameOnlyStartsWithTheRequestedOne) {
    const CompileInfo info = parse_ptxas_info(k_two_kernel_log, "_Z5spill");
    EXPECT_EQ(info.registers, 0);
    EXPECT_EQ(info.stack_bytes, 0);
}

TEST(ParsePtxasInfo, ReturnsZerosForAKernelAbsentFromTheLog) {
    const CompileInfo info = parse_ptxas_info(k_two_kernel_log, "_Z7missingv");
    EXPECT_EQ(info.registers, 0);
    EXPECT_EQ(info.spill_store_bytes, 0);
    EXPECT_EQ(info.static_shared_bytes, 0);
}

TEST(ParsePtxasInfo, ToleratesWindowsLineEndings) {
    std::string log = k_two_kernel_log;
    for (std::size_t at = log.find('\n'); at != std::string::npos; at = log.find('\n', at + 2)) log.insert(at, "\r");
    const CompileInfo info = parse_ptxas_info(log, "_Z1kI13__nv_bfloat16Li256EEvPT_PKS1_i");
    EXPECT_EQ(info.registers, 10);
    EXPECT_EQ(info.static_shared_bytes, 1024);
}

}  // namespace
}  // namespace ktune
