// ktune_torch's op library: a small extern "C" API (raw pointers, shapes, dtype, stream) over the headers that
// `ktune export-header` wrote from a results database (scripts/build_torch_ops.sh exports them and compiles this file
// with nvcc). No libtorch: Python loads it with ctypes (python/ktune_torch/_lib.py), so it builds without torch.
//
// Every launcher returns a ktune_tuned::Status as int (0 ok); 100 means the op's header was not exported into this
// build (the database had no results for it). Dtypes: 0 fp32, 1 fp16, 2 bf16 (ktune_tuned::Dtype). The device is
// the current CUDA device; its properties are queried once per device and kept.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#if __has_include("ktune_tuned_rmsnorm_fwd.hpp")
#include "ktune_tuned_rmsnorm_fwd.hpp"
#define KT_HAS_RMSNORM 1
#endif
#if __has_include("ktune_tuned_rmsnorm_bwd.hpp")
#include "ktune_tuned_rmsnorm_bwd.hpp"
#define KT_HAS_RMSNORM_BWD 1
#endif
#if __has_include("ktune_tuned_add_rmsnorm_fwd.hpp")
#include "ktune_tuned_add_rmsnorm_fwd.hpp"
#define KT_HAS_ADD_RMSNORM 1
#endif
#if __has_include("ktune_tuned_add_rmsnorm_fwd_inplace.hpp")
#include "ktune_tuned_add_rmsnorm_fwd_inplace.hpp"
#define KT_HAS_ADD_RMSNORM_INPLACE 1
#endif
#if __has_include("ktune_tuned_ktune_torch_add_rmsnorm_fwd.hpp")
#include "ktune_tuned_ktune_torch_add_rmsnorm_fwd.hpp"
#define KT_HAS_ADD_RMSNORM_EPS 1
#endif
#if __has_include("ktune_tuned_rope_neox.hpp")
#include "ktune_tuned_rope_neox.hpp"
#define KT_HAS_ROPE 1
#endif
#if __has_include("ktune_tuned_rope_neox_cache.hpp")
#include "ktune_tuned_rope_neox_cache.hpp"
#define KT_HAS_ROPE_CACHE 1
#endif
#if __has_include("ktune_tuned_glu_swiglu.hpp")
#include "ktune_tuned_glu_swiglu.hpp"
#define KT_HAS_SWIGLU 1
#endif
#if __has_include("ktune_tuned_glu_swiglu_bwd.hpp")
#include "ktune_tuned_glu_swiglu_bwd.hpp"
#define KT_HAS_SWIGLU_BWD 1
#endif
#if __has_include("ktune_tuned_decode_attention_fwd.hpp")
#include "ktune_tuned_decode_attention_fwd.hpp"
#define KT_HAS_DECODE_ATTENTION 1
#endif
#if __has_include("ktune_tuned_prefill_attention_causal.hpp")
#include "ktune_tuned_prefill_attention_causal.hpp"
#define KT_HAS_PREFILL_ATTENTION_CAUSAL 1
#endif
#if __has_include("ktune_tuned_prefill_attention_full.hpp")
#include "ktune_tuned_prefill_attention_full.hpp"
#define KT_HAS_PREFILL_ATTENTION_FULL 1
#endif
#if __has_include("ktune_tuned_gemm_act_none.hpp")
#include "ktune_tuned_gemm_act_none.hpp"
#define KT_HAS_GEMM_ACT_NONE 1
#endif
#if __has_include("ktune_tuned_gemm_act_gelu.hpp")
#include "ktune_tuned_gemm_act_gelu.hpp"
#define KT_HAS_GEMM_ACT_GELU 1
#endif
#if __has_include("ktune_tuned_gemm_act_silu.hpp")
#include "ktune_tuned_gemm_act_silu.hpp"
#define KT_HAS_GEMM_ACT_SILU 1
#endif
#if __has_include("ktune_tuned_ffn_gated_swiglu.hpp")
#include "ktune_tuned_ffn_gated_swiglu.hpp"
#define KT_HAS_FFN_GATED_SWIGLU 1
#endif
#if __has_include("ktune_tuned_ffn_gated_geglu.hpp")
#include "ktune_tuned_ffn_gated_geglu.hpp"
#define KT_HAS_FFN_GATED_GEGLU 1
#endif
#if __has_include("ktune_tuned_linear_int4_fwd.hpp")
#include "ktune_tuned_linear_int4_fwd.hpp"
#define KT_HAS_LINEAR_INT4 1
#endif
#if __has_include("ktune_tuned_linear_skinny_fwd.hpp")
#include "ktune_tuned_linear_skinny_fwd.hpp"
#define KT_HAS_LINEAR_SKINNY 1
#endif
#if __has_include("ktune_tuned_linear_skinny_fwd_swiglu.hpp")
#include "ktune_tuned_linear_skinny_fwd_swiglu.hpp"
#define KT_HAS_SWIGLU_LINEAR 1
#endif
#if __has_include("ktune_tuned_linear_skinny_fwd_add_rmsnorm.hpp")
#include "ktune_tuned_linear_skinny_fwd_add_rmsnorm.hpp"
#define KT_HAS_ADD_RMSNORM_LINEAR 1
#endif
#if __has_include("ktune_tuned_linear_int8_fwd.hpp")
#include "ktune_tuned_linear_int8_fwd.hpp"
#define KT_HAS_LINEAR_INT8 1
#endif
// The packing functions are header-only and need no export (the linear headers include the same file).
#include "kernels/quant_linear/quant_linear_packing.hpp"

