// The golden generated header's selection logic, compiled by the host compiler (KTUNE_TUNED_HOST_ONLY): fallback
// levels, nearest bucket, launch geometry, buffer sizes and generator ranges against the search space's and the op
// spec's own evaluation.
#define KTUNE_TUNED_HOST_ONLY
#include "tests/unit/export/golden/ktune_tuned_decode_attention_fwd.hpp"
#include "tests/unit/export/golden/ktune_tuned_rmsnorm_fwd.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

namespace kt = ktune_tuned;

// What query_device_props() reports on the device that h100_sxm() describes.
kt::DeviceProps sxm_props() {
    kt::DeviceProps p = kt::make_device_props("NVIDIA H100 80GB HBM3", 9, 0, 132);
    p.l2_bytes = 52428800;
    p.memory_bytes = 85028896768LL;
    p.memory_clock_khz = 2619000;
    p.memory_bus_bits = 5120;
    p.driver_version = 13000;
    return p;
}

kt::Choice select(const kt::DeviceProps& p, kt::Dtype dtype, long long m, long long h, long long s = 0) {
    const long long shape[3] = {m, h, s == 0 ? h : s};
    return kt::rmsnorm_fwd_select(p, dtype, shape);
}

std::string bucket(const kt::Choice& c) { return c.entry < 0 ? "" : kt::rmsnorm_fwd_table::entries[c.entry].problem; }

TEST(GeneratedHeaderSelect, UsesTheExactDeviceWhenEveryIdentityFieldMatches) {
    const kt::Choice c = select(sxm_props(), kt::Dtype::bf16, 16, 4096);
    EXPECT_EQ(c.level, kt::Level::exact_device);
    EXPECT_EQ(std::string(c.device_key), h100_sxm().key);
    EXPECT_EQ(std::string(c.config_key), k_medium);
    EXPECT_EQ(std::string(c.kernel), "rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>");
}

TEST(GeneratedHeaderSelect, FallsToTheSameChipWhenOnlyTheDriverDiffers) {
    kt::DeviceProps p = sxm_props();
    p.driver_version = 12080;
    const kt::Choice c = select(p, kt::Dtype::bf16, 16, 4096);
    EXPECT_EQ(c.level, kt::Level::same_chip);
    EXPECT_EQ(std::string(c.device_key), h100_sxm().key);
}

TEST(GeneratedHeaderSelect, FallsToTheSameChipWhenOnlyNameCapabilityAndSmsAreKnown) {
    const kt::Choice c = select(kt::make_device_props("NVIDIA H100 PCIe", 9, 0, 114), kt::Dtype::bf16, 16, 4096);
    EXPECT_EQ(c.level, kt::Level::same_chip);
    EXPECT_EQ(std::string(c.device_key), h100_pcie().key);
    EXPECT_EQ(std::string(c.config_key), k_pcie);
}

TEST(GeneratedHeaderSelect, FallsToTheSameArchitectureForAnotherChipOfIt) {
    const kt::Choice c = select(kt::make_device_props("NVIDIA H200", 9, 0, 132), kt::Dtype::bf16, 4096, 8192);
    EXPECT_EQ(c.level, kt::Level::same_arch);
    EXPECT_EQ(std::string(c.device_key), h100_sxm().key);  // the device with the most entries comes first
    EXPECT_EQ(std::string(c.config_key), k_wide);
}

TEST(GeneratedHeaderSelect, SkipsAMatchingDeviceWithoutEntriesForTheDtype) {
    const kt::Choice c = select(kt::make_device_props("NVIDIA H100 PCIe", 9, 0, 114), kt::Dtype::fp32, 16, 4096);
    EXPECT_EQ(c.level, kt::Level::same_arch);
    EXPECT_EQ(std::string(c.device_key), h100_sxm().key);
    EXPECT_EQ(std::string(c.config_key), k_fp32);
}

TEST(GeneratedHeaderSelect, UsesTheDtypeDefaultOnAnotherArchitecture) {
    const kt::Choice c = select(kt::make_device_props("NVIDIA A100-SXM4-80GB", 8, 0, 108), kt::Dtype::bf16, 1, 4096);
    EXPECT_EQ(c.level, kt::Level::default_config);
    EXPECT_EQ(std::string(c.device_key), "");
    EXPECT_EQ(c.entry, -1);
    EXPECT_EQ(std::string(c.config_key), k_medium);  // best for 5 of the 10 bf16 problems
}

TEST(GeneratedHeaderSelect, FindsNothingForADtypeThatWasNeverTuned) {
    const kt::Choice c = select(sxm_props(), kt::Dtype::fp16, 16, 4096);
    EXPECT_EQ(c.level, kt::Level::none);
    EXPECT_EQ(c.config, -1);
    EXPECT_FALSE(kt::rmsnorm_fwd_table::supports(kt::Dtype::fp16));
}

