#pragma once
// Values exchanged among the blocks of a thread-block cluster (Hopper, sm_90) without cluster barriers, and the
// mbarrier primitives under it (also what softmax's bulk copies complete on).
//
// A cluster barrier with release semantics (barrier.cluster.arrive, which __cluster_barrier_arrive() issues) compiles
// to a GPU-scope memory barrier (MEMBAR.ALL.GPU) before the arrival. At decode sizes a kernel is one chain of
// latencies, and two such barriers per row cost 10-20 % of its time on an H100 (2026-11-23). Here
// each block instead pushes its value into every block's shared memory with st.async, which completes on the
// receiving block's mbarrier (a transaction count of bytes); a block waits on its own mbarrier and reads its own
// shared memory. No GPU-scope barrier, no remote loads.
//
// Rounds: the k-th exchange of a launch (k = 0, 1, ...) uses buffer and mbarrier k % 2, phase parity (k / 2) % 2.
// A block pushes round k + 2 into buffer k % 2 only after its round k + 1 completed, which needed every block's round
// k + 1 push, which each block issues after it has read its round k values: a buffer is never overwritten before it
// is read. A block leaves only after its last round completed, so no push can reach a block that has exited.
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev {

template <int CLUSTER>
struct ClusterExchange {
    unsigned long long values[2][CLUSTER];  // by sender rank
    unsigned long long bars[2];
};

// This block's rank in its cluster (0 without one).
template <int CLUSTER>
__device__ __forceinline__ int cluster_rank() {
    if constexpr (CLUSTER > 1)
        return static_cast<int>(__clusterRelativeBlockRank());
    else
        return 0;
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The address of the same shared variable in block `rank` of the cluster.
__device__ __forceinline__ unsigned cluster_address(unsigned addr, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    return remote;
}

// One thread: an mbarrier with one expected arrival, its initialisation made visible to the async proxy (bulk copies,
// st.async) and ordered before the cluster's later accesses (these must follow a cluster barrier, which may be
// relaxed: the fence is the release).
__device__ __forceinline__ void mbarrier_init(unsigned long long* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One thread of the receiving block: the phase completes when `bytes` have arrived (this is its one arrival; at once
// for bytes = 0).
__device__ __forceinline__ void mbarrier_expect_bytes(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
                 : "memory");
}

// Stores v at `addr` (this block's address of a shared variable) in block `to`, completing `bytes` on that block's
// copy of `bar`.
__device__ __forceinline__ void cluster_push(unsigned addr, unsigned long long v, unsigned long long* bar, unsigned to) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(
                     cluster_address(addr, to)),
                 "l"(v), "r"(cluster_address(shared_address(bar), to))
                 : "memory");
}
__device__ __forceinline__ void cluster_push(unsigned addr, float v, unsigned long long* bar, unsigned to) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                     cluster_address(addr, to)),
                 "r"(__float_as_uint(v)), "r"(cluster_address(shared_address(bar), to))
                 : "memory");
}
// Vector forms: one instruction for 8 or 16 bytes (`addr` aligned to 8 or 16).
__device__ __forceinline__ void cluster_push(unsigned addr, float2 v, unsigned long long* bar, unsigned to) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(
                     cluster_address(addr, to)),
                 "f"(v.x), "f"(v.y), "r"(cluster_address(shared_address(bar), to))
                 : "memory");
}
__device__ __forceinline__ void cluster_push(unsigned addr, float4 v, unsigned long long* bar, unsigned to) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
                 ::"r"(cluster_address(addr, to)), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w),
                 "r"(cluster_address(shared_address(bar), to))
                 : "memory");
}

// Waits for the phase of `parity` (0 for the first) to complete. CLUSTER_SCOPE: acquire at cluster scope, for values
// other blocks pushed (it invalidates L1); otherwise the default (CTA scope), for this block's own bulk copies.
template <bool CLUSTER_SCOPE>
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
    const unsigned addr = shared_address(bar);
    unsigned done = 0;
    do {
        if constexpr (CLUSTER_SCOPE)
            asm volatile(
                "{\n\t.reg .pred p;\n\t"
                "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                "selp.u32 %0, 1, 0, p;\n\t}"
                : "=r"(done)
                : "r"(addr), "r"(parity)
                : "memory");
        else
            asm volatile(
                "{\n\t.reg .pred p;\n\t"
                "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                "selp.u32 %0, 1, 0, p;\n\t}"
                : "=r"(done)
                : "r"(addr), "r"(parity)
                : "memory");
    } while (!done);
}

// Every thread of every block of the cluster, before its first exchange (the earlier, the better: the cluster's
// arrival then overlaps the caller's loads). Its shared memory is not touched otherwise before the first exchange.
template <int CLUSTER>
__device__ __forceinline__ void cluster_exchange_init(ClusterExchange<CLUSTER>& ex) {
    if constexpr (CLUSTER > 1) {
        if (threadIdx.x == 0) {
            mbarrier_init(&ex.bars[0]);
            mbarrier_init(&ex.bars[1]);
        }
        // Arrival only: the first exchange waits, so that no block pushes to an mbarrier not yet initialised.
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    }
}

// Round `round` (0, 1, ... in launch order; the same in every block): sends `mine` to every block of the cluster and
// returns when this block has all CLUSTER values; they are then in ex.values[round % 2][sender rank], to be read before
// round + 2. Every thread of every block of the cluster calls it, with the same `mine` within a block.
template <int CLUSTER>
__device__ __forceinline__ void cluster_exchange(ClusterExchange<CLUSTER>& ex, int round, unsigned long long mine,
                                                 int rank) {
    static_assert(CLUSTER >= 2 && CLUSTER <= 32, "cluster_exchange: 2 to 32 blocks");
    if (round == 0) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block has initialised
    const int b = round & 1;
    if (threadIdx.x == 0) mbarrier_expect_bytes(&ex.bars[b], 8u * CLUSTER);
    if (threadIdx.x < CLUSTER) cluster_push(shared_address(&ex.values[b][rank]), mine, &ex.bars[b], threadIdx.x);
    mbarrier_wait<true>(&ex.bars[b], static_cast<unsigned>(round >> 1) & 1u);
}

}  // namespace ktune::dev
