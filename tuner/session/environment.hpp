#pragma once
// Where things are and what the run happens in: the repository root (kernels/, search_spaces/), default paths of the
// results database and the compile cache, the git revision.
#include <string>

namespace ktune {

// --root, else $KTUNE_ROOT, else the nearest ancestor of the working directory holding kernels/ and search_spaces/,
// else the source tree ktune was built from. Throws Error(bad_input) when an explicit root lacks those folders.
std::string resolve_root(const std::string& explicit_root);
std::string default_db_path(const std::string& root);     // $KTUNE_DB, else <root>/results/ktune.db
std::string default_cache_dir();                           // $KTUNE_CACHE_DIR, else $XDG_CACHE_HOME/ktune, ~/.cache/ktune
// The search-space file for an op name ("rmsnorm" -> <root>/search_spaces/rmsnorm.yaml) or a path to a YAML file.
// Throws Error(bad_input) listing the available spaces when neither exists.
std::string resolve_space_path(const std::string& root, const std::string& op_or_path);
std::string git_revision(const std::string& root);  // $KTUNE_GIT_REVISION, else "abc1234" (+ "-dirty"), or "unknown"
std::string hostname();
std::string ktune_version();
std::string cuda_toolkit_version();                        // the toolkit ktune was built with

}  // namespace ktune
