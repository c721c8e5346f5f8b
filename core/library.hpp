#pragma once
// Library baselines: kernels that a search space names with `kernel.library` instead of a template. The GPU worker
// calls the vendor library (harness/worker/library_baseline.cpp) where it would launch a compiled kernel, and measures
// it with the same method (validation against the space's reference kernel, the same cold-L2 flush, events and CUPTI
// over every kernel the call launches), so a tuned kernel and the library it must beat are compared side by side in
// one store. The list is the contract between a search space and the worker.
#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace ktune {

struct LibraryBaseline {
    std::string_view name;                     // kernel.library in the YAML
    std::string_view arguments;                // the op arguments it takes, in order (the op's arguments() must match)
    std::vector<std::string_view> parameters;  // the tunables it understands
    std::string_view doc;
};

const std::vector<LibraryBaseline>& library_baselines();
// nullptr when there is no such library baseline.
const LibraryBaseline* find_library_baseline(std::string_view name);

// What cuBLASLt applies to x W^T before y is stored (CUBLASLT_EPILOGUE_*).
enum class GemmEpilogue {
    none,       // y = x W^T
    bias,       // y = x W^T + b (CUBLASLT_EPILOGUE_BIAS)
    gelu_bias,  // y = gelu(x W^T + b), GELU in its tanh form (CUBLASLT_EPILOGUE_GELU_BIAS)
};

// What a GEMM library baseline (cublas_gemm, cublaslt_gemm_act) calls for one configuration, decided from its name and
// configuration alone, so that the worker only translates it and the choice is tested where there is no GPU.
struct GemmCall {
    bool lt = false;  // cublasLtMatmul with the heuristic's rank-th algorithm; else cublasGemmEx, CUBLAS_GEMM_DEFAULT
    int rank = 1;     // 1-based
    GemmEpilogue epilogue = GemmEpilogue::none;
    bool has_bias() const { return epilogue != GemmEpilogue::none; }
    // The op's arguments: y, x, w, then b where there is a bias, then M, N, K.
    std::size_t first_size_argument() const { return has_bias() ? 4 : 3; }
};

// Throws Error (bad_input) for a library that is not a GEMM or a configuration it cannot run, saying why.
GemmCall gemm_call(std::string_view library, const NamedValues& config);

}  // namespace ktune
