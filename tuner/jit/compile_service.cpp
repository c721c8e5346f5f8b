#include "tuner/jit/compile_service.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <list>
#include <mutex>
#include <optional>
#include <system_error>

#include "core/error.hpp"
#include "ktune_build_config.hpp"  // KTUNE_CUDA_INCLUDE_DIR
#include "tuner/jit/cache_entry.hpp"
#include "tuner/jit/include_walk.hpp"
#include "tuner/jit/sha256.hpp"
#include "tuner/jit/thread_pool.hpp"

namespace ktune {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_where = "jit";

// Splits a CMake-style list ("a;b"): CUDAToolkit_INCLUDE_DIRS may name several folders (the toolkit and CCCL).
std::vector<fs::path> split_dirs(const std::string& dirs) {
    std::vector<fs::path> result;
    std::size_t begin = 0;
    while (begin <= dirs.size()) {
        std::size_t end = dirs.find(';', begin);
        if (end == std::string::npos) end = dirs.size();
        if (end > begin) result.emplace_back(dirs.substr(begin, end - begin));
        begin = end + 1;
    }
    return result;
}

// Hash input as tagged, length-prefixed fields: no two different requests serialise to the same bytes.
void add_field(detail::Sha256& sha, std::string_view tag, std::string_view value) {
    sha.update(tag);
    sha.update(" " + std::to_string(value.size()) + "\n");
    sha.update(value);
    sha.update("\n");
}

void add_sources(detail::Sha256& sha, const std::vector<detail::SourceFile>& files) {
    for (const detail::SourceFile& f : files) {
        add_field(sha, "file", f.name);
        add_field(sha, "text", f.text);
    }
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) {
        if (!out.empty()) out += ' ';
        out += s;
    }
    return out;
}

fs::path without_trailing_slash(const fs::path& p) {
    fs::path n = p.lexically_normal();
    return n.has_filename() || !n.has_parent_path() || n == n.root_path() ? n : n.parent_path();
}

void check_arch(const std::string& arch) {
    // A real architecture: nvrtcGetCUBIN needs one, and a compute_XX target would silently produce PTX only.
    std::size_t i = 3;
    while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) ++i;
    const bool digits = i > 3;
    if (i < arch.size() && std::islower(static_cast<unsigned char>(arch[i]))) ++i;  // sm_90a, sm_100f
    if (arch.rfind("sm_", 0) != 0 || !digits || i != arch.size()) {
        throw Error(ErrorCategory::bad_input, "architecture \"" + arch + "\" is not a real one like sm_90", "arch");
    }
}

// Destroys the program on every path out of compile_program.
struct ProgramGuard {
    nvrtcProgram program = nullptr;
    ~ProgramGuard() {
        if (program != nullptr) nvrtcDestroyProgram(&program);
    }
};

void check_nvrtc(nvrtcResult result, const std::string& what) {
    if (result != NVRTC_SUCCESS) {
        throw Error(ErrorCategory::compile, what + ": " + nvrtcGetErrorString(result), k_where);
    }
}

constexpr unsigned k_default_max_batch = 8;

unsigned max_batch_from_environment() {
    const char* env = std::getenv("KTUNE_COMPILE_BATCH");
    if (env == nullptr || *env == '\0') return k_default_max_batch;
    char* end = nullptr;
    const unsigned long n = std::strtoul(env, &end, 10);
    if (*end != '\0' || n == 0 || n > 1024) {
        throw Error(ErrorCategory::bad_input,
                    std::string("KTUNE_COMPILE_BATCH=") + env + " is not a number of requests from 1 to 1024",
                    "KTUNE_COMPILE_BATCH");
    }
    return static_cast<unsigned>(n);
}

// Requests that one NVRTC program can serve together: one name expression each, the same source, arch and options.
bool batchable(const CompileRequest& r) { return r.name_expressions.size() == 1; }
bool same_program(const CompileRequest& a, const CompileRequest& b) {
    return batchable(a) && batchable(b) && a.source_path == b.source_path && a.arch == b.arch &&
           a.extra_options == b.extra_options;
}

bool same_sources(const std::vector<detail::SourceFile>& a, const std::vector<detail::SourceFile>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const auto& x, const auto& y) { return x.name == y.name && x.text == y.text; });
}

}  // namespace

