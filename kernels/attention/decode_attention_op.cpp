// decode_attention/fwd: one query token per sequence against a KV cache, grouped-query heads, per-sequence lengths.
//   out[b, hq, :] = softmax_t(q[b, hq, :] . k[b, hk, t, :] / sqrt(D)) @ v[b, hk, :, :],  t < len[b], hk = hq / (HQ /
//   HK)
// Kernels: kernels/attention/*.cuh (layouts in decode_attention_layout.cuh); search spaces:
// search_spaces/decode_attention.yaml (32/8 heads, D 128) and decode_attention_gqa8.yaml (64/8 heads, D 64 and 128).
//
// Problem axes: B (sequences), L (KV cache capacity, tokens), HQ, HK (q and kv heads, HK divides HQ), D (head
// dimension, <= 256), optional U (>= 1, default 1): U = 1 gives every sequence exactly L tokens; U > 1 draws each
// length uniformly from [floor(L / U), L] (at least 1; the generator's [lo, L + 1), clamped to L by every kernel), so
// batches are uneven. Bytes moved count K and V of the sequences' tokens once (for U > 1 at the expected length
// (floor(L / U) + L) / 2, so the bandwidth of uneven problems is approximate: report bandwidth on U = 1), plus q, out
// and the lengths.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "kernels/attention/decode_attention_layout.cuh"
#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

namespace layout = decode_attention_layout;

struct DecodeShape {
    std::int64_t b = 0, l = 0, hq = 0, hk = 0, d = 0, u = 1;
    std::int64_t group() const { return hq / hk; }
    // The shortest length the generator draws, and the expected length.
    std::int64_t min_len() const { return u == 1 ? l : std::max<std::int64_t>(1, l / u); }
    double mean_len() const { return (static_cast<double>(min_len()) + static_cast<double>(l)) / 2.0; }
    std::int64_t kv_elements() const { return b * hk * l * d; }
    std::int64_t q_elements() const { return b * hq * d; }
};

DecodeShape shape_of(const Problem& p) {
    const char* where = "decode_attention/fwd";
    for (const auto& [name, value] : p.shape)
        if (name != "B" && name != "L" && name != "HQ" && name != "HK" && name != "D" && name != "U")
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} has axes B, L, HQ, HK, D and optionally U; unknown axis {}", where, name),
                        p.key());
    auto required = [&](std::string_view name) {
        if (auto v = lookup(p.shape, name)) return *v;
        throw Error(ErrorCategory::bad_input, fmt::format("{} needs axis {}", where, name), p.key());
    };
    DecodeShape s;
    s.b = required("B");
    s.l = required("L");
    s.hq = required("HQ");
    s.hk = required("HK");
    s.d = required("D");
    s.u = lookup(p.shape, "U").value_or(1);
    if (s.b < 1 || s.l < 1 || s.hq < 1 || s.hk < 1 || s.d < 1)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} needs B, L, HQ, HK, D >= 1, got B={} L={} HQ={} HK={} D={}", where, s.b, s.l, s.hq,
                                s.hk, s.d),
                    p.key());
    if (s.hq % s.hk != 0)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{}: HK={} does not divide HQ={} (grouped-query heads)", where, s.hk, s.hq), p.key());
    if (s.d > 256)
        throw Error(ErrorCategory::bad_input, fmt::format("{} takes D <= 256, got D={}", where, s.d), p.key());
    if (s.u < 1)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{}: U is 1 (equal lengths) or more (lengths in [L / U, L]), got {}", where, s.u),
                    p.key());
    constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
    if (s.b > 65535 || s.hk > 65535 || s.hq > int_max || s.l >= int_max)  // grid y, z; lengths and heads are int
        throw Error(ErrorCategory::bad_input, fmt::format("{}: B and HK <= 65535, L < 2^31", where), p.key());
    if (static_cast<double>(s.b) * s.hk * s.l * s.d > 9.0e18)
        throw Error(ErrorCategory::bad_input, fmt::format("{}: the KV cache overflows 64-bit indices", where), p.key());
    return s;
}

const std::vector<double>& input_of(const HostBuffers& buffers, const std::string& name, std::int64_t elements) {
    auto it = buffers.find(name);
    if (it == buffers.end())
        throw Error(ErrorCategory::bad_input, fmt::format("cpu_reference needs buffer {}", name),
                    "decode_attention/fwd");
    if (static_cast<std::int64_t>(it->second.size()) != elements)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("buffer {} has {} elements, the problem needs {}", name, it->second.size(), elements),
                    "decode_attention/fwd");
    return it->second;
}

