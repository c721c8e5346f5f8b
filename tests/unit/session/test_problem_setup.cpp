// What the worker is told to set a problem up with (make_problem_setup): each buffer's wire spec from the op spec,
// the pad of a padded batch with its lengths buffer as an index into the same list.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ktune_test_config.hpp"
#include "tuner/session/space_measurer.hpp"
#include "tuner/space/op_spec.hpp"

namespace ktune {
namespace {

const wire::Buffer& named(const ProblemSetup& s, const std::string& name) {
    const auto it =
        std::find_if(s.buffers.begin(), s.buffers.end(), [&](const wire::Buffer& b) { return b.name == name; });
    if (it == s.buffers.end()) throw std::runtime_error("no buffer " + name);
    return *it;
}

int index_of(const ProblemSetup& s, const std::string& name) {
    return static_cast<int>(&named(s, name) - s.buffers.data());
}

std::shared_ptr<const DeclaredOp> attention(const std::string& file) {
    return DeclaredOp::load_file(std::string(KTUNE_SOURCE_ROOT) + "/kernels/attention/" + file);
}

TEST(ProblemSetup, PrefillAttentionsQkvArePaddedTokenMajorByTheSequenceLengths) {
    const Problem p{Dtype::bf16, {{"B", 3}, {"L", 1000}, {"HQ", 8}, {"HK", 2}, {"D", 128}, {"U", 2}}};
    const ProblemSetup s = make_problem_setup(*attention("prefill_attention_causal.op.yaml"), p, 7);
    for (const char* name : {"q", "k", "v"}) {
        const wire::Buffer& b = named(s, name);
        EXPECT_EQ(b.pad_lengths, index_of(s, "seq_lens")) << name;
        EXPECT_EQ(b.pad_heads, 1) << name;
        EXPECT_EQ(b.pad_tokens, 1000) << name;
        EXPECT_EQ(b.pad_token_elements, (std::string(name) == "q" ? 8 : 2) * 128) << name;
    }
    EXPECT_EQ(named(s, "seq_lens").pad_lengths, -1);
    EXPECT_EQ(named(s, "out").pad_lengths, -1);
}

TEST(ProblemSetup, DecodeAttentionsCacheIsPaddedHeadMajor) {
    const Problem p{Dtype::fp16, {{"B", 4}, {"L", 4096}, {"HQ", 32}, {"HK", 8}, {"D", 128}, {"U", 16}}};
    const ProblemSetup s = make_problem_setup(*attention("decode_attention_fwd.op.yaml"), p, 7);
    for (const char* name : {"k", "v"}) {
        const wire::Buffer& b = named(s, name);
        EXPECT_EQ(b.pad_lengths, index_of(s, "seq_lens")) << name;
        EXPECT_EQ(b.pad_heads, 8) << name;
        EXPECT_EQ(b.pad_tokens, 4096) << name;
        EXPECT_EQ(b.pad_token_elements, 128) << name;
    }
    EXPECT_EQ(named(s, "q").pad_lengths, -1);  // one token per sequence: nothing to pad
}

}  // namespace
}  // namespace ktune
