// The compile service's batching: waiting requests of one source compiled as one NVRTC program, each still answered
// with its own result and cache entry (real NVRTC compilations of tests/data/jit/kernels, no GPU needed).
//
// With one pool thread, the first request submitted is taken alone or with a few others, and every later one waits
// for that compilation (hundreds of milliseconds, while submitting takes microseconds), so the rest are batched.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ktune_test_config.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/jit/compile_service.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

const std::string k_kernel_root = std::string(KTUNE_TEST_DATA) + "/jit";
const std::string k_batch_note = "ktune: compiled in one NVRTC program with ";

CompileRequest scale_request(int block, const std::string& type = "float") {
    CompileRequest r;
    r.source_path = "kernels/scale/scale.cuh";
    r.name_expressions = {"scale<" + type + ", " + std::to_string(block) + ">"};
    r.arch = "sm_90";
    return r;
}

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class CompileBatchTest : public ::testing::Test {
protected:
    CompileServiceOptions options(const std::string& cache = "cache", unsigned threads = 1,
                                  unsigned max_batch = 16) const {
        return {k_kernel_root, (m_dir.path() / cache).string(), {}, threads, max_batch};
    }

    std::vector<CompileResult> submit_all(CompileService& service, const std::vector<CompileRequest>& requests) {
        std::vector<std::shared_future<CompileResult>> futures;
        for (const CompileRequest& r : requests) futures.push_back(service.submit(r));
        std::vector<CompileResult> results;
        for (auto& f : futures) results.push_back(f.get());
        return results;
    }

    test::TempDir m_dir;
};

TEST(CompileBatchLimit, BatchesNothingWhileEveryThreadHasARequestThenSharesTheBacklogUpToTheCap) {
    EXPECT_EQ(CompileService::batch_limit(1, 1, 16), 1u);
    EXPECT_EQ(CompileService::batch_limit(32, 32, 16), 1u);
    EXPECT_EQ(CompileService::batch_limit(33, 32, 16), 2u);
    EXPECT_EQ(CompileService::batch_limit(5, 2, 16), 3u);
    EXPECT_EQ(CompileService::batch_limit(848, 2, 16), 16u);
    EXPECT_EQ(CompileService::batch_limit(848, 2, 1), 1u) << "max_batch 1 turns batching off";
}

TEST_F(CompileBatchTest, CompilesWaitingRequestsOfOneSourceAsOneProgramEachWithItsOwnEntry) {
    const std::vector<int> blocks = {32, 64, 128, 256, 512};
    std::vector<CompileRequest> requests;
    for (int b : blocks) requests.push_back(scale_request(b));
    CompileService service(options());
    const std::vector<CompileResult> results = submit_all(service, requests);

    const CompileStats stats = service.stats();
    EXPECT_GE(stats.batched_programs, 1u);
    EXPECT_GE(stats.batched_requests, 4u);
    EXPECT_LE(stats.programs, 2u) << "five requests in at most two programs";
    EXPECT_EQ(stats.batch_fallbacks, 0u);

    CompileService alone(options("alone-cache", 1, 1));
    std::set<std::string> keys, cubins;
    int batched = 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const CompileResult& r = results[i];
        SCOPED_TRACE(requests[i].name_expressions.front());
        ASSERT_TRUE(r.ok) << r.log;
        EXPECT_FALSE(r.cache_hit);
        EXPECT_EQ(r.cache_key, service.cache_key(requests[i])) << "the key is the request's own, batch or not";
        keys.insert(r.cache_key);
        cubins.insert(r.cubin_path);
        EXPECT_TRUE(fs::exists(fs::path(service.options().cache_dir) / (r.cache_key + ".json")));
        EXPECT_GT(r.compile_seconds, 0);
        if (r.log.find(k_batch_note) != std::string::npos) ++batched;

        const CompileResult single = alone.compile(requests[i]);
        ASSERT_TRUE(single.ok) << single.log;
        ASSERT_EQ(r.kernels.size(), 1u);
        EXPECT_EQ(r.kernels[0].name_expression, requests[i].name_expressions.front());
        EXPECT_EQ(r.kernels[0].lowered_name, single.kernels[0].lowered_name);
        EXPECT_EQ(r.kernels[0].info.registers, single.kernels[0].info.registers) << "its own ptxas lines";
        EXPECT_EQ(r.kernels[0].info.static_shared_bytes, blocks[i] * 4);
        const std::string cubin = file_bytes(r.cubin_path);
        EXPECT_EQ(cubin.substr(0, 4), "\177ELF") << r.cubin_path;
        EXPECT_NE(cubin.find(r.kernels[0].lowered_name), std::string::npos) << "the cubin holds its kernel";
    }
    EXPECT_GE(batched, 4) << "the batched results say so in their log";
    EXPECT_EQ(keys.size(), results.size());
    EXPECT_EQ(cubins.size(), results.size()) << "each entry has its own cubin file";
}

