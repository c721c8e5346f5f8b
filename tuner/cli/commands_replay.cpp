#include "tuner/cli/commands_replay.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "reports/search_chart.hpp"
#include "results/store.hpp"
#include "tuner/interop/t4.hpp"
#include "tuner/replay/comparison.hpp"

using nlohmann::json;

namespace ktune::cli {
namespace {

struct ReplayArgs {
    std::vector<std::string> t4_files, traces;
    std::string op, problem, svg;
    std::vector<std::string> device_keys, strategies;
    int runs = 20;
    std::uint64_t seed = 1;
    std::string budget;
    int batch = 0;
    double cutoff = 0.96;
    bool no_strategy_time = false;
    bool no_transfer = false;
    bool history = false;
    bool json = false;
} g_replay;

struct ExportArgs {
    std::string op, device_key, problem, out;
} g_export;

std::string device_key_of(const Store& store, const std::string& asked) {
    if (!asked.empty()) {
        if (!store.device(asked))
            throw Error(ErrorCategory::bad_input, fmt::format("no such device in the database: {}", asked),
                        "--device-key");
        return asked;
    }
    const auto devices = store.devices();
    if (devices.size() == 1) return devices.front().key;
    std::string keys;
    for (const DeviceInfo& d : devices) keys += (keys.empty() ? "" : ", ") + d.key;
    throw Error(
        ErrorCategory::bad_input,
        fmt::format("the database holds {} devices: name one ({})", devices.size(), keys.empty() ? "none" : keys),
        "--device-key");
}

std::vector<ReplaySpace> load_spaces(const GlobalOptions& g) {
    std::vector<ReplaySpace> spaces;
    for (const std::string& path : g_replay.t4_files)
        spaces.push_back(replay_space_from_t4(read_t4(path), std::filesystem::path(path).filename().string()));
    if (!spaces.empty()) return spaces;
    if (g_replay.op.empty())
        throw Error(ErrorCategory::bad_input, "name T4 files, or --op to replay an op's results in the database",
                    "--op");
    const Paths p = resolve_paths(g);
    const Store store = Store::open(p.db, Store::Mode::read_only);
    const std::optional<std::string> problem =
        g_replay.problem.empty() ? std::nullopt : std::optional<std::string>(g_replay.problem);
    std::vector<std::string> device_keys;
    for (const std::string& key : g_replay.device_keys) device_keys.push_back(device_key_of(store, key));
    if (device_keys.empty()) device_keys.push_back(device_key_of(store, ""));
    spaces = replay_spaces_from_store(store, g_replay.op, device_keys, problem);
    if (spaces.empty())
        throw Error(ErrorCategory::bad_input, fmt::format("no results of {} in {}", g_replay.op, p.db), "--op");
    return spaces;
}

// Another tuner's runs on a space (bench/search/kt_replay.py writes them): {"space": the T4 file's name, "parameters":
// [names], "strategies": [{"strategy": name, "runs": [{"seed": n, "configs": [[integer values in the parameters'
// order]...], "own_time_s": [seconds before each, optional]}]}]}.
struct TraceFile {
    std::string path, space;
    std::vector<TracedStrategy> strategies;
};

TraceFile read_traces(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorCategory::bad_input, "cannot read the traces", path);
    TraceFile t;
    t.path = path;
    try {
        const json j = json::parse(in);
        t.space = j.at("space").get<std::string>();
        const auto names = j.at("parameters").get<std::vector<std::string>>();
        for (const json& s : j.at("strategies")) {
            TracedStrategy ts;
            ts.name = s.at("strategy").get<std::string>();
            for (const json& r : s.at("runs")) {
                TracedRun run;
                run.seed = r.value("seed", std::uint64_t{0});
                for (const json& c : r.at("configs")) {
                    const auto values = c.get<std::vector<std::int64_t>>();
                    if (values.size() != names.size())
                        throw Error(ErrorCategory::bad_input,
                                    fmt::format("a configuration of {} has {} values for {} parameters", ts.name,
                                                values.size(), names.size()),
                                    path);
                    Config config;
                    for (std::size_t i = 0; i < names.size(); ++i) config.values.emplace_back(names[i], values[i]);
                    run.configs.push_back(std::move(config));
                }
                if (r.contains("own_time_s")) run.own_time_s = r.at("own_time_s").get<std::vector<double>>();
                ts.runs.push_back(std::move(run));
            }
            t.strategies.push_back(std::move(ts));
        }
    } catch (const json::exception& e) {
        throw Error(ErrorCategory::bad_input, fmt::format("malformed traces: {}", e.what()), path);
    }
    return t;
}

// The traces of one space, their parameters in the space's order (so that configuration keys match); runs of one
// strategy name in several files pooled.
std::vector<TracedStrategy> traces_for(const ReplaySpace& space, const std::vector<TraceFile>& files) {
    std::vector<TracedStrategy> out;
    if (space.entries.empty()) return out;
    const NamedValues& order = space.entries.front().config.values;
    for (const TraceFile& f : files) {
        if (f.space != space.name) continue;
        for (TracedStrategy ts : f.strategies) {
            for (TracedRun& r : ts.runs)
                for (Config& c : r.configs) {
                    NamedValues sorted;
                    for (const auto& [name, value] : order) {
                        const auto it = std::ranges::find(c.values, name, [](const auto& v) { return v.first; });
                        if (it == c.values.end())
                            throw Error(ErrorCategory::bad_input,
                                        fmt::format("the traces lack the parameter {} of {}", name, space.name),
                                        f.path);
                        sorted.emplace_back(name, it->second);
                    }
                    c.values = std::move(sorted);
                }
            const auto same = std::ranges::find(out, ts.name, &TracedStrategy::name);
            if (same == out.end()) {
                out.push_back(std::move(ts));
            } else {
                for (TracedRun& r : ts.runs) same->runs.push_back(std::move(r));
            }
        }
    }
    return out;
}

std::string percent_or_dash(double fraction, int reached, int runs) {
    if (std::isnan(fraction)) return "never";
    const std::string v = fmt::format("{:.2f}%", 100 * fraction);
    return reached < runs ? fmt::format("{} ({}/{})", v, reached, runs) : v;
}

json efficiency_json(const Efficiency& e) {
    json within = json::object();
    for (std::size_t w = 0; w < kWithin.size(); ++w) {
        const std::string key = fmt::format("{:g}%", 100 * kWithin[w]);
        within[key] = {
            {"fraction_of_space", std::isnan(e.fraction_within[w]) ? json(nullptr) : json(e.fraction_within[w])},
            {"runs_reached", e.runs_within[w]},
            {"share_within_small_fraction", e.share_within_small[w]}};
    }
    return {{"strategy", e.strategy},
            {"runs", e.runs},
            {"mean_evaluations", e.mean_evaluations},
            {"small_fraction", kSmallShare},
            {"score_time", e.score_time},
            {"score_evaluations", e.score_evals},
            {"within", within}};
}

int cmd_replay(const GlobalOptions& g) {
    ComparisonOptions o;
    o.strategies = g_replay.strategies;
    o.runs = g_replay.runs;
    o.seed = g_replay.seed;
    if (!g_replay.budget.empty()) {
        // N evaluations, or N % of each space.
        const bool share = g_replay.budget.back() == '%';
        const std::string number = share ? g_replay.budget.substr(0, g_replay.budget.size() - 1) : g_replay.budget;
        double value = 0;
        const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
        if (ec != std::errc() || end != number.data() + number.size() || !(value > 0) || (share && value > 100) ||
            (!share && value != std::floor(value)))
            throw Error(ErrorCategory::bad_input,
                        fmt::format("'{}' is neither a number of evaluations nor a share of the space such as 10%",
                                    g_replay.budget),
                        "--budget");
        if (share) {
            o.budget_share = value / 100;
        } else {
            o.budget = std::int64_t(value);
        }
    }
    if (g_replay.batch > 0) o.batch = g_replay.batch;
    o.count_strategy_time = !g_replay.no_strategy_time;
    o.methodology.cutoff_percentile = g_replay.cutoff;
    std::vector<TraceFile> traces;
    for (const std::string& path : g_replay.traces) traces.push_back(read_traces(path));
    const std::vector<ReplaySpace> spaces = load_spaces(g);
    for (const TraceFile& t : traces)
        if (std::ranges::none_of(spaces, [&](const ReplaySpace& s) { return s.name == t.space; }))
            throw Error(ErrorCategory::bad_input, fmt::format("the traces are of {}, not a space replayed", t.space),
                        t.path);
    json out = json::array();
    std::vector<SearchChart> charts;
    o.transfer = !g_replay.no_transfer;
    o.history = g_replay.history;
    std::vector<ReplaySpace> replayed;
    for (const ReplaySpace& space : spaces) {
        std::vector<TracedStrategy> traced = traces_for(space, traces);
        if (!traces.empty() && o.strategies.empty() && traced.empty()) continue;  // only traced spaces
        if (!traced.empty()) o.traced[space.name] = std::move(traced);
        replayed.push_back(space);
    }
    const bool problems = std::ranges::any_of(replayed, [](const ReplaySpace& s) { return s.problem.has_value(); });
    // Which hints the problems started from, said before the results (a T4 file's space is no problem: none).
    const std::string mode_key = !problems || !o.transfer ? "none" : o.history ? "history" : "run";
    const std::string mode = mode_key == "none" ? "no transfer: each problem searched from scratch"
                             : mode_key == "history"
                                 ? "history: each problem starting from the optima of all the other problems "
                                   "in the database (never its own), as a new problem tuned with a database"
                                 : "in-run transfer: each problem starting from the winners its strategy found "
                                   "at the problems before it, in the tuning's order (forest also learns from "
                                   "everything it evaluated there)";
    if (!g_replay.json) fmt::print("replay mode: {}\n", mode);
    const std::vector<Comparison> comparisons = compare_strategies(replayed, o);
    std::map<std::string, int> meets;  // per strategy: spaces where it came within 2 % in 10 % in 90 % of the runs
    for (const Comparison& c : comparisons) {
        for (const Efficiency& e : c.strategies) meets[e.strategy] += e.share_within_small[1] >= 0.9 ? 1 : 0;
        for (SearchChart& chart : comparison_charts(c)) charts.push_back(std::move(chart));
        if (g_replay.json) {
            json j = {{"space", c.space},
                      {"configurations", c.stats.size},
                      {"failed", c.stats.size - c.stats.sorted.size()},
                      {"unit", c.unit},
                      {"optimum", c.stats.optimum},
                      {"median", c.stats.median},
                      {"budget",
                       {{"evaluations", {c.start.evals, c.end.evals}},
                        {"seconds", {c.start.time_s, c.end.time_s}},
                        {"cutoff_percentile", g_replay.cutoff}}},
                      {"evaluations_per_run", c.budget},
                      {"transfer", mode_key},
                      {"random_expected", efficiency_json(c.random_expected)}};
            if (!c.kernels.empty()) {
                j["kernels"] = json::array();
                for (const ComparedKernel& k : c.kernels)
                    j["kernels"].push_back(
                        {{"kernel", k.name}, {"configurations", k.configurations}, {"evaluations_per_run", k.budget}});
            }
            j["strategies"] = json::array();
            for (const Efficiency& e : c.strategies) j["strategies"].push_back(efficiency_json(e));
            out.push_back(j);
            continue;
        }
        fmt::print("{}: {} configurations ({} failed), optimum {:.4g} {}, median {:.4g} {}\n", c.space, c.stats.size,
                   c.stats.size - c.stats.sorted.size(), c.stats.optimum, c.unit, c.stats.median, c.unit);
        fmt::print(
            "  budget (random search closes {:g} % of the gap from the median): evaluations {}..{}, "
            "{:.1f}..{:.1f} s; {} evaluations per run, {} runs\n",
            100 * g_replay.cutoff, c.start.evals, c.end.evals, c.start.time_s, c.end.time_s, c.budget, o.runs);
        if (!c.kernels.empty()) {
            std::string kernels;
            for (const ComparedKernel& k : c.kernels)
                kernels += fmt::format("{}{} ({} configurations, {} evaluations)", kernels.empty() ? "" : ", ",
                                       k.name.empty() ? "(unnamed)" : k.name, k.configurations, k.budget);
            fmt::print("  kernels, each searched on its own, their evaluations interleaved: {}\n", kernels);
        }
        fmt::print("  {:<22} {:>11} {:>11} {:>10}   {:<16} {:<16} {:<16} {:>14}\n", "strategy", "score(time)",
                   "score(evals)", "evals/run", "within 1 %", "within 2 %", "within 5 %", "2 % in 10 %");
        auto row = [&](const Efficiency& e, const std::string& label) {
            const std::string evals = e.runs ? fmt::format("{:.0f}", e.mean_evaluations) : "";
            const std::string small =
                e.runs > 0 ? fmt::format("{}/{}", int(std::lround(e.share_within_small[1] * e.runs)), e.runs)
                           : fmt::format("p={:.2f}", e.share_within_small[1]);
            fmt::print("  {:<22} {:>11.3f} {:>11.3f} {:>10}   {:<16} {:<16} {:<16} {:>14}\n", label, e.score_time,
                       e.score_evals, evals, percent_or_dash(e.fraction_within[0], e.runs_within[0], e.runs),
                       percent_or_dash(e.fraction_within[1], e.runs_within[1], e.runs),
                       percent_or_dash(e.fraction_within[2], e.runs_within[2], e.runs), small);
        };
        row(c.random_expected, "random (expected)");
        for (const Efficiency& e : c.strategies) row(e, e.strategy);
        fmt::print(
            "  (score: mean over the budget of (random - strategy) / (random - optimum), 0 = random search, "
            "1 = the optimum; within: the fraction of the space evaluated, mean over the runs that got there; 2 % "
            "in 10 %: runs within 2 % of the optimum after evaluating at most 10 % of the space)\n");
    }
    if (!g_replay.json && comparisons.size() > 1) {
        fmt::print(
            "{} spaces{}: where each strategy came within 2 % of the optimum after at most 10 % of the space "
            "in at least 90 % of its runs\n",
            comparisons.size(),
            mode_key == "none"      ? " (no transfer)"
            : mode_key == "history" ? " (history: each problem starting from the other problems' optima)"
                                    : " (each problem starting from its predecessors' winners)");
        for (const auto& [name, n] : meets) fmt::print("  {:<18} {} of {}\n", name, n, comparisons.size());
    }
    if (g_replay.json) fmt::print("{}\n", out.dump(2));
    if (!g_replay.svg.empty()) {
        std::FILE* f = std::fopen(g_replay.svg.c_str(), "wb");
        const std::string doc = search_charts_document(charts);
        if (!f || std::fwrite(doc.data(), 1, doc.size(), f) != doc.size() || std::fclose(f) != 0)
            throw Error(ErrorCategory::bad_input, "cannot write the chart", g_replay.svg);
        if (!g_replay.json) fmt::print("curves: {}\n", g_replay.svg);
    }
    return exit_ok;
}

int cmd_export_t4(const GlobalOptions& g) {
    const Paths p = resolve_paths(g);
    const Store store = Store::open(p.db, Store::Mode::read_only);
    ResultFilter f;
    f.op = g_export.op;
    f.device_key = device_key_of(store, g_export.device_key);
    f.problem_key = g_export.problem;
    const auto records = store.results(f);
    if (records.empty())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no results of {} at {} in {}", g_export.op, g_export.problem, p.db), "--problem");
    write_t4(t4_from_results(records), g_export.out);
    fmt::print("{} results of {} {} written to {}\n", records.size(), g_export.op, g_export.problem, g_export.out);
    return exit_ok;
}

}  // namespace

