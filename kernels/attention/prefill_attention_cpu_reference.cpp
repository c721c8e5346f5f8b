// The CPU references of prefill_attention/causal and /full (kernels/attention/prefill_attention_*.op.yaml): every token
// of a batch of sequences at once, grouped-query heads, per-sequence lengths, [B, L, H, D] layouts.
//   out[b, i, hq, :] = softmax_j(q[b, i, hq, :] . k[b, j, hk, :] / sqrt(D)) @ v[b, j, hk, :]
// with i, j < len[b] (causal: j <= i too) and hk = hq / (HQ / HK); rows i >= len[b] are left as they are (0 here; the
// kernels do not write them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "kernels/op.hpp"

namespace ktune {

namespace {

// out in double from q, k, v and seq_lens (lengths truncated and clamped to [0, L] as the kernels do; the scale
// rounded to float as the kernels receive it). Not rounded to the storage type.
void prefill_attention(const Problem& p, HostBuffers& buffers, bool causal, std::string_view key) {
    const std::int64_t batch = axis(p, "B", key), capacity = axis(p, "L", key), q_heads = axis(p, "HQ", key);
    const std::int64_t kv_heads = axis(p, "HK", key), dim = axis(p, "D", key);
    const std::int64_t group = q_heads / kv_heads;
    const std::int64_t q_elements = batch * capacity * q_heads * dim, kv_elements = batch * capacity * kv_heads * dim;
    const std::vector<double>& q = host_input(buffers, "q", q_elements, key);
    const std::vector<double>& k = host_input(buffers, "k", kv_elements, key);
    const std::vector<double>& v = host_input(buffers, "v", kv_elements, key);
    const std::vector<double>& lens = host_input(buffers, "seq_lens", batch, key);
    std::vector<double>& out = buffers["out"];
    out.assign(static_cast<std::size_t>(q_elements), 0.0);
    const double scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim))));
    auto q_row = [&](std::int64_t b, std::int64_t i, std::int64_t h) {
        return static_cast<std::size_t>(((b * capacity + i) * q_heads + h) * dim);
    };
    auto kv_row = [&](std::int64_t b, std::int64_t j, std::int64_t h) {
        return static_cast<std::size_t>(((b * capacity + j) * kv_heads + h) * dim);
    };
    std::vector<double> scores;
    for (std::int64_t b = 0; b < batch; ++b) {
        const auto len = static_cast<std::int64_t>(
            std::clamp(std::floor(lens[static_cast<std::size_t>(b)]), 0.0, static_cast<double>(capacity)));
        for (std::int64_t i = 0; i < len; ++i)
            for (std::int64_t hq = 0; hq < q_heads; ++hq) {
                const std::int64_t hk = hq / group, keys = causal ? i + 1 : len;
                const std::size_t qr = q_row(b, i, hq);
                scores.assign(static_cast<std::size_t>(keys), 0.0);
                double mx = -std::numeric_limits<double>::infinity();
                for (std::int64_t j = 0; j < keys; ++j) {
                    const std::size_t kr = kv_row(b, j, hk);
                    double acc = 0.0;
                    for (std::int64_t d = 0; d < dim; ++d)
                        acc += q[qr + static_cast<std::size_t>(d)] * k[kr + static_cast<std::size_t>(d)];
                    scores[static_cast<std::size_t>(j)] = acc * scale;
                    mx = std::max(mx, acc * scale);
                }
                double sum = 0.0;
                for (double& e : scores) {
                    e = std::exp(e - mx);
                    sum += e;
                }
                for (std::int64_t d = 0; d < dim; ++d) {
                    double acc = 0.0;
                    for (std::int64_t j = 0; j < keys; ++j)
                        acc += scores[static_cast<std::size_t>(j)] * v[kv_row(b, j, hk) + static_cast<std::size_t>(d)];
                    out[qr + static_cast<std::size_t>(d)] = acc / sum;
                }
            }
    }
}

}  // namespace

void prefill_attention_causal_cpu_reference(const Problem& p, HostBuffers& buffers) {
    prefill_attention(p, buffers, true, "prefill_attention/causal");
}

void prefill_attention_full_cpu_reference(const Problem& p, HostBuffers& buffers) {
    prefill_attention(p, buffers, false, "prefill_attention/full");
}

}  // namespace ktune
