#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/jit/compile_service.hpp"

namespace ktune {
namespace {

// A kernel tree written by the test, so headers can be changed between two keys. Nothing here calls NVRTC's compiler.
class CacheKey : public ::testing::Test {
protected:
    void SetUp() override {
        m_root.write("kernels/op/op.cuh",
                     "#include \"kernels/common/util.cuh\"\n#include \"local.cuh\"\n#include <cuda_fp16.h>\n"
                     "template <int N> __global__ void op(float* p) { p[0] = N + UTIL + LOCAL; }\n");
        m_root.write("kernels/common/util.cuh", "#pragma once\n#include \"kernels/common/deep.cuh\"\n#define UTIL 1\n");
        m_root.write("kernels/common/deep.cuh", "#pragma once\n#define DEEP 1\n");
        m_root.write("kernels/op/local.cuh", "#pragma once\n#define LOCAL 1\n");
        m_request.source_path = "kernels/op/op.cuh";
        m_request.name_expressions = {"op<1>"};
    }

    CompileService make_service() const {
        return CompileService({m_root.path().string(), (m_cache.path() / "cache").string(), {}, 1});
    }

    test::TempDir m_root;
    test::TempDir m_cache;
    CompileRequest m_request;
};

TEST_F(CacheKey, IsTheSameWhenNothingChanges) {
    const std::string first = make_service().cache_key(m_request);
    EXPECT_EQ(first.size(), 64u);
    EXPECT_EQ(make_service().cache_key(m_request), first);
}

TEST_F(CacheKey, ChangesWhenADirectlyIncludedHeaderChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_root.write("kernels/common/util.cuh", "#pragma once\n#include \"kernels/common/deep.cuh\"\n#define UTIL 2\n");
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenAHeaderIncludedByAHeaderChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_root.write("kernels/common/deep.cuh", "#pragma once\n#define DEEP 2\n");
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenAHeaderNextToTheSourceChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_root.write("kernels/op/local.cuh", "#pragma once\n#define LOCAL 2\n");
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenTheSourceChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_root.write("kernels/op/op.cuh",
                 "#include \"kernels/common/util.cuh\"\n#include \"local.cuh\"\n"
                 "template <int N> __global__ void op(float* p) { p[1] = N; }\n");
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenANameExpressionChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_request.name_expressions = {"op<2>"};
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenANameExpressionIsAdded) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_request.name_expressions.push_back("op<2>");
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenAnOptionChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_request.extra_options = {"-DKTUNE_FOO=1"};
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, ChangesWhenTheArchitectureChanges) {
    CompileService service = make_service();
    const std::string before = service.cache_key(m_request);
    m_request.arch = "sm_80";
    EXPECT_NE(service.cache_key(m_request), before);
}

TEST_F(CacheKey, IgnoresAnIncludeThatIsCommentedOut) {
    m_root.write("kernels/op/op.cuh",
                 "// #include \"kernels/common/gone.cuh\"\n/* #include \"gone2.cuh\" */\n"
                 "template <int N> __global__ void op(float* p) { p[0] = N; }\n");
    EXPECT_EQ(make_service().cache_key(m_request).size(), 64u);
}

TEST_F(CacheKey, ThrowsBadInputNamingAMissingHeader) {
    m_root.write("kernels/op/op.cuh", "#include \"kernels/common/gone.cuh\"\n");
    try {
        make_service().cache_key(m_request);
        FAIL() << "expected Error(bad_input)";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("kernels/common/gone.cuh"), std::string::npos) << e.what();
        EXPECT_NE(e.where().find("kernels/op/op.cuh:1"), std::string::npos) << e.where();
    }
}

TEST_F(CacheKey, ThrowsBadInputNamingAMissingSource) {
    m_request.source_path = "kernels/op/nope.cuh";
    try {
        make_service().cache_key(m_request);
        FAIL() << "expected Error(bad_input)";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("kernels/op/nope.cuh"), std::string::npos) << e.what();
    }
}

TEST_F(CacheKey, RejectsAVirtualArchitecture) {
    m_request.arch = "compute_90";
    try {
        make_service().cache_key(m_request);
        FAIL() << "expected Error(bad_input)";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("compute_90"), std::string::npos);
    }
}

TEST_F(CacheKey, AcceptsAnArchitectureWithAFeatureSuffix) {
    m_request.arch = "sm_90a";
    EXPECT_EQ(make_service().cache_key(m_request).size(), 64u);
}

TEST_F(CacheKey, SourceHashChangesWithAHeaderButNotWithTheRequest) {
    CompileService service = make_service();
    const std::string before = service.source_hash(m_request.source_path);
    EXPECT_EQ(before.size(), 64u);
    m_request.name_expressions = {"op<7>"};
    EXPECT_EQ(service.source_hash(m_request.source_path), before);
    m_root.write("kernels/common/deep.cuh", "#pragma once\n#define DEEP 3\n");
    EXPECT_NE(service.source_hash(m_request.source_path), before);
}

TEST_F(CacheKey, SurvivesIncludeCycles) {
    m_root.write("kernels/common/deep.cuh", "#include \"kernels/common/util.cuh\"\n#define DEEP 1\n");
    EXPECT_EQ(make_service().cache_key(m_request).size(), 64u);
}

}  // namespace
}  // namespace ktune