struct CompileService::Impl {
    fs::path kernel_root;
    fs::path cache_dir;
    std::vector<fs::path> cuda_include_dirs;
    std::vector<fs::path> include_dirs;
    unsigned max_batch = k_default_max_batch;

    // A submitted request not yet taken by a pool thread.
    struct Pending {
        CompileRequest request;
        std::promise<CompileResult> promise;
        bool done = false;  // promise fulfilled
    };
    std::mutex pending_mutex;
    std::list<Pending> pending;  // oldest first

    std::atomic<std::uint64_t> programs{0}, batched_programs{0}, batched_requests{0}, batch_fallbacks{0};

    // Last: destroyed first, so its drain runs while the queue above still exists.
    detail::ThreadPool pool;

    explicit Impl(unsigned threads) : pool(threads) {}

    // What one request turns into before NVRTC or the cache is touched.
    struct Prepared {
        std::vector<detail::SourceFile> files;  // the source first
        std::vector<std::string> options;
        std::string key;
    };

    Prepared prepare(const CompileRequest& request) const {
        check_arch(request.arch);
        Prepared p;
        p.files = detail::collect_sources(kernel_root, request.source_path, cuda_include_dirs, include_dirs);
        p.options = {"-arch=" + request.arch,    "-std=c++17", "-Xptxas=-v", "-lineinfo", "-DKTUNE_NVRTC=1",
                     "-I" + kernel_root.string()};
        for (const fs::path& dir : include_dirs) p.options.push_back("-I" + dir.string());
        for (const fs::path& dir : cuda_include_dirs) p.options.push_back("-I" + dir.string());
        p.options.insert(p.options.end(), request.extra_options.begin(), request.extra_options.end());

        detail::Sha256 sha;
        add_field(sha, "format", detail::k_cache_format);
        add_field(sha, "nvrtc", nvrtc_version());
        add_field(sha, "arch", request.arch);
        for (const std::string& o : p.options) add_field(sha, "option", o);
        for (const std::string& n : request.name_expressions) add_field(sha, "name", n);
        add_sources(sha, p.files);
        p.key = detail::to_hex(sha.finish());
        return p;
    }

    static CompileResult new_result(const Prepared& p) {
        CompileResult result;
        result.options = join(p.options);
        result.cache_key = p.key;
        return result;
    }

    CompileResult compile(const CompileRequest& request) {
        const Prepared p = prepare(request);
        CompileResult result = new_result(p);
        if (std::optional<CompileResult> hit = from_cache(result, request)) return std::move(*hit);
        return compile_program(request, p, std::move(result));
    }

    // ---- the queue behind submit() ----

    std::shared_future<CompileResult> submit(CompileRequest request) {
        std::shared_future<CompileResult> future;
        {
            std::lock_guard lock(pending_mutex);
            pending.push_back(Pending{std::move(request), {}, false});
            future = pending.back().promise.get_future().share();
        }
        // One pool job per request: each takes at least one waiting request, or none when earlier jobs batched them
        // all, so the pool's drain on destruction also empties this queue.
        pool.submit([this] { compile_next(); });
        return future;
    }

    void compile_next() {
        std::vector<Pending> batch = take_batch();
        try {
            if (batch.size() == 1)
                fulfil(batch.front(), [&] { return compile(batch.front().request); });
            else if (batch.size() > 1)
                compile_batch(batch);
        } catch (...) {
            for (Pending& m : batch) fail(m, std::current_exception());
        }
    }

    // The oldest waiting request and, when more wait than there are threads, others that can share its program.
    std::vector<Pending> take_batch() {
        std::lock_guard lock(pending_mutex);
        std::vector<Pending> batch;
        if (pending.empty()) return batch;
        const std::size_t limit = batch_limit(pending.size(), pool.size(), max_batch);
        batch.push_back(std::move(pending.front()));
        pending.pop_front();
        for (auto it = pending.begin(); it != pending.end() && batch.size() < limit;) {
            if (same_program(batch.front().request, it->request)) {
                batch.push_back(std::move(*it));
                it = pending.erase(it);
            } else {
                ++it;
            }
        }
        return batch;
    }

    struct Miss {
        Pending* pending;
        Prepared prepared;
        CompileResult result;  // options and key filled in
    };

