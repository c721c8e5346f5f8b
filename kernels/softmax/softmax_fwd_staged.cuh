#pragma once
// Row softmax, the staged kernel: a thread-block cluster per row, each block's chunk of the row staged in shared
// memory by bulk asynchronous copies. Operation, the cluster exchange and the launch: softmax_common.cuh. Driven by
// search_spaces/softmax.yaml (alternative staged).
//
// The registers kernel (softmax_fwd_registers.cuh) holds at most 64 KiB of a row per block in registers, so with one
// or two such blocks per SM too few bytes are in flight, and DRAM idles while a block reduces and waits for the
// cluster. Here each block's contiguous chunk of the row (ceil(cols / CLUSTER) elements) is copied into dynamic shared
// memory by bulk asynchronous copies (TMA, one thread issues them), so x is read once, no register holds data in
// flight, and several blocks per SM (up to 227 KiB of chunks) keep copies in flight while others reduce. E.g. bf16,
// N = 128256, CLUSTER 4: 62.6 KiB chunks, 3 blocks and 188 KiB in flight per SM, against 32-64 KiB in registers;
// CLUSTER 8: 31.3 KiB chunks, 6 or 7 blocks per SM. Thread t takes the 16-byte accesses t, t + BLOCK, ... of its
// block's chunk (the passes read shared memory 16 bytes at a time). Registers are capped at 32 a thread
// (__launch_bounds__ min blocks 2048 / BLOCK) so that registers never limit the blocks per SM below what shared memory
// allows; the passes are unrolled only twice to fit without spills.
//
// Tunables (template parameters, named as the YAML keys):
//   BLOCK    threads per block: a multiple of 32 in [32, 1024].
//   CLUSTER  blocks per row (thread-block cluster size, __cluster_dims__): 1, 2, 4, 8 or 16 (8 is the portable
//            maximum; an H100 has 16 where the launch allows non-portable sizes).
//
// Launch: as softmax_common.cuh says, with dynamic shared memory of at least ceil(floor(cols * sizeof(T) / 16) /
// CLUSTER) * 16 bytes (the YAML gives ceil_div(N * DTYPE_BYTES, 16 * CLUSTER) * 16); with less, the kernel takes the
// scalar path. The bulk copies need x and out 16-byte aligned and both strides multiples of 16 / sizeof(T); the
// cols % (16 / sizeof(T)) leftover elements are taken element-wise by the first threads of rank 0. Otherwise rows take
// the streaming walk with element accesses (the scalar path), not the registers kernel's vector walks, so that their
// register-heavy code does not weigh on this kernel's register budget.
#include "kernels/softmax/softmax_common.cuh"

namespace ktune::dev::softmax {

// ---- The staged path ----------------------------------------------------------------------------------------------
// The row's 16-byte units are cut into CLUSTER contiguous chunks, one per block (ceil(units / CLUSTER) each, the last
// ones shorter or empty), and each block's chunk is copied into dynamic shared memory by bulk asynchronous copies
// (cp.async.bulk, the TMA engine), issued by one thread and completing on an mbarrier. No registers hold the row in
// flight, so small blocks can keep a whole chunk each in flight and several of them share an SM: while one reduces or
// waits at the cluster barrier, the others' copies keep DRAM busy. The passes (max, sum, out) then read shared
// memory; fp32 keeps each exp in place of its x (same bits as the resident path's cached exps), 16-bit types
// recompute it in the output pass. The cols % (16 / sizeof(T)) last elements (the tail) are read by rank 0's first
// threads, as in the other paths. When a cluster has more rows (grid.x < rows * CLUSTER), the next row's copy is
// issued as soon as every thread is done with the chunk.

__device__ __forceinline__ unsigned dynamic_smem_bytes() {
    unsigned n;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}

// Global -> this block's shared memory, completing on bar. dst, src 16-byte aligned; bytes a multiple of 16.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(dst)),
                 "l"(src), "r"(bytes), "r"(shared_address(bar))
                 : "memory");
}

// The 16-byte-unit chunk of a row that one block stages. Depends on cols only, so every row of a launch has the same.
template <typename T, int CLUSTER>
struct StagedChunk {
    static constexpr int EPU = 16 / int(sizeof(T));  // elements per 16-byte unit
    int first;                                       // first element of this block's chunk (a multiple of EPU)
    unsigned bytes;                                  // chunk bytes (a multiple of 16; 0 for an empty chunk)
    __device__ __forceinline__ StagedChunk(int cols, int rank) {
        const int units = cols / EPU;
        const int per = units / CLUSTER + (units % CLUSTER != 0);
        const int begin = min(units, rank * per);  // rank * per <= units + CLUSTER: no overflow
        first = begin * EPU;
        bytes = static_cast<unsigned>(min(units, begin + per) - begin) * 16u;
    }
    // The shared memory a launch must give each block: per * 16 bytes (the YAML's shared_bytes is at least this).
    __device__ __forceinline__ static unsigned bytes_needed(int cols) {
        const int units = cols / EPU;
        return static_cast<unsigned>(units / CLUSTER + (units % CLUSTER != 0)) * 16u;
    }
};

