#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

TEST(BufferSeed, IsStableForTheSameRunSeedAndName) {
    EXPECT_EQ(buffer_seed(1, "x"), buffer_seed(1, "x"));
    // Pinned: stored measurements name their inputs by run seed; the mapping must not drift between releases.
    EXPECT_EQ(buffer_seed(0, ""), 0x21FA69A58F3D62F5ull);
}

TEST(BufferSeed, DiffersBetweenBufferNames) {
    std::set<std::uint64_t> seeds;
    for (const char* name : {"x", "w", "y", "bias", "residual", "x1", "x2", "X"}) seeds.insert(buffer_seed(42, name));
    EXPECT_EQ(seeds.size(), 8u);
}

TEST(BufferSeed, DiffersBetweenRunSeeds) {
    EXPECT_NE(buffer_seed(1, "x"), buffer_seed(2, "x"));
    EXPECT_NE(buffer_seed(0, "x"), buffer_seed(1, "x"));
}

TEST(ElemType, FollowsTheDtype) {
    EXPECT_EQ(elem_type(Dtype::fp32), ElemType::f32);
    EXPECT_EQ(elem_type(Dtype::fp16), ElemType::f16);
    EXPECT_EQ(elem_type(Dtype::bf16), ElemType::bf16);
}

TEST(ElemType, HasTheStorageSizeOfItsCppType) {
    EXPECT_EQ(elem_bytes(ElemType::f32), 4);
    EXPECT_EQ(elem_bytes(ElemType::f16), 2);
    EXPECT_EQ(elem_bytes(ElemType::bf16), 2);
    EXPECT_EQ(elem_bytes(ElemType::i32), 4);
    EXPECT_EQ(elem_bytes(ElemType::i64), 8);
    EXPECT_EQ(elem_bytes(ElemType::i8), 1);
    EXPECT_EQ(elem_bytes(ElemType::u8), 1);
}

TEST(ElemType, IsNamedAsTheKernelTemplateArgument) {
    EXPECT_EQ(elem_name(ElemType::f32), "float");
    EXPECT_EQ(elem_name(ElemType::f16), "__half");
    EXPECT_EQ(elem_name(ElemType::bf16), "__nv_bfloat16");
    EXPECT_EQ(elem_name(ElemType::i64), "long long");
    EXPECT_EQ(elem_name(ElemType::u8), "unsigned char");
}

TEST(CpuReferences, ListRmsNormForward) {
    const CpuReference& r = find_cpu_reference("rmsnorm", "fwd");
    EXPECT_EQ(r.op, "rmsnorm");
    EXPECT_EQ(r.variant, "fwd");
    EXPECT_NE(r.run, nullptr);
}

TEST(CpuReferences, ListEveryOpVariantOnce) {
    std::set<std::string> keys;
    for (const CpuReference& r : cpu_references()) keys.insert(std::string(r.op) + "/" + std::string(r.variant));
    EXPECT_EQ(keys.size(), cpu_references().size());
    EXPECT_GE(keys.size(), 29u);  // at least the ops of this writing (DeclaredOps matches them with the op files)
}

TEST(CpuReferences, EveryOneHasTheOpOfASearchSpace) {
    for (const CpuReference& r : cpu_references())
        EXPECT_EQ(declared_op(r.op, r.variant).name(), r.op) << r.op << "/" << r.variant;
}

TEST(FindCpuReference, RejectsAnUnknownOpNamingTheKnownOnes) {
    try {
        find_cpu_reference("groupnorm", "fwd");
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(e.message().find("groupnorm/fwd"), std::string::npos) << e.what();
        EXPECT_NE(e.message().find("rmsnorm/fwd"), std::string::npos) << e.what();
    }
}

TEST(FindCpuReference, RejectsAKnownOpWithAnUnknownVariant) {
    try {
        find_cpu_reference("rmsnorm", "fwd_fp8");
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(e.message().find("rmsnorm/fwd"), std::string::npos) << e.what();
    }
}

TEST(CpuReference, NamesAnAxisTheProblemLacks) {
    HostBuffers b{{"x", {1.0}}};
    try {
        find_cpu_reference("copy", "fwd").run(Problem{Dtype::fp32, {}}, b);
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(e.message().find("axis N"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace ktune
