// A kernel that does not compile (it names an undeclared variable) and a reference that does: a sweep of
// search_spaces/broken_kernel.yaml must report the failures and exit 1, with or without a GPU.
template <typename T, int BLOCK>
__global__ void broken_fwd(T* out) {
    out[threadIdx.x % BLOCK] = not_declared_anywhere;
}

template <typename T>
__global__ void broken_reference(T* out) {
    out[0] = T(0);
}