namespace {

constexpr int k_not_built = 100;
constexpr int k_no_device = 101;
constexpr int k_max_devices = 64;

#ifdef KTUNE_TUNED_COMMON_V2
namespace kt = ktune_tuned;

// The current device's properties, queried on first use (a host call: fine while a CUDA graph is being captured).
const kt::DeviceProps* current_props() {
    static kt::DeviceProps props[k_max_devices];
    static bool queried[k_max_devices] = {};
    static std::mutex lock;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= k_max_devices) return nullptr;
    std::lock_guard<std::mutex> guard(lock);
    if (!queried[device]) {
        if (kt::query_device_props(device, &props[device]) != kt::Status::ok) return nullptr;
        queried[device] = true;
    }
    return &props[device];
}

// Remembers the last call's choice for diagnostics (ktune_torch_last_choice); not thread-safe, informative only.
thread_local kt::Choice t_last_choice;

kt::Dtype dtype_of(int d) { return static_cast<kt::Dtype>(d); }
cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }
#endif

}  // namespace

#define KT_PROPS_OR_FAIL                            \
    const kt::DeviceProps* props = current_props(); \
    if (props == nullptr) return k_no_device;

extern "C" {

// Bumped when a signature below changes; _lib.py refuses a library of another version.
int ktune_torch_abi_version() { return 7; }

// Programmatic dependent launch of the exported kernels that allow it (on by default, Hopper and later); 0 turns it
// off for the whole process (every launch then waits for the one before), to measure what it gains.
void ktune_torch_set_programmatic_launch(int on) {
#ifdef KTUNE_TUNED_COMMON_CUDA_V3
    ktune_tuned::set_programmatic_launch(on != 0);
#else
    (void)on;
#endif
}

// Bit i set when op i was exported into this build: rms_norm 0, rms_norm_bwd 1, add_rms_norm 2,
// add_rms_norm_inplace 3, rope_neox 4, swiglu 5, decode_attention 6, linear_int4 7, linear_int8 8,
// add_rms_norm_eps 9, linear_skinny 10, rope_neox_cache 11, swiglu_linear 12, swiglu_bwd 13, add_rms_norm_linear 14,
// prefill_attention_causal 15, prefill_attention_full 16, gemm_act_none 17, gemm_act_gelu 18, gemm_act_silu 19,
// ffn_gated_swiglu 20, ffn_gated_geglu 21.
int ktune_torch_ops_built() {
    int m = 0;
#ifdef KT_HAS_RMSNORM
    m |= 1 << 0;
#endif
#ifdef KT_HAS_RMSNORM_BWD
    m |= 1 << 1;
#endif
#ifdef KT_HAS_ADD_RMSNORM
    m |= 1 << 2;
#endif
#ifdef KT_HAS_ADD_RMSNORM_INPLACE
    m |= 1 << 3;
#endif
#ifdef KT_HAS_ROPE
    m |= 1 << 4;
#endif
#ifdef KT_HAS_SWIGLU
    m |= 1 << 5;
#endif
#ifdef KT_HAS_DECODE_ATTENTION
    m |= 1 << 6;
#endif
#ifdef KT_HAS_LINEAR_INT4
    m |= 1 << 7;
#endif
#ifdef KT_HAS_LINEAR_INT8
    m |= 1 << 8;
#endif
#ifdef KT_HAS_ADD_RMSNORM_EPS
    m |= 1 << 9;
#endif
#ifdef KT_HAS_LINEAR_SKINNY
    m |= 1 << 10;
#endif
#ifdef KT_HAS_ROPE_CACHE
    m |= 1 << 11;
#endif
#ifdef KT_HAS_SWIGLU_LINEAR
    m |= 1 << 12;
#endif
#ifdef KT_HAS_SWIGLU_BWD
    m |= 1 << 13;
#endif
#ifdef KT_HAS_ADD_RMSNORM_LINEAR
    m |= 1 << 14;
#endif
#ifdef KT_HAS_PREFILL_ATTENTION_CAUSAL
    m |= 1 << 15;
#endif
#ifdef KT_HAS_PREFILL_ATTENTION_FULL
    m |= 1 << 16;
#endif
#ifdef KT_HAS_GEMM_ACT_NONE
    m |= 1 << 17;
#endif
#ifdef KT_HAS_GEMM_ACT_GELU
    m |= 1 << 18;
#endif
#ifdef KT_HAS_GEMM_ACT_SILU
    m |= 1 << 19;
#endif
#ifdef KT_HAS_FFN_GATED_SWIGLU
    m |= 1 << 20;
#endif
#ifdef KT_HAS_FFN_GATED_GEGLU
    m |= 1 << 21;
#endif
    return m;
}

const char* ktune_torch_status_message(int status) {
    if (status == k_not_built) return "this op's header was not exported into the library (no results in the database)";
    if (status == k_no_device) return "no current CUDA device, or its properties could not be read";
#ifdef KTUNE_TUNED_COMMON_V2
    return kt::status_message(static_cast<kt::Status>(status));
#else
    return "unknown status";
#endif
}

// The last launch's configuration, fallback level and CUDA error, as text (for logs and tests).
const char* ktune_torch_last_choice(int* level, int* exact_bucket, int* cuda_error) {
#ifdef KTUNE_TUNED_COMMON_V2
    if (level) *level = static_cast<int>(t_last_choice.level);
    if (exact_bucket) *exact_bucket = t_last_choice.exact_bucket ? 1 : 0;
    if (cuda_error) *cuda_error = t_last_choice.cuda_error;
    return t_last_choice.kernel;
#else
    return "";
#endif
}

// y = x * rsqrt(mean(x^2) + eps) * w over rows of `hidden` elements.
int ktune_torch_rms_norm(int dtype, void* y, const void* x, const void* w, long long rows, long long hidden,
                         long long x_stride, long long y_stride, float eps, void* stream) {
#ifdef KT_HAS_RMSNORM
    KT_PROPS_OR_FAIL
    if (rows > 2147483647 || hidden > 2147483647) return static_cast<int>(kt::Status::bad_size);
    return static_cast<int>(kt::rmsnorm_fwd(*props, dtype_of(dtype), y, x, w, static_cast<int>(rows),
                                            static_cast<int>(hidden), x_stride, y_stride, eps, stream_of(stream),
                                            &t_last_choice));
#else
    (void)dtype, (void)y, (void)x, (void)w, (void)rows, (void)hidden, (void)x_stride, (void)y_stride, (void)eps,
        (void)stream;
    return k_not_built;
#endif
}

// Elements (fp32) of rmsnorm/bwd's scratch for this shape; zero-filled once by the caller.
long long ktune_torch_rms_norm_bwd_scratch(int dtype, long long rows, long long hidden) {
#ifdef KT_HAS_RMSNORM_BWD
    const long long shape[3] = {rows, hidden, hidden};
    int scratch = -1;
    for (int i = 0; i < kt::rmsnorm_bwd_table::buffer_count; ++i)
        if (kt::rmsnorm_bwd_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::rmsnorm_bwd_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)rows, (void)hidden;
    return -1;
#endif
}

// dx and an fp32 dw (eps fixed by the op spec: 1e-6).
int ktune_torch_rms_norm_bwd(int dtype, void* dx, float* dw, float* scratch, const void* x, const void* dy,
                             const void* w, long long rows, long long hidden, void* stream) {
#ifdef KT_HAS_RMSNORM_BWD
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::rmsnorm_bwd(*props, dtype_of(dtype), dx, dw, scratch, x, dy, w, rows, hidden, hidden,
                                            stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)dx, (void)dw, (void)scratch, (void)x, (void)dy, (void)w, (void)rows, (void)hidden, (void)stream;
    return k_not_built;
#endif
}

// residual_out = x + residual; y = rmsnorm(x + residual) * w (eps fixed by the op spec: 1e-6).
int ktune_torch_add_rms_norm(int dtype, void* y, void* residual_out, const void* x, const void* residual, const void* w,
                             long long rows, long long hidden, void* stream) {
#ifdef KT_HAS_ADD_RMSNORM
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::add_rmsnorm_fwd(*props, dtype_of(dtype), y, residual_out, x, residual, w, rows, hidden,
                                                hidden, stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)residual_out, (void)x, (void)residual, (void)w, (void)rows, (void)hidden, (void)stream;
    return k_not_built;
#endif
}

// add_rms_norm with eps = eps_e9 * 1e-9 (ktune_torch's op python/ktune_torch/spaces/add_rmsnorm_eps.op.yaml).
int ktune_torch_add_rms_norm_eps(int dtype, void* y, void* residual_out, const void* x, const void* residual,
                                 const void* w, long long rows, long long hidden, long long eps_e9, void* stream) {
#ifdef KT_HAS_ADD_RMSNORM_EPS
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::ktune_torch_add_rmsnorm_fwd(*props, dtype_of(dtype), y, residual_out, x, residual, w,
                                                            rows, hidden, hidden, eps_e9, stream_of(stream),
                                                            &t_last_choice));
#else
    (void)dtype, (void)y, (void)residual_out, (void)x, (void)residual, (void)w, (void)rows, (void)hidden, (void)eps_e9,
        (void)stream;
    return k_not_built;
#endif
}

