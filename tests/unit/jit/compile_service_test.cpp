// Real NVRTC compilations (no GPU needed) of the tiny kernels under tests/data/jit/kernels.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "ktune_test_config.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/jit/compile_service.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

const std::string k_kernel_root = std::string(KTUNE_TEST_DATA) + "/jit";

CompileRequest scale_request(const std::string& type = "__nv_bfloat16", int block = 256) {
    CompileRequest r;
    r.source_path = "kernels/scale/scale.cuh";
    r.name_expressions = {"scale<" + type + ", " + std::to_string(block) + ">"};
    r.arch = "sm_90";
    return r;
}

bool starts_with_elf_magic(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::string(magic, 4) ==
                                    "\x7f"
                                    "ELF";
}

class CompileServiceTest : public ::testing::Test {
protected:
    CompileServiceOptions options(unsigned threads = 2) const {
        return {k_kernel_root, (m_cache.path() / "cache").string(), {}, threads};
    }
    test::TempDir m_cache;
};

TEST_F(CompileServiceTest, CompilesATemplateKernelToACubinWithItsLoweredNameAndResources) {
    CompileService service(options());
    const CompileResult r = service.compile(scale_request());
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_FALSE(r.cache_hit);
    EXPECT_GT(r.compile_seconds, 0);
    EXPECT_TRUE(fs::path(r.cubin_path).is_absolute());
    EXPECT_TRUE(starts_with_elf_magic(r.cubin_path)) << r.cubin_path;
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].name_expression, "scale<__nv_bfloat16, 256>");
    EXPECT_EQ(r.kernels[0].lowered_name, "_Z5scaleI13__nv_bfloat16Li256EEvPT_PKS1_fi");
    EXPECT_GT(r.kernels[0].info.registers, 0);
    EXPECT_EQ(r.kernels[0].info.static_shared_bytes, 256 * 4);
    EXPECT_EQ(r.kernels[0].info.spill_store_bytes, 0);
    EXPECT_NE(r.log.find("ptxas info"), std::string::npos) << "the resource report is kept in the log";
}

TEST_F(CompileServiceTest, ReadsRegistersAgainWhenAnotherCacheCompiledTheSameProgramBefore) {
    // NVRTC 12.9+ would serve the second compilation from its own cache without running ptxas, leaving no resource
    // report to read (0 registers on the H100 host's NVRTC 13.0): the service turns that cache off.
    const CompileResult first = CompileService(options()).compile(scale_request());
    CompileService other({k_kernel_root, (m_cache.path() / "other-cache").string(), {}, 2});
    const CompileResult second = other.compile(scale_request());
    ASSERT_TRUE(first.ok && second.ok) << first.log << second.log;
    EXPECT_FALSE(second.cache_hit);
    EXPECT_EQ(std::string(std::getenv("CUDA_CACHE_DISABLE")), "1");
    ASSERT_EQ(second.kernels.size(), 1u);
    EXPECT_GT(second.kernels[0].info.registers, 0);
    EXPECT_EQ(second.kernels[0].info.registers, first.kernels[0].info.registers);
}

TEST_F(CompileServiceTest, CompilesSeveralNameExpressionsInOneProgramInRequestOrder) {
    CompileService service(options());
    CompileRequest request = scale_request("float", 128);
    request.name_expressions.push_back("scale<__half, 64>");
    const CompileResult r = service.compile(request);
    ASSERT_TRUE(r.ok) << r.log;
    ASSERT_EQ(r.kernels.size(), 2u);
    EXPECT_EQ(r.kernels[0].lowered_name, "_Z5scaleIfLi128EEvPT_PKS0_fi");
    EXPECT_EQ(r.kernels[0].info.static_shared_bytes, 128 * 4);
    EXPECT_EQ(r.kernels[1].info.static_shared_bytes, 64 * 4);
}

