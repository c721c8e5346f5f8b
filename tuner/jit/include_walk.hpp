#pragma once
// Finds a kernel source and every header it reaches through #include "..." so that the cache key changes whenever
// anything NVRTC will read from the kernel tree changes. Angle-bracket includes are system headers: the NVRTC version
// and the include options in the key cover them.
//
// Confinement: a search space names its kernel source, and a kernel names its headers; neither may make ktune (or
// NVRTC) read a file outside the folders the user named: the kernel root and the explicit include folders (and, for
// system headers, the CUDA toolkit's include folders). Every path is canonicalised (symlinks resolved) before the
// check, and a refusal names the path, never the file's contents.
#include <filesystem>
#include <string>
#include <vector>

namespace ktune::detail {

struct SourceFile {
    std::string name;            // relative to the kernel root when inside it (stable across checkouts), else absolute
    std::filesystem::path path;  // absolute
    std::string text;
};

// The source first, then its headers in include order (depth first), each once. The source is looked for under the
// kernel root, then under each of include_dirs. A quoted include is resolved against the kernel root, the including
// file's folder and include_dirs; when several exist all are walked, since which one the compiler takes depends on its
// search order and the key must not miss either. A quoted include found only in one of system_dirs counts as a system
// header. Throws Error(bad_input) naming the file when the source or a header is missing, and when the source, a
// quoted include or an angle-bracket include is absolute or resolves outside the folders it may come from.
std::vector<SourceFile> collect_sources(const std::filesystem::path& kernel_root, const std::string& source_path,
                                        const std::vector<std::filesystem::path>& system_dirs,
                                        const std::vector<std::filesystem::path>& include_dirs = {});

// The targets of #include "..." directives in C/C++ text, with their 1-based line numbers; comments are skipped.
struct QuotedInclude {
    std::string target;
    int line = 0;
    bool angle = false;  // #include <...>
};
std::vector<QuotedInclude> find_quoted_includes(const std::string& text);
// The same for #include <...> and #include "..." together, in line order.
std::vector<QuotedInclude> find_includes(const std::string& text);

// True when `path` (canonical) is `dir` (canonical) or inside it.
bool is_within(const std::filesystem::path& path, const std::filesystem::path& dir);

}  // namespace ktune::detail
