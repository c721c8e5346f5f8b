// linear_int4/fwd: y = x W^T with W as INT4 (group-wise scales and zero points, two values per byte),
// linear_int8/fwd: y = x W^T with W as INT8 (per-channel scales); x and y fp16 or bf16, fp32 accumulation; and
// linear/fwd: y = x W^T with W dense in the activations' type ([N, K] row-major, as F.linear takes it), the baseline
// they are measured against (search_spaces/linear_cublas.yaml: cuBLAS through the worker's library launcher).
// Kernels: kernels/quant_linear/*.cuh (weight layouts in quant_linear_layout.cuh; host packing in
// quant_linear_pack.hpp); search spaces: search_spaces/linear_int4*.yaml, search_spaces/linear_int8.yaml.
//
// Problem axes: M (rows of x: tokens, 1..4096), N (output features), K (input features), and for INT4 the group size
// G (a multiple of 64, default 128; K need not be a multiple of G: the last group is partial).
// Inputs are generated in the packed layouts (random bytes are valid weights in any layout); scales are positive, in a
// range that keeps y of order 1 to 10 at K = 4096..14336; INT4 zero points in [0, 16).
// Bytes moved: the weights (N * K / 2 or N * K bytes, without the layout's padding), scales (and zero points), x and y.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string_view>

#include "kernels/op.hpp"
#include "kernels/quant_linear/quant_linear_layout.cuh"
#include "core/error.hpp"

namespace ktune {
namespace {

namespace layout = quant_linear_layout;

struct LinearShape {
    std::int64_t m = 0, n = 0, k = 0, g = 0;
    std::int64_t groups() const { return layout::groups(k, g); }
    std::int64_t params() const { return layout::int4_params(n, k, g); }  // packed scales (and zero points)
};

// bits: 4 or 8 (weight-only quantized), 16 (dense weights in T).
std::string op_name(int bits) { return bits == 16 ? "linear" : fmt::format("linear_int{}", bits); }

LinearShape shape_of(const Problem& p, int bits) {
    const std::string where = op_name(bits) + "/fwd";
    for (const auto& [name, value] : p.shape)
        if (name != "M" && name != "N" && name != "K" && !(bits == 4 && name == "G"))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} has axes M, N, K{}; unknown axis {}", where,
                                    bits == 4 ? " and optionally G" : "", name),
                        p.key());
    auto required = [&](std::string_view name) {
        if (auto v = lookup(p.shape, name)) return *v;
        throw Error(ErrorCategory::bad_input, fmt::format("{} needs axis {}", where, name), p.key());
    };
    LinearShape s;
    s.m = required("M");
    s.n = required("N");
    s.k = required("K");
    s.g = bits == 4 ? lookup(p.shape, "G").value_or(128) : 0;
    if (s.m < 1 || s.n < 1 || s.k < 1)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} needs M, N, K >= 1, got M={} N={} K={}", where, s.m, s.n, s.k), p.key());
    if (s.m > 4096)
        throw Error(ErrorCategory::bad_input, fmt::format("{} is a decode-time linear: M <= 4096, got {}", where, s.m),
                    p.key());
    if (s.n > (1 << 30) || s.k > (1 << 30))
        throw Error(ErrorCategory::bad_input, fmt::format("{}: N and K <= 2^30", where), p.key());
    if (bits == 4 && (s.g < layout::INT4_CHUNK_K || s.g % layout::INT4_CHUNK_K != 0))
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{}: the group size G is a multiple of {}, got G={}", where, layout::INT4_CHUNK_K, s.g),
                    p.key());
    return s;
}

const std::vector<double>& input_of(const HostBuffers& buffers, const std::string& name, std::int64_t elements,
                                    int bits) {
    auto it = buffers.find(name);
    const std::string where = op_name(bits) + "/fwd";
    if (it == buffers.end())
        throw Error(ErrorCategory::bad_input, fmt::format("cpu_reference needs buffer {}", name), where);
    if (static_cast<std::int64_t>(it->second.size()) != elements)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("buffer {} has {} elements, the problem needs {}", name, it->second.size(), elements),
                    where);
    return it->second;
}

class QuantLinearOp final : public OpDescription {
public:
    explicit QuantLinearOp(int bits) : m_bits(bits), m_name(op_name(bits)) {}

