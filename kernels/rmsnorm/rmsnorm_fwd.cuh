#pragma once
// RMSNorm forward, the tuned kernel.
//
//   y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * g[c]     for r < rows, c < hidden
//
// with g = w (OFFSET 0, the default) or g = 1 + w in fp32 (OFFSET 1: Gemma, whose checkpoints store w - 1).
//
// x and y rows start x_row_stride / y_row_stride elements apart (>= hidden); columns hidden.. of a row (padding) are
// never read or written. Sum of squares and scaling in fp32; y rounded once to T. T: float, __half, __nv_bfloat16.
// Driven by search_spaces/rmsnorm.yaml (op rmsnorm, variant fwd) and search_spaces/rmsnorm_gemma.yaml (variant
// fwd_gemma, OFFSET 1); reference: kernels/rmsnorm/rmsnorm_reference.cuh.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK           threads per block: a multiple of 32 * ROWS_PER_BLOCK, at most 1024.
//   VEC             elements per vector access: a power of two with VEC * sizeof(T) <= 16 (16 bytes: VEC 8 for fp16 and
//                   bf16, 4 for fp32, compile to LDG.E.128 / STG.E.128). Accesses narrower than 4 bytes (VEC 1 for
//                   16-bit types) take the scalar path.
//   UNROLL          vector accesses each thread holds in registers per pass over the row, >= 1 (<= 32). A pass
//                   covers threads_per_row * VEC * UNROLL elements. When it covers the row, the row is read from DRAM
//                   once and stays in registers (one-pass path); otherwise the sum of squares streams the row and a
//                   second sweep re-reads it, mostly from L2, to write y (two-pass path).
//   ROWS_PER_BLOCK  rows a block normalises at once, >= 1: threads_per_row = BLOCK / ROWS_PER_BLOCK, a multiple of 32,
//                   so short rows still fill a block.
//   OFFSET          0 or 1 (default 0): the weight is w or 1 + w. A literal in the YAML's kernel name, not searched.
// Registers: about UNROLL * VEC * sizeof(T) / 4 for the row plus as many for w; the YAML keeps both small enough
// that nothing spills under __launch_bounds__(BLOCK).
//
// Launch: block = BLOCK threads (1-D), any grid: blocks loop over groups of ROWS_PER_BLOCK rows (grid stride), so the
// YAML's ceil_div(M, ROWS_PER_BLOCK) gives one group per block and a smaller, persistent grid works too. Static shared
// memory only (2 * BLOCK / 32 floats); rows past `rows` in the last group are neither read nor written.
//
// Any hidden, row stride and alignment is correct. The vector paths need x, y and w aligned to VEC * sizeof(T) bytes
// and both row strides multiples of VEC (checked once per launch); otherwise every row takes the scalar path
// (element-wise accesses, UNROLL per thread per pass, two sweeps). hidden % VEC leftover elements form a scalar tail
// taken by the row's first threads.
// With the YAML's grid (one row group per block), a one-pass row and hidden % VEC == 0, normalize_one_group runs
// first: loads before the launch checks (on the H100 -2 % kernel time over the default space, up to -7.6 % at decode
// sizes; 2026-11-26).
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev::rmsnorm {

// Sum of squares of the elements in one access.
template <typename T, int W>
__device__ __forceinline__ float sum_squares(const Words<W>& a, float acc) {
    constexpr int E = elems_per_word<T>;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float f[E];
        unpack_word(T{}, a.w[j], f);
#pragma unroll
        for (int e = 0; e < E; ++e) acc = fmaf(f[e], f[e], acc);
    }
    return acc;
}

// The weight factor: w, or 1 + w for Gemma.
template <int OFFSET>
__device__ __forceinline__ float weight(float w) {
    if constexpr (OFFSET != 0)
        return 1.0f + w;
    else
        return w;
}

