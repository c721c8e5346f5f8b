#include "tuner/session/environment.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "ktune_build_config.hpp"  // KTUNE_VERSION, KTUNE_CUDA_VERSION, KTUNE_INSTALL_BIN_TO_DATA
#include "tuner/session/space_file.hpp"
#include "tuner/space/search_space.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace ktune {
namespace {

bool is_root(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p / "kernels", ec) && fs::is_directory(p / "search_spaces", ec);
}

// Runs a program with these arguments, without a shell (so no argument is ever parsed as shell), and returns its
// standard output without the trailing newline; nullopt when it cannot start or exits non-zero.
std::optional<std::string> run_program(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        return std::nullopt;
    }
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n > 0)
            out.append(buf, std::size_t(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

std::string checked_root(const std::string& root, const char* where) {
    if (!is_root(root))
        throw Error(ErrorCategory::bad_input, fmt::format("{} holds no kernels/ and search_spaces/ folders", root),
                    where);
    return fs::absolute(root).lexically_normal().string();
}

std::vector<fs::path> space_files(const std::string& root) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(root) / "search_spaces", ec))
        if (e.path().extension() == ".yaml") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

SpaceRef space_of_file(const std::string& path) {
    const std::vector<SearchSpace> kernels = load_space_file(path);
    const SearchSpace& s = kernels.front();
    return SpaceRef{s.op(), s.variant(), {s.variant()}, {path}};
}

}  // namespace

std::optional<std::string> installed_root() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec || exe.empty()) return std::nullopt;
    const fs::path data = (exe.parent_path() / KTUNE_INSTALL_BIN_TO_DATA).lexically_normal();
    if (is_root(data)) return data.string();
    return std::nullopt;
}

std::optional<std::string> find_root(const std::string& explicit_root) {
    if (!explicit_root.empty()) return checked_root(explicit_root, "--root");
    if (const char* env = std::getenv("KTUNE_ROOT"); env && *env) return checked_root(env, "KTUNE_ROOT");
    std::error_code ec;
    for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
        if (is_root(p)) return p.string();
        if (p == p.parent_path()) break;
    }
    return installed_root();
}

void throw_no_root(const std::string& why) {
    std::error_code ec;
    throw Error(ErrorCategory::bad_input,
                fmt::format("no ktune root{}: {} and the folders above it hold no kernels/ and search_spaces/, nor "
                            "does an installed share/ktune beside this executable; run ktune inside a ktune checkout "
                            "or name the root with --root DIR or KTUNE_ROOT=DIR",
                            why.empty() ? "" : " (" + why + ")", fs::current_path(ec).string()),
                "--root");
}

std::string resolve_root(const std::string& explicit_root) {
    if (auto root = find_root(explicit_root)) return *root;
    throw_no_root();
}

std::string default_db_path(const std::string& root) {
    if (const char* env = std::getenv("KTUNE_DB"); env && *env) return env;
    // An installed root (often read-only, shared by every user) holds no results: the user's data folder does.
    if (root == installed_root()) {
        if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
            return (fs::path(xdg) / "ktune" / "ktune.db").string();
        if (const char* home = std::getenv("HOME"); home && *home)
            return (fs::path(home) / ".local" / "share" / "ktune" / "ktune.db").string();
    }
    return (fs::path(root) / "results" / "ktune.db").string();
}

std::string default_cache_dir() {
    if (const char* env = std::getenv("KTUNE_CACHE_DIR"); env && *env) return env;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "ktune").string();
    if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".cache" / "ktune").string();
    return (fs::temp_directory_path() / "ktune-cache").string();
}

SpaceRef resolve_space(const std::string& root, const std::string& name) {
    std::error_code ec;
    if (name.ends_with(".yaml") || name.ends_with(".yml") || is_t1_file(name) || fs::is_regular_file(name, ec)) {
        if (fs::is_regular_file(name, ec)) return space_of_file(name);
        throw Error(ErrorCategory::bad_input, fmt::format("no search-space file {}", name), "OP");
    }
    if (name.empty()) throw Error(ErrorCategory::bad_input, "an empty name names no search space", "OP");
    if (name.find('/') == std::string::npos) {
        const fs::path p = fs::path(root) / "search_spaces" / (name + ".yaml");
        if (fs::is_regular_file(p, ec)) return space_of_file(p.string());
    }
    // An op or op/variant: every space that tunes it. A space that does not load cannot be matched (`ktune list` and
    // `ktune space FILE` say what is wrong with it).
    const std::size_t slash = name.find('/');
    const std::string op = name.substr(0, slash);
    const std::string variant = slash == std::string::npos ? "" : name.substr(slash + 1);
    SpaceRef ref{op, variant, {}, {}};
    std::set<std::string> variants;
    std::vector<std::string> known;
    for (const fs::path& f : space_files(root)) {
        known.push_back(f.stem().string());
        try {
            const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(f.string());
            const SearchSpace& s = kernels.front();
            if (s.op() != op || (!variant.empty() && s.variant() != variant)) continue;
            ref.files.push_back(f.string());
            variants.insert(s.variant());
        } catch (const Error&) {
        }
    }
    if (ref.files.empty())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no search space named '{}' in {}/search_spaces (available: {}; or an op, op/variant "
                                "or a YAML file)",
                                name, root, known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))),
                    "OP");
    ref.variants.assign(variants.begin(), variants.end());
    if (variants.size() == 1) ref.variant = *variants.begin();
    return ref;
}

std::string resolve_space_path(const std::string& root, const std::string& name) {
    const SpaceRef ref = resolve_space(root, name);
    if (ref.files.size() == 1) return ref.files.front();
    std::vector<std::string> stems;
    for (const std::string& f : ref.files) stems.push_back(fs::path(f).stem().string());
    throw Error(
        ErrorCategory::bad_input,
        fmt::format("'{}' names {} search spaces ({}): name one of them", name, stems.size(), fmt::join(stems, ", ")),
        "OP");
}

std::string git_revision(const std::string& root) {
    // A copy of the tree without .git (a GPU host that received the working tree) is told its revision.
    if (const char* env = std::getenv("KTUNE_GIT_REVISION"); env && *env) return env;
    const auto rev = run_program({"git", "-C", root, "rev-parse", "--short=12", "HEAD"});
    if (!rev || rev->empty()) return "unknown";
    const auto status = run_program({"git", "-C", root, "status", "--porcelain", "--untracked-files=no"});
    return status && !status->empty() ? *rev + "-dirty" : *rev;
}

std::string hostname() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

std::string ktune_version() { return KTUNE_VERSION; }
std::string cuda_toolkit_version() { return KTUNE_CUDA_VERSION; }

}  // namespace ktune