// Thread 0: announces and issues the copy of this block's chunk of the row at x_row into buf, in pieces of at most
// 32 KiB (several copies in flight from one thread; each far above the size where a copy's fixed cost matters).
template <typename T, int CLUSTER>
__device__ __forceinline__ void stage_chunk(T* buf, const T* x_row, const StagedChunk<T, CLUSTER>& c,
                                            unsigned long long* bar) {
    constexpr unsigned PIECE = 32768;
    mbarrier_expect_bytes(bar, c.bytes);
    const char* src = reinterpret_cast<const char*>(x_row + c.first);
    char* dst = reinterpret_cast<char*>(buf);
    for (unsigned off = 0; off < c.bytes; off += PIECE)
        bulk_copy(dst + off, src + off, min(PIECE, c.bytes - off), bar);
}

// One vector access of V elements of T at p, as floats (the staged path reads its chunk in shared memory so).
template <typename T, int V>
__device__ __forceinline__ void load_floats(const T* p, float (&f)[V]) {
    Access<T, V> a;
    a.load(p);
    a.unpack(f);
}

// One row from the staged chunk in buf (its copy was issued on bar; parity = the phase to wait for).
template <typename T, int BLOCK, int V, int CLUSTER>
__device__ __forceinline__ void softmax_row_staged(const RowArgs<T>& a, Scratch<BLOCK, CLUSTER>& sh, T* buf, int first,
                                                   int nv, unsigned parity) {
    const int t = threadIdx.x;
    const bool has_tail = a.rank == 0 && t < a.tail;
    const float x_tail = has_tail ? to_float(a.x[a.tail_start + t]) : 0.0f;  // overlaps the copy
    mbarrier_wait<false>(&sh.bar, parity);

    float mx[V];  // V maxima per thread: V independent chains (latency, for the short rows of decode)
#pragma unroll
    for (int e = 0; e < V; ++e) mx[e] = neg_inf();
#pragma unroll 2
    for (int i = t; i < nv; i += BLOCK) {
        float f[V];
        load_floats<T, V>(buf + i * V, f);
#pragma unroll
        for (int e = 0; e < V; ++e) mx[e] = fmaxf(mx[e], f[e] * a.k);
    }
    float m = has_tail ? x_tail * a.k : neg_inf();
#pragma unroll
    for (int e = 0; e < V; ++e) m = fmaxf(m, mx[e]);
    const float bm = block_max<BLOCK / 32>(m, sh.max);

    // V sums per thread, one per lane of the access: V times shorter rounding chains (at most 64 terms each for fp32
    // at the YAML's problems, as its tolerances assume) and V independent adds in flight.
    float s = 0.0f, e_tail = 0.0f;
    if (bm != neg_inf()) {  // the block saw at least one element
        if (has_tail) s = e_tail = fast_exp2(fmaf(x_tail, a.k, -bm));
        float acc[V];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] = 0.0f;
#pragma unroll 2
        for (int i = t; i < nv; i += BLOCK) {
            float f[V];
            load_floats<T, V>(buf + i * V, f);
#pragma unroll
            for (int e = 0; e < V; ++e) {
                f[e] = fast_exp2(fmaf(f[e], a.k, -bm));
                acc[e] += f[e];
            }
            if constexpr (sizeof(T) == 4) Access<T, V>::store(buf + i * V, f);  // the thread's own elements only
        }
#pragma unroll
        for (int e = 0; e < V; ++e) s += acc[e];
    }
    s = group_sum<BLOCK / 32>(s, sh.sum);
    m = bm;
    combine_cluster<CLUSTER>(m, s, sh.ex, a.round, a.rank);

    const float inv = 1.0f / s;
    const float factor = CLUSTER == 1 ? inv : fast_exp2(bm - m) * inv;
    const bool cached = sizeof(T) == 4 && bm != neg_inf();  // buf holds the exps (else x, e.g. all -inf)
#pragma unroll 2
    for (int i = t; i < nv; i += BLOCK) {
        float f[V];
        load_floats<T, V>(buf + i * V, f);
#pragma unroll
        for (int e = 0; e < V; ++e) f[e] = cached ? f[e] * factor : fast_exp2(fmaf(f[e], a.k, -m)) * inv;
        Access<T, V>::store(a.out + first + static_cast<long long>(i) * V, f);
    }
    if (has_tail) a.out[a.tail_start + t] = from_float<T>(e_tail * factor);
}