// x * inv_rms * weight(w) for one access, rounded to T.
template <typename T, int W, int OFFSET = 0>
__device__ __forceinline__ Words<W> scale(const Words<W>& x, const Words<W>& w, float inv_rms) {
    constexpr int E = elems_per_word<T>;
    Words<W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
        float fx[E], fw[E], fy[E];
        unpack_word(T{}, x.w[j], fx);
        unpack_word(T{}, w.w[j], fw);
#pragma unroll
        for (int e = 0; e < E; ++e) fy[e] = fx[e] * inv_rms * weight<OFFSET>(fw[e]);
        out.w[j] = pack_word<T>(fy);
    }
    return out;
}

// Per-row arguments shared by the row functions. inv_hidden = 1 / hidden, computed once per thread.
template <typename T>
struct RowArgs {
    T* __restrict__ yr;
    const T* __restrict__ xr;
    const T* __restrict__ w;
    int hidden;
    float inv_hidden;
    float eps;
    bool active;      // false for the rows past `rows` in the last group: no loads or stores, barriers only
    int t;            // this thread's index among the row's threads
    float* scratch;   // this row's TPR / 32 floats of shared memory (see group_sum)
};

// The hidden % V elements after the row's last whole access: the row's first threads take one each.
template <typename T>
__device__ __forceinline__ float tail_load(const RowArgs<T>& a, int tail_start) {
    return a.t < a.hidden - tail_start ? to_float(a.xr[tail_start + a.t]) : 0.0f;
}
template <int OFFSET, typename T>
__device__ __forceinline__ void tail_store(const RowArgs<T>& a, int tail_start, float x_tail, float inv_rms) {
    if (a.t < a.hidden - tail_start)
        a.yr[tail_start + a.t] = from_float<T>(x_tail * inv_rms * weight<OFFSET>(to_float(a.w[tail_start + a.t])));
}

// The vector paths: V-element accesses (4, 8 or 16 bytes, aligned), U accesses per thread per pass, TPR threads per
// row. Every thread of the block calls them once per row group, active or not (group_sum may synchronise the block).
// One pass or two is decided once per launch (it depends on hidden only): kept as separate loops over the rows, the
// registers that hold a row in one are not reserved in the other.
template <typename T, int V>
struct VectorShape {
    static constexpr int W = V * int(sizeof(T)) / 4;  // 32-bit words per access
    static_assert(W >= 1 && W * 4 == V * int(sizeof(T)), "rmsnorm vector path: accesses of 4, 8 or 16 bytes");
};

template <int TPR, int V, int U>
__device__ __forceinline__ bool fits_one_pass(int hidden) {
    return hidden / V <= TPR * U;
}

// One pass: the row is read once and stays in registers (slots past the row hold zeros).
template <typename T, int TPR, int V, int U, int OFFSET>
__device__ __forceinline__ void normalize_row_one_pass(const RowArgs<T>& a) {
    constexpr int W = VectorShape<T, V>::W;
    // Prefetching w ahead of the reduction hides its latency at decode sizes; only while it costs <= 16 registers.
    constexpr bool PRELOAD_W = W * U <= 16;
    const int nvec = a.hidden / V;  // whole accesses; hidden % V elements remain as the tail
    const int tail_start = nvec * V;
    const int t = a.t;

    Words<W> xbuf[U];
    Words<W> wbuf[PRELOAD_W ? U : 1];
    float sum_sq = 0.0f, x_tail = 0.0f;
    if (a.active) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = u * TPR + t;
            xbuf[u] = i < nvec ? load_words<W>(a.xr + static_cast<long long>(i) * V) : zero_words<W>();
        }
        if constexpr (PRELOAD_W) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = u * TPR + t;
                wbuf[u] = i < nvec ? load_words<W>(a.w + static_cast<long long>(i) * V) : zero_words<W>();
            }
        }
        x_tail = tail_load(a, tail_start);
        sum_sq = x_tail * x_tail;