TEST(GeneratedHeaderSelect, FindsNothingForADtypeValueOutsideTheEnum) {
    EXPECT_EQ(select(sxm_props(), static_cast<kt::Dtype>(7), 16, 4096).config, -1);
}

TEST(GeneratedHeaderSelect, MarksATunedShapeAsAnExactBucketWithItsTunedTime) {
    const kt::Choice c = select(sxm_props(), kt::Dtype::bf16, 4096, 4096);
    EXPECT_TRUE(c.exact_bucket);
    EXPECT_EQ(bucket(c), "bf16:M=4096,H=4096");
    EXPECT_DOUBLE_EQ(c.tuned_p50_us, 25.0);
}

TEST(GeneratedHeaderSelect, TakesTheNearestBucketInLogSpaceForAnUntunedShape) {
    const kt::Choice c = select(sxm_props(), kt::Dtype::bf16, 3000, 4096);  // 4096/3000 is nearer than 3000/256
    EXPECT_FALSE(c.exact_bucket);
    EXPECT_EQ(bucket(c), "bf16:M=4096,H=4096");
    EXPECT_EQ(std::string(c.config_key), k_large);
}

TEST(GeneratedHeaderSelect, WeighsEveryAxisInTheDistance) {
    EXPECT_EQ(bucket(select(sxm_props(), kt::Dtype::bf16, 200, 7000)), "bf16:M=256,H=8192");
}

TEST(GeneratedHeaderSelect, BreaksAnExactTieTowardsTheEarlierEntry) {
    // M = 4 is a factor of 4 from both M = 1 and M = 16.
    EXPECT_EQ(bucket(select(sxm_props(), kt::Dtype::bf16, 4, 4096)), "bf16:M=1,H=4096");
}

TEST(GeneratedHeaderSelect, CountsTheRowStrideAsAnAxis) {
    // S = 8192 with H = 4096: as far from the (4096, 4096, 4096) bucket as from (4096, 8192, 8192); the earlier wins.
    EXPECT_EQ(bucket(select(sxm_props(), kt::Dtype::bf16, 4096, 4096, 8192)), "bf16:M=4096,H=4096");
    EXPECT_EQ(bucket(select(sxm_props(), kt::Dtype::bf16, 4096, 6000, 8192)), "bf16:M=4096,H=8192");
}

TEST(GeneratedHeaderSelect, ConvenienceOverloadTakesTheDispatcherArguments) {
    const kt::Choice c = kt::rmsnorm_fwd_select(sxm_props(), kt::Dtype::bf16, 16, 8192, 8192);
    EXPECT_EQ(bucket(c), "bf16:M=16,H=8192");
    EXPECT_EQ(c.level, kt::Level::exact_device);
}

TEST(GeneratedHeaderSelect, NamesEveryLevelAndStatus) {
    EXPECT_STREQ(kt::level_name(kt::Level::same_chip), "same chip");
    EXPECT_STREQ(kt::status_message(kt::Status::misaligned), "a pointer is not aligned to its element size");
}

// The translated launch expressions give what SearchSpace::launch() gives, for every configuration in the header.
TEST(GeneratedHeaderGeometry, AgreesWithTheSearchSpaceForEveryConfigurationAndShape) {
    const SearchSpace space = SearchSpace::load_file(rmsnorm_space_path());
    const Dtype dtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
    int checked = 0;
    for (int i = 0; i < kt::rmsnorm_fwd_table::config_count; ++i) {
        const auto& hc = kt::rmsnorm_fwd_table::configs[i];
        Config c;
        for (int p = 0; p < kt::rmsnorm_fwd_table::parameter_count; ++p)
            c.values.emplace_back(kt::rmsnorm_fwd_table::parameter_names[p], hc.values[p]);
        for (long long m : {1LL, 3LL, 17LL, 4096LL, 100003LL, 2147483647LL})
            for (long long h : {1LL, 4095LL, 8192LL}) {
                const long long shape[3] = {m, h, h};
                kt::detail::Geometry g;
                ASSERT_TRUE(kt::rmsnorm_fwd_table::geometry(i, shape, 132, &g));
                const LaunchGeometry want =
                    space.launch(c, Problem{dtypes[static_cast<int>(hc.dtype)], {{"M", m}, {"H", h}}}, 132);
                for (int k = 0; k < 3; ++k) {
                    EXPECT_EQ(g.grid[k], want.grid[k]) << hc.key << " M=" << m;
                    EXPECT_EQ(g.block[k], want.block[k]) << hc.key;
                }
                EXPECT_EQ(g.shared_bytes, want.shared_bytes);
                ++checked;
            }
    }
    EXPECT_EQ(checked, 6 * 6 * 3);
}

