#include "harness/worker/library_baseline.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstring>

#include "core/library.hpp"
#include "harness/worker/driver.hpp"

namespace ktune::worker {
namespace {

// What PyTorch gives cuBLAS on Hopper; enough for split-k algorithms at every default shape.
constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr int kHeuristicAlgorithms = 8;

void check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw LibraryError(std::string(call) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}
#define KTUNE_CUBLAS(call) check((call), #call)

// The handles and workspace, made on first use (in the current context: the worker's primary context, which the
// runtime under cuBLAS shares) and kept for the process.
struct Cublas {
    cublasHandle_t handle = nullptr;
    cublasLtHandle_t lt = nullptr;
    CUdeviceptr workspace = 0;

    static Cublas& get() {
        static Cublas c = [] {
            Cublas x;
            KTUNE_CUBLAS(cublasCreate(&x.handle));
            KTUNE_CUBLAS(cublasLtCreate(&x.lt));
            KTUNE_CU(cuMemAlloc(&x.workspace, kWorkspaceBytes));
            return x;
        }();
        return c;
    }
};

std::int64_t integer_arg(const std::vector<wire::Arg>& args, std::size_t i, const char* what) {
    if (i >= args.size() || (args[i].kind != "i32" && args[i].kind != "i64"))
        throw LibraryError(std::string("cublas_gemm: argument ") + std::to_string(i) + " (" + what +
                           ") is not an integer; the op's arguments must be y, x, w, M, N, K");
    return args[i].integer;
}

// y[M, N] = x[M, K] W[N, K]^T, row-major. In cuBLAS's column-major terms y^T (N x M, ld N) = op(W) x^T with W seen as
// K x N (ld K) transposed and x^T as K x M (ld K): the "TN" GEMM that F.linear issues.
class CublasGemm final : public LibraryCall {
public:
    // algo: -1 for cublasGemmEx, i >= 0 for cuBLASLt's i-th heuristic algorithm.
    CublasGemm(const std::vector<wire::Arg>& args, const std::vector<wire::Buffer>& buffers, std::int64_t algo)
        : m_algo(algo) {
        for (std::size_t i = 0; i < 3; ++i)
            if (i >= args.size() || args[i].kind != "buffer")
                throw LibraryError("cublas_gemm: the op's arguments must be y, x, w, M, N, K");
        m_m = int(integer_arg(args, 3, "M"));
        m_n = int(integer_arg(args, 4, "N"));
        m_k = int(integer_arg(args, 5, "K"));
        auto it = std::find_if(buffers.begin(), buffers.end(),
                               [&](const wire::Buffer& b) { return b.name == args[0].buffer; });
        if (it == buffers.end() || (it->elem != "f16" && it->elem != "bf16"))
            throw LibraryError("cublas_gemm: y must be an f16 or bf16 buffer");
        m_type = it->elem == "f16" ? CUDA_R_16F : CUDA_R_16BF;
        if (m_algo < 0) return;
        try {
            choose_lt_algorithm();
        } catch (...) {
            release();  // a constructor that throws runs no destructor
            throw;
        }
    }

    ~CublasGemm() override { release(); }

