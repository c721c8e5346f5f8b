#include "tuner/session/environment.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <algorithm>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "ktune_build_config.hpp"  // KTUNE_SOURCE_ROOT, KTUNE_VERSION, KTUNE_CUDA_VERSION

namespace fs = std::filesystem;

namespace ktune {
namespace {

bool is_root(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p / "kernels", ec) && fs::is_directory(p / "search_spaces", ec);
}

std::string run_command(const std::string& cmd) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) return {};
    std::string out;
    std::array<char, 256> buf{};
    while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

}  // namespace

std::string resolve_root(const std::string& explicit_root) {
    if (!explicit_root.empty()) {
        if (!is_root(explicit_root))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} holds no kernels/ and search_spaces/ folders", explicit_root), "--root");
        return fs::absolute(explicit_root).lexically_normal().string();
    }
    if (const char* env = std::getenv("KTUNE_ROOT"); env && *env) {
        if (!is_root(env))
            throw Error(ErrorCategory::bad_input, fmt::format("{} holds no kernels/ and search_spaces/ folders", env),
                        "KTUNE_ROOT");
        return fs::absolute(env).lexically_normal().string();
    }
    std::error_code ec;
    for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
        if (is_root(p)) return p.string();
        if (p == p.parent_path()) break;
    }
    return KTUNE_SOURCE_ROOT;
}

std::string default_db_path(const std::string& root) {
    if (const char* env = std::getenv("KTUNE_DB"); env && *env) return env;
    return (fs::path(root) / "results" / "ktune.db").string();
}

std::string default_cache_dir() {
    if (const char* env = std::getenv("KTUNE_CACHE_DIR"); env && *env) return env;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "ktune").string();
    if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".cache" / "ktune").string();
    return (fs::temp_directory_path() / "ktune-cache").string();
}

std::string resolve_space_path(const std::string& root, const std::string& op_or_path) {
    std::error_code ec;
    if (op_or_path.ends_with(".yaml") || op_or_path.ends_with(".yml") || op_or_path.find('/') != std::string::npos) {
        if (fs::is_regular_file(op_or_path, ec)) return op_or_path;
        throw Error(ErrorCategory::bad_input, fmt::format("no search-space file {}", op_or_path), "OP");
    }
    const fs::path p = fs::path(root) / "search_spaces" / (op_or_path + ".yaml");
    if (fs::is_regular_file(p, ec)) return p.string();
    std::vector<std::string> known;
    for (const auto& e : fs::directory_iterator(fs::path(root) / "search_spaces", ec))
        if (e.path().extension() == ".yaml") known.push_back(e.path().stem().string());
    std::sort(known.begin(), known.end());
    throw Error(ErrorCategory::bad_input,
                fmt::format("no search space named '{}' in {}/search_spaces (available: {})", op_or_path, root,
                            known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))),
                "OP");
}

std::string git_revision(const std::string& root) {
    // A copy of the tree without .git (a GPU host that received the working tree) is told its revision.
    if (const char* env = std::getenv("KTUNE_GIT_REVISION"); env && *env) return env;
    const std::string q = "'" + root + "'";
    std::string rev = run_command("git -C " + q + " rev-parse --short=12 HEAD 2>/dev/null");
    if (rev.empty()) return "unknown";
    if (!run_command("git -C " + q + " status --porcelain --untracked-files=no 2>/dev/null").empty()) rev += "-dirty";
    return rev;
}

std::string hostname() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

std::string ktune_version() { return KTUNE_VERSION; }
std::string cuda_toolkit_version() { return KTUNE_CUDA_VERSION; }

}  // namespace ktune