// residual += x; y = rmsnorm(residual) * w (eps fixed by the op spec: 1e-6).
int ktune_torch_add_rms_norm_inplace(int dtype, void* y, void* residual, const void* x, const void* w, long long rows,
                                     long long hidden, void* stream) {
#ifdef KT_HAS_ADD_RMSNORM_INPLACE
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::add_rmsnorm_fwd_inplace(*props, dtype_of(dtype), y, residual, x, w, rows, hidden,
                                                        hidden, stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)residual, (void)x, (void)w, (void)rows, (void)hidden, (void)stream;
    return k_not_built;
#endif
}

// NeoX RoPE in place on q [M, HQ, D] (token stride sq) and k [M, HK, D] (token stride sk); positions int32 [M];
// cos/sin caches fp32 [P, R / 2].
int ktune_torch_rope_neox(int dtype, void* q, void* k, const std::int32_t* positions, const float* cos_cache,
                          const float* sin_cache, long long tokens, long long heads_q, long long heads_k,
                          long long head_dim, long long rotary_dim, long long cache_rows, long long sq, long long sk,
                          void* stream) {
#ifdef KT_HAS_ROPE
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::rope_neox(*props, dtype_of(dtype), q, k, positions, cos_cache, sin_cache, tokens,
                                          heads_q, heads_k, head_dim, rotary_dim, cache_rows, sq, sk, stream_of(stream),
                                          &t_last_choice));
