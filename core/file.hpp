#pragma once
// Reading whole files: the one place that does, so every reader has the same size bound and the same messages. The
// bound keeps a hostile or mistaken input (a 50 MB one-line "YAML", /dev/zero) from exhausting memory.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ktune {

inline constexpr std::uint64_t k_max_input_file_bytes = 64ull << 20;  // YAML, JSON, sources: far above any real one

// The file's bytes. Throws Error(bad_input, "cannot read <what>: <reason>", path) when it cannot be opened or read,
// is not a regular file, or is larger than max_bytes. The message never quotes the file's contents.
std::string read_file(const std::filesystem::path& path, std::string_view what,
                      std::uint64_t max_bytes = k_max_input_file_bytes);
// The same, as nullopt instead of an exception: for caches and probes where a missing file is an ordinary answer.
std::optional<std::string> try_read_file(const std::filesystem::path& path,
                                         std::uint64_t max_bytes = k_max_input_file_bytes);

}  // namespace ktune