    void compile_batch(std::vector<Pending>& batch) {
        // Cache hits and bad requests are answered now; the misses that read the same source text share a program.
        std::vector<Miss> together, alone;
        for (Pending& m : batch) {
            try {
                Prepared p = prepare(m.request);
                CompileResult result = new_result(p);
                if (std::optional<CompileResult> hit = from_cache(result, m.request)) {
                    fulfil(m, [&] { return std::move(*hit); });
                    continue;
                }
                // A source edited while the batch was read: its key describes other text than the program's.
                const bool joins = together.empty() || same_sources(together.front().prepared.files, p.files);
                (joins ? together : alone).push_back(Miss{&m, std::move(p), std::move(result)});
            } catch (...) {
                fail(m, std::current_exception());
            }
        }
        if (together.size() == 1) alone.push_back(std::move(together.front()));
        if (together.size() > 1) {
            std::optional<std::vector<CompileResult>> results;
            try {
                results = compile_together(together);
            } catch (const std::exception&) {
                // An NVRTC call refused or the cache not writable: each member below meets its own error.
            }
            if (results) {
                for (std::size_t i = 0; i < together.size(); ++i)
                    fulfil(*together[i].pending, [&] { return std::move((*results)[i]); });
            } else {
                ++batch_fallbacks;
                std::move(together.begin(), together.end(), std::back_inserter(alone));
            }
        }
        for (Miss& m : alone) {
            fulfil(*m.pending, [&] { return compile_program(m.pending->request, m.prepared, std::move(m.result)); });
        }
    }

    // Every member's name expression in one program; nothing when it does not compile (the caller then compiles each
    // alone, so a failing member reports its own log).
    std::optional<std::vector<CompileResult>> compile_together(std::vector<Miss>& members) {
        std::vector<std::string> names;
        for (const Miss& m : members) names.push_back(m.pending->request.name_expressions.front());
        const Miss& lead = members.front();
        const Program program = run_nvrtc(lead.pending->request.source_path, lead.prepared, names);
        if (!program.ok) return std::nullopt;

        const double share = program.seconds / static_cast<double>(members.size());
        std::string log = program.log;
        append_line(log, "ktune: compiled in one NVRTC program with " + std::to_string(members.size()) +
                             " name expressions of this source; compile_seconds is an equal share");
        std::vector<CompileResult> results;
        std::optional<fs::path> combined_cubin;  // the first member's, which the others link to
        for (std::size_t i = 0; i < members.size(); ++i) {
            CompileResult r = std::move(members[i].result);
            r.log = log;
            r.compile_seconds = share;
            r.kernels = {compiled_kernel(names[i], program.lowered[i], program.log, share)};
            store(r, members[i].pending->request, program.cubin, combined_cubin);
            if (!combined_cubin) combined_cubin = r.cubin_path;
            results.push_back(std::move(r));
        }
        ++batched_programs;
        batched_requests += members.size();
        return results;
    }

    template <typename MakeResult>
    static void fulfil(Pending& m, MakeResult make) {
        if (m.done) return;
        try {
            m.promise.set_value(make());
        } catch (...) {
            m.promise.set_exception(std::current_exception());
        }
        m.done = true;
    }

    static void fail(Pending& m, std::exception_ptr error) {
        if (m.done) return;
        m.promise.set_exception(std::move(error));
        m.done = true;
    }

    // ---- the cache and NVRTC ----

    // The cached result for this request, if its entry exists and describes it.
    std::optional<CompileResult> from_cache(const CompileResult& fresh, const CompileRequest& request) const {
        std::optional<detail::CacheEntry> entry = detail::read_cache_entry(cache_dir, fresh.cache_key);
        if (!entry || !matches(*entry, request)) return std::nullopt;
        CompileResult result = fresh;
        result.ok = true;
        result.log = std::move(entry->log);
        result.cubin_path = detail::cubin_path(cache_dir, result.cache_key).string();
        result.cache_hit = true;
        result.compile_seconds = 0;
        result.kernels = std::move(entry->kernels);
        for (CompiledKernel& k : result.kernels) {
            k.info.cache_hit = true;
            k.info.compile_seconds = 0;
        }
        return result;
    }

    // Guards against a hash collision or a hand-edited sidecar: the entry must describe this very request.
    static bool matches(const detail::CacheEntry& entry, const CompileRequest& request) {
        if (entry.kernels.size() != request.name_expressions.size() || entry.arch != request.arch) return false;
        for (std::size_t i = 0; i < entry.kernels.size(); ++i) {
            if (entry.kernels[i].name_expression != request.name_expressions[i]) return false;
        }
        return true;
    }