#else
    (void)dtype, (void)q, (void)k, (void)positions, (void)cos_cache, (void)sin_cache, (void)tokens, (void)heads_q,
        (void)heads_k, (void)head_dim, (void)rotary_dim, (void)cache_rows, (void)sq, (void)sk, (void)stream;
    return k_not_built;
#endif
}

// A decode step's NeoX RoPE and KV-cache write: q [M, HQ, D] (token stride sq) rotated in place, k [M, HK, D] (stride
// sk) rotated into k_cache and v (stride sv) copied into v_cache, both [M, HK, L, D] contiguous, at row positions[m] of
// sequence m; positions int32 [M]; cos/sin caches fp32 [P, R / 2].
int ktune_torch_rope_neox_cache(int dtype, void* q, const void* k, const void* v, void* k_cache, void* v_cache,
                                const std::int32_t* positions, const float* cos_cache, const float* sin_cache,
                                long long tokens, long long heads_q, long long heads_k, long long head_dim,
                                long long rotary_dim, long long cache_rows, long long cache_len, long long sq,
                                long long sk, long long sv, void* stream) {
#ifdef KT_HAS_ROPE_CACHE
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::rope_neox_cache(*props, dtype_of(dtype), q, k, v, k_cache, v_cache, positions,
                                                cos_cache, sin_cache, tokens, heads_q, heads_k, head_dim, rotary_dim,
                                                cache_rows, cache_len, sq, sk, sv, stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)q, (void)k, (void)v, (void)k_cache, (void)v_cache, (void)positions, (void)cos_cache,
        (void)sin_cache, (void)tokens, (void)heads_q, (void)heads_k, (void)head_dim, (void)rotary_dim, (void)cache_rows,
        (void)cache_len, (void)sq, (void)sk, (void)sv, (void)stream;
    return k_not_built;
#endif
}

