#include "kernels/glu/glu_fwd.cuh"
#include "kernels/rmsnorm/rmsnorm_bwd.cuh"
#include "kernels/rmsnorm/rmsnorm_fwd.cuh"
using ktune::dev::glu::Act; using ktune::dev::glu::Layout;
template __global__ void glu_fwd<__nv_bfloat16, Act::silu, Layout::split, 128, 1, 1, 2>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int, long long, long long, long long);
template __global__ void glu_fwd<__nv_bfloat16, Act::gelu_tanh, Layout::cat, 64, 8, 1, 2>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int, long long, long long, long long);
template __global__ void glu_fwd<float, Act::silu, Layout::split, 32, 2, 1, 2>(float*, const float*, const float*, int, int, long long, long long, long long);
template __global__ void rmsnorm_bwd<__nv_bfloat16, 256, 4, 2, 1, 2, 1>(__nv_bfloat16*, float*, float*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int, long long, long long, long long, float);
template __global__ void rmsnorm_bwd<float, 512, 2, 2, 1, 1, 1>(float*, float*, float*, const float*, const float*, const float*, int, int, long long, long long, long long, float);
template __global__ void rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1, 0>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int, long long, long long, float);
template __global__ void rmsnorm_fwd<float, 128, 4, 2, 2, 1>(float*, const float*, const float*, int, int, long long, long long, float);
