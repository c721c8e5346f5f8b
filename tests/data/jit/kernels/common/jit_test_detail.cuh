#pragma once
// A header included by a header: the cache key must follow includes recursively.
namespace ktune_test_detail {
template <typename To, typename From>
__device__ __forceinline__ To convert(From x) {
    return static_cast<To>(x);
}
}  // namespace ktune_test_detail