// The staged walk over this cluster's rows. buf holds StagedChunk::bytes_needed(cols) bytes (checked by the caller);
// x and the x row stride are 16-byte aligned, out and its stride VEC-aligned.
template <typename T, int BLOCK, int VEC, int CLUSTER>
__device__ __forceinline__ void softmax_rows_staged(T* out, const T* x, int rows, int cols, long long x_row_stride,
                                                    long long out_row_stride, float scale, Scratch<BLOCK, CLUSTER>& sh,
                                                    T* buf) {
    const int rank = CLUSTER > 1 ? static_cast<int>(__clusterRelativeBlockRank()) : 0;
    const long long clusters = gridDim.x / CLUSTER;
    const StagedChunk<T, CLUSTER> chunk(cols, rank);
    const int units = cols / StagedChunk<T, CLUSTER>::EPU;
    const int tail_start = units * StagedChunk<T, CLUSTER>::EPU;
    const int nv = static_cast<int>(chunk.bytes / (VEC * sizeof(T)));  // this block's VEC-element accesses
    long long r = blockIdx.x / CLUSTER;
    if (threadIdx.x == 0) {
        mbarrier_init(&sh.bar);
        if (r < rows) stage_chunk<T, CLUSTER>(buf, x + r * x_row_stride, chunk, &sh.bar);
    }
    __syncthreads();  // the barrier is initialised before anyone waits on it
    unsigned parity = 0;
    for (int round = 0; r < rows; r += clusters, parity ^= 1u, ++round) {
        const RowArgs<T> a{out + r * out_row_stride, x + r * x_row_stride, nv, tail_start, cols - tail_start,
                           scale * log2e, rank, round};
        softmax_row_staged<T, BLOCK, VEC, CLUSTER>(a, sh, buf, chunk.first, nv, parity);
        if (r + clusters < rows) {
            // Every thread's reads (and fp32's exp writes) of buf are done and ordered before the async proxy
            // overwrites it.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
            if (threadIdx.x == 0)
                stage_chunk<T, CLUSTER>(buf, x + (r + clusters) * x_row_stride, chunk, &sh.bar);
        }
    }
}

}  // namespace ktune::dev::softmax

template <typename T, int BLOCK, int CLUSTER>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK, 2048 / BLOCK)
    softmax_fwd_staged(T* __restrict__ out, const T* __restrict__ x, int rows, int cols, long long x_row_stride,
                       long long out_row_stride, float scale) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "softmax_fwd_staged: T is float, __half or __nv_bfloat16");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0,
                  "softmax_fwd_staged: BLOCK a multiple of 32 in [32, 1024]");
    static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8 || CLUSTER == 16,
                  "softmax_fwd_staged: CLUSTER in {1, 2, 4, 8, 16}");
    constexpr int VEC = 16 / int(sizeof(T));  // 16-byte accesses: the bulk copies' unit
    constexpr int UNROLL = 1;                 // the scalar path's element accesses, one per pass

    using namespace ktune::dev;
    using softmax::RowPath;
    __shared__ softmax::Scratch<BLOCK, CLUSTER> sh;
    // The cluster's exchange set up before any load (uniform over the cluster: its blocks take the same rows).
    if (static_cast<int>(blockIdx.x / CLUSTER) < rows) cluster_exchange_init<CLUSTER>(sh.ex);
    constexpr unsigned VEC_BYTES = VEC * sizeof(T);
    const bool vector_ok = is_aligned(x, VEC_BYTES) && is_aligned(out, VEC_BYTES) && x_row_stride % VEC == 0 &&
                           out_row_stride % VEC == 0;
    // Uniform over the grid: every block of a cluster takes the same path, so the exchange rounds pair up.
    extern __shared__ __align__(128) unsigned char softmax_stage[];
    // vector_ok with 16-byte accesses makes x, its rows and every chunk 16-byte aligned, as bulk copies need.
    if (vector_ok && softmax::StagedChunk<T, CLUSTER>::bytes_needed(cols) <= softmax::dynamic_smem_bytes())
        softmax::softmax_rows_staged<T, BLOCK, VEC, CLUSTER>(out, x, rows, cols, x_row_stride, out_row_stride,
                                                             scale, sh, reinterpret_cast<T*>(softmax_stage));
    else  // misaligned rows (or too little shared memory): correct, not fast; keeps the registers to the staged path
        softmax::softmax_rows<RowPath::scalar, T, BLOCK, VEC, UNROLL, CLUSTER>(out, x, rows, cols, x_row_stride,
                                                                               out_row_stride, scale, sh);
}
