// A kernel written for Kernel Tuner: c = a + b over n elements. Its tunables arrive as macros: block_size_x threads
// per block, tile_size_x elements per thread.
extern "C" __global__ void vector_add(float* c, const float* a, const float* b, int n) {
    const int first = (blockIdx.x * block_size_x + threadIdx.x) * tile_size_x;
    for (int k = 0; k < tile_size_x; ++k)
        if (first + k < n) c[first + k] = a[first + k] + b[first + k];
}
