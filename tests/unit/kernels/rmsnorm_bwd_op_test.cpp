#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "kernels/rmsnorm/rmsnorm_bwd_layout.cuh"
#include "tests/unit/kernels/declared_op.hpp"

namespace ktune {
namespace {

namespace layout = rmsnorm_bwd_layout;

const DeclaredOp& bwd() { return declared_op("rmsnorm", "bwd"); }

Problem problem(Dtype d, NamedValues shape) { return Problem{d, std::move(shape)}; }

const BufferSpec& buffer(const std::vector<BufferSpec>& specs, const std::string& name) {
    for (const BufferSpec& b : specs)
        if (b.name == name) return b;
    throw std::runtime_error("no buffer " + name);
}

const double eps = static_cast<double>(1e-6f);

// The forward op in double: the loss L = sum(dy * y) whose gradient the backward computes.
double loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy, int m, int h) {
    double l = 0.0;
    for (int r = 0; r < m; ++r) {
        double sq = 0.0;
        for (int c = 0; c < h; ++c) sq += x[r * h + c] * x[r * h + c];
        const double rstd = 1.0 / std::sqrt(sq / h + eps);
        for (int c = 0; c < h; ++c) l += dy[r * h + c] * x[r * h + c] * rstd * w[c];
    }
    return l;
}

TEST(RmsNormBwdOp, HasInputsXDyWAndOutputsDxAndAnFp32Dw) {
    const auto specs = bwd().buffers(problem(Dtype::bf16, {{"M", 3}, {"H", 8}}));
    ASSERT_EQ(specs.size(), 6u);
    for (const char* name : {"x", "dy", "w"}) {
        EXPECT_EQ(buffer(specs, name).role, BufferRole::input) << name;
        EXPECT_EQ(buffer(specs, name).type, ElemType::bf16) << name;
    }
    EXPECT_EQ(buffer(specs, "x").elements, 24);
    EXPECT_EQ(buffer(specs, "dy").elements, 24);
    EXPECT_EQ(buffer(specs, "w").elements, 8);
    EXPECT_EQ(buffer(specs, "dx").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "dx").type, ElemType::bf16);
    EXPECT_EQ(buffer(specs, "dx").elements, 24);
    EXPECT_EQ(buffer(specs, "dw").role, BufferRole::output);
    EXPECT_EQ(buffer(specs, "dw").type, ElemType::f32);
    EXPECT_EQ(buffer(specs, "dw").elements, 8);
    EXPECT_EQ(buffer(specs, "scratch").role, BufferRole::scratch);
    EXPECT_EQ(buffer(specs, "scratch").type, ElemType::f32);
}

TEST(RmsNormBwdOp, ShiftsXAndDySoThatTheSecondTermOfDxMatters) {
    const auto specs = bwd().buffers(problem(Dtype::fp32, {{"M", 1}, {"H", 8}}));
    EXPECT_GT(buffer(specs, "x").lo + buffer(specs, "x").hi, 0.0);
    EXPECT_GT(buffer(specs, "dy").lo + buffer(specs, "dy").hi, 0.0);
}

TEST(RmsNormBwdOp, SizesTheScratchForTheDwTreeAndTheReference) {
    // M=32768, H=8192: 128 partials -> 16 -> 2 -> dw; 146 rows of 8192 floats below the root.
    const auto specs = bwd().buffers(problem(Dtype::bf16, {{"M", 32768}, {"H", 8192}}));
    EXPECT_EQ(buffer(specs, "scratch").elements, 256 + 146 * 8192 + 4 + 2 * 8192);  // 256 counter words
}

TEST(RmsNormBwdOp, PadsScratchRowsOfAnOddHiddenToWholeQuads) {
    EXPECT_EQ(layout::dw_row_stride(4095), 4096);
    EXPECT_EQ(layout::dw_row_stride(4096), 4096);
    EXPECT_EQ(layout::dw_row_stride(1), 4);
    const auto specs = bwd().buffers(problem(Dtype::fp16, {{"M", 3}, {"H", 5}, {"S", 7}}));
    // Three partials of one row each -> dw: three rows of 8 floats.
    EXPECT_EQ(buffer(specs, "scratch").elements, 256 + 3 * 8 + 4 + 2 * 5);
}

TEST(RmsNormBwdOp, TakesOnePartialPerRowUpToACapSetByTheRowLength) {
    EXPECT_EQ(layout::dw_partials(1, 4096), 1);
    EXPECT_EQ(layout::dw_partials(16, 4096), 16);
    EXPECT_EQ(layout::dw_partials(4096, 1024), 512);  // 2^20 / 1024 = 1024, capped at 512
    EXPECT_EQ(layout::dw_partials(4096, 2048), 512);
    EXPECT_EQ(layout::dw_partials(4096, 4096), 256);
    EXPECT_EQ(layout::dw_partials(4096, 4095), 256);  // floor(2^20 / 4095)
    EXPECT_EQ(layout::dw_partials(4096, 8192), 128);
    EXPECT_EQ(layout::dw_partials(4096, 65536), 128);  // 2^20 / 65536 = 16, raised to 128
    EXPECT_EQ(layout::dw_partials(100, 65536), 100);
}

