#pragma once
// The NVRTC compile service: kernel templates instantiated by name expression, compiled straight to cubin for one
// exact architecture, on a thread pool, behind an on-disk cache. Only this module includes nvrtc.h.
//
// Cache key: a hash of the kernel source and every header it includes with #include "..." (resolved against the kernel
// root, recursively), the name expressions, the options, the architecture and the NVRTC version. An entry is a cubin
// file plus a JSON sidecar with the lowered names and the compiler's resource report, so a cache hit needs no NVRTC.
//
// Batching (submit() only): a cold tuning is bound by NVRTC, which parses a source's headers once per program. When
// more requests wait than the pool has threads, a thread takes the oldest and up to batch_limit() - 1 other waiting
// requests for the same source, architecture and options (each of one name expression) and compiles the cache misses
// among them as ONE program. Each request still gets its own result and its own cache entry under its own key (the key
// is defined as above, whatever the batch): a sidecar naming only its kernel, and a cubin that is a hard link to (or a
// copy of) the combined one, so it also holds the batch's other kernels. Its compile_seconds (and its kernel's) is its
// share of the program's time (whole / kernels), so that summed over a run they still add up to the NVRTC time. Its log
// is the program's log (every kernel's ptxas lines) plus a last line naming the batch. When the combined program fails
// (one member's static_assert, a resource error...), each member is compiled alone, so a failure reports only its own
// log and never fails another request.
// Each kernel's machine code is the same as when compiled alone (byte-identical .text over the softmax, rmsnorm and
// gemm_act spaces); what a program shares is the front end (its headers parsed once), 12-21 % of these kernels' compile
// time. A larger cap saved no more (4, 8 and 16 alike, 32 worse) and leaves a longer last batch on one thread.
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
    unsigned max_batch = 0;        // most requests in one program; 0: $KTUNE_COMPILE_BATCH or 8; 1: no batching
};

// What the service has compiled since it started (for tests and reports; cache hits count nowhere).
struct CompileStats {
    std::uint64_t programs = 0;          // NVRTC programs compiled, alone or batched
    std::uint64_t batched_programs = 0;  // programs that held several requests (and compiled)
    std::uint64_t batched_requests = 0;  // requests served by those programs
    std::uint64_t batch_fallbacks = 0;   // combined programs that failed, their members then compiled one by one
};

class CompileService {
public:
    // include_dirs: explicit include folders (-I), searched after the kernel root for sources and headers. A kernel
    // source or header outside the kernel root and these folders is refused (bad_input), symlinks resolved.
    explicit CompileService(CompileServiceOptions options, std::vector<std::string> include_dirs = {});
    ~CompileService();  // waits for queued work

    // Queues a compilation; never throws for a compile error (the result says ok=false with the log). May be compiled
    // in one program with other waiting requests (above); what the future holds is the same either way.
    std::shared_future<CompileResult> submit(CompileRequest request);
    CompileResult compile(const CompileRequest& request);  // synchronous, never batched

    // How many waiting requests one thread takes into a program, given how many wait: none batched while every thread
    // has one (batching delays a result), then enough that the threads share the backlog, up to max_batch.
    static std::size_t batch_limit(std::size_t waiting, unsigned threads, unsigned max_batch);
    CompileStats stats() const;

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