// out = silu(gate) * up; gate and up [M, I] with row stride s, out with row stride so.
int ktune_torch_swiglu(int dtype, void* out, const void* gate, const void* up, long long rows, long long cols,
                       long long s, long long so, void* stream) {
#ifdef KT_HAS_SWIGLU
    KT_PROPS_OR_FAIL
    return static_cast<int>(
        kt::glu_swiglu(*props, dtype_of(dtype), out, gate, up, rows, cols, s, so, stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)out, (void)gate, (void)up, (void)rows, (void)cols, (void)s, (void)so, (void)stream;
    return k_not_built;
#endif
}
// SwiGLU's gradients (glu/swiglu_bwd): dgate, dup from gate, up and dy. gate, up, dgate and dup rows s elements apart
// (2 * cols: the halves of [rows, 2 * cols] tensors), dy's so apart.
int ktune_torch_swiglu_backward(int dtype, void* dgate, void* dup, const void* gate, const void* up, const void* dy,
                                long long rows, long long cols, long long s, long long so, void* stream) {
#ifdef KT_HAS_SWIGLU_BWD
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::glu_swiglu_bwd(*props, dtype_of(dtype), dgate, dup, gate, up, dy, rows, cols, s, so,
                                               stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)dgate, (void)dup, (void)gate, (void)up, (void)dy, (void)rows, (void)cols, (void)s, (void)so;
    (void)stream;
    return k_not_built;
#endif
}

// Elements (fp32) of decode attention's scratch for this shape; zero-filled once, the kernels leave it zeroed.
long long ktune_torch_decode_attention_scratch(int dtype, long long batch, long long max_len, long long heads_q,
                                               long long heads_k, long long head_dim) {
#ifdef KT_HAS_DECODE_ATTENTION
    const long long shape[6] = {batch, max_len, heads_q, heads_k, head_dim, 1};
    int scratch = -1;
    for (int i = 0; i < kt::decode_attention_fwd_table::buffer_count; ++i)
        if (kt::decode_attention_fwd_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::decode_attention_fwd_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)batch, (void)max_len, (void)heads_q, (void)heads_k, (void)head_dim;
    return -1;
#endif
}

// out [B, HQ, D] = softmax(q k^T / sqrt(D)) v over the first seq_lens[b] tokens of k, v [B, HK, max_len, D]
// (HF StaticCache's layout, contiguous).
int ktune_torch_decode_attention(int dtype, void* out, const void* q, const void* k, const void* v,
                                 const std::int32_t* seq_lens, float* scratch, long long batch, long long max_len,
                                 long long heads_q, long long heads_k, long long head_dim, void* stream) {
#ifdef KT_HAS_DECODE_ATTENTION
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::decode_attention_fwd(*props, dtype_of(dtype), out, q, k, v, seq_lens, scratch, batch,
                                                     max_len, heads_q, heads_k, head_dim, 1, stream_of(stream),
                                                     &t_last_choice));
#else
    (void)dtype, (void)out, (void)q, (void)k, (void)v, (void)seq_lens, (void)scratch, (void)batch, (void)max_len,
        (void)heads_q, (void)heads_k, (void)head_dim, (void)stream;
    return k_not_built;
#endif
}

// out [B, L, HQ, D] = softmax(q k^T / sqrt(D)) v per sequence b over its first seq_lens[b] tokens, causal (query i
// attends keys j <= i) or not; q [B, L, HQ, D], k and v [B, L, HK, D], contiguous (flash attention's layout). uneven:
// 0 when every length is L (the tuned problems' U = 1), else 1 (U = 2: the buckets tuned with uneven lengths). Rows
// past a sequence's length are not written.
int ktune_torch_prefill_attention(int dtype, int causal, void* out, const void* q, const void* k, const void* v,
                                  const std::int32_t* seq_lens, long long batch, long long max_len, long long heads_q,
                                  long long heads_k, long long head_dim, int uneven, void* stream) {
    const long long u = uneven ? 2 : 1;
    if (causal) {
#ifdef KT_HAS_PREFILL_ATTENTION_CAUSAL
        KT_PROPS_OR_FAIL
        return static_cast<int>(kt::prefill_attention_causal(*props, dtype_of(dtype), out, q, k, v, seq_lens, batch,
                                                             max_len, heads_q, heads_k, head_dim, u, stream_of(stream),
                                                             &t_last_choice));
#endif
    } else {
#ifdef KT_HAS_PREFILL_ATTENTION_FULL
        KT_PROPS_OR_FAIL
        return static_cast<int>(kt::prefill_attention_full(*props, dtype_of(dtype), out, q, k, v, seq_lens, batch,
                                                           max_len, heads_q, heads_k, head_dim, u, stream_of(stream),
                                                           &t_last_choice));
#endif
    }
    (void)dtype, (void)out, (void)q, (void)k, (void)v, (void)seq_lens, (void)batch, (void)max_len, (void)heads_q,
        (void)heads_k, (void)head_dim, (void)u, (void)stream;
    return k_not_built;
}

