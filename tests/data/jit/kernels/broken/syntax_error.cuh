// A kernel with a syntax error (missing semicolon): the compile service must report it, not throw.
template <int N>
__global__ void broken(float* out) {
    out[0] = N
}
