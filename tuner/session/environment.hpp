#pragma once
// Where things are and what the run happens in: the repository root (kernels/, search_spaces/), default paths of the
// results database and the compile cache, what a search-space name on the command line means, the git revision.
#include <optional>
#include <string>
#include <vector>

namespace ktune {

// --root, else $KTUNE_ROOT, else the nearest ancestor of the working directory holding kernels/ and search_spaces/,
// else the share/ktune installed beside this executable (installed_root()).
// Throws Error(bad_input) when an explicit root lacks those folders, and when none is found: the message says where it
// looked and how to name the root.
std::string resolve_root(const std::string& explicit_root);
// The same, but nullopt when no root was named and none was found: for commands that need one only for a default.
std::optional<std::string> find_root(const std::string& explicit_root);
// The Error resolve_root throws when no root is found; `why` says what the root was needed for ("" for kernels).
[[noreturn]] void throw_no_root(const std::string& why = {});

// The kernels and search spaces installed with the running executable (<prefix>/share/ktune for <prefix>/bin/ktune),
// if there are any.
std::optional<std::string> installed_root();

// $KTUNE_DB, else <root>/results/ktune.db; for the installed root, $XDG_DATA_HOME/ktune/ktune.db (or
// ~/.local/share/ktune/ktune.db).
std::string default_db_path(const std::string& root);
std::string default_cache_dir();  // $KTUNE_CACHE_DIR, else $XDG_CACHE_HOME/ktune, ~/.cache/ktune

// What one name of a search space means on every command: a YAML file ("my/space.yaml"), a space name
// ("rmsnorm" -> <root>/search_spaces/rmsnorm.yaml), an op ("glu": every space of that op) or op/variant
// ("linear_int4/fwd": every space of that op and variant).
struct SpaceRef {
    std::string op;
    std::string variant;                // empty: every variant of op (an op name that several spaces share)
    std::vector<std::string> variants;  // the variants the spaces tune, sorted, at least one
    std::vector<std::string> files;     // the spaces it names, at least one
    std::string filter() const { return variant.empty() ? op : op + "/" + variant; }  // "op" or "op/variant"
};
// Throws Error(bad_input, where "OP") listing the available spaces when the name matches none.
SpaceRef resolve_space(const std::string& root, const std::string& name);
// The one search-space file a name stands for; throws Error(bad_input) naming the candidates when it names several.
std::string resolve_space_path(const std::string& root, const std::string& name);

std::string git_revision(const std::string& root);  // $KTUNE_GIT_REVISION, else "abc1234" (+ "-dirty"), or "unknown"
std::string hostname();
std::string ktune_version();
std::string cuda_toolkit_version();  // the toolkit ktune was built with

}  // namespace ktune