#pragma unroll
        for (int u = 0; u < U; ++u) sum_sq = sum_squares<T, W>(xbuf[u], sum_sq);
    }
    sum_sq = group_sum<TPR / 32>(sum_sq, a.scratch);
    if (!a.active) return;
    const float inv_rms = rsqrtf(sum_sq * a.inv_hidden + a.eps);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int i = u * TPR + t;
        if (i < nvec) {
            Words<W> wv;
            if constexpr (PRELOAD_W)
                wv = wbuf[u];
            else
                wv = load_words<W>(a.w + static_cast<long long>(i) * V);
            store_words<W>(a.yr + static_cast<long long>(i) * V, scale<T, W, OFFSET>(xbuf[u], wv, inv_rms));
        }
    }
    tail_store<OFFSET>(a, tail_start, x_tail, inv_rms);
}

// Two passes: the sum of squares streams the row, then a second sweep re-reads x (from L2 while the rows in flight
// fit) and w (L1/L2) to write y.
template <typename T, int TPR, int V, int U, int OFFSET>
__device__ __forceinline__ void normalize_row_two_pass(const RowArgs<T>& a) {
    constexpr int W = VectorShape<T, V>::W;
    constexpr int STEP = TPR * U;  // accesses per pass
    const int nvec = a.hidden / V;
    const int tail_start = nvec * V;
    const int t = a.t;

    float sum_sq = 0.0f, x_tail = 0.0f;
    if (a.active) {
#pragma unroll 1
        for (int base = 0; base < nvec; base += STEP) {
            Words<W> xv[U];  // all loads of the pass in flight before the first multiply
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = base + u * TPR + t;
                xv[u] = i < nvec ? load_words<W>(a.xr + static_cast<long long>(i) * V) : zero_words<W>();
            }
#pragma unroll
            for (int u = 0; u < U; ++u) sum_sq = sum_squares<T, W>(xv[u], sum_sq);
        }
        x_tail = tail_load(a, tail_start);
        sum_sq = fmaf(x_tail, x_tail, sum_sq);
    }
    sum_sq = group_sum<TPR / 32>(sum_sq, a.scratch);
    if (!a.active) return;
    const float inv_rms = rsqrtf(sum_sq * a.inv_hidden + a.eps);
#pragma unroll 1
    for (int base = 0; base < nvec; base += STEP) {
        Words<W> xv[U], wv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + u * TPR + t;
            if (i < nvec) {
                xv[u] = load_words<W>(a.xr + static_cast<long long>(i) * V);
                wv[u] = load_words<W>(a.w + static_cast<long long>(i) * V);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + u * TPR + t;
            if (i < nvec)
                store_words<W>(a.yr + static_cast<long long>(i) * V, scale<T, W, OFFSET>(xv[u], wv[u], inv_rms));
        }
    }
    tail_store<OFFSET>(a, tail_start, x_tail, inv_rms);
}

// The scalar path, for misaligned rows and 2-byte VEC: element-wise accesses, U elements per thread per pass, always
// two sweeps over x. Same calling rules as the vector paths.
template <typename T, int TPR, int U, int OFFSET>
__device__ __forceinline__ void normalize_row_scalar(const RowArgs<T>& a) {
    constexpr int STEP = TPR * U;
    const int hidden = a.hidden;
    const int t = a.t;
    float sum_sq = 0.0f;
    if (a.active) {
#pragma unroll 1
        for (int base = 0; base < hidden; base += STEP) {
            float v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = base + u * TPR + t;
                v[u] = i < hidden ? to_float(a.xr[i]) : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < U; ++u) sum_sq = fmaf(v[u], v[u], sum_sq);
        }
    }
    sum_sq = group_sum<TPR / 32>(sum_sq, a.scratch);
    if (!a.active) return;
    const float inv_rms = rsqrtf(sum_sq * a.inv_hidden + a.eps);
#pragma unroll 1
    for (int base = 0; base < hidden; base += STEP) {
        float v[U], g[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + u * TPR + t;
            if (i < hidden) {
                v[u] = to_float(a.xr[i]);
                g[u] = weight<OFFSET>(to_float(a.w[i]));
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = base + u * TPR + t;
            if (i < hidden) a.yr[i] = from_float<T>(v[u] * inv_rms * g[u]);
        }
    }
}

