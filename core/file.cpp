#include "core/file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {
namespace {

// "" when the file was read into `text`, else why not.
std::string read_into(const std::filesystem::path& path, std::uint64_t max_bytes, std::string& text) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec) return ec.message();
    if (fs::is_directory(st)) return "it is a directory";
    if (!fs::is_regular_file(st)) return "it is not a regular file";
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) return ec.message();
    if (size > max_bytes) return fmt::format("it has {} bytes, more than the {} ktune reads", size, max_bytes);
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::strerror(errno);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return "a read error";
    if (text.size() > max_bytes) return fmt::format("it grew past the {} bytes ktune reads", max_bytes);
    return {};
}

}  // namespace

std::string read_file(const std::filesystem::path& path, std::string_view what, std::uint64_t max_bytes) {
    std::string text;
    const std::string why = read_into(path, max_bytes, text);
    if (!why.empty())
        throw Error(ErrorCategory::bad_input, fmt::format("cannot read {}: {}", what, why), path.string());
    return text;
}

std::optional<std::string> try_read_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
    std::string text;
    if (!read_into(path, max_bytes, text).empty()) return std::nullopt;
    return text;
}

}  // namespace ktune
