#pragma once
// Helpers for the compile-service tests: a header reached through #include "kernels/common/...", as real kernels do.
#include "kernels/common/jit_test_detail.cuh"

template <typename T>
__device__ __forceinline__ float ktune_test_to_float(T x) {
    return ktune_test_detail::convert<float>(x);
}
