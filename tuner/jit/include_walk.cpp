#include "tuner/jit/include_walk.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "core/error.hpp"
#include "core/file.hpp"

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
                if (c == '\n')
                    state = State::code;
                else
                    out[i] = ' ';
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
                if (c == '\\')
                    ++i;  // skip the escaped character
                else if (c == (state == State::string ? '"' : '\'') || c == '\n')
                    state = State::code;
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

bool has_parent_step(const std::string& target) {
    for (const fs::path& part : fs::path(target))
        if (part == "..") return true;
    return false;
}

class Walker {
public:
    Walker(fs::path root, const std::vector<fs::path>& system_dirs, const std::vector<fs::path>& include_dirs)
        : m_root(std::move(root)) {
        for (const fs::path& d : system_dirs) m_system.push_back(normalized(fs::absolute(d)));
        for (const fs::path& d : include_dirs) m_include.push_back(normalized(fs::absolute(d)));
    }

    // The folders a kernel file may come from: the kernel root and the explicit include folders.
    bool allowed(const fs::path& canonical) const {
        if (is_within(canonical, m_root)) return true;
        return std::any_of(m_include.begin(), m_include.end(),
                           [&](const fs::path& d) { return is_within(canonical, d); });
    }

    const std::vector<fs::path>& include_dirs() const { return m_include; }

    // `lexical` is the path as the compiler will open it (its folder resolves the file's own quoted includes),
    // `path` its canonical form.
    void visit(const fs::path& lexical, const fs::path& path) {
        if (!m_seen.insert(path).second) return;  // include guards and #pragma once: each file once
        SourceFile file{display_name(m_root, path), path, read_file(path, "a kernel file")};
        const std::vector<QuotedInclude> includes = find_includes(file.text);
        const std::string includer = file.name;
        m_files.push_back(std::move(file));
        for (const QuotedInclude& inc : includes) {
            const std::string where = includer + ":" + std::to_string(inc.line);
            if (fs::path(inc.target).is_absolute())
                throw Error(ErrorCategory::bad_input,
                            "#include of the absolute path " + quoted(inc) +
                                " is refused: kernel files include headers relative to the kernel root",
                            where);
            if (inc.angle) {
                check_angle_include(inc, where);
                continue;
            }
            std::vector<std::pair<fs::path, fs::path>> found;  // (lexical, canonical)
            std::vector<fs::path> bases{m_root, lexical.parent_path(), path.parent_path()};
            bases.insert(bases.end(), m_include.begin(), m_include.end());
            for (const fs::path& base : bases) {
                const fs::path candidate = base / inc.target;
                if (!is_file(candidate)) continue;
                const fs::path p = normalized(candidate);
                if (!allowed(p))
                    throw Error(ErrorCategory::bad_input,
                                "#include " + quoted(inc) + " resolves to " + p.string() +
                                    ", outside the kernel root " + m_root.string() + " and the include folders",
                                where);
                if (std::none_of(found.begin(), found.end(), [&](const auto& f) { return f.second == p; }))
                    found.emplace_back(candidate.lexically_normal(), p);
            }
            if (found.empty()) {
                if (is_system_header(inc, where)) continue;
                throw Error(ErrorCategory::bad_input,
                            "included header \"" + inc.target + "\" not found under the kernel root " +
                                m_root.string() + " nor next to the including file",
                            where);
            }
            for (const auto& [l, p] : found) visit(l, p);
        }
    }

    std::vector<SourceFile> take() { return std::move(m_files); }

private:
    static std::string quoted(const QuotedInclude& inc) {
        return inc.angle ? "<" + inc.target + ">" : "\"" + inc.target + "\"";
    }

    // A system header found in the toolkit's folders, and only inside them. Lexically: the toolkit's own symlinks
    // are its business.
    bool is_system_header(const QuotedInclude& inc, const std::string& where) const {
        bool found = false;
        for (const fs::path& dir : m_system) {
            const fs::path candidate = dir / inc.target;
            if (!is_file(candidate)) continue;
            if (!is_within(candidate.lexically_normal(), dir))
                throw Error(ErrorCategory::bad_input,
                            "#include " + quoted(inc) + " leaves the CUDA include folder " + dir.string(), where);
            found = true;
        }
        return found;
    }

    // NVRTC resolves <...> against the kernel root, the include folders and the toolkit's: a target that steps
    // upwards could leave all of them, and no kernel needs one.
    void check_angle_include(const QuotedInclude& inc, const std::string& where) const {
        if (has_parent_step(inc.target))
            throw Error(ErrorCategory::bad_input,
                        "#include " + quoted(inc) + " is refused: a system include may not step up with ..", where);
        std::vector<fs::path> bases{m_root};
        bases.insert(bases.end(), m_include.begin(), m_include.end());
        for (const fs::path& base : bases) {
            const fs::path candidate = base / inc.target;
            if (is_file(candidate) && !allowed(normalized(candidate)))
                throw Error(ErrorCategory::bad_input,
                            "#include " + quoted(inc) + " resolves to " + normalized(candidate).string() +
                                ", outside the kernel root and the include folders",
                            where);
        }
        is_system_header(inc, where);
    }

    fs::path m_root;
    std::vector<fs::path> m_system;
    std::vector<fs::path> m_include;
    std::set<fs::path> m_seen;
    std::vector<SourceFile> m_files;
};

}  // namespace

std::vector<QuotedInclude> find_includes(const std::string& text) {
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
        if (i == std::string::npos || (line[i] != '"' && line[i] != '<')) continue;
        const bool angle = line[i] == '<';
        const std::size_t end = line.find(angle ? '>' : '"', i + 1);
        if (end == std::string::npos || end == i + 1) continue;
        result.push_back({line.substr(i + 1, end - i - 1), number, angle});
    }
    return result;
}

std::vector<QuotedInclude> find_quoted_includes(const std::string& text) {
    std::vector<QuotedInclude> result = find_includes(text);
    std::erase_if(result, [](const QuotedInclude& inc) { return inc.angle; });
    return result;
}

bool is_within(const fs::path& path, const fs::path& dir) {
    const fs::path rel = path.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
}

std::vector<SourceFile> collect_sources(const fs::path& kernel_root, const std::string& source_path,
                                        const std::vector<fs::path>& system_dirs,
                                        const std::vector<fs::path>& include_dirs) {
    const fs::path root = normalized(fs::absolute(kernel_root));
    if (source_path.empty() || fs::path(source_path).is_absolute() || has_parent_step(source_path))
        throw Error(ErrorCategory::bad_input,
                    "kernel source '" + source_path +
                        "' must be a path relative to the kernel root, without '..' (absolute paths are refused)",
                    source_path);
    Walker walker(root, system_dirs, include_dirs);
    std::vector<fs::path> bases{root};
    bases.insert(bases.end(), walker.include_dirs().begin(), walker.include_dirs().end());
    for (const fs::path& base : bases) {
        const fs::path source = base / source_path;
        if (!is_file(source)) continue;
        const fs::path canonical = normalized(source);
        // A symlink inside the root may still point anywhere.
        if (!walker.allowed(canonical))
            throw Error(ErrorCategory::bad_input,
                        "kernel source " + source.string() + " resolves to " + canonical.string() +
                            ", outside the kernel root " + root.string() + " and the include folders",
                        source_path);
        walker.visit(source.lexically_normal(), canonical);
        return walker.take();
    }
    throw Error(ErrorCategory::bad_input, "kernel source not found: " + (root / source_path).string(), source_path);
}

}  // namespace ktune::detail