TEST(RmsNormBwdOp, BuildsAFanInEightTreeOverThePartials) {
    const layout::DwTree t = layout::dw_tree(4096, 2048);
    ASSERT_EQ(t.levels, 4);
    EXPECT_EQ(t.nodes[0], 512);
    EXPECT_EQ(t.nodes[1], 64);
    EXPECT_EQ(t.nodes[2], 8);
    EXPECT_EQ(t.nodes[3], 1);
    EXPECT_EQ(t.first_row[1], 512);
    EXPECT_EQ(t.first_row[2], 576);
    EXPECT_EQ(t.rows_below_root, 584);
    EXPECT_EQ(t.first_counter[1], 0);
    EXPECT_EQ(t.first_counter[2], 64);
    EXPECT_EQ(t.first_counter[3], 72);
    // Every inner node's counter words (ranks 0-7 and 8-15 of a 16-block cluster) fit in front of the rows.
    EXPECT_LE((t.first_counter[3] + 1) * layout::DW_COUNTERS_PER_NODE, layout::DW_COUNTER_WORDS);
    EXPECT_EQ(16 / layout::DW_RANKS_PER_COUNTER, layout::DW_COUNTERS_PER_NODE);
}

TEST(RmsNormBwdOp, GivesALastNodeFewerChildrenWhenThePartialsDoNotDivide) {
    const layout::DwTree t = layout::dw_tree(20, 4096);  // 20 partials -> 3 -> 1
    ASSERT_EQ(t.levels, 3);
    EXPECT_EQ(t.nodes[1], 3);
    EXPECT_EQ(t.nodes[2], 1);
    EXPECT_EQ(t.rows_below_root, 23);
}

TEST(RmsNormBwdOp, WritesASinglePartialStraightToDw) {
    const layout::DwTree t = layout::dw_tree(1, 4096);
    EXPECT_EQ(t.levels, 1);
    EXPECT_EQ(t.rows_below_root, 0);
}

TEST(RmsNormBwdOp, PassesArgumentsInKernelOrder) {
    const auto args = bwd().arguments(problem(Dtype::fp16, {{"M", 5}, {"H", 64}, {"S", 72}}));
    ASSERT_EQ(args.size(), 12u);
    const char* buffers[] = {"dx", "dw", "scratch", "x", "dy", "w"};
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::buffer);
        EXPECT_EQ(args[i].buffer, buffers[i]);
    }
    EXPECT_EQ(args[6].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[6].integer, 5);
    EXPECT_EQ(args[7].kind, KernelArg::Kind::i32);
    EXPECT_EQ(args[7].integer, 64);
    for (int i = 8; i < 11; ++i) {
        EXPECT_EQ(args[i].kind, KernelArg::Kind::i64);
        EXPECT_EQ(args[i].integer, 72);
    }
    EXPECT_EQ(args[11].kind, KernelArg::Kind::f32);
    EXPECT_DOUBLE_EQ(args[11].real, 1e-6);
}

TEST(RmsNormBwdOp, CountsXDyDxAndWOnceAndDwInFp32AsBytesMoved) {
    EXPECT_DOUBLE_EQ(bwd().bytes_moved(problem(Dtype::bf16, {{"M", 32768}, {"H", 4096}})),
                     (32768.0 * 4096 * 3 + 4096) * 2 + 4096.0 * 4);
    EXPECT_DOUBLE_EQ(bwd().bytes_moved(problem(Dtype::fp32, {{"M", 4}, {"H", 8}, {"S", 100}})),
                     (4.0 * 8 * 3 + 8) * 4 + 8.0 * 4);
}

