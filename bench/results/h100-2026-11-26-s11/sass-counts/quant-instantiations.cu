#include "kernels/quant_linear/linear_int4_fwd.cuh"
template __global__ void linear_int4_fwd<__nv_bfloat16, 8, 1, 2, 1, 1, 2, 1, 1, 2, 2>(__nv_bfloat16*, const __nv_bfloat16*, const unsigned char*, const __nv_bfloat16*, const unsigned char*, float*, int, int, int, int, int);
template __global__ void linear_int4_fwd<__nv_bfloat16, 8, 1, 2, 1, 2, 2, 1, 1, 2, 1>(__nv_bfloat16*, const __nv_bfloat16*, const unsigned char*, const __nv_bfloat16*, const unsigned char*, float*, int, int, int, int, int);
