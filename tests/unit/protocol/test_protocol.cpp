#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ktune::wire