TEST_F(CompileBatchTest, EntriesOfABatchHitTheCacheLaterEachOnItsOwn) {
    std::vector<CompileRequest> requests;
    for (int b : {32, 64, 128, 256}) requests.push_back(scale_request(b));
    std::vector<CompileResult> first;
    {
        CompileService service(options());
        first = submit_all(service, requests);
        ASSERT_GE(service.stats().batched_programs, 1u);
    }
    // Removing one entry's cubin leaves the others whole (hard links or copies, never one shared path).
    fs::remove(first[1].cubin_path);

    CompileService again(options());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        SCOPED_TRACE(requests[i].name_expressions.front());
        const CompileResult r = again.compile(requests[i]);
        ASSERT_TRUE(r.ok) << r.log;
        EXPECT_EQ(r.cache_hit, i != 1);
        EXPECT_EQ(r.cubin_path, first[i].cubin_path);
        ASSERT_EQ(r.kernels.size(), 1u);
        EXPECT_EQ(r.kernels[0].lowered_name, first[i].kernels[0].lowered_name);
        EXPECT_EQ(r.kernels[0].info.registers, first[i].kernels[0].info.registers);
    }
    EXPECT_EQ(again.stats().programs, 1u) << "only the entry whose cubin went was compiled again";
}

TEST_F(CompileBatchTest, AFailingMemberFailsWithItsOwnLogAndTheOthersSucceed) {
    // BLOCK 48 trips the kernel's static_assert; second, so that it always shares a program with another request.
    const std::vector<int> blocks = {32, 48, 64, 128, 256};
    std::vector<CompileRequest> requests;
    for (int b : blocks) requests.push_back(scale_request(b));
    CompileService service(options());
    const std::vector<CompileResult> results = submit_all(service, requests);

    EXPECT_GE(service.stats().batch_fallbacks, 1u);
    for (std::size_t i = 0; i < results.size(); ++i) {
        SCOPED_TRACE(requests[i].name_expressions.front());
        if (blocks[i] == 48) {
            EXPECT_FALSE(results[i].ok);
            EXPECT_NE(results[i].log.find("BLOCK must be a multiple of the warp size"), std::string::npos)
                << results[i].log;
            EXPECT_EQ(results[i].log.find(k_batch_note), std::string::npos) << "its log is its own program's";
            EXPECT_TRUE(results[i].cubin_path.empty());
            EXPECT_TRUE(results[i].kernels.empty());
        } else {
            ASSERT_TRUE(results[i].ok) << results[i].log;
            EXPECT_EQ(results[i].log.find("BLOCK must be a multiple"), std::string::npos) << results[i].log;
            EXPECT_TRUE(service.compile(requests[i]).cache_hit);
        }
    }
}

TEST_F(CompileBatchTest, RequestsWithOtherOptionsOrSeveralNamesAreNotBatched) {
    CompileRequest other_options = scale_request(64);
    other_options.extra_options = {"-DKTUNE_EXTRA=1"};
    CompileRequest two_names = scale_request(128);
    two_names.name_expressions.push_back("scale<__half, 64>");
    CompileService service(options());
    const std::vector<CompileResult> results =
        submit_all(service, {scale_request(32), other_options, scale_request(256), two_names, scale_request(512)});
    for (const CompileResult& r : results) ASSERT_TRUE(r.ok) << r.log;
    EXPECT_EQ(results[1].log.find(k_batch_note), std::string::npos);
    EXPECT_EQ(results[3].log.find(k_batch_note), std::string::npos);
    EXPECT_EQ(results[3].kernels.size(), 2u);
    EXPECT_GE(service.stats().batched_programs, 1u) << "the three alike still share a program";
}

TEST_F(CompileBatchTest, AnswersCacheHitsInABatchAndCompilesOnlyTheMisses) {
    CompileService service(options());
    ASSERT_TRUE(service.compile(scale_request(64)).ok);
    const std::vector<CompileResult> results =
        submit_all(service, {scale_request(32), scale_request(64), scale_request(128), scale_request(256)});
    for (const CompileResult& r : results) ASSERT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(results[1].cache_hit);
    EXPECT_GE(service.stats().batched_programs, 1u);
    EXPECT_EQ(service.stats().batched_requests + (service.stats().programs - service.stats().batched_programs), 4u)
        << "the one compile above and the three misses, nothing for the hit";
}

TEST_F(CompileBatchTest, CompilesEachRequestAloneWhenBatchingIsOff) {
    CompileService service(options("cache", 1, 1));
    const std::vector<CompileResult> results =
        submit_all(service, {scale_request(32), scale_request(64), scale_request(128)});
    for (const CompileResult& r : results) ASSERT_TRUE(r.ok) << r.log;
    EXPECT_EQ(service.stats().programs, 3u);
    EXPECT_EQ(service.stats().batched_programs, 0u);
}

TEST_F(CompileBatchTest, FulfilsEveryBatchedFutureBeforeItIsDestroyed) {
    std::vector<std::shared_future<CompileResult>> futures;
    {
        CompileService service(options());
        for (int b : {32, 48, 64, 96, 128, 256}) futures.push_back(service.submit(scale_request(b)));
    }
    for (auto& f : futures) ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_FALSE(futures[1].get().ok);
    EXPECT_TRUE(futures[5].get().ok);
}

}  // namespace
}  // namespace ktune