// y [M, N] = act(x [M, K] W^T + b) with W [N, K] (F.linear's layout) and b [N], all contiguous in the dtype; act 0
// none, 1 gelu (the tanh form), 2 silu: the gemm_act op's variants, each its own header.
int ktune_torch_linear_act(int dtype, int act, void* y, const void* x, const void* w, const void* b, long long m,
                           long long n, long long k, void* stream) {
    switch (act) {
#ifdef KT_HAS_GEMM_ACT_NONE
        case 0: {
            KT_PROPS_OR_FAIL
            return static_cast<int>(
                kt::gemm_act_none(*props, dtype_of(dtype), y, x, w, b, m, n, k, stream_of(stream), &t_last_choice));
        }
#endif
#ifdef KT_HAS_GEMM_ACT_GELU
        case 1: {
            KT_PROPS_OR_FAIL
            return static_cast<int>(
                kt::gemm_act_gelu(*props, dtype_of(dtype), y, x, w, b, m, n, k, stream_of(stream), &t_last_choice));
        }
#endif
#ifdef KT_HAS_GEMM_ACT_SILU
        case 2: {
            KT_PROPS_OR_FAIL
            return static_cast<int>(
                kt::gemm_act_silu(*props, dtype_of(dtype), y, x, w, b, m, n, k, stream_of(stream), &t_last_choice));
        }
#endif
        default:
            break;
    }
    (void)dtype, (void)y, (void)x, (void)w, (void)b, (void)m, (void)n, (void)k, (void)stream;
    return k_not_built;
}

// y [M, I] = act(x [M, K] Wg^T) * (x Wu^T) with w [2I, K] = [Wg; Wu] (a fused gate_up projection's weight), all
// contiguous in the dtype; act 0 silu (SwiGLU), 1 gelu in the tanh form (GeGLU): the ffn_gated op's variants.
int ktune_torch_ffn_gated(int dtype, int act, void* y, const void* x, const void* w, long long m, long long i,
                          long long k, void* stream) {
    switch (act) {
#ifdef KT_HAS_FFN_GATED_SWIGLU
        case 0: {
            KT_PROPS_OR_FAIL
            return static_cast<int>(
                kt::ffn_gated_swiglu(*props, dtype_of(dtype), y, x, w, m, i, k, stream_of(stream), &t_last_choice));
        }
#endif
#ifdef KT_HAS_FFN_GATED_GEGLU
        case 1: {
            KT_PROPS_OR_FAIL
            return static_cast<int>(
                kt::ffn_gated_geglu(*props, dtype_of(dtype), y, x, w, m, i, k, stream_of(stream), &t_last_choice));
        }
#endif
        default:
            break;
    }
    (void)dtype, (void)y, (void)x, (void)w, (void)m, (void)i, (void)k, (void)stream;
    return k_not_built;
}

// Scratch elements (fp32) of linear_int4 / linear_int8 for M x N x K; zero-filled once.
long long ktune_torch_linear_int4_scratch(int dtype, long long m, long long n, long long k, long long group) {
#ifdef KT_HAS_LINEAR_INT4
    const long long shape[4] = {m, n, k, group};
    int scratch = -1;
    for (int i = 0; i < kt::linear_int4_fwd_table::buffer_count; ++i)
        if (kt::linear_int4_fwd_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::linear_int4_fwd_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)m, (void)n, (void)k, (void)group;
    return -1;
#endif
}

long long ktune_torch_linear_int8_scratch(int dtype, long long m, long long n, long long k) {
#ifdef KT_HAS_LINEAR_INT8
    const long long shape[3] = {m, n, k};
    int scratch = -1;
    for (int i = 0; i < kt::linear_int8_fwd_table::buffer_count; ++i)
        if (kt::linear_int8_fwd_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::linear_int8_fwd_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)m, (void)n, (void)k;
    return -1;
#endif
}

// y [M, N] = x [M, K] W^T, W INT4 packed (ktune_torch_pack_int4*), group-wise scales and zero points.
int ktune_torch_linear_int4(int dtype, void* y, const void* x, const std::uint8_t* w, const void* scales,
                            const std::uint8_t* zeros, float* scratch, long long m, long long n, long long k,
                            long long group, void* stream) {
#ifdef KT_HAS_LINEAR_INT4
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::linear_int4_fwd(*props, dtype_of(dtype), y, x, w, scales, zeros, scratch, m, n, k,
                                                group, stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)x, (void)w, (void)scales, (void)zeros, (void)scratch, (void)m, (void)n, (void)k,
        (void)group, (void)stream;
    return k_not_built;
#endif
}

