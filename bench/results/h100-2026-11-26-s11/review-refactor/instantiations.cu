#include "kernels/glu/glu_fwd.cuh"
#include "kernels/softmax/softmax_fwd.cuh"
using ktune::dev::glu::Act; using ktune::dev::glu::Layout; using bf = __nv_bfloat16;
#define G(T,A,L,B,V,U,P) template __global__ void glu_fwd<T, Act::A, Layout::L, B, V, U, P>(T*, const T*, const T*, int, int, long long, long long, long long);
G(bf,silu,split,128,8,1,2) G(__half,gelu_tanh,cat,64,4,1,2) G(float,silu,split,32,1,1,2) G(bf,silu,split,256,8,2,1) G(float,gelu_tanh,cat,128,4,2,1)
template __global__ void softmax_fwd<bf, 128, 8, 2, 16, 1>(bf*, const bf*, int, int, long long, long long, float);
template __global__ void softmax_fwd<float, 512, 4, 4, 16, 1>(float*, const float*, int, int, long long, long long, float);
template __global__ void softmax_fwd<float, 256, 4, 4, 8, 1>(float*, const float*, int, int, long long, long long, float);
template __global__ void softmax_fwd<__half, 256, 8, 1, 1, 1>(__half*, const __half*, int, int, long long, long long, float);
