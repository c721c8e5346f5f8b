#pragma once
// bias_gelu, the row kernel: y[r, c] = gelu(x[r, c] + b[c]) over M rows of N (row-major, contiguous). A block owns a
// column strip of BLOCK * VEC and ROWS rows at a time: each thread loads its bias once and reuses it for every row it
// visits, so b is read once per block instead of once per element. Driven by bias_gelu.yaml (alternative rows).
// Tunables: BLOCK threads per block; VEC elements per access; ROWS rows per step of a block (1..16); FAST the SFU's
// tanh; LOAD how x is read (cached or streaming). Launch: grid.x column strips, grid.y row groups (any counts: blocks
// stride over both).
#include "bias_gelu_common.cuh"

template <typename T, int BLOCK, int VEC, int ROWS, bool FAST, bias_gelu::Load LOAD>
__global__ void __launch_bounds__(BLOCK) bias_gelu_rows(T* __restrict__ y, const T* __restrict__ x,
                                                          const T* __restrict__ b, int m, int n) {
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "bias_gelu_rows: BLOCK a multiple of 32 <= 1024");
    static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0 && VEC * sizeof(T) <= 16, "bias_gelu_rows: VEC * sizeof(T) <= 16");
    static_assert(ROWS >= 1 && ROWS <= 16, "bias_gelu_rows: ROWS in [1, 16]");
    using namespace bias_gelu;
    const bool vector_ok = n % VEC == 0 && aligned<T, VEC>(x) && aligned<T, VEC>(y) && aligned<T, VEC>(b);
    const int width = vector_ok ? VEC : 1;  // elements per thread per row
    for (long long c0 = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) * width; c0 < n;
         c0 += static_cast<long long>(gridDim.x) * BLOCK * width) {
        const long long first_row = static_cast<long long>(blockIdx.y) * ROWS;
        const long long row_step = static_cast<long long>(gridDim.y) * ROWS;
        if (vector_ok) {
            const Vec<T, VEC> bv = *reinterpret_cast<const Vec<T, VEC>*>(b + c0);
            for (long long r0 = first_row; r0 < m; r0 += row_step) {
                Vec<T, VEC> xv[ROWS];
#pragma unroll
                for (int r = 0; r < ROWS; ++r)
                    if (r0 + r < m) xv[r] = load<LOAD, T, VEC>(x + (r0 + r) * n + c0);
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    if (r0 + r >= m) break;
                    Vec<T, VEC> yv;
#pragma unroll
                    for (int k = 0; k < VEC; ++k)
                        yv.v[k] = from_float<T>(gelu_tanh<FAST>(to_float(xv[r].v[k]) + to_float(bv.v[k])));
                    *reinterpret_cast<Vec<T, VEC>*>(y + (r0 + r) * n + c0) = yv;
                }
            }
        } else {
            const float bc = to_float(b[c0]);
            for (long long r0 = first_row; r0 < m; r0 += row_step)
                for (long long r = r0; r < r0 + ROWS && r < m; ++r)
                    y[r * n + c0] = from_float<T>(gelu_tanh<FAST>(to_float(x[r * n + c0]) + bc));
        }
    }
}