    CompileResult compile_program(const CompileRequest& request, const Prepared& p, CompileResult result) {
        const Program program = run_nvrtc(request.source_path, p, request.name_expressions);
        result.log = program.log;
        result.compile_seconds = program.seconds;
        if (!program.ok) return result;
        for (std::size_t i = 0; i < request.name_expressions.size(); ++i) {
            result.kernels.push_back(
                compiled_kernel(request.name_expressions[i], program.lowered[i], program.log, program.seconds));
        }
        store(result, request, program.cubin, std::nullopt);
        return result;
    }

    static CompiledKernel compiled_kernel(const std::string& name, const std::string& lowered, const std::string& log,
                                          double seconds) {
        CompiledKernel kernel{name, lowered, parse_ptxas_info(log, lowered)};
        kernel.info.compile_seconds = seconds;
        return kernel;
    }

    // Writes the entry of a compiled result (its cubin a link to same_cubin when given) and marks the result ok.
    void store(CompileResult& result, const CompileRequest& request, const std::string& cubin,
               const std::optional<fs::path>& same_cubin) const {
        detail::CacheEntry entry;
        entry.key = result.cache_key;
        entry.arch = request.arch;
        entry.nvrtc_version = nvrtc_version();
        entry.source_path = request.source_path;
        entry.options = result.options;
        entry.log = result.log;
        entry.compile_seconds = result.compile_seconds;
        entry.kernels = result.kernels;
        if (same_cubin)
            detail::write_cache_entry(cache_dir, entry, cubin, *same_cubin);
        else
            detail::write_cache_entry(cache_dir, entry, cubin);
        result.ok = true;
        result.cubin_path = detail::cubin_path(cache_dir, result.cache_key).string();
    }

    // One NVRTC compilation of a source with these name expressions.
    struct Program {
        bool ok = false;  // compiled, with a cubin and every lowered name
        std::string log;  // NVRTC's, plus a line for an error the log would not explain
        std::string cubin;
        double seconds = 0;
        std::vector<std::string> lowered;  // per name expression
    };

    Program run_nvrtc(const std::string& source_path, const Prepared& p, const std::vector<std::string>& names) {
        ++programs;
        // The program is named by its absolute, resolved path so that NVRTC resolves the source's own quoted
        // includes next to it, where collect_sources checked them.
        const std::string program_name = p.files.front().path.string();
        ProgramGuard guard;
        check_nvrtc(
            nvrtcCreateProgram(&guard.program, p.files.front().text.c_str(), program_name.c_str(), 0, nullptr, nullptr),
            "nvrtcCreateProgram(" + source_path + ")");
        for (const std::string& name : names) {
            check_nvrtc(nvrtcAddNameExpression(guard.program, name.c_str()), "nvrtcAddNameExpression(" + name + ")");
        }
        std::vector<const char*> argv;
        for (const std::string& o : p.options) argv.push_back(o.c_str());

        Program program;
        const auto start = std::chrono::steady_clock::now();
        const nvrtcResult compiled = nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());
        program.log = program_log(guard.program);
        nvrtcResult status = compiled;
        if (status == NVRTC_SUCCESS) {
            std::size_t size = 0;
            status = nvrtcGetCUBINSize(guard.program, &size);
            if (status == NVRTC_SUCCESS) {
                program.cubin.resize(size);
                status = nvrtcGetCUBIN(guard.program, program.cubin.data());
            }
        }
        program.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (status != NVRTC_SUCCESS) {
            // A compilation error explains itself in the log; anything else (a bad option) may leave the log empty.
            if (status != NVRTC_ERROR_COMPILATION || program.log.empty()) append_line(program.log, nvrtc_error(status));
            return program;
        }
        for (const std::string& name : names) {
            const char* lowered = nullptr;
            const nvrtcResult r = nvrtcGetLoweredName(guard.program, name.c_str(), &lowered);
            if (r != NVRTC_SUCCESS || lowered == nullptr) {
                append_line(program.log, "no lowered name for \"" + name + "\": " + nvrtc_error(r));
                return program;
            }
            program.lowered.emplace_back(lowered);
        }
        program.ok = true;
        return program;
    }

    static std::string program_log(nvrtcProgram program) {
        std::size_t size = 0;
        if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
        std::string log(size, '\0');
        if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
        while (!log.empty() && log.back() == '\0') log.pop_back();
        return log;
    }

    static std::string nvrtc_error(nvrtcResult r) { return std::string("nvrtc: ") + nvrtcGetErrorString(r); }

    static void append_line(std::string& log, const std::string& line) {
        if (!log.empty() && log.back() != '\n') log += '\n';
        log += line;
    }
};

