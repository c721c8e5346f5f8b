#include "tuner/jit/include_walk.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "core/file.hpp"
#include "core/error.hpp"

namespace ktune::detail {

namespace fs = std::filesystem;

namespace {

// Blanks comments (keeping newlines, so line numbers survive) and leaves string and character literals alone, so a
// commented-out #include is not followed and "//" inside a string is not a comment.
std::string strip_comments(const std::string& text) {
    std::string out = text;
    enum class State { code, line_comment, block_comment, string, character } state = State::code;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const char c = out[i];
        const char next = i + 1 < out.size() ? out[i + 1] : '\0';
        switch (state) {
            case State::code:
                if (c == '/' && next == '/') {
                    state = State::line_comment;
                    out[i] = ' ';
                } else if (c == '/' && next == '*') {
                    state = State::block_comment;
                    out[i] = out[i + 1] = ' ';
                    ++i;
                } else if (c == '"') {
                    state = State::string;
                } else if (c == '\'') {
                    state = State::character;
                }
                break;
            case State::line_comment:
                if (c == '\n') state = State::code;
                else out[i] = ' ';
                break;
            case State::block_comment:
                if (c == '*' && next == '/') {
                    out[i] = out[i + 1] = ' ';
                    ++i;
                    state = State::code;
                } else if (c != '\n') {
                    out[i] = ' ';
                }
                break;
            case State::string:
            case State::character:
                if (c == '\\') ++i;  // skip the escaped character
                else if (c == (state == State::string ? '"' : '\'') || c == '\n') state = State::code;
                break;
        }
    }
    return out;
}

bool is_file(const fs::path& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

// Relative to the kernel root when inside it, so keys do not depend on where the checkout lives.
std::string display_name(const fs::path& root, const fs::path& path) {
    const fs::path rel = path.lexically_relative(root);
    if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
    return path.generic_string();
}

fs::path normalized(const fs::path& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(path, ec);
    return ec ? path.lexically_normal() : p;
}

class Walker {
public:
    Walker(fs::path root, const std::vector<fs::path>& system_dirs) : m_root(std::move(root)), m_system(system_dirs) {}

    void visit(const fs::path& path) {
        if (!m_seen.insert(path).second) return;  // include guards and #pragma once: each file once
        SourceFile file{display_name(m_root, path), path, read_file(path, "a kernel file")};
        const std::vector<QuotedInclude> includes = find_quoted_includes(file.text);
        const std::string includer = file.name;
        m_files.push_back(std::move(file));
        for (const QuotedInclude& inc : includes) {
            std::vector<fs::path> found;
            for (const fs::path& candidate : {m_root / inc.target, path.parent_path() / inc.target}) {
                if (!is_file(candidate)) continue;
                const fs::path p = normalized(candidate);
                if (std::find(found.begin(), found.end(), p) == found.end()) found.push_back(p);
            }
            if (found.empty()) {
                if (is_system_header(inc.target)) continue;
                throw Error(ErrorCategory::bad_input,
                            "included header \"" + inc.target + "\" not found under the kernel root " +
                                m_root.string() + " nor next to the including file",
                            includer + ":" + std::to_string(inc.line));
            }
            for (const fs::path& p : found) visit(p);
        }
    }

    std::vector<SourceFile> take() { return std::move(m_files); }

private:
    bool is_system_header(const std::string& target) const {
        for (const fs::path& dir : m_system) {
            if (is_file(dir / target)) return true;
        }
        return false;
    }

    fs::path m_root;
    const std::vector<fs::path>& m_system;
    std::set<fs::path> m_seen;
    std::vector<SourceFile> m_files;
};

}  // namespace

std::vector<QuotedInclude> find_quoted_includes(const std::string& text) {
    std::vector<QuotedInclude> result;
    const std::string code = strip_comments(text);
    std::istringstream lines(code);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        std::size_t i = line.find_first_not_of(" \t");
        if (i == std::string::npos || line[i] != '#') continue;
        i = line.find_first_not_of(" \t", i + 1);
        if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
        i = line.find_first_not_of(" \t", i + 7);
        if (i == std::string::npos || line[i] != '"') continue;
        const std::size_t end = line.find('"', i + 1);
        if (end == std::string::npos || end == i + 1) continue;
        result.push_back({line.substr(i + 1, end - i - 1), number});
    }
    return result;
}

std::vector<SourceFile> collect_sources(const fs::path& kernel_root, const std::string& source_path,
                                        const std::vector<fs::path>& system_dirs) {
    const fs::path root = normalized(fs::absolute(kernel_root));
    const fs::path source = root / source_path;
    if (!is_file(source)) {
        throw Error(ErrorCategory::bad_input, "kernel source not found: " + source.string(), source_path);
    }
    Walker walker(root, system_dirs);
    walker.visit(normalized(source));
    return walker.take();
}

}  // namespace ktune::detail