// One row group per block (the YAML's grid: ceil_div(rows, ROWS_PER_BLOCK) blocks), one pass, no tail: the loads
// go out after the address arithmetic alone, before the launch is checked (the latency of decode sizes is mostly
// the code ahead of the first load, as measured on an H100). A thread loads only whole accesses inside its own
// row, and only aligned ones, so nothing can fault whatever the arguments; the launch-wide conditions (one group per
// block, x, y, w aligned, strides and hidden multiples of V, one pass) are checked while the loads fly. If they fail,
// nothing has been written and no barrier passed: returns false and the kernel takes its general paths. Same terms
// as normalize_row_one_pass (its sum of squares in the same order, no tail here).
template <typename T, int TPR, int V, int U, int ROWS_PER_BLOCK, int OFFSET>
__device__ __forceinline__ bool normalize_one_group(T* __restrict__ y, const T* __restrict__ x,
                                                    const T* __restrict__ w, int rows, int hidden,
                                                    long long x_row_stride, long long y_row_stride, float eps,
                                                    float* scratch) {
    constexpr int W = VectorShape<T, V>::W;
    constexpr bool PRELOAD_W = W * U <= 16;  // as normalize_row_one_pass
    constexpr unsigned BYTES = V * sizeof(T);
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    const long long row = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK + row_in_block;
    const T* xr = x + row * x_row_stride;
    const bool active = row < rows;
    Words<W> xbuf[U];
    Words<W> wbuf[PRELOAD_W ? U : 1];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int c = (u * TPR + t) * V;
        const bool ok = active & (c + V <= hidden) & all_aligned(BYTES, xr + c, w + c);
        xbuf[u] = ok ? load_words<W>(xr + c) : zero_words<W>();
        if constexpr (PRELOAD_W) wbuf[u] = ok ? load_words<W>(w + c) : zero_words<W>();
    }
    // Uniform over the grid (bitwise &: no short-circuit branches).
    const bool fast = (static_cast<long long>(gridDim.x) * ROWS_PER_BLOCK >= rows) &
                      all_aligned(BYTES, x, y, w) &
                      (((x_row_stride | y_row_stride | hidden) & (V - 1)) == 0) & (hidden / V <= TPR * U);
    if (!fast) return false;
    float sum_sq = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) sum_sq = sum_squares<T, W>(xbuf[u], sum_sq);
    sum_sq = group_sum<TPR / 32>(sum_sq, scratch + row_in_block * (TPR / 32));
    if (!active) return true;
    const float inv_rms = rsqrtf(sum_sq * (1.0f / static_cast<float>(hidden)) + eps);
    T* yr = y + row * y_row_stride;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int c = (u * TPR + t) * V;
        if (c >= hidden) continue;
        Words<W> wv;
        if constexpr (PRELOAD_W)
            wv = wbuf[u];
        else
            wv = load_words<W>(w + c);
        store_words<W>(yr + c, scale<T, W, OFFSET>(xbuf[u], wv, inv_rms));
    }
    return true;
}

enum class RowPath { one_pass, two_pass, scalar };

