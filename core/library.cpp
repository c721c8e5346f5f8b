#include "core/library.hpp"

namespace ktune {

const std::vector<LibraryBaseline>& library_baselines() {
    static const std::vector<LibraryBaseline> list{
        {"cublas_gemm",
         "y, x, w, M, N, K (op linear/fwd: y[M, N] = x[M, K] W[N, K]^T, row-major, fp16 or bf16)",
         {"API", "RANK"},
         "cuBLAS with fp32 accumulation. API 1: cublasGemmEx with CUBLAS_GEMM_DEFAULT (what PyTorch's F.linear "
         "calls); API 2: cublasLtMatmul with the RANK-th algorithm (1-based) of cublasLtMatmulAlgoGetHeuristic (32 MiB "
         "of workspace), so the tuner finds the fastest cuBLAS has to offer for the shape"},
    };
    return list;
}

const LibraryBaseline* find_library_baseline(std::string_view name) {
    for (const LibraryBaseline& l : library_baselines())
        if (l.name == name) return &l;
    return nullptr;
}

}  // namespace ktune