TEST_F(CompileServiceTest, HitsTheCacheTheSecondTimeWithoutCompiling) {
    CompileService service(options());
    const auto t0 = std::chrono::steady_clock::now();
    const CompileResult first = service.compile(scale_request());
    const auto t1 = std::chrono::steady_clock::now();
    const CompileResult second = service.compile(scale_request());
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_TRUE(first.ok) << first.log;
    ASSERT_TRUE(second.ok) << second.log;
    EXPECT_TRUE(second.cache_hit);
    EXPECT_EQ(second.compile_seconds, 0);
    EXPECT_EQ(second.cubin_path, first.cubin_path);
    EXPECT_EQ(second.cache_key, first.cache_key);
    ASSERT_EQ(second.kernels.size(), 1u);
    EXPECT_EQ(second.kernels[0].lowered_name, first.kernels[0].lowered_name);
    EXPECT_EQ(second.kernels[0].info.registers, first.kernels[0].info.registers);
    EXPECT_TRUE(second.kernels[0].info.cache_hit);
    EXPECT_LT((t2 - t1) * 5, t1 - t0) << "a cache hit should be far faster than NVRTC";
}

TEST_F(CompileServiceTest, FindsTheCacheEntryOfAnEarlierServiceInstance) {
    const CompileResult first = CompileService(options()).compile(scale_request());
    ASSERT_TRUE(first.ok) << first.log;
    const CompileResult again = CompileService(options()).compile(scale_request());
    EXPECT_TRUE(again.cache_hit);
    EXPECT_EQ(again.cubin_path, first.cubin_path);
}

TEST_F(CompileServiceTest, RecompilesWhenTheSidecarIsCorrupt) {
    CompileService service(options());
    const CompileResult first = service.compile(scale_request());
    ASSERT_TRUE(first.ok) << first.log;
    std::ofstream(fs::path(service.options().cache_dir) / (first.cache_key + ".json"), std::ios::trunc) << "{\"form";
    const CompileResult again = service.compile(scale_request());
    ASSERT_TRUE(again.ok) << again.log;
    EXPECT_FALSE(again.cache_hit);
    EXPECT_TRUE(service.compile(scale_request()).cache_hit) << "the recompilation repaired the entry";
}

TEST_F(CompileServiceTest, RecompilesWhenTheCachedCubinIsTruncated) {
    CompileService service(options());
    const CompileResult first = service.compile(scale_request());
    ASSERT_TRUE(first.ok) << first.log;
    const auto size = fs::file_size(first.cubin_path);
    fs::resize_file(first.cubin_path, size / 2);
    const CompileResult again = service.compile(scale_request());
    ASSERT_TRUE(again.ok) << again.log;
    EXPECT_FALSE(again.cache_hit);
    EXPECT_EQ(fs::file_size(again.cubin_path), size) << "the recompilation wrote the whole cubin again";
}

TEST_F(CompileServiceTest, ReportsAStaticAssertFailureWithItsMessageInTheLog) {
    CompileService service(options());
    const CompileResult r = service.compile(scale_request("float", 48));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("BLOCK must be a multiple of the warp size"), std::string::npos) << r.log;
    EXPECT_TRUE(r.cubin_path.empty());
    EXPECT_TRUE(r.kernels.empty());
    EXPECT_NE(r.options.find("-arch=sm_90"), std::string::npos);
}

TEST_F(CompileServiceTest, ReportsASyntaxErrorWithoutThrowing) {
    CompileService service(options());
    CompileRequest request;
    request.source_path = "kernels/broken/syntax_error.cuh";
    request.name_expressions = {"broken<1>"};
    const CompileResult r = service.compile(request);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
    EXPECT_FALSE(r.cache_hit);
}

TEST_F(CompileServiceTest, DoesNotCacheAFailedCompilation) {
    CompileService service(options());
    const CompileResult r = service.compile(scale_request("float", 48));
    ASSERT_FALSE(r.ok);
    EXPECT_FALSE(fs::exists(fs::path(service.options().cache_dir) / (r.cache_key + ".json")));
    EXPECT_FALSE(service.compile(scale_request("float", 48)).cache_hit);
}

TEST_F(CompileServiceTest, ReportsAnUnknownOptionInTheLog) {
    CompileService service(options());
    CompileRequest request = scale_request();
    request.extra_options = {"--no-such-option"};
    const CompileResult r = service.compile(request);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("nvrtc"), std::string::npos) << r.log;
    EXPECT_NE(r.options.find("--no-such-option"), std::string::npos);
}