    std::string_view name() const override { return m_name; }
    std::string_view variant() const override { return "fwd"; }
    std::string_view summary() const override {
        if (m_bits == 4)
            return "INT4 weight-only linear y = x W^T, group-wise scales and zero points, packed layout (axes M, N, K, "
                   "optional group size G)";
        if (m_bits == 8) return "INT8 weight-only linear y = x W^T, per-channel scales, packed layout (axes M, N, K)";
        return "dense linear y = x W^T, W [N, K] in the activations' type: the cuBLAS baseline of the weight-only "
               "kernels (axes M, N, K)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const LinearShape s = shape_of(p, m_bits);
        const ElemType t = elem_type(p.dtype);
        std::vector<BufferSpec> out{{"x", t, s.m * s.k, BufferRole::input, -1.0, 1.0}};
        if (m_bits == 16) {
            // Of the order of the dequantized INT8 weights: y of order 1 at K = 4096.
            out.push_back({"w", t, s.n * s.k, BufferRole::input, -0.05, 0.05});
            out.push_back({"y", t, s.m * s.n, BufferRole::output, 0.0, 0.0});
            return out;
        }
        if (m_bits == 4) {
            out.push_back({"w", ElemType::u8, layout::int4_weight_bytes(s.n, s.k), BufferRole::input, 0.0, 256.0});
            out.push_back({"scales", t, s.params(), BufferRole::input, 0.005, 0.02});
            out.push_back({"zeros", ElemType::u8, s.params(), BufferRole::input, 0.0, 16.0});
        } else {
            out.push_back({"w", ElemType::i8, layout::int8_weight_bytes(s.n, s.k), BufferRole::input, -128.0, 128.0});
            out.push_back({"scales", t, s.n, BufferRole::input, 0.0005, 0.002});
        }
        out.push_back({"y", t, s.m * s.n, BufferRole::output, 0.0, 0.0});
        out.push_back({"scratch", ElemType::f32, layout::scratch_floats(s.m, s.n), BufferRole::scratch, 0.0, 0.0});
        return out;
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        const LinearShape s = shape_of(p, m_bits);
        if (m_bits == 16)  // the cublas_gemm library baseline's arguments (core/library.cpp)
            return {KernelArg::buf("y"), KernelArg::buf("x"), KernelArg::buf("w"), KernelArg::i32(s.m),
                    KernelArg::i32(s.n), KernelArg::i32(s.k)};
        std::vector<KernelArg> a{KernelArg::buf("y"), KernelArg::buf("x"), KernelArg::buf("w"),
                                 KernelArg::buf("scales")};
        if (m_bits == 4) a.push_back(KernelArg::buf("zeros"));
        a.push_back(KernelArg::buf("scratch"));
        a.push_back(KernelArg::i32(s.m));
        a.push_back(KernelArg::i32(s.n));
        a.push_back(KernelArg::i32(s.k));
        if (m_bits == 4) a.push_back(KernelArg::i32(s.g));
        a.push_back(KernelArg::i32(layout::max_split_k(s.m, s.n)));
        return a;
    }

    double bytes_moved(const Problem& p) const override {
        const LinearShape s = shape_of(p, m_bits);
        const double eb = elem_bytes(elem_type(p.dtype));
        const double n = static_cast<double>(s.n), k = static_cast<double>(s.k), m = static_cast<double>(s.m);
        const double weights = m_bits == 4 ? n * static_cast<double>((s.k + 1) / 2) : m_bits == 8 ? n * k : n * k * eb;
        const double scales =
            m_bits == 4 ? static_cast<double>(s.groups()) * n * (eb + 1.0) : m_bits == 8 ? n * eb : 0.0;
        return weights + scales + m * k * eb + m * n * eb;
    }

    double flops(const Problem& p) const override {
        const LinearShape s = shape_of(p, m_bits);
        return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    }

    // y in double, each weight dequantized from the packed buffer (bytes as given, 0..255 or -128..127), not rounded
    // to the storage type.
    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const LinearShape s = shape_of(p, m_bits);
        const std::vector<double>& x = input_of(buffers, "x", s.m * s.k, m_bits);
        const std::int64_t wbytes = m_bits == 4   ? layout::int4_weight_bytes(s.n, s.k)
                                    : m_bits == 8 ? layout::int8_weight_bytes(s.n, s.k)
                                                  : s.n * s.k;
        const std::vector<double>& w = input_of(buffers, "w", wbytes, m_bits);
        const std::vector<double>* scales =
            m_bits == 16 ? nullptr : &input_of(buffers, "scales", m_bits == 4 ? s.params() : s.n, m_bits);
        const std::vector<double>* zeros = m_bits == 4 ? &input_of(buffers, "zeros", s.params(), m_bits) : nullptr;
        std::vector<double>& y = buffers["y"];
        y.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
        std::vector<double> row(static_cast<std::size_t>(s.k));
        for (std::int64_t n = 0; n < s.n; ++n) {
            for (std::int64_t k = 0; k < s.k; ++k) {
                double q;
                if (m_bits == 4) {
                    const layout::Position pos = layout::int4_position(n, k, s.k);
                    q = static_cast<double>(
                        (static_cast<unsigned>(w[static_cast<std::size_t>(pos.byte)]) >> pos.shift) & 0xFu);
                    const auto gi = static_cast<std::size_t>(layout::int4_param_index(n, k / s.g, s.groups()));
                    row[static_cast<std::size_t>(k)] = (q - (*zeros)[gi]) * (*scales)[gi];
                } else if (m_bits == 8) {
                    q = w[static_cast<std::size_t>(layout::int8_position(n, k, s.k).byte)];
                    row[static_cast<std::size_t>(k)] = q * (*scales)[static_cast<std::size_t>(n)];
                } else {
                    row[static_cast<std::size_t>(k)] = w[static_cast<std::size_t>(n * s.k + k)];
                }
            }
            for (std::int64_t m = 0; m < s.m; ++m) {
                double acc = 0.0;
                for (std::int64_t k = 0; k < s.k; ++k)
                    acc += x[static_cast<std::size_t>(m * s.k + k)] * row[static_cast<std::size_t>(k)];
                y[static_cast<std::size_t>(m * s.n + n)] = acc;
            }
        }
    }

private:
    int m_bits;
    std::string m_name;
};

}  // namespace

const OpDescription& linear_int4_fwd_op() {
    static const QuantLinearOp op(4);
    return op;
}

const OpDescription& linear_int8_fwd_op() {
    static const QuantLinearOp op(8);
    return op;
}

const OpDescription& linear_fwd_op() {
    static const QuantLinearOp op(16);
    return op;
}

}  // namespace ktune
