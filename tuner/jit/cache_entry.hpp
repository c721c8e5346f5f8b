#pragma once
// One entry of the on-disk compile cache: <key>.cubin plus the <key>.json sidecar (lowered names, the resource report
// per kernel, the log, the options), so a hit needs no NVRTC. Files are written under a temporary name in the same
// folder and renamed into place, the sidecar last: a crash or a concurrent ktune process never leaves a torn entry,
// and a sidecar that is present means its cubin is complete.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tuner/jit/compile_service.hpp"

namespace ktune::detail {

// v2: entries written with NVRTC's own cache on could hold 0 registers (CompileService's constructor says why).
// v3: the sidecar records the cubin's size and SHA-256, so a truncated or replaced cubin is recompiled.
inline constexpr const char* k_cache_format = "ktune-jit-cache-v3";

struct CacheEntry {
    std::string key;
    std::string arch;
    std::string nvrtc_version;
    std::string source_path;
    std::string options;
    std::string log;
    double compile_seconds = 0;     // what the original compilation took, for the record
    std::uint64_t cubin_bytes = 0;  // set by write_cache_entry from the cubin it writes
    std::string cubin_sha256;       // hex
    std::vector<CompiledKernel> kernels;
};

std::filesystem::path cubin_path(const std::filesystem::path& cache_dir, const std::string& key);
std::filesystem::path sidecar_path(const std::filesystem::path& cache_dir, const std::string& key);

// Writes the cubin, then the sidecar. Throws Error(store) naming the path when the cache cannot be written.
void write_cache_entry(const std::filesystem::path& cache_dir, const CacheEntry& entry, const std::string& cubin);
// The same, with the cubin a hard link to `same_cubin`, a file that holds these very bytes (the entry of another
// request compiled in the same program); a copy where the file system refuses the link. The sidecar records the bytes
// given, so if `same_cubin` was replaced meanwhile the entry reads as a miss, never as another kernel's cubin.
void write_cache_entry(const std::filesystem::path& cache_dir, const CacheEntry& entry, const std::string& cubin,
                       const std::filesystem::path& same_cubin);

// The entry for this key, or nothing when it is absent, unreadable, of another format, or its cubin is missing, not an
// ELF file, or not the size and SHA-256 the sidecar records: any of those is a miss, and the recompilation overwrites
// it.
std::optional<CacheEntry> read_cache_entry(const std::filesystem::path& cache_dir, const std::string& key);

// Writes bytes to path through a temporary file in the same folder and a rename. Throws Error(store).
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

// The JSON text of an entry, and back (nothing when the text is not a valid entry).
std::string entry_to_json(const CacheEntry& entry);
std::optional<CacheEntry> entry_from_json(const std::string& json);

}  // namespace ktune::detail
