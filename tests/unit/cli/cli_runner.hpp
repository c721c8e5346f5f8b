#pragma once
// Runs the ktune binary the way a user does, in a directory of its own, and captures its exit code and output.
// Shared by the CLI tests: the bad-input corpus (tests/data/cli/cases.yaml), the loader corpus through the CLI, --help.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ktune_test_config.hpp"

namespace ktune::cli_test {

namespace fs = std::filesystem;

inline const fs::path& ktune_binary() {
    static const fs::path p = fs::path(KTUNE_BINARY_DIR) / "ktune";
    return p;
}

inline std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

// Single-quoted for /bin/sh: every argument reaches ktune exactly as written.
inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// A fresh directory per test: work/ is the working directory (and holds the database and cache unless the test says
// otherwise); the captured output lives beside it, so it never counts as something ktune wrote.
class Sandbox {
public:
    explicit Sandbox(const std::string& name) {
        m_top = fs::temp_directory_path() / ("ktune_cli_" + std::to_string(::getpid()) + "_" + name);
        fs::remove_all(m_top);
        fs::create_directories(work());
    }
    ~Sandbox() {
        std::error_code ec;
        fs::remove_all(m_top, ec);
    }
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;

    fs::path top() const { return m_top; }
    fs::path work() const { return m_top / "work"; }

private:
    fs::path m_top;
};

struct RunResult {
    int exit_code = -1;  // -1: killed by a signal (a crash is never an acceptable answer to bad input)
    int signal = 0;
    std::string out, err;
};

// Runs `ktune args...` in sandbox.work() with the environment pointing every default path into it, and KTUNE_ROOT at
// the source tree (the sandbox is outside any checkout) unless `with_root` is false; `env` adds NAME=VALUE settings.
inline RunResult run_ktune(const Sandbox& box, const std::vector<std::string>& args, bool with_root = true,
                           const std::vector<std::string>& env = {}) {
    const fs::path work = box.work();
    std::string cmd = "cd " + shell_quote(work.string()) +
                      " && env -u KTUNE_ROOT -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX " +
                      (with_root ? "KTUNE_ROOT=" + shell_quote(KTUNE_SOURCE_ROOT) + " " : std::string()) +
                      "KTUNE_DB=" + shell_quote((work / "ktune.db").string()) +
                      " KTUNE_CACHE_DIR=" + shell_quote((work / "cache").string()) +
                      " XDG_CACHE_HOME=" + shell_quote((work / "xdg-cache").string()) + " ";
    for (const auto& e : env) cmd += shell_quote(e) + " ";
    cmd += shell_quote(ktune_binary().string());
    for (const auto& a : args) cmd += " " + shell_quote(a);
    cmd += " >" + shell_quote((box.top() / "stdout").string()) + " 2>" + shell_quote((box.top() / "stderr").string());
    RunResult r;
    const int status = std::system(cmd.c_str());
    if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (status != -1 && WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = read_text(box.top() / "stdout");
    r.err = read_text(box.top() / "stderr");
    // A crash inside the shell shows as 128 + signal.
    if (r.exit_code > 128) r.signal = r.exit_code - 128;
    return r;
}

// Every file and directory under `dir`, with the content of files: what "writes nothing" compares.
struct Entry {
    bool directory = false;
    std::string content;
    bool operator==(const Entry&) const = default;
};
inline std::map<std::string, Entry> snapshot(const fs::path& dir) {
    std::map<std::string, Entry> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const std::string rel = fs::relative(e.path(), dir).string();
        if (e.is_directory())
            out[rel] = Entry{true, {}};
        else
            out[rel] = Entry{false, read_text(e.path())};
    }
    return out;
}

// What changed between two snapshots, one line each. Tolerated: empty directories that appeared (the compile service
// creates its cache directory before it can fail). A command that only reads the database leaves no -wal or -shm.
inline std::string changes(const std::map<std::string, Entry>& before, const std::map<std::string, Entry>& after,
                           const fs::path& dir) {
    std::string out;
    for (const auto& [path, entry] : after) {
        auto it = before.find(path);
        if (it == before.end()) {
            if (entry.directory && fs::is_empty(dir / path)) continue;
            out += "  created " + path + "\n";
        } else if (!(it->second == entry)) {
            out += "  changed " + path + "\n";
        }
    }
    for (const auto& [path, entry] : before)
        if (!after.count(path)) out += "  removed " + path + "\n";
    return out;
}

}  // namespace ktune::cli_test
