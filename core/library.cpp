#include "core/library.hpp"

#include <string>

#include "core/error.hpp"

namespace ktune {

const std::vector<LibraryBaseline>& library_baselines() {
    static const std::vector<LibraryBaseline> list{
        {"cublas_gemm",
         "y, x, w, M, N, K (op linear/fwd: y[M, N] = x[M, K] W[N, K]^T, row-major, fp16 or bf16)",
         {"API", "RANK"},
         "cuBLAS with fp32 accumulation. API 1: cublasGemmEx with CUBLAS_GEMM_DEFAULT (what PyTorch's F.linear "
         "calls); API 2: cublasLtMatmul with the RANK-th algorithm (1-based) of cublasLtMatmulAlgoGetHeuristic (32 MiB "
         "of workspace), so the tuner finds the fastest cuBLAS has to offer for the shape"},
        {"cublaslt_gemm_act",
         "y, x, w, b, M, N, K (op gemm_act: y[M, N] = act(x[M, K] W[N, K]^T + b[N]), row-major, fp16 or bf16)",
         {"ACT", "RANK"},
         "cublasLtMatmul with fp32 accumulation and the bias and activation fused into its epilogue, with the "
         "RANK-th algorithm (1-based) of cublasLtMatmulAlgoGetHeuristic for that epilogue (32 MiB of workspace). ACT "
         "as the reference's: 0 none (CUBLASLT_EPILOGUE_BIAS), 1 gelu (CUBLASLT_EPILOGUE_GELU_BIAS: GELU in its tanh "
         "form, what torch._addmm_activation(use_gelu=True) calls); cuBLASLt has no SiLU epilogue, so 2 (silu) is "
         "refused"},
    };
    return list;
}

const LibraryBaseline* find_library_baseline(std::string_view name) {
    for (const LibraryBaseline& l : library_baselines())
        if (l.name == name) return &l;
    return nullptr;
}

GemmCall gemm_call(std::string_view library, const NamedValues& config) {
    const std::string where = "kernel.library";
    const auto refuse = [&](const std::string& why) {
        throw Error(ErrorCategory::bad_input, std::string(library) + ": " + why, where);
    };
    GemmCall call;
    const std::int64_t rank = lookup(config, "RANK").value_or(1);
    if (rank < 1) refuse("RANK is 1 or more (a rank of cuBLASLt's heuristic), got " + std::to_string(rank));
    call.rank = int(rank);
    if (library == "cublas_gemm") {
        const std::int64_t api = lookup(config, "API").value_or(1);
        if (api != 1 && api != 2) refuse("API is 1 (cublasGemmEx) or 2 (cuBLASLt), got " + std::to_string(api));
        call.lt = api == 2;
        return call;
    }
    if (library == "cublaslt_gemm_act") {
        const std::optional<std::int64_t> act = lookup(config, "ACT");
        if (!act) refuse("needs ACT: 0 none (bias only) or 1 gelu");
        if (*act == 2) refuse("cuBLASLt has no SiLU epilogue: ACT 2 (silu) has no cuBLASLt baseline");
        if (*act != 0 && *act != 1) refuse("ACT is 0 (none: bias only) or 1 (gelu), got " + std::to_string(*act));
        call.lt = true;
        call.epilogue = *act == 0 ? GemmEpilogue::bias : GemmEpilogue::gelu_bias;
        return call;
    }
    refuse("is not a GEMM library baseline (cublas_gemm, cublaslt_gemm_act)");
    return call;
}

}  // namespace ktune
