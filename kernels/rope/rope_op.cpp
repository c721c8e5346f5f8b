// rope/neox and rope/gptj: rotary position embedding on q and k, in place, in one launch. Kernels:
// kernels/rope/*.cuh; search spaces: search_spaces/rope_neox.yaml, search_spaces/rope_gptj.yaml.
//
// Problem axes: M (tokens), HQ (q heads), HK (k heads: grouped-query attention has HK < HQ), D (head dim), and
// optionally R (rotary dims per head, even, <= D, default D: partial rotary leaves dims R.. untouched), P (rows of the
// cos/sin caches, positions are drawn from [0, P), default 8192), SQ and SK (token strides of q and k in elements,
// defaults HQ * D and HK * D).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

constexpr std::int64_t rope_default_positions = 8192;

struct RopeShape {
    std::int64_t m = 0, hq = 0, hk = 0, d = 0, r = 0, p = 0, sq = 0, sk = 0;
};

class RopeOp final : public OpDescription {
public:
    RopeOp(std::string_view variant, bool interleaved) : m_variant(variant), m_interleaved(interleaved) {}

    std::string_view name() const override { return "rope"; }
    std::string_view variant() const override { return m_variant; }
    std::string_view summary() const override {
        return m_interleaved
                   ? "RoPE, interleaved pairs (GPT-J), on q [M, HQ, D] and k [M, HK, D] in place (axes M, HQ, HK, D; "
                     "optional R, P, SQ, SK)"
                   : "RoPE, rotate-half pairs (NeoX/Llama), on q [M, HQ, D] and k [M, HK, D] in place (axes M, HQ, HK, "
                     "D; optional R, P, SQ, SK)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const RopeShape s = shape_of(p);
        const ElemType t = elem_type(p.dtype);
        return {
            {"q", t, s.m * s.sq, BufferRole::inout, -2.0, 2.0},
            {"k", t, s.m * s.sk, BufferRole::inout, -2.0, 2.0},
            {"positions", ElemType::i32, s.m, BufferRole::input, 0.0, static_cast<double>(s.p)},
            {"cos_cache", ElemType::f32, s.p * (s.r / 2), BufferRole::input, -1.0, 1.0},
            {"sin_cache", ElemType::f32, s.p * (s.r / 2), BufferRole::input, -1.0, 1.0},
        };
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        const RopeShape s = shape_of(p);
        return {KernelArg::buf("q"),         KernelArg::buf("k"),         KernelArg::buf("positions"),
                KernelArg::buf("cos_cache"), KernelArg::buf("sin_cache"), KernelArg::i32(s.m),
                KernelArg::i32(s.hq),        KernelArg::i32(s.hk),        KernelArg::i32(s.d),
                KernelArg::i32(s.r),         KernelArg::i64(s.sq),        KernelArg::i64(s.sk)};
    }

    // The rotated R dims of every head read and written once, the positions once, and one cos and one sin row per
    // distinct position: at most min(M, P) rows (the count of distinct random positions is a little lower; dims R..
    // need not move at all).
    double bytes_moved(const Problem& p) const override {
        const RopeShape s = shape_of(p);
        const double m = static_cast<double>(s.m), r = static_cast<double>(s.r);
        const double heads = static_cast<double>(s.hq + s.hk);
        const double cache_rows = static_cast<double>(std::min(s.m, s.p));
        return 2.0 * m * heads * r * elem_bytes(elem_type(p.dtype)) + 4.0 * m + cache_rows * r * 4.0;
    }

    // Per pair: four multiplies and two adds.
    double flops(const Problem& p) const override {
        const RopeShape s = shape_of(p);
        return 6.0 * static_cast<double>(s.m) * static_cast<double>(s.hq + s.hk) * static_cast<double>(s.r / 2);
    }

