#include "kernels/add_rmsnorm/add_rmsnorm_fwd.cuh"
#include "kernels/rmsnorm/rmsnorm_bwd.cuh"
#include "kernels/softmax/softmax_fwd.cuh"
using bf = __nv_bfloat16;
template __global__ void softmax_fwd<bf, 128, 8, 2, 16, 1>(bf*, const bf*, int, int, long long, long long, float);
template __global__ void softmax_fwd<float, 512, 4, 4, 16, 1>(float*, const float*, int, int, long long, long long, float);
template __global__ void softmax_fwd<__half, 256, 8, 1, 16, 2>(__half*, const __half*, int, int, long long, long long, float);
template __global__ void add_rmsnorm_fwd<__half, 256, 8, 1, 1, 1, 0>(__half*, __half*, const __half*, const __half*, const __half*, int, int, long long, long long, long long, float);
template __global__ void add_rmsnorm_fwd<float, 64, 2, 4, 1, 8, 1>(float*, float*, const float*, const float*, const float*, int, int, long long, long long, long long, float);
template __global__ void add_rmsnorm_fwd_inplace<bf, 128, 8, 1, 1, 8, 0>(bf*, bf*, const bf*, const bf*, int, int, long long, long long, long long, float);
template __global__ void rmsnorm_bwd<bf, 128, 4, 1, 2, 8, 16>(bf*, float*, float*, const bf*, const bf*, const bf*, int, int, long long, long long, long long, float);
template __global__ void rmsnorm_bwd<float, 256, 4, 1, 2, 8, 16>(float*, float*, float*, const float*, const float*, const float*, int, int, long long, long long, long long, float);
template __global__ void rmsnorm_bwd<bf, 256, 4, 2, 1, 2, 1>(bf*, float*, float*, const bf*, const bf*, const bf*, int, int, long long, long long, long long, float);
