#pragma once
// A tuning run: for every problem of a search space, the strategy proposes configurations, the compile service
// builds them on its thread pool while the GPU workers (one per GPU, `--gpus`) validate and time them, and every result
// goes to the store in its own transaction. What the store already holds for the same kernel source, configuration,
// problem and device is skipped (resume) unless forced. A shard (`--shard`) takes its part of the work. Without a GPU,
// a compile-only sweep, filed in the store under a compile-only device.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "harness/protocol/protocol.hpp"
#include "results/store.hpp"
#include "tuner/session/shard.hpp"

namespace ktune {

class SearchSpace;

struct TuneOptions {
    std::string root;        // repository root (kernels/, search_spaces/)
    std::string space_path;  // the YAML file
    std::string db_path;
    std::string cache_dir;
    std::string worker_path;
    std::string strategy = "auto";  // tuner/strategy/strategy.hpp plan_strategy: exhaustive, or a search when large
    std::optional<std::int64_t> budget;  // configurations per problem
    // A search starts each problem from the winners of the most similar problems (tuner/strategy/transfer.hpp).
    bool transfer = true;
    std::optional<double> time_limit_s;  // stop measuring after this long (what was measured is kept)
    bool force = false;                  // measure again what the store already has
    int device = 0;
    // Several GPUs (`--gpus`), one worker each: every GPU of the host, or these ordinals. Neither: `device` alone.
    bool all_gpus = false;
    std::vector<int> gpus;
    Shard shard;                      // this process's part of the work (`--shard`, or the scheduler's array index)
    std::optional<std::string> arch;  // compile-only target (default sm_90); with a GPU, its own arch
    bool compile_only = false;
    std::vector<Dtype> dtypes;                 // empty: the space's dtypes
    std::vector<NamedValues> problem_filters;  // keep problems matching any filter (all named axes equal)
    // Tune at these shapes instead of the space's problems (every axis of the space, plus optional axes of the op such
    // as a row stride), in each selected dtype: odd sizes, strided rows, a model's own shapes.
    std::vector<NamedValues> shapes;
    std::vector<NamedValues> config_filters;  // keep configurations matching any filter (all named parameters equal)
    std::vector<std::string> alternatives;    // tune only these kernels of a space of alternatives (empty: all)
    // Set by run_tuning for a space of alternatives: the kernels being tuned (a --shape where one has no valid
    // configuration is skipped for it, not refused), among which a search triages its budget
    // (tuner/strategy/transfer.hpp triage_budget), and the first run of this invocation, whose results (the kernels
    // are tuned one after another) no kernel's triage weighs: every kernel triages by the same history.
    std::vector<const SearchSpace*> alternatives_tuned;
    std::int64_t triage_before_run = 0;  // 0: this kernel's run
    // --config as typed ("ENGINE=wgmma,FLAG=true"): read against the space (choice names, bools) into config_filters.
    std::vector<std::string> config_filter_texts;
    unsigned threads = 0;    // compile threads (0: all cores)
    std::uint64_t seed = 1;  // input generator and random strategy
    wire::TimingOptions timing;
    double timeout_floor_s = 10;  // watchdog floor per evaluation
    std::string command_line;
};

// What one GPU of a run has done, for the progress line.
struct GpuProgress {
    int ordinal = 0;
    std::int64_t measured = 0;
    bool dropped = false;
};

struct ProgressEvent {
    std::int64_t done = 0, total = 0;
    std::int64_t measured = 0, skipped = 0, failed = 0;
    std::string phase;   // "compile" or "measure"
    std::string notice;  // a one-off message to show the user now (e.g. why this became a compile-only sweep)
    std::string problem, config;
    double elapsed_s = 0;
    std::vector<GpuProgress> gpus;  // every GPU of the run
};
using ProgressCallback = std::function<void(const ProgressEvent&)>;

struct ProblemOutcome {
    Problem problem;
    std::int64_t valid_configs = 0;
    std::int64_t proposed = 0, measured = 0, skipped = 0, failed = 0;
    // A search's first configurations: the winners of similar problems (transfer), of which stored_hints came from
    // the database's earlier runs and the others from this run's problems.
    std::int64_t hints = 0, stored_hints = 0;
    // The searches whose model learned from other problems' results before their first measurement (forest: stored and
    // this run's; one a kernel of a space of alternatives), and the problems and results they learned from in all.
    std::int64_t learned_searches = 0, learned_problems = 0, learned_results = 0;
    // Each alternative kernel whose budget triage changed here: the slowdown the history expects of it against the
    // fastest kernel, its budget, and the budget its search would have had without triage.
    struct Triage {
        std::string kernel;
        double expected_slowdown = 1;
        std::int64_t budget = 0, untriaged_budget = 0;
    };
    std::vector<Triage> triage;
    std::optional<ResultRecord> best;
};

struct TuneSummary {
    bool compile_only = false;
    std::string no_gpu_reason;  // why a compile-only sweep ran instead of tuning
    std::string arch;
    std::optional<DeviceInfo> device;
    std::vector<int> gpus;  // the GPUs that tuned it (ordinals)
    Shard shard;
    std::vector<std::string> dropped_gpus;  // "GPU 2: why", for each GPU lost during the run
    std::int64_t run_id = 0;
    std::vector<ProblemOutcome> problems;
    std::map<std::string, std::int64_t> status_counts;  // status name -> results this run
    std::int64_t compiled = 0, compile_failed = 0, compile_cache_hits = 0;
    std::vector<std::string> compile_errors;  // "name: first lines of the log" (compile-only)
    int worker_restarts = 0;
    int confirmations = 0;  // best configurations measured again (see confirm_best in tuning_session.cpp)
    bool time_limit_hit = false;
    double elapsed_s = 0;
};

// One summary per device tuned: one, unless --gpus selects GPUs that are different devices (another key, or another
// calibration), each tuned over the whole space; a compile-only sweep's one has no device.
std::vector<TuneSummary> run_tuning(const TuneOptions& options, const ProgressCallback& progress);

// Parses --gpus: "all", or ordinals "0,2,3" (each once). Throws Error(bad_input) naming --gpus.
void parse_gpus(const std::string& text, TuneOptions& o);

// Parses "M=4096,H=8192" (a problem filter, names are AXIS) or "BLOCK=256,VEC=8" (a configuration, names are PARAM).
// Throws Error(bad_input) naming `where`.
NamedValues parse_named_values(const std::string& text, const std::string& where, std::string_view name_kind);

}  // namespace ktune
