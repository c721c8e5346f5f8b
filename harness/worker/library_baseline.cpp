#include "harness/worker/library_baseline.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.hpp"
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

// y[M, N] = act(x[M, K] W[N, K]^T (+ b[N])), row-major. In cuBLAS's column-major terms y^T (N x M, ld N) = op(W) x^T
// with W seen as K x N (ld K) transposed and x^T as K x M (ld K): the "TN" GEMM that F.linear issues; b then runs
// along y^T's rows, as cuBLASLt's bias epilogue broadcasts it.
class CublasGemm final : public LibraryCall {
public:
    CublasGemm(std::string name, const GemmCall& call, const std::vector<wire::Arg>& args,
               const std::vector<wire::Buffer>& buffers)
        : m_name(std::move(name)), m_call(call), m_algo(call.lt ? call.rank - 1 : -1) {
        const std::string expected = m_call.has_bias() ? "y, x, w, b, M, N, K" : "y, x, w, M, N, K";
        const std::size_t sizes = m_call.first_size_argument();
        for (std::size_t i = 0; i < sizes; ++i)
            if (i >= args.size() || args[i].kind != "buffer")
                throw LibraryError(m_name + ": the op's arguments must be " + expected);
        m_m = int(integer_arg(args, sizes, "M", expected));
        m_n = int(integer_arg(args, sizes + 1, "N", expected));
        m_k = int(integer_arg(args, sizes + 2, "K", expected));
        auto it = std::find_if(buffers.begin(), buffers.end(),
                               [&](const wire::Buffer& b) { return b.name == args[0].buffer; });
        if (it == buffers.end() || (it->elem != "f16" && it->elem != "bf16"))
            throw LibraryError(m_name + ": y must be an f16 or bf16 buffer");
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
        if (m_call.has_bias()) {
            // The rotation copies of a small problem move b too: the pointer is set for every launch.
            const void* b = pointer(values, 3);
            KTUNE_CUBLAS(cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
        }
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

    std::int64_t integer_arg(const std::vector<wire::Arg>& args, std::size_t i, const char* what,
                             const std::string& expected) const {
        if (i >= args.size() || (args[i].kind != "i32" && args[i].kind != "i64"))
            throw LibraryError(m_name + ": argument " + std::to_string(i) + " (" + what +
                               ") is not an integer; the op's arguments must be " + expected);
        return args[i].integer;
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
        const cublasLtEpilogue_t epilogue = lt_epilogue(m_call.epilogue);
        KTUNE_CUBLAS(cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
        // b in y's type (cuBLASLt's default for 16-bit outputs, said so that it never changes under us).
        if (m_call.has_bias())
            KTUNE_CUBLAS(
                cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &m_type, sizeof m_type));
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
            throw LibraryError(m_name + ": cuBLASLt's heuristic offers " + std::to_string(returned) +
                               " algorithms for this shape; RANK " + std::to_string(m_algo + 1) +
                               " is not one of them");
        m_heuristic = results[m_algo];
    }

    static cublasLtEpilogue_t lt_epilogue(GemmEpilogue e) {
        switch (e) {
            case GemmEpilogue::bias:
                return CUBLASLT_EPILOGUE_BIAS;
            case GemmEpilogue::gelu_bias:
                return CUBLASLT_EPILOGUE_GELU_BIAS;
            case GemmEpilogue::none:
                break;
        }
        return CUBLASLT_EPILOGUE_DEFAULT;
    }

    std::string m_name;
    GemmCall m_call;
    std::int64_t m_algo;  // -1 for cublasGemmEx, i >= 0 for cuBLASLt's i-th heuristic algorithm
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
    if (launch.library == "cublas_gemm" || launch.library == "cublaslt_gemm_act") {
        GemmCall call;
        try {
            call = gemm_call(launch.library, launch.config);
        } catch (const Error& e) {
            throw LibraryError(e.message());
        }
        return std::make_unique<CublasGemm>(launch.library, call, args, buffers);
    }
    throw LibraryError("library baseline '" + launch.library + "' is listed but this worker cannot call it");
}

}  // namespace ktune::worker