CompileService::CompileService(CompileServiceOptions options, std::vector<std::string> include_dirs)
    : m_options(std::move(options)), m_include_dirs(std::move(include_dirs)) {
    // Resolve every default once, so options() reports what is actually used.
    if (m_options.cache_dir.empty()) {
        throw Error(ErrorCategory::bad_input, "no cache directory given for the NVRTC compile service", "cache_dir");
    }
    if (m_options.cuda_include_dir.empty()) {
        const char* env = std::getenv("KTUNE_CUDA_INCLUDE");
        m_options.cuda_include_dir = env != nullptr && *env != '\0' ? env : KTUNE_CUDA_INCLUDE_DIR;
    }
    const fs::path root = fs::absolute(m_options.kernel_root.empty() ? fs::path(".") : fs::path(m_options.kernel_root));
    const fs::path cache = fs::absolute(m_options.cache_dir);
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
        throw Error(ErrorCategory::bad_input, "kernel root is not a directory: " + root.string(), "kernel_root");
    }
    fs::create_directories(cache, ec);
    if (ec || !fs::is_directory(cache)) {
        throw Error(ErrorCategory::bad_input,
                    "cannot create the compile cache directory " + cache.string() + ": " + ec.message(), "cache_dir");
    }
    m_options.kernel_root = without_trailing_slash(root).string();
    m_options.cache_dir = without_trailing_slash(cache).string();

    // NVRTC 12.9+ keeps its own cache of compiled programs (~/.nv/ComputeCache), and a program it serves from there
    // never runs ptxas, so its log lacks the "-Xptxas=-v" lines registers and spills are read from: on the H100 host
    // (NVRTC 13.0) every tuning after the first read 0 registers. ktune's own cache keeps the cubin with its log, so
    // NVRTC's is turned off for this process, before the pool's threads start (the worker, which loads cubins and
    // JIT-compiles nothing, inherits it).
    ::setenv("CUDA_CACHE_DISABLE", "1", 1);
    if (m_options.max_batch == 0) m_options.max_batch = max_batch_from_environment();
    m_impl = std::make_unique<Impl>(m_options.threads);
    m_impl->max_batch = m_options.max_batch;
    m_impl->kernel_root = m_options.kernel_root;
    m_impl->cache_dir = m_options.cache_dir;
    m_impl->cuda_include_dirs = split_dirs(m_options.cuda_include_dir);
    for (std::string& dir : m_include_dirs) {
        dir = without_trailing_slash(fs::absolute(dir)).string();
        m_impl->include_dirs.emplace_back(dir);
    }
    m_options.threads = m_impl->pool.size();
}

CompileService::~CompileService() = default;  // the pool drains its queue before the rest of Impl goes

std::shared_future<CompileResult> CompileService::submit(CompileRequest request) {
    // The jobs hold the Impl, not the service: ~unique_ptr may clear m_impl while the pool drains.
    return m_impl->submit(std::move(request));
}

std::size_t CompileService::batch_limit(std::size_t waiting, unsigned threads, unsigned max_batch) {
    if (threads == 0 || waiting <= threads) return 1;
    return std::clamp<std::size_t>((waiting + threads - 1) / threads, 1, std::max(max_batch, 1u));
}

CompileStats CompileService::stats() const {
    return {m_impl->programs.load(), m_impl->batched_programs.load(), m_impl->batched_requests.load(),
            m_impl->batch_fallbacks.load()};
}

CompileResult CompileService::compile(const CompileRequest& request) { return m_impl->compile(request); }

std::string CompileService::cache_key(const CompileRequest& request) const { return m_impl->prepare(request).key; }

std::string CompileService::source_hash(const std::string& source_path) const {
    detail::Sha256 sha;
    add_field(sha, "format", "ktune-source-v1");
    add_sources(sha, detail::collect_sources(m_impl->kernel_root, source_path, m_impl->cuda_include_dirs,
                                             m_impl->include_dirs));
    return detail::to_hex(sha.finish());
}

std::string CompileService::nvrtc_version() {
    int major = 0, minor = 0;
    check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace ktune
