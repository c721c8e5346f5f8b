#pragma once
// The NVRTC compile service: kernel templates instantiated by name expression, compiled straight to cubin for one
// exact architecture, on a thread pool, behind an on-disk cache. Only this module includes nvrtc.h.
//
// Cache key: a hash of the kernel source and every header it includes with #include "..." (resolved against the kernel
// root, recursively), the name expressions, the options, the architecture and the NVRTC version. An entry is a cubin
// file plus a JSON sidecar with the lowered names and the compiler's resource report, so a cache hit needs no NVRTC.
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/measurement.hpp"

namespace ktune {

struct CompileRequest {
    std::string source_path;                    // relative to the kernel root: "kernels/rmsnorm/rmsnorm_fwd.cuh"
    std::vector<std::string> name_expressions;  // "rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>"
    std::string arch = "sm_90";                 // exact architecture: cubin, never PTX
    std::vector<std::string> extra_options;     // e.g. "-DKTUNE_FOO=1"
};

struct CompiledKernel {
    std::string name_expression;
    std::string lowered_name;  // the mangled symbol to look up in the cubin
    CompileInfo info;          // registers, spills, stack, static shared memory (from ptxas -v)
};

struct CompileResult {
    bool ok = false;
    std::string log;         // NVRTC's log (errors and warnings), also on success
    std::string options;     // the option string used, for error reports
    std::string cache_key;   // hex digest
    std::string cubin_path;  // absolute path of the cubin in the cache (ok only)
    bool cache_hit = false;
    double compile_seconds = 0;           // NVRTC wall time (0 on a cache hit)
    std::vector<CompiledKernel> kernels;  // one per name expression, same order (ok only)
};

struct CompileServiceOptions {
    std::string kernel_root;       // directory that kernel source paths and #include "..." are relative to
    std::string cache_dir;         // on-disk cache; created when missing
    std::string cuda_include_dir;  // for <cuda_fp16.h>, <cuda_bf16.h>; default: the toolkit's include dir
    unsigned threads = 0;          // 0: hardware concurrency
};

class CompileService {
public:
    // include_dirs: explicit include folders (-I), searched after the kernel root for sources and headers. A kernel
    // source or header outside the kernel root and these folders is refused (bad_input), symlinks resolved.
    explicit CompileService(CompileServiceOptions options, std::vector<std::string> include_dirs = {});
    ~CompileService();  // waits for queued work

    // Queues a compilation; never throws for a compile error (the result says ok=false with the log).
    std::shared_future<CompileResult> submit(CompileRequest request);
    CompileResult compile(const CompileRequest& request);  // synchronous

    // The cache key without compiling. Throws Error(bad_input) naming the file when a source or header is missing.
    std::string cache_key(const CompileRequest& request) const;
    // Hash of a source and every header it includes (what KernelInfo::source_hash stores).
    std::string source_hash(const std::string& source_path) const;

    static std::string nvrtc_version();  // "13.0"
    const CompileServiceOptions& options() const { return m_options; }
    const std::vector<std::string>& include_dirs() const { return m_include_dirs; }  // absolute

private:
    struct Impl;
    CompileServiceOptions m_options;
    std::vector<std::string> m_include_dirs;
    std::unique_ptr<Impl> m_impl;
};

// Parses ptxas -v output (as NVRTC logs it with -Xptxas=-v) for the function with this lowered name.
CompileInfo parse_ptxas_info(const std::string& log, const std::string& lowered_name);

// Hex SHA-256 (or another strong 256-bit hash) of a byte string.
std::string hash_hex(const std::string& bytes);

}  // namespace ktune