    // Rotates q and k in place, in double, from the given caches. Throws Error(bad_input) for a position outside
    // [0, P).
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const RopeShape s = shape_of(p);
        std::vector<double>& q = inout_of(buffers, "q", s.m * s.sq);
        std::vector<double>& k = inout_of(buffers, "k", s.m * s.sk);
        const std::vector<double>& pos = inout_of(buffers, "positions", s.m);
        const std::vector<double>& cs = inout_of(buffers, "cos_cache", s.p * (s.r / 2));
        const std::vector<double>& sn = inout_of(buffers, "sin_cache", s.p * (s.r / 2));
        const std::int64_t half = s.r / 2;
        for (std::int64_t t = 0; t < s.m; ++t) {
            const double position = pos[static_cast<std::size_t>(t)];
            if (!(position >= 0 && position < static_cast<double>(s.p)) || position != std::floor(position))
                throw Error(ErrorCategory::bad_input,
                            fmt::format("position {} of token {} is outside [0, P={})", position, t, s.p), "rope");
            const std::int64_t row = static_cast<std::int64_t>(position) * half;
            for (std::int64_t h = 0; h < s.hq + s.hk; ++h) {
                double* head = h < s.hq ? &q[static_cast<std::size_t>(t * s.sq + h * s.d)]
                                        : &k[static_cast<std::size_t>(t * s.sk + (h - s.hq) * s.d)];
                for (std::int64_t i = 0; i < half; ++i) {
                    double& a = m_interleaved ? head[2 * i] : head[i];
                    double& b = m_interleaved ? head[2 * i + 1] : head[i + half];
                    const double c = cs[static_cast<std::size_t>(row + i)], sv = sn[static_cast<std::size_t>(row + i)];
                    const double ra = a * c - b * sv, rb = b * c + a * sv;
                    a = ra;
                    b = rb;
                }
            }
        }
    }

private:
    RopeShape shape_of(const Problem& p) const {
        const std::string where = fmt::format("rope/{} {}", m_variant, p.key());
        for (const auto& [name, value] : p.shape)
            if (name != "M" && name != "HQ" && name != "HK" && name != "D" && name != "R" && name != "P" &&
                name != "SQ" && name != "SK")
                throw Error(ErrorCategory::bad_input,
                            fmt::format("rope has axes M, HQ, HK, D and optionally R, P, SQ, SK; unknown axis {}", name),
                            where);
        auto required = [&](std::string_view name) {
            if (auto v = lookup(p.shape, name)) return *v;
            throw Error(ErrorCategory::bad_input, fmt::format("rope needs axis {}", name), where);
        };
        RopeShape s;
        s.m = required("M");
        s.hq = required("HQ");
        s.hk = required("HK");
        s.d = required("D");
        s.r = lookup(p.shape, "R").value_or(s.d);
        s.p = lookup(p.shape, "P").value_or(rope_default_positions);
        if (s.m < 1 || s.hq < 1 || s.hk < 1 || s.d < 1 || s.p < 1)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("rope needs M, HQ, HK, D and P >= 1, got M={} HQ={} HK={} D={} P={}", s.m, s.hq,
                                    s.hk, s.d, s.p),
                        where);
        if (s.r < 2 || s.r % 2 != 0 || s.r > s.d)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("rope needs an even rotary dim R in [2, D={}], got R={}", s.d, s.r), where);
        constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
        // The kernels take sizes as int and number one token group's (head, pair) items in 32 bits.
        if (s.m > int_max || s.d > int_max || (s.hq + s.hk) * (s.r / 2) > (std::int64_t{1} << 20))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("rope needs M <= {} and (HQ + HK) * R / 2 <= 2^20", int_max), where);
        s.sq = lookup(p.shape, "SQ").value_or(s.hq * s.d);
        s.sk = lookup(p.shape, "SK").value_or(s.hk * s.d);
        if (s.sq < s.hq * s.d || s.sk < s.hk * s.d)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("rope token strides SQ={} and SK={} must be >= HQ*D={} and HK*D={}", s.sq, s.sk,
                                    s.hq * s.d, s.hk * s.d),
                        where);
        if (s.sq > std::numeric_limits<std::int64_t>::max() / s.m ||
            s.sk > std::numeric_limits<std::int64_t>::max() / s.m ||
            s.p > std::numeric_limits<std::int64_t>::max() / s.r)
            throw Error(ErrorCategory::bad_input, "rope buffer sizes overflow", where);
        return s;
    }

    std::vector<double>& inout_of(HostBuffers& buffers, const std::string& name, std::int64_t elements) const {
        auto it = buffers.find(name);
        if (it == buffers.end())
            throw Error(ErrorCategory::bad_input, fmt::format("cpu_reference needs buffer {}", name),
                        fmt::format("rope/{}", m_variant));
        if (static_cast<std::int64_t>(it->second.size()) != elements)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("buffer {} has {} elements, the problem needs {}", name, it->second.size(),
                                    elements),
                        fmt::format("rope/{}", m_variant));
        return it->second;
    }

    std::string_view m_variant;
    bool m_interleaved;
};

}  // namespace

const OpDescription& rope_neox_op() {
    static const RopeOp op("neox", false);
    return op;
}

const OpDescription& rope_gptj_op() {
    static const RopeOp op("gptj", true);
    return op;
}

}  // namespace ktune