TEST_F(CompileServiceTest, ThrowsBadInputNamingAMissingSource) {
    CompileService service(options());
    CompileRequest request = scale_request();
    request.source_path = "kernels/scale/missing.cuh";
    try {
        service.compile(request);
        FAIL() << "expected Error(bad_input)";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("kernels/scale/missing.cuh"), std::string::npos) << e.what();
    }
}

TEST_F(CompileServiceTest, PassesTheHouseOptionsAndTheExtraOnes) {
    CompileService service(options());
    CompileRequest request = scale_request();
    request.extra_options = {"-DKTUNE_EXTRA=3"};
    const CompileResult r = service.compile(request);
    ASSERT_TRUE(r.ok) << r.log;
    for (const char* o :
         {"-arch=sm_90", "-std=c++17", "-Xptxas=-v", "-lineinfo", "-DKTUNE_NVRTC=1", "-DKTUNE_EXTRA=3"}) {
        EXPECT_NE(r.options.find(o), std::string::npos) << o << " missing from " << r.options;
    }
    EXPECT_NE(r.options.find("-I" + service.options().kernel_root), std::string::npos) << r.options;
    EXPECT_EQ(r.options.find("device-as-default-execution-space"), std::string::npos);
}

TEST_F(CompileServiceTest, CompilesSubmittedRequestsInParallel) {
    CompileService service(options(3));
    std::vector<std::shared_future<CompileResult>> futures;
    for (int block : {32, 64, 128, 256}) futures.push_back(service.submit(scale_request("float", block)));
    std::vector<std::string> keys;
    for (auto& f : futures) {
        const CompileResult& r = f.get();
        EXPECT_TRUE(r.ok) << r.log;
        EXPECT_TRUE(starts_with_elf_magic(r.cubin_path));
        keys.push_back(r.cache_key);
    }
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(std::unique(keys.begin(), keys.end()), keys.end()) << "each configuration has its own entry";
}

TEST_F(CompileServiceTest, PropagatesAMissingSourceThroughTheFuture) {
    CompileService service(options());
    CompileRequest request = scale_request();
    request.source_path = "kernels/scale/missing.cuh";
    auto future = service.submit(request);
    EXPECT_THROW(future.get(), Error);
}

TEST_F(CompileServiceTest, FinishesSubmittedWorkBeforeItIsDestroyed) {
    std::shared_future<CompileResult> future;
    {
        CompileService service(options(1));
        future = service.submit(scale_request("float", 96));
    }
    ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_TRUE(future.get().ok);
}

TEST_F(CompileServiceTest, CreatesTheCacheDirectoryWithItsParents) {
    CompileServiceOptions o = options();
    o.cache_dir = (m_cache.path() / "a" / "b" / "c").string();
    CompileService service(o);
    EXPECT_TRUE(fs::is_directory(o.cache_dir));
}

TEST_F(CompileServiceTest, ReportsTheNvrtcVersionAsMajorDotMinor) {
    const std::string v = CompileService::nvrtc_version();
    const std::size_t dot = v.find('.');
    ASSERT_NE(dot, std::string::npos) << v;
    EXPECT_GT(dot, 0u) << v;
    EXPECT_LT(dot + 1, v.size()) << v;
    EXPECT_EQ(v.find_first_not_of("0123456789."), std::string::npos) << v;
}

TEST_F(CompileServiceTest, TakesTheCudaIncludeDirFromTheEnvironmentWhenNotGiven) {
    ::setenv("KTUNE_CUDA_INCLUDE", "/opt/elsewhere/include", 1);
    const CompileService from_env(options());
    CompileServiceOptions explicit_options = options();
    explicit_options.cuda_include_dir = "/explicit/include";
    const CompileService from_options(explicit_options);
    ::unsetenv("KTUNE_CUDA_INCLUDE");
    EXPECT_EQ(from_env.options().cuda_include_dir, "/opt/elsewhere/include");
    EXPECT_EQ(from_options.options().cuda_include_dir, "/explicit/include");
    EXPECT_FALSE(CompileService(options()).options().cuda_include_dir.empty()) << "the toolkit default";
}

}  // namespace
}  // namespace ktune