void register_replay_commands(CLI::App& app) {
    auto* replay = app.add_subcommand(
        "replay",
        "Replay search strategies over brute-forced results, without a GPU: Kernel Tuner T4 files, or an op's "
        "exhaustive tuning in the database. Each evaluation costs its recorded compile and measurement "
        "time. Prints each strategy's score by the methodology of Willemsen et al. (FGCS 2024) beside random "
        "search, and the fraction of the space it evaluates to come within 1, 2 and 5 % of the optimum");
    replay->add_option("files", g_replay.t4_files, "T4 result files (.json or .json.gz)");
    replay->add_option("--op", g_replay.op, "Without files: replay this op's results in the database");
    replay->add_option("--device-key", g_replay.device_keys,
                       "The device whose results to replay (default: the only one); repeatable: several read as one, "
                       "each problem from the device holding the most of its results (one GPU model on several hosts "
                       "whose calibrations differ, e.g. a tuning sharded over them and merged by `ktune db merge`)");
    replay->add_option("--problem", g_replay.problem, "Only this problem (a key such as bf16:M=4096,H=8192)");
    replay->add_option("--strategy", g_replay.strategies,
                       "Strategies to replay (repeatable; default: every one but exhaustive)");
    replay->add_option("--runs", g_replay.runs, "Runs per strategy, seeds --seed, --seed + 1, ...")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    replay->add_option("--seed", g_replay.seed, "The first run's seed")->capture_default_str();
    replay->add_option(
        "--budget", g_replay.budget,
        "Evaluations per run, or a share of each space such as 10% (rounded up; an op's problem then hands "
        "on what its strategy found within it, as a tuning with that budget would); of each kernel of a space of "
        "alternatives, as `ktune tune` gives each its budget. Default: twice the methodology's budget, at least 100");
    replay->add_option("--batch", g_replay.batch, "Configurations per proposal of the adaptive strategies (default 8)")
        ->check(CLI::Range(1, 1 << 20));
    replay
        ->add_option("--cutoff", g_replay.cutoff,
                     "The budget ends where random search closes this fraction of the median-to-optimum gap")
        ->capture_default_str()
        ->check(CLI::Range(0.5, 0.999));
    auto* no_transfer = replay->add_flag("--no-transfer", g_replay.no_transfer,
                                         "Replay each problem of an op on its own, not starting from the winners of "
                                         "the problems before it (as `ktune tune --no-transfer`)");
    replay
        ->add_flag("--history", g_replay.history,
                   "Start each problem of an op from the optima of all the other problems in the database, never its "
                   "own (leave-one-out): what `ktune tune` does for a new problem when the database holds the others. "
                   "Default: from the winners found at the problems before it in the tuning's order")
        ->excludes(no_transfer);
    replay->add_flag("--no-strategy-time", g_replay.no_strategy_time,
                     "Leave the strategies' own time out of the time axis (runs repeat exactly)");
    replay
        ->add_option("--traces", g_replay.traces,
                     "Also score another tuner's runs on the same T4 space (repeatable; JSON, as "
                     "bench/search/kt_replay.py writes Kernel Tuner's): each evaluation costs what the space records, "
                     "plus the run's own time; one strategy's runs in several files are pooled. With traces, ktune's "
                     "strategies run only "
                     "where --strategy names them")
        ->check(CLI::ExistingFile);
    replay->add_option("--svg", g_replay.svg,
                       "Write the best-so-far curves (against evaluations and time) to this SVG");
    replay->add_flag("--json", g_replay.json, "Print JSON");

    auto* exp = app.add_subcommand("export-t4", "Write one problem's stored results as a Kernel Tuner T4 file");
    exp->add_option("--op", g_export.op, "Op name")->required();
    exp->add_option("--problem", g_export.problem, "Problem key (e.g. bf16:M=4096,H=8192)")->required();
    exp->add_option("--device-key", g_export.device_key, "Device key (default: the only one in the database)");
    exp->add_option("--out", g_export.out, "Output file (.json, or .json.gz gzip'd)")->required();
}

std::optional<int> run_replay_command(CLI::App& app, const GlobalOptions& global) {
    if (app.got_subcommand("replay")) return cmd_replay(global);
    if (app.got_subcommand("export-t4")) return cmd_export_t4(global);
    return std::nullopt;
}

}  // namespace ktune::cli