TEST(GeneratedHeaderGeometry, RefusesAConfigurationIndexOutsideTheTable) {
    const long long shape[3] = {16, 4096, 4096};
    kt::detail::Geometry g;
    EXPECT_FALSE(kt::rmsnorm_fwd_table::geometry(kt::rmsnorm_fwd_table::config_count, shape, 132, &g));
    EXPECT_FALSE(kt::rmsnorm_fwd_table::legal(-1, shape));
}

// The header's buffer sizes, generator ranges and pads equal the op spec's for every buffer of problem p, whose axes
// are given in the header's order (optional ones included).
template <typename Elements, typename Range, typename Pad>
void expect_buffers_as_the_op_spec(const DeclaredOp& op, const Problem& p, const char* const* names, int count,
                                   Elements elements, Range range, Pad pad) {
    std::vector<long long> shape;
    for (const OpAxis& a : op.axes()) shape.push_back(p.at(a.name));
    const kt::Dtype dtype = static_cast<kt::Dtype>(static_cast<int>(p.dtype));
    const std::vector<BufferSpec> want = op.buffers(p);
    ASSERT_EQ(static_cast<std::size_t>(count), want.size());
    for (int b = 0; b < count; ++b) {
        const auto it = std::find_if(want.begin(), want.end(), [&](const BufferSpec& s) { return s.name == names[b]; });
        ASSERT_NE(it, want.end()) << names[b];
        EXPECT_EQ(elements(b, shape.data(), dtype), it->elements) << names[b] << " at " << p.key();
        double lo = 0, hi = 0;
        ASSERT_TRUE(range(b, shape.data(), dtype, &lo, &hi));
        EXPECT_EQ(lo, it->lo) << names[b] << " at " << p.key();
        EXPECT_EQ(hi, it->hi) << names[b] << " at " << p.key();
        int lengths = -1;
        long long heads = 0, tokens = 0, token_elements = 0;
        ASSERT_EQ(pad(b, shape.data(), dtype, &lengths, &heads, &tokens, &token_elements), it->pad.has_value())
            << names[b] << " at " << p.key();
        if (!it->pad) continue;
        ASSERT_GE(lengths, 0);
        ASSERT_LT(lengths, count);
        EXPECT_EQ(names[lengths], it->pad->lengths) << names[b];
        EXPECT_EQ(elements(lengths, shape.data(), dtype), it->pad->sequences) << names[b] << " at " << p.key();
        EXPECT_EQ(heads, it->pad->heads) << names[b] << " at " << p.key();
        EXPECT_EQ(tokens, it->pad->tokens) << names[b] << " at " << p.key();
        EXPECT_EQ(token_elements, it->pad->token_elements) << names[b] << " at " << p.key();
    }
}

TEST(GeneratedHeaderBuffers, SizesRangesAndPadsEveryBufferAsTheOpSpecWithItsNamedValues) {
    const DecodeAttentionKernels kernels;
    const SearchSpace& space = kernels.kernels.front();  // one op spec for every kernel
    namespace t = kt::decode_attention_fwd_table;
    for (const Dtype dt : {Dtype::fp16, Dtype::bf16})
        for (const auto& [b, l, hq, hk, d, u] : std::vector<std::array<long long, 6>>{
                 {1, 1024, 32, 8, 128, 1}, {64, 32768, 32, 8, 128, 16}, {3, 1001, 12, 4, 80, 7}, {1, 1, 1, 1, 1, 1}}) {
            const Problem p{dt, {{"B", b}, {"L", l}, {"HQ", hq}, {"HK", hk}, {"D", d}, {"U", u}}};
            expect_buffers_as_the_op_spec(*space.declared_op(), p, t::buffer_names, t::buffer_count, t::buffer_elements,
                                          t::buffer_range, t::buffer_pad);
        }
    const SearchSpace rmsnorm = SearchSpace::load_file(rmsnorm_space_path());
    namespace r = kt::rmsnorm_fwd_table;
    for (const auto& [m, h, s] : std::vector<std::array<long long, 3>>{{1, 4096, 4096}, {7, 1001, 1024}})
        expect_buffers_as_the_op_spec(*rmsnorm.declared_op(), Problem{Dtype::bf16, {{"M", m}, {"H", h}, {"S", s}}},
                                      r::buffer_names, r::buffer_count, r::buffer_elements, r::buffer_range,
                                      r::buffer_pad);
}

TEST(GeneratedHeaderBuffers, RefusesAShapeThatFailsTheOpSpecsChecks) {
    namespace t = kt::decode_attention_fwd_table;
    const long long bad_group[6] = {1, 1024, 30, 8, 128, 1};  // HK does not divide HQ
    EXPECT_EQ(t::buffer_elements(0, bad_group, kt::Dtype::bf16), -1);
    EXPECT_STREQ(t::failed_check(bad_group, 2), "HK does not divide HQ (grouped-query heads)");
}

}  // namespace
}  // namespace ktune::test
