// Test-only kernels for the GPU tests (tests/data/gpu/padded_rows.yaml): per sequence b,
//   out[b, e] = sum over the tokens t < lens[b] of x[b, t, e]        x [B, L, E], out [B, E], T = float
// where x's rows past a sequence's length are NaN (the op spec's pad). MODE 1 reads only the rows below the length
// (right); MODE 2 reads every row and weighs the pad rows by 0 (wrong: 0 * NaN is NaN, so its outputs are NaN).
template <typename T, int MODE>
__global__ void padded_sum(T* out, const T* x, const int* lens, int tokens, int elements) {
    static_assert(MODE == 1 || MODE == 2, "MODE is 1 or 2");
    const int b = blockIdx.x;
    const int len = min(max(lens[b], 0), tokens);
    for (int e = threadIdx.x; e < elements; e += blockDim.x) {
        float sum = 0.0f;
        for (int t = 0; t < (MODE == 1 ? len : tokens); ++t) {
            const float v = x[(static_cast<long long>(b) * tokens + t) * elements + e];
            sum += MODE == 1 ? v : (t < len ? 1.0f : 0.0f) * v;
        }
        out[static_cast<long long>(b) * elements + e] = sum;
    }
}

// The reference: the same sum in double, over the rows below the length only.
template <typename T>
__global__ void padded_sum_reference(T* out, const T* x, const int* lens, int tokens, int elements) {
    const int b = blockIdx.x;
    const int len = min(max(lens[b], 0), tokens);
    for (int e = threadIdx.x; e < elements; e += blockDim.x) {
        double sum = 0.0;
        for (int t = 0; t < len; ++t) sum += x[(static_cast<long long>(b) * tokens + t) * elements + e];
        out[static_cast<long long>(b) * elements + e] = static_cast<T>(sum);
    }
}
