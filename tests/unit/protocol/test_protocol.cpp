#include <gtest/gtest.h>

#include <limits>

#include "harness/protocol/protocol.hpp"

namespace ktune::wire {
namespace {

TEST(Protocol, LaunchSurvivesAJsonRoundTrip) {
    Launch l{"/c/a.cubin", "_Z3fooi", {4, 2, 1}, {256, 1, 1}, 1024};
    const Launch back = json(l).get<Launch>();
    EXPECT_EQ(back.cubin, l.cubin);
    EXPECT_EQ(back.lowered, l.lowered);
    EXPECT_EQ(back.grid, l.grid);
    EXPECT_EQ(back.block, l.block);
    EXPECT_EQ(back.shared_bytes, 1024u);
}

TEST(Protocol, ALibraryLaunchKeepsItsNameAndConfiguration) {
    Launch l;
    l.library = "cublas_gemm";
    l.config = {{"API", 2}, {"RANK", 3}};
    const json j = l;
    const Launch back = j.get<Launch>();
    EXPECT_EQ(back.library, "cublas_gemm");
    ASSERT_EQ(back.config.size(), 2u);
    EXPECT_EQ(back.config[1].first, "RANK");
    EXPECT_EQ(back.config[1].second, 3);
    EXPECT_FALSE(json(Launch{}).contains("library"));  // a kernel launch carries no library fields
}

TEST(Protocol, ALaunchKeepsItsTensorMapsInOrder) {
    Launch l;
    Arg map;
    map.kind = "tensor_map";
    map.buffer = "w";
    map.dims = {14336, 4096};
    map.box = {256, 64};
    map.swizzle = 128;
    l.tensor_maps = {map, map};
    l.tensor_maps[1].buffer = "x";
    const Launch back = json(l).get<Launch>();
    ASSERT_EQ(back.tensor_maps.size(), 2u);
    EXPECT_EQ(back.tensor_maps[0].buffer, "w");
    EXPECT_EQ(back.tensor_maps[1].buffer, "x");
    EXPECT_EQ(back.tensor_maps[0].dims, map.dims);
    EXPECT_EQ(back.tensor_maps[0].box, map.box);
    EXPECT_EQ(back.tensor_maps[0].swizzle, 128);
    EXPECT_FALSE(json(Launch{}).contains("tensor_maps"));  // a launch without them carries nothing new
}

TEST(Protocol, EvaluateResultKeepsSamplesAndStatus) {
    EvaluateResult r;
    r.status = "invalid_result";
    r.message = "3 mismatches";
    r.samples_us = {1.5, 2.5};
    r.time_cap_hit = true;
    const EvaluateResult back = json::parse(json(r).dump()).get<EvaluateResult>();
    EXPECT_EQ(back.status, "invalid_result");
    EXPECT_EQ(back.message, "3 mismatches");
    EXPECT_EQ(back.samples_us, r.samples_us);
    EXPECT_TRUE(back.time_cap_hit);
}

TEST(Protocol, MissingFieldsTakeTheirDefaults) {
    const TimingOptions t = json::parse(R"({"min_samples": 3})").get<TimingOptions>();
    EXPECT_EQ(t.min_samples, 3);
    EXPECT_TRUE(t.cold_l2);
    EXPECT_TRUE(t.clean_flush);
    EXPECT_DOUBLE_EQ(t.target_rel, 0.01);
}

TEST(Protocol, TheFlushModeSurvivesTheRoundTrip) {
    const TimingOptions dirty = json(TimingOptions{.clean_flush = false}).get<TimingOptions>();
    EXPECT_FALSE(dirty.clean_flush);
    EXPECT_EQ(l2_state(dirty), "cold-dirty");
}

TEST(Protocol, BufferSeedsKeepAll64Bits) {
    Buffer b;
    b.seed = 0xFEDCBA9876543210ull;
    EXPECT_EQ(json::parse(json(b).dump()).get<Buffer>().seed, 0xFEDCBA9876543210ull);
}

TEST(Protocol, AnInfiniteMaxAbsErrorSurvivesTheRoundTrip) {
    // A mismatch involving NaN or Inf (an output that reads a NaN pad row, or one never written) has error +inf,
    // which JSON writes as null.
    EvaluateResult r;
    r.status = "invalid_result";
    r.max_abs_error = std::numeric_limits<double>::infinity();
    const EvaluateResult back = json::parse(json(r).dump()).get<EvaluateResult>();
    EXPECT_EQ(back.max_abs_error, std::numeric_limits<double>::infinity());
    EXPECT_EQ(json::parse(json(EvaluateResult{}).dump()).get<EvaluateResult>().max_abs_error, 0.0);
}

TEST(Protocol, ABuffersPadSurvivesTheRoundTripAndABufferWithoutOneSendsNone) {
    Buffer b;
    b.pad_lengths = 3;
    b.pad_heads = 8;
    b.pad_tokens = 4096;
    b.pad_token_elements = 128;
    const Buffer back = json::parse(json(b).dump()).get<Buffer>();
    EXPECT_EQ(back.pad_lengths, 3);
    EXPECT_EQ(back.pad_heads, 8);
    EXPECT_EQ(back.pad_tokens, 4096);
    EXPECT_EQ(back.pad_token_elements, 128);
    EXPECT_FALSE(json(Buffer{}).contains("pad"));
    EXPECT_EQ(json(Buffer{}).get<Buffer>().pad_lengths, -1);
}

}  // namespace
}  // namespace ktune::wire