// y [M, N] = x [M, K] W^T, W INT8 packed (ktune_torch_pack_int8), per-channel scales.
int ktune_torch_linear_int8(int dtype, void* y, const void* x, const std::int8_t* w, const void* scales, float* scratch,
                            long long m, long long n, long long k, void* stream) {
#ifdef KT_HAS_LINEAR_INT8
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::linear_int8_fwd(*props, dtype_of(dtype), y, x, w, scales, scratch, m, n, k,
                                                stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)x, (void)w, (void)scales, (void)scratch, (void)m, (void)n, (void)k, (void)stream;
    return k_not_built;
#endif
}

// Host packing (kernels/quant_linear/quant_linear_packing.hpp): sizes, then plain -> packed. 1 on success.
// Scratch elements (fp32) of the dense skinny linear for M x N x K (split-K partials and counters); zero-filled once.
long long ktune_torch_linear_skinny_scratch(int dtype, long long m, long long n, long long k) {
#ifdef KT_HAS_LINEAR_SKINNY
    const long long shape[3] = {m, n, k};
    int scratch = -1;
    for (int i = 0; i < kt::linear_skinny_fwd_table::buffer_count; ++i)
        if (kt::linear_skinny_fwd_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::linear_skinny_fwd_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)m, (void)n, (void)k;
    return -1;
#endif
}
// 1 when this exact shape was tuned on this GPU's chip (so the skinny kernel is known to beat cuBLAS there, or was
// at least measured); 0 for a nearest-bucket or default pick: ops.dense_linear then calls cuBLAS instead.
int ktune_torch_linear_skinny_tuned(int dtype, long long m, long long n, long long k) {
#ifdef KT_HAS_LINEAR_SKINNY
    const kt::DeviceProps* props = current_props();
    if (props == nullptr) return 0;
    const kt::Choice c = kt::linear_skinny_fwd_select(*props, dtype_of(dtype), m, n, k);
    return c.exact_bucket && c.level <= kt::Level::same_chip ? 1 : 0;
#else
    (void)dtype, (void)m, (void)n, (void)k;
    return 0;
#endif
}
// y [M, N] = x [M, K] W^T, W dense [N, K] in x's dtype (F.linear's layout), M <= 64.
int ktune_torch_linear_skinny(int dtype, void* y, const void* x, const void* w, float* scratch, long long m,
                              long long n, long long k, void* stream) {
#ifdef KT_HAS_LINEAR_SKINNY
    KT_PROPS_OR_FAIL
    return static_cast<int>(
        kt::linear_skinny_fwd(*props, dtype_of(dtype), y, x, w, scratch, m, n, k, stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)x, (void)w, (void)scratch, (void)m, (void)n, (void)k, (void)stream;
    return k_not_built;
#endif
}
// The SwiGLU down projection (linear_skinny/fwd_swiglu): y [M, N] = (silu(gate) * up) W^T from gate_up [M, 2K], W
// dense [N, K]. Scratch and tuned query as the skinny linear's, with K the down projection's input features.
long long ktune_torch_swiglu_linear_scratch(int dtype, long long m, long long n, long long k) {
#ifdef KT_HAS_SWIGLU_LINEAR
    const long long shape[3] = {m, n, k};
    int scratch = -1;
    for (int i = 0; i < kt::linear_skinny_fwd_swiglu_table::buffer_count; ++i)
        if (kt::linear_skinny_fwd_swiglu_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::linear_skinny_fwd_swiglu_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)m, (void)n, (void)k;
    return -1;
#endif
}
int ktune_torch_swiglu_linear_tuned(int dtype, long long m, long long n, long long k) {
#ifdef KT_HAS_SWIGLU_LINEAR
    const kt::DeviceProps* props = current_props();
    if (props == nullptr) return 0;
    const kt::Choice c = kt::linear_skinny_fwd_swiglu_select(*props, dtype_of(dtype), m, n, k);
    return c.exact_bucket && c.level <= kt::Level::same_chip ? 1 : 0;
#else
    (void)dtype, (void)m, (void)n, (void)k;
    return 0;
#endif
}
int ktune_torch_swiglu_linear(int dtype, void* y, const void* gate_up, const void* w, float* scratch, long long m,
                              long long n, long long k, void* stream) {
#ifdef KT_HAS_SWIGLU_LINEAR
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::linear_skinny_fwd_swiglu(*props, dtype_of(dtype), y, gate_up, w, scratch, m, n, k,
                                                         stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)gate_up, (void)w, (void)scratch, (void)m, (void)n, (void)k, (void)stream;
    return k_not_built;
#endif
}
// The residual add + RMSNorm fused into the projection after it (linear_skinny/fwd_add_rmsnorm): r_out = x + residual,
// y [M, N] = rmsnorm(x + residual) * norm_weight W^T, W dense [N, K], eps = eps_e9 * 1e-9. r_out must not alias x or
// residual. Scratch and tuned query as the skinny linear's, at this eps.
long long ktune_torch_add_rms_norm_linear_scratch(int dtype, long long m, long long n, long long k, long long eps_e9) {
#ifdef KT_HAS_ADD_RMSNORM_LINEAR
    const long long shape[4] = {m, n, k, eps_e9};
    int scratch = -1;
    for (int i = 0; i < kt::linear_skinny_fwd_add_rmsnorm_table::buffer_count; ++i)
        if (kt::linear_skinny_fwd_add_rmsnorm_table::buffer_roles[i] == kt::BufferRole::scratch) scratch = i;
    return scratch < 0 ? -1 : kt::linear_skinny_fwd_add_rmsnorm_table::buffer_elements(scratch, shape, dtype_of(dtype));
#else
    (void)dtype, (void)m, (void)n, (void)k, (void)eps_e9;
    return -1;
#endif
}
int ktune_torch_add_rms_norm_linear_tuned(int dtype, long long m, long long n, long long k, long long eps_e9) {
#ifdef KT_HAS_ADD_RMSNORM_LINEAR
    const kt::DeviceProps* props = current_props();
    if (props == nullptr) return 0;
    const kt::Choice c = kt::linear_skinny_fwd_add_rmsnorm_select(*props, dtype_of(dtype), m, n, k, eps_e9);
    return c.exact_bucket && c.level <= kt::Level::same_chip ? 1 : 0;
#else
    (void)dtype, (void)m, (void)n, (void)k, (void)eps_e9;
    return 0;
#endif
}
int ktune_torch_add_rms_norm_linear(int dtype, void* y, void* residual_out, const void* x, const void* residual,
                                    const void* norm_weight, const void* w, float* scratch, long long m, long long n,
                                    long long k, long long eps_e9, void* stream) {
#ifdef KT_HAS_ADD_RMSNORM_LINEAR
    KT_PROPS_OR_FAIL
    return static_cast<int>(kt::linear_skinny_fwd_add_rmsnorm(*props, dtype_of(dtype), y, residual_out, x, residual,
                                                              norm_weight, w, scratch, m, n, k, eps_e9,
                                                              stream_of(stream), &t_last_choice));
#else
    (void)dtype, (void)y, (void)residual_out, (void)x, (void)residual, (void)norm_weight, (void)w, (void)scratch,
        (void)m, (void)n, (void)k, (void)eps_e9, (void)stream;
    return k_not_built;
#endif
}
long long ktune_torch_int4_weight_bytes(long long n, long long k) {
    return ktune::quant_linear_layout::int4_weight_bytes(n, k);
}
long long ktune_torch_int4_params(long long n, long long k, long long group) {
    return ktune::quant_linear_layout::int4_params(n, k, group);
}
long long ktune_torch_int8_weight_bytes(long long n, long long k) {
    return ktune::quant_linear_layout::int8_weight_bytes(n, k);
}
int ktune_torch_pack_int4(const std::uint8_t* plain, long long n, long long k, std::uint8_t* packed) {
    return ktune::quant_linear_packing::pack_int4(plain, n, k, packed) ? 1 : 0;
}
int ktune_torch_pack_int4_scales(const std::uint16_t* plain, long long n, long long k, long long group,
                                 std::uint16_t* packed) {
    return ktune::quant_linear_packing::pack_int4_params(plain, n, k, group, packed) ? 1 : 0;
}
int ktune_torch_pack_int4_zeros(const std::uint8_t* plain, long long n, long long k, long long group,
                                std::uint8_t* packed) {
    return ktune::quant_linear_packing::pack_int4_params(plain, n, k, group, packed) ? 1 : 0;
}
int ktune_torch_pack_int8(const std::int8_t* plain, long long n, long long k, std::int8_t* packed) {
    return ktune::quant_linear_packing::pack_int8(plain, n, k, packed) ? 1 : 0;
}

}  // extern "C"