TEST(RmsNormBwdOp, ComputesAHandCheckableRow) {
    // x = [3, 4], dy = [1, 0], w = [1, 1]: rstd = 1 / sqrt(12.5 + eps), mean(dy * w * x) = 1.5.
    HostBuffers b{{"x", {3.0, 4.0}}, {"dy", {1.0, 0.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(bwd(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b);
    const double rstd = 1.0 / std::sqrt(12.5 + eps);
    ASSERT_EQ(b["dx"].size(), 2u);
    EXPECT_NEAR(b["dx"][0], rstd - rstd * rstd * rstd * 1.5 * 3.0, 1e-15);
    EXPECT_NEAR(b["dx"][1], -rstd * rstd * rstd * 1.5 * 4.0, 1e-15);
    ASSERT_EQ(b["dw"].size(), 2u);
    EXPECT_NEAR(b["dw"][0], 3.0 * rstd, 1e-15);
    EXPECT_EQ(b["dw"][1], 0.0);
}

TEST(RmsNormBwdOp, MatchesTheFiniteDifferenceGradientOfTheForward) {
    const int m = 3, h = 5;
    std::vector<double> x, dy, w;
    for (int i = 0; i < m * h; ++i) {
        x.push_back(std::sin(1.3 * i) + 0.4);
        dy.push_back(std::cos(0.7 * i));
    }
    for (int c = 0; c < h; ++c) w.push_back(0.75 + 0.1 * c);
    HostBuffers b{{"x", x}, {"dy", dy}, {"w", w}};
    cpu_reference(bwd(), problem(Dtype::fp32, {{"M", m}, {"H", h}}), b);
    const double step = 1e-6;
    for (int i = 0; i < m * h; ++i) {
        std::vector<double> hi = x, lo = x;
        hi[i] += step;
        lo[i] -= step;
        const double numeric = (loss(hi, w, dy, m, h) - loss(lo, w, dy, m, h)) / (2 * step);
        EXPECT_NEAR(b["dx"][i], numeric, 1e-8) << "dx[" << i << "]";
    }
    for (int c = 0; c < h; ++c) {
        std::vector<double> hi = w, lo = w;
        hi[c] += step;
        lo[c] -= step;
        const double numeric = (loss(x, hi, dy, m, h) - loss(x, lo, dy, m, h)) / (2 * step);
        EXPECT_NEAR(b["dw"][c], numeric, 1e-8) << "dw[" << c << "]";
    }
}

TEST(RmsNormBwdOp, SumsDwOverRowsAndLeavesTheStridePaddingOfDxUntouched) {
    // Row 1 is row 0 scaled by 2 with the same dy: the same rstd * x, so its dw terms equal row 0's.
    HostBuffers b{{"x", {3.0, 4.0, 99.0, 6.0, 8.0, 99.0}},
                  {"dy", {0.5, -1.0, 99.0, 0.5, -1.0, 99.0}},
                  {"w", {1.0, 2.0}},
                  {"dx", {0, 0, -7.0, 0, 0, -7.0}}};
    cpu_reference(bwd(), problem(Dtype::fp32, {{"M", 2}, {"H", 2}, {"S", 3}}), b);
    EXPECT_EQ(b["dx"][2], -7.0);
    EXPECT_EQ(b["dx"][5], -7.0);
    const double rstd0 = 1.0 / std::sqrt(12.5 + eps);
    EXPECT_NEAR(b["dw"][0], 2 * 0.5 * 3.0 * rstd0, 1e-6);
    EXPECT_NEAR(b["dw"][1], 2 * -1.0 * 4.0 * rstd0, 1e-6);
    // dx of the doubled row is half as large (rstd halves, the rest is scale-free).
    EXPECT_NEAR(b["dx"][3], b["dx"][0] / 2, 1e-6);
}

TEST(RmsNormBwdOp, CreatesMissingOutputsWithNaNPadding) {
    HostBuffers b{{"x", {3.0, 4.0, 0.0}}, {"dy", {1.0, 1.0, 0.0}}, {"w", {1.0, 1.0}}};
    cpu_reference(bwd(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}, {"S", 3}}), b);
    ASSERT_EQ(b["dx"].size(), 3u);
    EXPECT_TRUE(std::isnan(b["dx"][2]));
    EXPECT_FALSE(std::isnan(b["dx"][0]));
    EXPECT_EQ(b["dw"].size(), 2u);
}

TEST(RmsNormBwdOp, RejectsAStrideSmallerThanTheRow) {
    try {
        bwd().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 16}, {"S", 8}}));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("S=8"), std::string::npos) << e.what();
    }
}

TEST(RmsNormBwdOp, RejectsMissingUnknownAndEmptyAxes) {
    EXPECT_THROW(bwd().arguments(problem(Dtype::fp32, {{"M", 2}})), Error);
    EXPECT_THROW(bwd().bytes_moved(problem(Dtype::fp32, {{"M", 2}, {"H", 8}, {"N", 3}})), Error);
    EXPECT_THROW(bwd().buffers(problem(Dtype::fp32, {{"M", 0}, {"H", 8}})), Error);
    EXPECT_THROW(bwd().buffers(problem(Dtype::fp32, {{"M", 2}, {"H", 0}})), Error);
}

TEST(RmsNormBwdOp, RejectsAnInputOfTheWrongSize) {
    HostBuffers b{{"x", {3.0, 4.0}}, {"dy", {1.0}}, {"w", {1.0, 1.0}}};
    try {
        cpu_reference(bwd(), problem(Dtype::fp32, {{"M", 1}, {"H", 2}}), b);
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_NE(std::string(e.what()).find("dy"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace ktune