    void launch(const std::vector<std::uint64_t>& values, CUstream stream) override {
        void* y = pointer(values, 0);
        const void* x = pointer(values, 1);
        const void* w = pointer(values, 2);
        const float alpha = 1.0f, beta = 0.0f;
        Cublas& c = Cublas::get();
        if (m_algo < 0) {
            KTUNE_CUBLAS(cublasSetStream(c.handle, reinterpret_cast<cudaStream_t>(stream)));
            // cublasSetStream puts the handle back on the default workspace: the 32 MiB again, as PyTorch does.
            KTUNE_CUBLAS(cublasSetWorkspace(c.handle, reinterpret_cast<void*>(c.workspace), kWorkspaceBytes));
            KTUNE_CUBLAS(cublasGemmEx(c.handle, CUBLAS_OP_T, CUBLAS_OP_N, m_n, m_m, m_k, &alpha, w, m_type, m_k, x,
                                      m_type, m_k, &beta, y, m_type, m_n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            return;
        }
        KTUNE_CUBLAS(cublasLtMatmul(c.lt, m_desc, &alpha, w, m_w_layout, x, m_x_layout, &beta, y, m_y_layout, y,
                                    m_y_layout, &m_heuristic.algo, reinterpret_cast<void*>(c.workspace),
                                    kWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream)));
    }

private:
    void release() {
        if (m_desc) cublasLtMatmulDescDestroy(m_desc);
        for (cublasLtMatrixLayout_t l : {m_w_layout, m_x_layout, m_y_layout})
            if (l) cublasLtMatrixLayoutDestroy(l);
        m_desc = nullptr;
        m_w_layout = m_x_layout = m_y_layout = nullptr;
    }

    static void* pointer(const std::vector<std::uint64_t>& values, std::size_t i) {
        void* p = nullptr;
        std::memcpy(&p, &values.at(i), sizeof p);
        return p;
    }

    void choose_lt_algorithm() {
        Cublas& c = Cublas::get();
        KTUNE_CUBLAS(cublasLtMatmulDescCreate(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
        KTUNE_CUBLAS(cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
        KTUNE_CUBLAS(cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
        KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&m_w_layout, m_type, m_k, m_n, m_k));
        KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&m_x_layout, m_type, m_k, m_m, m_k));
        KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&m_y_layout, m_type, m_n, m_m, m_n));
        cublasLtMatmulPreference_t pref = nullptr;
        KTUNE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
        const std::uint64_t bytes = kWorkspaceBytes;
        cublasLtMatmulHeuristicResult_t results[kHeuristicAlgorithms] = {};
        int returned = 0;
        const cublasStatus_t s1 =
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes);
        const cublasStatus_t s2 =
            s1 != CUBLAS_STATUS_SUCCESS
                ? s1
                : cublasLtMatmulAlgoGetHeuristic(c.lt, m_desc, m_w_layout, m_x_layout, m_y_layout, m_y_layout, pref,
                                                 kHeuristicAlgorithms, results, &returned);
        cublasLtMatmulPreferenceDestroy(pref);
        KTUNE_CUBLAS(s2);
        if (m_algo >= returned)
            throw LibraryError("cublas_gemm: cuBLASLt's heuristic offers " + std::to_string(returned) +
                               " algorithms for this shape; RANK " + std::to_string(m_algo + 1) +
                               " is not one of them");
        m_heuristic = results[m_algo];
    }

    std::int64_t m_algo;
    int m_m = 0, m_n = 0, m_k = 0;
    cudaDataType_t m_type = CUDA_R_16BF;
    cublasLtMatmulDesc_t m_desc = nullptr;
    cublasLtMatrixLayout_t m_w_layout = nullptr, m_x_layout = nullptr, m_y_layout = nullptr;
    cublasLtMatmulHeuristicResult_t m_heuristic = {};
};

}  // namespace

std::unique_ptr<LibraryCall> make_library_call(const wire::Launch& launch, const std::vector<wire::Arg>& args,
                                               const std::vector<wire::Buffer>& buffers) {
    if (find_library_baseline(launch.library) == nullptr)
        throw LibraryError("unknown library baseline '" + launch.library + "'");
    if (launch.library == "cublas_gemm") {
        const std::int64_t api = lookup(launch.config, "API").value_or(1);
        const std::int64_t rank = lookup(launch.config, "RANK").value_or(1);
        if (api != 1 && api != 2) throw LibraryError("cublas_gemm: API is 1 (cublasGemmEx) or 2 (cuBLASLt)");
        if (rank < 1) throw LibraryError("cublas_gemm: RANK is 1 or more");
        return std::make_unique<CublasGemm>(args, buffers, api == 1 ? -1 : rank - 1);
    }
    throw LibraryError("library baseline '" + launch.library + "' is listed but this worker cannot call it");
}

}  // namespace ktune::worker
