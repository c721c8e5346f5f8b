#pragma once
// Finds a kernel source and every header it reaches through #include "..." so that the cache key changes whenever
// anything NVRTC will read from the kernel tree changes. Angle-bracket includes are system headers: the NVRTC version
// and the include options in the key cover them.
#include <filesystem>
#include <string>
#include <vector>

namespace ktune::detail {

struct SourceFile {
    std::string name;  // relative to the kernel root when inside it (stable across checkouts), else absolute
    std::filesystem::path path;  // absolute
    std::string text;
};

// The source first, then its headers in include order (depth first), each once. A quoted include is resolved against
// the kernel root and against the including file's folder; when both exist both are walked, since which one the
// compiler takes depends on its search order and the key must not miss either. A quoted include found only in one of
// system_dirs counts as a system header. Throws Error(bad_input) naming the file when the source or a header is missing.
std::vector<SourceFile> collect_sources(const std::filesystem::path& kernel_root, const std::string& source_path,
                                        const std::vector<std::filesystem::path>& system_dirs);

// The targets of #include "..." directives in C/C++ text, with their 1-based line numbers; comments are skipped.
struct QuotedInclude {
    std::string target;
    int line = 0;
};
std::vector<QuotedInclude> find_quoted_includes(const std::string& text);

}  // namespace ktune::detail
