// The CPU reference of decode_attention/fwd (kernels/attention/decode_attention_fwd.op.yaml): one query token per
// sequence against a KV cache, grouped-query heads, per-sequence lengths.
//   out[b, hq, :] = softmax_t(q[b, hq, :] . k[b, hk, t, :] / sqrt(D)) @ v[b, hk, :, :]
// with t < len[b] and hk = hq / (HQ / HK).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "kernels/op.hpp"

namespace ktune {

// out in double from q, k, v and seq_lens (lengths truncated and clamped to [0, L] as the kernels do; the scale
// rounded to float as the kernels receive it). Not rounded to the storage type.
void decode_attention_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) {
    constexpr std::string_view key = "decode_attention/fwd";
    const std::int64_t batch = axis(p, "B", key), capacity = axis(p, "L", key), q_heads = axis(p, "HQ", key);
    const std::int64_t kv_heads = axis(p, "HK", key), dim = axis(p, "D", key);
    const std::int64_t group = q_heads / kv_heads;
    const std::int64_t q_elements = batch * q_heads * dim, kv_elements = batch * kv_heads * capacity * dim;
    const std::vector<double>& q = host_input(buffers, "q", q_elements, key);
    const std::vector<double>& k = host_input(buffers, "k", kv_elements, key);
    const std::vector<double>& v = host_input(buffers, "v", kv_elements, key);
    const std::vector<double>& lens = host_input(buffers, "seq_lens", batch, key);
    std::vector<double>& out = buffers["out"];
    out.assign(static_cast<std::size_t>(q_elements), 0.0);
    const double scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim))));
    std::vector<double> scores;
    for (std::int64_t b = 0; b < batch; ++b) {
        const auto len = static_cast<std::int64_t>(
            std::clamp(std::floor(lens[static_cast<std::size_t>(b)]), 0.0, static_cast<double>(capacity)));
        for (std::int64_t hq = 0; hq < q_heads; ++hq) {
            const std::int64_t hk = hq / group;
            const std::size_t qrow = static_cast<std::size_t>((b * q_heads + hq) * dim);
            const std::size_t kv = static_cast<std::size_t>((b * kv_heads + hk) * capacity * dim);
            if (len == 0) continue;
            scores.assign(static_cast<std::size_t>(len), 0.0);
            double mx = -std::numeric_limits<double>::infinity();
            for (std::int64_t t = 0; t < len; ++t) {
                double acc = 0.0;
                for (std::int64_t d = 0; d < dim; ++d)
                    acc += q[qrow + static_cast<std::size_t>(d)] * k[kv + static_cast<std::size_t>(t * dim + d)];
                scores[static_cast<std::size_t>(t)] = acc * scale;
                mx = std::max(mx, acc * scale);
            }
            double sum = 0.0;
            for (double& e : scores) {
                e = std::exp(e - mx);
                sum += e;
            }
            for (std::int64_t d = 0; d < dim; ++d) {
                double acc = 0.0;
                for (std::int64_t t = 0; t < len; ++t)
                    acc += scores[static_cast<std::size_t>(t)] * v[kv + static_cast<std::size_t>(t * dim + d)];
                out[qrow + static_cast<std::size_t>(d)] = acc / sum;
            }
        }
    }
}

}  // namespace ktune
