#include "tuner/jit/cache_entry.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file.hpp"
#include "tuner/jit/sha256.hpp"

namespace ktune::detail {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::json;

const std::string* get_string(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

bool get_int(const Json& object, const char* key, int& out) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return false;
    const auto v = it->get<std::int64_t>();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) return false;
    out = static_cast<int>(v);
    return true;
}

std::string sha256_hex(std::string_view bytes) {
    Sha256 sha;
    sha.update(bytes);
    return to_hex(sha.finish());
}

[[noreturn]] void throw_io(const std::string& what, const fs::path& path, int err) {
    throw Error(ErrorCategory::store, what + ": " + std::strerror(err), path.string());
}

// Unique per process and per call: two threads or two ktune processes writing the same entry never share a temporary,
// and the last rename wins.
fs::path temporary_path(const fs::path& path) {
    static std::atomic<unsigned long> counter{0};
    return path.parent_path() / fmt::format(".{}.tmp-{}-{}-{}", path.filename().string(), ::getpid(),
                                            std::hash<std::thread::id>{}(std::this_thread::get_id()), counter++);
}

void rename_into_place(const fs::path& temp, const fs::path& path) {
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(temp.c_str());
        throw_io("cannot rename a cache file into place", path, err);
    }
}

void write_sidecar(const fs::path& cache_dir, const CacheEntry& entry, const std::string& cubin) {
    CacheEntry recorded = entry;
    recorded.cubin_bytes = cubin.size();
    recorded.cubin_sha256 = sha256_hex(cubin);
    write_file_atomically(sidecar_path(cache_dir, entry.key), entry_to_json(recorded));
}

}  // namespace

fs::path cubin_path(const fs::path& cache_dir, const std::string& key) { return cache_dir / (key + ".cubin"); }
fs::path sidecar_path(const fs::path& cache_dir, const std::string& key) { return cache_dir / (key + ".json"); }

void write_file_atomically(const fs::path& path, const std::string& bytes) {
    const fs::path temp = temporary_path(path);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw_io("cannot create a cache file", temp, errno);
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(temp.c_str());
            throw_io("cannot write a cache file", temp, err);
        }
        written += static_cast<std::size_t>(n);
    }
    // fsync before rename: after a power loss the entry is either complete or absent, never empty.
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const int err = errno;
        ::unlink(temp.c_str());
        throw_io("cannot flush a cache file", temp, err);
    }
    rename_into_place(temp, path);
}

std::string entry_to_json(const CacheEntry& entry) {
    Json kernels = Json::array();
    for (const CompiledKernel& k : entry.kernels)
        kernels.push_back({{"name_expression", k.name_expression},
                           {"lowered_name", k.lowered_name},
                           {"registers", k.info.registers},
                           {"spill_store_bytes", k.info.spill_store_bytes},
                           {"spill_load_bytes", k.info.spill_load_bytes},
                           {"stack_bytes", k.info.stack_bytes},
                           {"static_shared_bytes", k.info.static_shared_bytes}});
    const Json j = {{"format", k_cache_format},
                    {"key", entry.key},
                    {"arch", entry.arch},
                    {"nvrtc_version", entry.nvrtc_version},
                    {"source_path", entry.source_path},
                    {"options", entry.options},
                    {"compile_seconds", entry.compile_seconds},
                    {"cubin_bytes", entry.cubin_bytes},
                    {"cubin_sha256", entry.cubin_sha256},
                    {"kernels", std::move(kernels)},
                    {"log", entry.log}};
    // The log is NVRTC's text and may hold bytes that are not UTF-8: replaced, not a reason to lose the entry.
    return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::optional<CacheEntry> entry_from_json(const std::string& json) {
    const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!root.is_object()) return std::nullopt;  // a parse error is "discarded", not an object
    const std::string* format = get_string(root, "format");
    if (format == nullptr || *format != k_cache_format) return std::nullopt;

    CacheEntry entry;
    const std::pair<std::string*, const char*> strings[] = {
        {&entry.key, "key"},
        {&entry.arch, "arch"},
        {&entry.nvrtc_version, "nvrtc_version"},
        {&entry.source_path, "source_path"},
        {&entry.options, "options"},
        {&entry.log, "log"},
        {&entry.cubin_sha256, "cubin_sha256"},
    };
    for (const auto& [field, name] : strings) {
        const std::string* s = get_string(root, name);
        if (s == nullptr) return std::nullopt;
        *field = *s;
    }
    if (const auto it = root.find("compile_seconds"); it != root.end() && it->is_number())
        entry.compile_seconds = it->get<double>();
    const auto bytes = root.find("cubin_bytes");
    if (bytes == root.end() || !bytes->is_number_unsigned()) return std::nullopt;
    entry.cubin_bytes = bytes->get<std::uint64_t>();
    const auto kernels = root.find("kernels");
    if (kernels == root.end() || !kernels->is_array()) return std::nullopt;
    for (const Json& k : *kernels) {
        if (!k.is_object()) return std::nullopt;
        CompiledKernel kernel;
        const std::string* expr = get_string(k, "name_expression");
        const std::string* lowered = get_string(k, "lowered_name");
        if (expr == nullptr || lowered == nullptr) return std::nullopt;
        kernel.name_expression = *expr;
        kernel.lowered_name = *lowered;
        if (!get_int(k, "registers", kernel.info.registers) ||
            !get_int(k, "spill_store_bytes", kernel.info.spill_store_bytes) ||
            !get_int(k, "spill_load_bytes", kernel.info.spill_load_bytes) ||
            !get_int(k, "stack_bytes", kernel.info.stack_bytes) ||
            !get_int(k, "static_shared_bytes", kernel.info.static_shared_bytes)) {
            return std::nullopt;
        }
        entry.kernels.push_back(std::move(kernel));
    }
    return entry;
}

void write_cache_entry(const fs::path& cache_dir, const CacheEntry& entry, const std::string& cubin) {
    write_file_atomically(cubin_path(cache_dir, entry.key), cubin);
    write_sidecar(cache_dir, entry, cubin);
}

void write_cache_entry(const fs::path& cache_dir, const CacheEntry& entry, const std::string& cubin,
                       const fs::path& same_cubin) {
    const fs::path path = cubin_path(cache_dir, entry.key);
    const fs::path temp = temporary_path(path);
    if (::link(same_cubin.c_str(), temp.c_str()) == 0)
        rename_into_place(temp, path);
    else
        write_file_atomically(path, cubin);
    write_sidecar(cache_dir, entry, cubin);
}

std::optional<CacheEntry> read_cache_entry(const fs::path& cache_dir, const std::string& key) {
    const std::optional<std::string> json = try_read_file(sidecar_path(cache_dir, key));
    if (!json) return std::nullopt;
    std::optional<CacheEntry> entry = entry_from_json(*json);
    if (!entry || entry->key != key) return std::nullopt;
    // The cubin must be the very bytes the sidecar describes: a truncated or replaced file is a miss, never served.
    const std::optional<std::string> cubin = try_read_file(cubin_path(cache_dir, key));
    if (!cubin || cubin->size() != entry->cubin_bytes ||
        cubin->compare(0, 4,
                       "\x7f"
                       "ELF") != 0 ||
        sha256_hex(*cubin) != entry->cubin_sha256)
        return std::nullopt;
    return entry;
}

}  // namespace ktune::detail