class DecodeAttentionOp final : public OpDescription {
public:
    std::string_view name() const override { return "decode_attention"; }
    std::string_view variant() const override { return "fwd"; }
    std::string_view summary() const override {
        return "Decode attention (flash-decoding): one query token per sequence, GQA, per-sequence lengths (axes B, L, "
               "HQ, HK, D, optional U for uneven lengths)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const DecodeShape s = shape_of(p);
        const ElemType t = elem_type(p.dtype);
        // q in [-4, 4) makes the scores' spread about 1.3 (in units of the softmax), so attention is neither uniform
        // (where a dropped tile of tokens would hide in the rounding) nor one-hot.
        const double len_lo = static_cast<double>(s.min_len());
        const double len_hi = s.u == 1 ? static_cast<double>(s.l) : static_cast<double>(s.l + 1);  // lo == hi: L
        return {
            {"q", t, s.q_elements(), BufferRole::input, -4.0, 4.0},
            {"k", t, s.kv_elements(), BufferRole::input, -1.0, 1.0},
            {"v", t, s.kv_elements(), BufferRole::input, -1.0, 1.0},
            {"seq_lens", ElemType::i32, s.b, BufferRole::input, len_lo, len_hi},
            {"out", t, s.q_elements(), BufferRole::output, 0.0, 0.0},
            {"scratch", ElemType::f32, layout::scratch_floats(s.b, s.hk, s.group(), s.d), BufferRole::scratch, 0.0,
             0.0},
        };
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        const DecodeShape s = shape_of(p);
        return {KernelArg::buf("out"),
                KernelArg::buf("q"),
                KernelArg::buf("k"),
                KernelArg::buf("v"),
                KernelArg::buf("seq_lens"),
                KernelArg::buf("scratch"),
                KernelArg::i32(s.b),
                KernelArg::i32(s.hq),
                KernelArg::i32(s.hk),
                KernelArg::i32(s.d),
                KernelArg::i32(s.l),
                KernelArg::f32(1.0 / std::sqrt(static_cast<double>(s.d))),
                KernelArg::i32(layout::max_splits(s.b, s.hk))};
    }

    double bytes_moved(const Problem& p) const override {
        const DecodeShape s = shape_of(p);
        const double eb = elem_bytes(elem_type(p.dtype));
        const double len = s.mean_len();
        return 2.0 * s.b * s.hk * len * s.d * eb + 2.0 * s.q_elements() * eb + 4.0 * s.b;
    }

    // Per q head and token: the score (2D) and the weighted sum (2D).
    double flops(const Problem& p) const override {
        const DecodeShape s = shape_of(p);
        const double len = s.mean_len();
        return 4.0 * s.b * s.hq * len * s.d;
    }

    // out in double from q, k, v and seq_lens (lengths truncated and clamped to [0, L] as the kernels do; the scale
    // rounded to float as the kernels receive it). Not rounded to the storage type.
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const DecodeShape s = shape_of(p);
        const std::vector<double>& q = input_of(buffers, "q", s.q_elements());
        const std::vector<double>& k = input_of(buffers, "k", s.kv_elements());
        const std::vector<double>& v = input_of(buffers, "v", s.kv_elements());
        const std::vector<double>& lens = input_of(buffers, "seq_lens", s.b);
        std::vector<double>& out = buffers["out"];
        out.assign(static_cast<std::size_t>(s.q_elements()), 0.0);
        const double scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.d))));
        std::vector<double> scores;
        for (std::int64_t b = 0; b < s.b; ++b) {
            const auto len = static_cast<std::int64_t>(
                std::clamp(std::floor(lens[static_cast<std::size_t>(b)]), 0.0, static_cast<double>(s.l)));
            for (std::int64_t hq = 0; hq < s.hq; ++hq) {
                const std::int64_t hk = hq / s.group();
                const std::size_t qrow = static_cast<std::size_t>((b * s.hq + hq) * s.d);
                const std::size_t kv = static_cast<std::size_t>((b * s.hk + hk) * s.l * s.d);
                if (len == 0) continue;
                scores.assign(static_cast<std::size_t>(len), 0.0);
                double mx = -std::numeric_limits<double>::infinity();
                for (std::int64_t t = 0; t < len; ++t) {
                    double acc = 0.0;
                    for (std::int64_t d = 0; d < s.d; ++d)
                        acc += q[qrow + static_cast<std::size_t>(d)] * k[kv + static_cast<std::size_t>(t * s.d + d)];
                    scores[static_cast<std::size_t>(t)] = acc * scale;
                    mx = std::max(mx, acc * scale);
                }
                double sum = 0.0;
                for (double& e : scores) {
                    e = std::exp(e - mx);
                    sum += e;
                }
                for (std::int64_t d = 0; d < s.d; ++d) {
                    double acc = 0.0;
                    for (std::int64_t t = 0; t < len; ++t)
                        acc += scores[static_cast<std::size_t>(t)] * v[kv + static_cast<std::size_t>(t * s.d + d)];
                    out[qrow + static_cast<std::size_t>(d)] = acc / sum;
                }
            }
        }
    }
};

}  // namespace

const OpDescription& decode_attention_fwd_op() {
    static const DecodeAttentionOp op;
    return op;
}

}  // namespace ktune
