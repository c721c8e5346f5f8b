#include "tuner/jit/compile_service.hpp"

#include <nvrtc.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
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

}  // namespace

struct CompileService::Impl {
    fs::path kernel_root;
    fs::path cache_dir;
    std::vector<fs::path> cuda_include_dirs;
    std::vector<fs::path> include_dirs;
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

    CompileResult compile(const CompileRequest& request) const {
        const Prepared p = prepare(request);
        CompileResult result;
        result.options = join(p.options);
        result.cache_key = p.key;
        if (std::optional<detail::CacheEntry> hit = detail::read_cache_entry(cache_dir, p.key)) {
            if (matches(*hit, request)) return from_cache(std::move(result), std::move(*hit));
        }
        return compile_program(request, p, std::move(result));
    }

    // Guards against a hash collision or a hand-edited sidecar: the entry must describe this very request.
    static bool matches(const detail::CacheEntry& entry, const CompileRequest& request) {
        if (entry.kernels.size() != request.name_expressions.size() || entry.arch != request.arch) return false;
        for (std::size_t i = 0; i < entry.kernels.size(); ++i) {
            if (entry.kernels[i].name_expression != request.name_expressions[i]) return false;
        }
        return true;
    }

    CompileResult from_cache(CompileResult result, detail::CacheEntry entry) const {
        result.ok = true;
        result.log = std::move(entry.log);
        result.cubin_path = detail::cubin_path(cache_dir, result.cache_key).string();
        result.cache_hit = true;
        result.compile_seconds = 0;
        result.kernels = std::move(entry.kernels);
        for (CompiledKernel& k : result.kernels) {
            k.info.cache_hit = true;
            k.info.compile_seconds = 0;
        }
        return result;
    }

    CompileResult compile_program(const CompileRequest& request, const Prepared& p, CompileResult result) const {
        // The program is named by its absolute, resolved path so that NVRTC resolves the source's own quoted
        // includes next to it, where collect_sources checked them.
        const std::string program_name = p.files.front().path.string();
        ProgramGuard guard;
        check_nvrtc(
            nvrtcCreateProgram(&guard.program, p.files.front().text.c_str(), program_name.c_str(), 0, nullptr, nullptr),
            "nvrtcCreateProgram(" + request.source_path + ")");
        for (const std::string& name : request.name_expressions) {
            check_nvrtc(nvrtcAddNameExpression(guard.program, name.c_str()), "nvrtcAddNameExpression(" + name + ")");
        }
        std::vector<const char*> argv;
        for (const std::string& o : p.options) argv.push_back(o.c_str());

        const auto start = std::chrono::steady_clock::now();
        const nvrtcResult compiled = nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());
        result.log = program_log(guard.program);
        std::string cubin;
        nvrtcResult status = compiled;
        if (status == NVRTC_SUCCESS) {
            std::size_t size = 0;
            status = nvrtcGetCUBINSize(guard.program, &size);
            if (status == NVRTC_SUCCESS) {
                cubin.resize(size);
                status = nvrtcGetCUBIN(guard.program, cubin.data());
            }
        }
        result.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (status != NVRTC_SUCCESS) {
            // A compilation error explains itself in the log; anything else (a bad option) may leave the log empty.
            if (status != NVRTC_ERROR_COMPILATION || result.log.empty()) append_line(result.log, nvrtc_error(status));
            return result;
        }

        for (const std::string& name : request.name_expressions) {
            const char* lowered = nullptr;
            const nvrtcResult r = nvrtcGetLoweredName(guard.program, name.c_str(), &lowered);
            if (r != NVRTC_SUCCESS || lowered == nullptr) {
                append_line(result.log, "no lowered name for \"" + name + "\": " + nvrtc_error(r));
                result.kernels.clear();
                return result;
            }
            CompiledKernel kernel{name, lowered, parse_ptxas_info(result.log, lowered)};
            kernel.info.compile_seconds = result.compile_seconds;
            result.kernels.push_back(std::move(kernel));
        }

        detail::CacheEntry entry;
        entry.key = p.key;
        entry.arch = request.arch;
        entry.nvrtc_version = nvrtc_version();
        entry.source_path = request.source_path;
        entry.options = result.options;
        entry.log = result.log;
        entry.compile_seconds = result.compile_seconds;
        entry.kernels = result.kernels;
        detail::write_cache_entry(cache_dir, entry, cubin);
        result.ok = true;
        result.cubin_path = detail::cubin_path(cache_dir, p.key).string();
        return result;
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
    m_impl = std::make_unique<Impl>(m_options.threads);
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
    // The job holds the Impl, not the service: ~unique_ptr may clear m_impl while the pool drains.
    Impl* impl = m_impl.get();
    return impl->pool.submit([impl, request = std::move(request)] { return impl->compile(request); });
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
