#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "core/error.hpp"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

const DeclaredOp& gemma() { return declared_op("rmsnorm", "fwd_gemma"); }
const DeclaredOp& plain() { return declared_op("rmsnorm", "fwd"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

TEST(RmsNormFwdGemmaOp, IsTheRmsNormOpsFwdGemmaVariant) {
    EXPECT_EQ(gemma().name(), "rmsnorm");
    EXPECT_EQ(gemma().variant(), "fwd_gemma");
    EXPECT_NE(gemma().summary(), plain().summary());
}

TEST(RmsNormFwdGemmaOp, DrawsWeightsAroundZeroSoThatOnePlusWMatchesThePlainRange) {
    const auto specs = gemma().buffers(problem(Dtype::bf16, {{"M", 2}, {"H", 8}}));
    EXPECT_EQ(buffer(specs, "w").lo, -0.5);
    EXPECT_EQ(buffer(specs, "w").hi, 0.5);
    EXPECT_EQ(buffer(plain().buffers(problem(Dtype::bf16, {{"M", 2}, {"H", 8}})), "w").lo, 0.5);
}

TEST(RmsNormFwdGemmaOp, TakesThePlainOpsArgumentsAndBytes) {
    const Problem p = problem(Dtype::fp16, {{"M", 5}, {"H", 64}, {"S", 72}});
    const auto a = gemma().arguments(p);
    const auto b = plain().arguments(p);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].kind, b[i].kind);
        EXPECT_EQ(a[i].buffer, b[i].buffer);
        EXPECT_EQ(a[i].integer, b[i].integer);
    }
    EXPECT_DOUBLE_EQ(gemma().bytes_moved(p), plain().bytes_moved(p));
}

TEST(RmsNormFwdGemmaOp, ScalesByOnePlusW) {
    HostBuffers offset{{"x", {3.0, 4.0}}, {"w", {0.0, -0.25}}};
    HostBuffers scaled{{"x", {3.0, 4.0}}, {"w", {1.0, 0.75}}};
    cpu_reference(gemma(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), offset);
    cpu_reference(plain(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), scaled);
    EXPECT_DOUBLE_EQ(offset["y"][0], scaled["y"][0]);
    EXPECT_DOUBLE_EQ(offset["y"][1], scaled["y"][1]);
    EXPECT_NEAR(offset["y"][1], 0.75 * 4.0 / std::sqrt(12.5), 1e-6);
}

}  // namespace
}  // namespace ktune
