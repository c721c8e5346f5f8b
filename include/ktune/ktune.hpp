#pragma once
// ktune as a library: load a search space (ktune's YAML, or a Kernel Tuner / KTT T1 file), list what it would tune,
// tune it on a GPU, read the best configurations from a results database and export them as a header for
// ahead-of-time builds: what the `ktune` command does, in a few calls (docs/library.md).
//
//   find_package(ktune CONFIG REQUIRED)
//   target_link_libraries(app PRIVATE ktune::ktune)
//
//   #include <ktune/ktune.hpp>
//   const ktune::api::Space space = ktune::api::Space::load("my_op.yaml");
//   for (const std::string& c : space.configurations(space.problems().front())) ...
//   ktune::api::tune("my_op.yaml");                           // needs a GPU: runs the installed ktune-worker
//   for (const auto& b : ktune::api::best("my_op")) ...        // from the results database, no GPU
//
// Every call throws ktune::Error (core/error.hpp, installed beside this header) with a category (bad input, no GPU,
// results database, ...), a message and where it came from. The types here hold only the standard library's.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace ktune::api {

// The version of this library ("0.1.0").
std::string version();

// Where ktune finds what it needs. An empty field takes its default (resolve_paths).
struct Paths {
    // kernels/ and search_spaces/: $KTUNE_ROOT, else the share/ktune installed with this library, else the source
    // tree it was built from.
    std::string root;
    std::string db;         // the results database: $KTUNE_DB, else ktune.db in the working directory
    std::string cache_dir;  // compiled kernels: $KTUNE_CACHE_DIR, else $XDG_CACHE_HOME/ktune, else ~/.cache/ktune
    std::string worker;     // the GPU worker: $KTUNE_WORKER, else the ktune-worker installed with this library
};
// The paths with every default filled in. Throws Error(bad_input) when no root is found.
Paths resolve_paths(const Paths& given = {});

struct Parameter {
    std::string name;
    std::string kind;                 // "int", "bool" or "choice"
    std::vector<std::string> values;  // as configuration keys show them: "256", "true", "wgmma"
    std::string doc;
};

// A search space as loaded and validated: one kernel, or several alternatives of one op.
class Space {
public:
    // A search-space file (YAML, or a Kernel Tuner / KTT T1 file: *.json), or the name of a space under the root
    // ("rmsnorm", "linear_int4/fwd"; `root` empty: resolve_paths' root). Throws Error(bad_input) naming the file, line
    // and field of what is wrong.
    static Space load(const std::string& path_or_name, const std::string& root = {});

    const std::string& file() const;
    const std::string& op() const;
    const std::string& variant() const;
    // The kernels' names: the alternatives in file order, or one "" for a space of one kernel.
    std::vector<std::string> kernels() const;
    // The tunable parameters of a kernel ("": the first).
    std::vector<Parameter> parameters(const std::string& kernel = {}) const;
    // Every problem the space tunes over, as the results database keys it: "bf16:M=4096,H=8192".
    std::vector<std::string> problems() const;
    // The configurations worth measuring at a problem (every constraint and prune rule holds), as keys:
    // "BLOCK=256,VEC=8". Throws Error(bad_input) for a problem the space does not have.
    std::vector<std::string> configurations(const std::string& problem, const std::string& kernel = {}) const;

    struct Impl;

private:
    explicit Space(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> m_impl;
};

// The best stored configuration of one (op, variant, device, problem).
struct Best {
    std::string op, variant;
    std::string kernel;  // the alternative that won ("" for a space of one kernel)
    std::string device;  // the stored device key
    std::string problem, config;
    double time_us = 0;       // what ranks it: the kernel time (CUPTI) at decode sizes, else the event p50
    std::string ranked_by;    // "kernel" or "event"
    double p50_us = 0;        // event-timed p50
    double gbps = 0;          // bytes the op must move / p50
    std::string measured_at;  // ISO-8601 UTC
};

struct Progress {
    std::int64_t done = 0, total = 0;
    std::string phase;   // "compile" or "measure"
    std::string notice;  // a one-off message (why this became a compile-only sweep)
    std::string problem, config;
};
using ProgressCallback = std::function<void(const Progress&)>;

// What `ktune tune` takes, with its defaults.
struct TuneSettings {
    Paths paths;
    std::string strategy = "auto";      // auto, exhaustive, random, annealing, genetic, pattern, forest
    std::int64_t budget = 0;            // configurations per problem; 0: the strategy's own
    double time_limit_s = 0;            // stop measuring after this long; 0: no limit
    std::vector<std::string> dtypes;    // "bf16"; empty: the space's
    std::vector<std::string> problems;  // only problems matching one of these ("M=4096,H=8192")
    std::vector<std::string> shapes;    // tune at these shapes instead of the space's problems
    std::vector<std::string> configs;   // only configurations matching one of these ("BLOCK=256,FAST=true")
    std::vector<std::string> kernels;   // only these alternatives
    bool force = false;                 // measure again what the database has
    bool compile_only = false;          // compile every configuration, time nothing (no GPU needed)
    std::string arch;                   // the compile-only target ("sm_90")
    int device = 0;                     // the GPU's ordinal
    bool hot_l2 = false;                // keep the L2 warm instead of flushing it before every sample
    std::uint64_t seed = 1;
};

struct TuneResult {
    bool compile_only = false;
    std::string no_gpu_reason;  // why a compile-only sweep ran instead
    std::string arch;
    std::string device;  // the tuned GPU's device key ("" for a compile-only sweep)
    std::int64_t run_id = 0;
    std::vector<Best> best;                             // per problem tuned
    std::map<std::string, std::int64_t> status_counts;  // "ok", "compile_error", ... -> results this run
    std::int64_t compiled = 0, compile_failed = 0;
    std::vector<std::string> compile_errors;
    double elapsed_s = 0;
};

// Tunes a space (a file or a name, as Space::load takes it) and stores every result in the database; resumes what
// is stored unless settings.force. Without a usable GPU, a compile-only sweep (TuneResult::no_gpu_reason says why).
TuneResult tune(const std::string& space, const TuneSettings& settings = {}, const ProgressCallback& progress = {});

// The best configuration per problem stored for an op ("rmsnorm", or "rmsnorm/fwd"; every variant when none is
// named), on every device whose key or name contains `device` ("" for all). Reads the database only: no GPU.
std::vector<Best> best(const std::string& op, const std::string& device = {}, const Paths& paths = {});

struct ExportSettings {
    std::string op;                    // "rmsnorm"
    std::string variant;               // "fwd"; empty: the space's, else the one variant the database has
    std::string out_dir;               // created when missing
    std::string space;                 // the op's search-space file; empty: the one under the root
    std::vector<std::string> devices;  // parts of device keys ("H100"); empty: every tuned device
    Paths paths;
};

struct ExportedHeader {
    std::string path;      // <out_dir>/ktune_tuned_<op>_<variant>.hpp
    std::string function;  // "ktune_tuned::rmsnorm_fwd"
    std::vector<std::string> devices;
    std::size_t entries = 0, configs = 0;
    std::vector<std::string> warnings;
};

// The stored best configurations of an op as a C++ header with a dispatcher (`ktune export-header`).
ExportedHeader export_header(const ExportSettings& settings);

}  // namespace ktune::api