// Walks this block's row groups (grid stride) with one path for the whole launch. TPR threads per row.
template <RowPath PATH, typename T, int TPR, int V, int U, int ROWS_PER_BLOCK, int OFFSET, int WARPS>
__device__ __forceinline__ void normalize_rows(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w,
                                               int rows, int hidden, long long x_row_stride, long long y_row_stride,
                                               float eps, float (&scratch)[2][WARPS]) {
    const int row_in_block = threadIdx.x / TPR;
    const int t = threadIdx.x % TPR;
    const float inv_hidden = 1.0f / static_cast<float>(hidden);
    int parity = 0;  // scratch is double-buffered: one __syncthreads per row group suffices (see group_sum)
    for (long long first = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK; first < rows;
         first += static_cast<long long>(gridDim.x) * ROWS_PER_BLOCK) {
        const long long row = first + row_in_block;
        const bool active = row < rows;
        const RowArgs<T> a{y + (active ? row * y_row_stride : 0),
                           x + (active ? row * x_row_stride : 0),
                           w,
                           hidden,
                           inv_hidden,
                           eps,
                           active,
                           t,
                           &scratch[parity][row_in_block * (TPR / 32)]};
        if constexpr (PATH == RowPath::one_pass)
            normalize_row_one_pass<T, TPR, V, U, OFFSET>(a);
        else if constexpr (PATH == RowPath::two_pass)
            normalize_row_two_pass<T, TPR, V, U, OFFSET>(a);
        else
            normalize_row_scalar<T, TPR, U, OFFSET>(a);
        parity ^= 1;
    }
}

}  // namespace ktune::dev::rmsnorm

template <typename T, int BLOCK, int VEC, int UNROLL, int ROWS_PER_BLOCK, int OFFSET = 0>
__global__ void __launch_bounds__(BLOCK)
    rmsnorm_fwd(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, int rows, int hidden,
                long long x_row_stride, long long y_row_stride, float eps) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "rmsnorm_fwd: T is float, __half or __nv_bfloat16");
    static_assert(ROWS_PER_BLOCK >= 1, "rmsnorm_fwd: ROWS_PER_BLOCK >= 1");
    static_assert(BLOCK >= 32 && BLOCK <= 1024, "rmsnorm_fwd: BLOCK in [32, 1024]");
    static_assert(BLOCK % (32 * ROWS_PER_BLOCK) == 0, "rmsnorm_fwd: BLOCK % (32 * ROWS_PER_BLOCK) == 0");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "rmsnorm_fwd: VEC is a power of two");
    static_assert(VEC * sizeof(T) <= 16, "rmsnorm_fwd: VEC * sizeof(T) <= 16");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "rmsnorm_fwd: UNROLL in [1, 32]");
    static_assert(OFFSET == 0 || OFFSET == 1, "rmsnorm_fwd: OFFSET is 0 or 1");

    using namespace ktune::dev;
    constexpr int TPR = BLOCK / ROWS_PER_BLOCK;  // threads per row
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    __shared__ float scratch[2][BLOCK / 32];  // per warp, double-buffered (see normalize_rows)

    constexpr bool VECTOR_PATH = VEC_BYTES >= 4;  // 2-byte accesses gain nothing over the scalar path
    if constexpr (VECTOR_PATH) {
        if (rmsnorm::normalize_one_group<T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, OFFSET>(
                y, x, w, rows, hidden, x_row_stride, y_row_stride, eps, scratch[0]))
            return;
    }
    const bool vector_ok = VECTOR_PATH && is_aligned(x, VEC_BYTES) && is_aligned(y, VEC_BYTES) &&
                           is_aligned(w, VEC_BYTES) && x_row_stride % VEC == 0 && y_row_stride % VEC == 0;

    // The path depends only on kernel arguments: uniform over the grid, so every barrier is reached by all threads.
    // Separate loops keep each path's registers to itself.
    using rmsnorm::RowPath;
    if constexpr (VECTOR_PATH) {
        if (vector_ok) {
            if (rmsnorm::fits_one_pass<TPR, VEC, UNROLL>(hidden))
                rmsnorm::normalize_rows<RowPath::one_pass, T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, OFFSET>(
                    y, x, w, rows, hidden, x_row_stride, y_row_stride, eps, scratch);
            else
                rmsnorm::normalize_rows<RowPath::two_pass, T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, OFFSET>(
                    y, x, w, rows, hidden, x_row_stride, y_row_stride, eps, scratch);
            return;
        }
    }
    rmsnorm::normalize_rows<RowPath::scalar, T, TPR, VEC, UNROLL, ROWS_PER_BLOCK, OFFSET>(
        y, x, w, rows, hidden, x_row_stride, y_row_stride, eps, scratch);
}
