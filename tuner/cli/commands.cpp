#include "tuner/cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "kernels/op.hpp"
#include "results/store.hpp"
#include "tuner/cli/commands_db.hpp"
#include "tuner/cli/commands_replay.hpp"
#include "tuner/cli/commands_results.hpp"
#include "tuner/cli/progress.hpp"
#include "tuner/jit/compile_service.hpp"
#include "tuner/session/devices.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/op_lookup.hpp"
#include "tuner/session/shard.hpp"
#include "tuner/session/space_file.hpp"
#include "tuner/session/tuning_session.hpp"
#include "tuner/space/search_space.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace ktune::cli {

Paths resolve_paths(const GlobalOptions& g, RootUse use) {
    Paths p;
    p.root = use == RootUse::kernels ? resolve_root(g.root) : find_root(g.root).value_or("");
    const char* env_db = std::getenv("KTUNE_DB");
    if (use != RootUse::names_only) {
        if (g.db.empty() && !(env_db && *env_db) && p.root.empty())
            throw_no_root("the results database is <root>/results/ktune.db unless --db or KTUNE_DB names one");
        p.db = g.db.empty() ? default_db_path(p.root) : g.db;
        if (g.db.empty() && !(env_db && *env_db)) {  // the default's folder (the user's data folder) may not exist yet
            std::error_code ec;
            fs::create_directories(fs::path(p.db).parent_path(), ec);
        }
    }
    p.cache = g.cache_dir.empty() ? default_cache_dir() : g.cache_dir;
    return p;
}

SpaceRef space_named(const Paths& p, const std::string& name) {
    std::error_code ec;
    if (p.root.empty() && !name.ends_with(".yaml") && !name.ends_with(".yml") && !fs::is_regular_file(name, ec))
        throw_no_root(fmt::format("to find the search space '{}'", name));
    return resolve_space(p.root, name);
}

std::string json_text(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

CLI::Validator not_empty() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            return text.empty() ? "must not be empty (leave the option out for its default)" : "";
        },
        "");
}

void require_writable_cache(const std::string& cache) {
    std::error_code ec;
    const fs::path dir = fs::absolute(cache, ec);
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) return;  // the compile service names a file in the way
    fs::path existing = dir;
    while (!fs::exists(existing, ec) && existing != existing.parent_path()) existing = existing.parent_path();
    if (::access(existing.c_str(), W_OK | X_OK) == 0) return;
    throw Error(
        ErrorCategory::bad_input,
        fmt::format("the compile cache folder {} cannot be written{}; name a writable one with --cache-dir or "
                    "KTUNE_CACHE_DIR",
                    cache,
                    existing == dir ? "" : fmt::format(" ({} cannot, where it would be created)", existing.string())),
        "--cache-dir");
}

namespace {

struct DevicesOptions {
    bool json = false, no_measure = false;
    std::size_t copy_mib = 1024;
};
struct ListOptions {
    bool json = false;
};
struct SpaceOptions {
    std::string op;
    bool json = false;
    int show = 5;
};
struct TuneCliOptions {
    std::string op, strategy = "auto", arch, flush = "clean";
    std::int64_t budget = 0;
    double time_limit = 0;
    bool force = false, hot = false, compile_only = false, json = false, quiet = false, no_cupti = false;
    bool no_transfer = false;
    int device = 0;
    std::string gpus, shard;
    unsigned threads = 0;  // 0: all cores
    std::uint64_t seed = 1;
    std::vector<std::string> dtypes, problems, configs, shapes, kernels;
    int min_samples = 10, max_samples = 2000;
    double target_ci = 0.01, time_cap = 1.0;
};
struct BestOptions {
    std::string op, device_key;
    bool json = false, all_devices = false;
    int device = 0;
};

DevicesOptions g_devices;
ListOptions g_list;
SpaceOptions g_space;
TuneCliOptions g_tune;
BestOptions g_best;

// CLI11's PositiveNumber and NonNegativeNumber say "not in range 0 to 1797...(309 digits).000000"; say it plainly.
CLI::Validator integer_at_least(std::int64_t lo) {
    return CLI::Validator(
        [lo](std::string& text) -> std::string {
            std::int64_t v = 0;
            if (CLI::detail::lexical_cast(text, v) && v >= lo) return {};
            return fmt::format("must be an integer >= {}, got '{}'", lo, text);
        },
        fmt::format("INT>={}", lo));
}
CLI::Validator integer_between(std::int64_t lo, std::int64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            std::int64_t v = 0;
            if (CLI::detail::lexical_cast(text, v) && v >= lo && v <= hi) return {};
            return fmt::format("must be an integer from {} to {}, got '{}'", lo, hi, text);
        },
        fmt::format("INT in [{}, {}]", lo, hi));
}
CLI::Validator positive_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double v = 0;
            if (CLI::detail::lexical_cast(text, v) && v > 0) return {};
            return fmt::format("must be a positive number, got '{}'", text);
        },
        "POSITIVE");
}

// The one search-space file a name stands for; names the candidates when it stands for several.
std::string space_file(const Paths& p, const std::string& name) {
    const SpaceRef ref = space_named(p, name);
    return ref.files.size() == 1 ? ref.files.front() : resolve_space_path(p.root, name);
}

std::string mib(std::int64_t bytes) { return fmt::format("{:.0f} MiB", double(bytes) / (1 << 20)); }
std::string gib(std::int64_t bytes) { return fmt::format("{:.1f} GiB", double(bytes) / (1 << 30)); }

json device_json(const DeviceInfo& d) {
    return {{"key", d.key},
            {"name", d.name},
            {"arch", d.arch()},
            {"sm_count", d.sm_count},
            {"l2_bytes", d.l2_bytes},
            {"memory_bytes", d.memory_bytes},
            {"memory_clock_khz", d.memory_clock_khz},
            {"memory_bus_bits", d.memory_bus_bits},
            {"sm_clock_khz", d.sm_clock_khz},
            {"driver_version", d.driver_version},
            {"cuda_version", d.cuda_version},
            {"nvrtc_version", d.nvrtc_version},
            {"uuid", d.uuid},
            {"pci_bus_id", d.pci_bus_id},
            {"copy_gbps", d.copy_gbps},
            {"launch_floor_us", d.launch_floor_us},
            {"launch_floor_cupti_us", d.launch_floor_cupti_us},
            {"host", d.host},
            {"measured_at", d.measured_at}};
}

json record_json(const ResultRecord& r, const std::optional<DeviceInfo>& dev) {
    const auto& m = r.measurement;
    json j = {{"problem", r.problem.key()},
              {"dtype", dtype_name(r.problem.dtype)},
              {"config", r.config_key},
              {"status", status_name(m.status)},
              {"p50_us", m.stats.p50},
              {"p95_us", m.stats.p95},
              {"p99_us", m.stats.p99},
              {"min_us", m.stats.min},
              {"mean_us", m.stats.mean},
              {"stddev_us", m.stats.stddev},
              {"samples", m.stats.n},
              {"median_ci_rel", m.stats.median_ci_rel},
              {"time_cap_hit", m.time_cap_hit},
              {"cupti_p50_us", m.cupti_p50_us},
              {"kernel_us", m.kernel_us},
              {"cupti_samples", m.cupti_samples_us.size()},
              {"ranked_by", rank_timer_name(m.ranked_by_kernel_time() ? RankTimer::kernel : RankTimer::event)},
              {"rank_us", m.rank_us()},
              {"gbps", m.gbps},
              {"registers", m.compile.registers},
              {"spill_bytes", m.compile.spill_store_bytes + m.compile.spill_load_bytes},
              {"measured_at", r.measured_at},
              {"device_key", r.device_key},
              {"source_hash", r.kernel.source_hash},
              {"kernel", r.kernel.alternative}};
    for (const auto& [axis, v] : r.problem.shape) j["shape"][axis] = v;
    if (dev && dev->copy_gbps > 0) j["pct_of_copy"] = 100.0 * m.gbps / dev->copy_gbps;
    return j;
}

void print_best_table(const std::vector<ResultRecord>& rows, const std::optional<DeviceInfo>& dev) {
    // A space of alternative kernels says which won each problem, before its configuration.
    const bool alternatives =
        std::any_of(rows.begin(), rows.end(), [](const ResultRecord& r) { return !r.kernel.alternative.empty(); });
    auto configuration = [&](const ResultRecord& r) {
        return alternatives ? fmt::format("{}: {}", r.kernel.alternative, r.config_key) : r.config_key;
    };
    fmt::print("{:<26} {:<44} {:>9} {:>9} {:>9} {:>10} {:>8} {:>7} {:>5}\n", "problem",
               alternatives ? "best kernel: configuration" : "best configuration", "p50 us", "p95 us", "p99 us",
               "kernel us", "GB/s", "% copy", "regs");
    bool any_kernel_ranked = false;
    for (const ResultRecord& r : rows) {
        const auto& m = r.measurement;
        const std::string pct = dev && dev->copy_gbps > 0 ? fmt::format("{:.1f}", 100 * m.gbps / dev->copy_gbps) : "-";
        const std::string kernel =
            m.kernel_us > 0 ? fmt::format("{:.3f}{}", m.kernel_us, m.ranked_by_kernel_time() ? "*" : " ") : "- ";
        any_kernel_ranked = any_kernel_ranked || m.ranked_by_kernel_time();
        fmt::print("{:<26} {:<44} {:>9.2f} {:>9.2f} {:>9.2f} {:>10} {:>8.0f} {:>7} {:>5}{}\n", r.problem.key(),
                   configuration(r), m.stats.p50, m.stats.p95, m.stats.p99, kernel, m.gbps, pct, m.compile.registers,
                   m.time_cap_hit ? "  (time cap hit: CI above target)" : "");
    }
    if (any_kernel_ranked)
        fmt::print(
            "p50/p95/p99: event times (the kernel with the GPU front end's launch); kernel: CUPTI kernel duration, "
            "trimmed mean; *: ranked by kernel time (decode sizes: the event time is mostly launch there)\n");
}

int cmd_devices(const GlobalOptions& g) {
    const Paths p = resolve_paths(g);
    require_writable_cache(p.cache);
    CompileService jit({p.root, p.cache, "", 0});
    // Probe first: without a GPU this fails (no_gpu) before the database is created or touched.
    auto reports = probe_devices(default_worker_path(), jit, !g_devices.no_measure, g_devices.copy_mib << 20, nullptr);
    Store store = Store::open(p.db);
    for (auto& r : reports) {
        // A key the database holds with another calibration (another host kind) is kept apart, as a tuning files it.
        std::string difference;
        if (const std::string key = store.filing_key(r.info, &difference); key != r.info.key) {
            fmt::print(stderr, "GPU {}: {} holds its key with another calibration ({}): stored as {}\n",
                       r.props.ordinal, p.db, difference, key);
            r.info.key = key;
        }
        store.upsert_device(r.info);
        if (auto stored = store.device(r.info.key)) r.info = *stored;  // keeps earlier ceilings when not measured
    }
    if (g_devices.json) {
        json out = json::array();
        for (const auto& r : reports) {
            json j = device_json(r.info);
            j["ordinal"] = r.props.ordinal;
            out.push_back(j);
        }
        std::cout << json_text(out) << "\n";
        return exit_ok;
    }
    for (const auto& r : reports) {
        const DeviceInfo& d = r.info;
        fmt::print("GPU {}  {}  {}  {} SMs  L2 {}  memory {} @ {} MHz x {} bit  driver {}  CUDA {}  NVRTC {}\n",
                   r.props.ordinal, d.name, d.arch(), d.sm_count, mib(d.l2_bytes), gib(d.memory_bytes),
                   d.memory_clock_khz / 1000, d.memory_bus_bits, d.driver_version, d.cuda_version, d.nvrtc_version);
        if (d.copy_gbps > 0)
            fmt::print("      copy ceiling {:.0f} GB/s (device-to-device, read+written){}  launch floor {:.2f} us{}\n",
                       d.copy_gbps, r.ceilings.copy_bytes ? fmt::format(" over {}", mib(r.ceilings.copy_bytes)) : "",
                       d.launch_floor_us,
                       r.ceilings.launch_floor_cupti_us > 0
                           ? fmt::format(" (CUPTI kernel duration {:.2f} us)", r.ceilings.launch_floor_cupti_us)
                           : "");
        fmt::print("      key: {}\n", d.key);
    }
    fmt::print("stored in {}\n", p.db);
    return exit_ok;
}

// Words of `text` in lines of at most `width` characters (a longer word gets a line of its own).
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
    std::vector<std::string> lines(1);
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t start = text.find_first_not_of(" \n", pos);
        if (start == std::string::npos) break;
        const std::size_t stop = std::min(text.find_first_of(" \n", start), text.size());
        const std::string word = text.substr(start, stop - start);
        if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.emplace_back();
        lines.back() += (lines.back().empty() ? "" : " ") + word;
        pos = stop;
    }
    return lines;
}

int cmd_list(const GlobalOptions& g) {
    const Paths p = resolve_paths(g);
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(p.root) / "search_spaces"))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    json out = json::array();
    std::vector<std::array<std::string, 6>> rows{{"space", "op", "variant", "params", "problems", "description"}};
    for (const auto& f : files) {
        try {
            const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(f.string());
            const SearchSpace& s = kernels.front();
            std::string summary;
            try {
                summary = std::string(op_of(s).summary());
            } catch (const Error& e) {
                summary = "(no registered op: " + e.message() + ")";
            }
            std::vector<std::string> names;
            for (const SearchSpace& k : kernels)
                if (!k.alternative().empty()) names.push_back(k.alternative());
            if (!names.empty())
                summary = fmt::format("[{} kernels: {}] {}", names.size(), fmt::join(names, ", "), summary);
            out.push_back({{"space", f.stem().string()},
                           {"file", f.string()},
                           {"op", s.op()},
                           {"variant", s.variant()},
                           {"parameters", s.parameters().size()},
                           {"cartesian_size", s.cartesian_size()},
                           {"problems", s.problems().size()},
                           {"summary", summary}});
            rows.push_back({f.stem().string(), s.op(), s.variant(), std::to_string(s.parameters().size()),
                            std::to_string(s.problems().size()), summary});
        } catch (const Error& e) {
            out.push_back({{"space", f.stem().string()}, {"file", f.string()}, {"error", e.what()}});
            rows.push_back({f.stem().string(), "", "", "", "", std::string("invalid: ") + e.what()});
        }
    }
    if (g_list.json) {
        std::cout << json_text(out) << "\n";
        return exit_ok;
    }
    // Columns as wide as their longest entry; the description wraps to keep every line within 120 columns.
    constexpr std::size_t line_width = 120;
    std::array<std::size_t, 5> w{};
    for (const auto& r : rows)
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
    const std::size_t indent = w[0] + w[1] + w[2] + w[3] + w[4] + 2 * w.size();
    const std::size_t room = line_width > indent + 30 ? line_width - indent : 30;
    for (const auto& r : rows) {
        const std::vector<std::string> lines = wrap(r[5], room);
        fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {}\n", r[0], w[0], r[1], w[1], r[2], w[2], r[3], w[3], r[4],
                   w[4], lines.front());
        for (std::size_t i = 1; i < lines.size(); ++i) fmt::print("{:{}}{}\n", "", indent, lines[i]);
    }
    return exit_ok;
}

// One kernel of a space: its parameters, rules, problems and valid configurations (JSON into `out`, or printed).
// Returns how many configurations are valid over all problems; the caller fails a file with none.
std::uint64_t show_space(const SearchSpace& s, json* out) {
    const auto problems = s.problems();
    // Counts and a few examples per problem, not every valid configuration of every problem (memory).
    struct Valid {
        std::uint64_t count = 0;
        std::vector<Config> examples;
    };
    std::vector<std::pair<Problem, Valid>> valid;
    std::uint64_t total_valid = 0;
    for (const Problem& pr : problems) {
        Valid v;
        s.for_each_config([&](const Config& c) {
            if (!s.is_valid(c, pr)) return true;
            if (v.count++ < std::uint64_t(g_space.show)) v.examples.push_back(c);
            return true;
        });
        total_valid += v.count;
        valid.emplace_back(pr, std::move(v));
    }
    if (out != nullptr) {
        json j = {{"file", s.file()},
                  {"op", s.op()},
                  {"variant", s.variant()},
                  {"kernel", s.kernel_source()},
                  {"cartesian_size", s.cartesian_size()},
                  {"valid_total", total_valid}};
        for (const auto& prm : s.parameters())
            j["parameters"].push_back({{"name", prm.name},
                                       {"values", prm.labels.empty() ? json(prm.values) : json(prm.labels)},
                                       {"doc", prm.doc}});
        for (const auto& c : s.constraints()) j["constraints"].push_back(c.text());
        for (const auto& c : s.prune()) j["prune"].push_back(c.text());
        for (const auto& [pr, v] : valid) {
            json pj = {{"problem", pr.key()}, {"valid", v.count}};
            for (const Config& c : v.examples) pj["examples"].push_back(c.key());
            j["problems"].push_back(pj);
        }
        if (!s.alternative().empty()) j["alternative"] = s.alternative();
        *out = std::move(j);
        s.check_launches();
        return total_valid;
    }
    fmt::print("{} ({} {}): kernel {}{}\n", s.file(), s.op(), s.variant(),
               s.alternative().empty() ? "" : s.alternative() + ", ", s.kernel_source());
    fmt::print("parameters ({} combinations before constraints):\n", s.cartesian_size());
    for (const auto& prm : s.parameters())
        fmt::print("  {:<16} {:<28} {}\n", prm.name,
                   prm.labels.empty() ? fmt::format("{}", fmt::join(prm.values, ", "))
                                      : fmt::format("{}", fmt::join(prm.labels, ", ")),
                   prm.doc);
    fmt::print("constraints (legality):\n");
    for (const auto& c : s.constraints()) fmt::print("  {}\n", c.text());
    if (!s.prune().empty()) {
        fmt::print("prune (legal, not measured):\n");
        for (const auto& c : s.prune()) fmt::print("  {}\n", c.text());
    }
    fmt::print("problems ({}), valid configurations each ({} in all):\n", problems.size(), total_valid);
    for (const auto& [pr, v] : valid) fmt::print("  {:<28} {:>6}\n", pr.key(), v.count);
    if (!valid.empty()) {
        const Problem& pr = valid.back().first;
        const std::vector<Config> v = s.valid_configs(pr);
        fmt::print("examples for {}{}:\n", pr.key(),
                   s.grid_reads_sm_count() ? fmt::format(" (grids for SMS = {}; tuning takes the GPU's own count)",
                                                         SearchSpace::nominal_sm_count)
                                           : "");
        for (int i = 0; i < std::min<int>(g_space.show, int(v.size())); ++i) {
            const auto& c = v[std::size_t(i) * v.size() / std::size_t(std::max(1, g_space.show))];
            if (s.is_library()) {
                fmt::print("  {}\n", c.key());
                continue;
            }
            const LaunchGeometry lg = s.launch(c, pr, SearchSpace::nominal_sm_count);
            fmt::print("  {:<44} grid {}x{}x{} block {}x{}x{} smem {}\n", c.key(), lg.grid[0], lg.grid[1], lg.grid[2],
                       lg.block[0], lg.block[1], lg.block[2], lg.shared_bytes);
        }
    }
    std::fflush(stdout);  // the table first, then the error on stderr
    s.check_launches();
    return total_valid;
}

int cmd_space(const GlobalOptions& g) {
    const Paths p = resolve_paths(g, RootUse::names_only);
    const std::vector<SearchSpace> kernels = load_space_file(space_file(p, g_space.op));
    // A file fails when no kernel of it has a valid configuration at any problem (a kernel of several may have none:
    // it is kept for other shapes).
    std::uint64_t valid = 0;
    if (g_space.json) {
        json j;
        if (kernels.size() == 1) {
            valid = show_space(kernels.front(), &j);
        } else {
            j = {
                {"file", kernels.front().file()}, {"op", kernels.front().op()}, {"variant", kernels.front().variant()}};
            for (const SearchSpace& k : kernels) {
                json one;
                valid += show_space(k, &one);
                j["alternatives"].push_back(std::move(one));
            }
        }
        if (valid == 0) kernels.front().require_some_valid_config();
        std::cout << json_text(j) << "\n";
        return exit_ok;
    }
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        if (i > 0) fmt::print("\n");
        valid += show_space(kernels[i], nullptr);
    }
    if (valid == 0) kernels.front().require_some_valid_config();
    return exit_ok;
}

json tune_summary_json(const TuneSummary& s) {
    json j = {{"compile_only", s.compile_only},     {"arch", s.arch},
              {"elapsed_s", s.elapsed_s},           {"run_id", s.run_id},
              {"status_counts", s.status_counts},   {"worker_restarts", s.worker_restarts},
              {"time_limit_hit", s.time_limit_hit}, {"confirmations", s.confirmations}};
    if (!s.no_gpu_reason.empty()) j["no_gpu_reason"] = s.no_gpu_reason;
    if (s.device) j["device"] = device_json(*s.device);
    if (!s.gpus.empty()) j["gpus"] = s.gpus;
    if (!s.dropped_gpus.empty()) j["dropped_gpus"] = s.dropped_gpus;
    if (!s.shard.whole()) j["shard"] = s.shard.text();
    if (s.compile_only)
        j["compile"] = {{"compiled", s.compiled},
                        {"failed", s.compile_failed},
                        {"cache_hits", s.compile_cache_hits},
                        {"errors", s.compile_errors}};
    for (const auto& po : s.problems) {
        json pj = {{"problem", po.problem.key()},
                   {"valid_configs", po.valid_configs},
                   {"measured", po.measured},
                   {"resumed", po.skipped},
                   {"failed", po.failed}};
        if (po.hints) pj["hints"] = {{"stored", po.stored_hints}, {"this_run", po.hints - po.stored_hints}};
        if (po.learned_searches)
            pj["learned"] = {
                {"searches", po.learned_searches}, {"problems", po.learned_problems}, {"results", po.learned_results}};
        for (const ProblemOutcome::Triage& t : po.triage)
            pj["triage"].push_back({{"kernel", t.kernel},
                                    {"expected_slowdown", t.expected_slowdown},
                                    {"budget", t.budget},
                                    {"untriaged_budget", t.untriaged_budget}});
        if (po.best) pj["best"] = record_json(*po.best, s.device);
        j["problems"].push_back(pj);
    }
    return j;
}

void print_tune_summary(const TuneSummary& s, const std::string& db_path) {
    if (s.compile_only) {
        if (!s.no_gpu_reason.empty())
            fmt::print("No usable GPU here, so nothing was timed: this was a compile-only sweep for {}.\n", s.arch);
        fmt::print("compiled {} kernels for {} in {:.1f} s ({} from the cache), {} failed\n", s.compiled, s.arch,
                   s.elapsed_s, s.compile_cache_hits, s.compile_failed);
        for (const auto& e : s.compile_errors) fmt::print("  {}\n", e);
        return;
    }
    std::vector<ResultRecord> best;
    for (const auto& po : s.problems)
        if (po.best) best.push_back(*po.best);
    std::string gpus;
    for (int g : s.gpus) gpus += fmt::format("{}{}", gpus.empty() ? "" : ",", g);
    fmt::print("device {} (copy ceiling {:.0f} GB/s, launch floor {:.2f} us){}\n", s.device->name, s.device->copy_gbps,
               s.device->launch_floor_us, s.gpus.size() > 1 ? fmt::format(" on GPUs {}", gpus) : "");
    print_best_table(best, s.device);
    std::string counts;
    for (const auto& [st, n] : s.status_counts) counts += fmt::format(" {} {}", n, st);
    std::int64_t resumed = 0;
    for (const auto& po : s.problems) resumed += po.skipped;
    fmt::print("run {} in {:.1f} s: measured{}{}; {} resumed from {}{}{}\n", s.run_id, s.elapsed_s,
               counts.empty() ? " nothing" : counts,
               s.confirmations
                   ? fmt::format(" (and {} best configurations measured again to confirm them)", s.confirmations)
                   : "",
               resumed, db_path, s.worker_restarts ? fmt::format("; worker restarted {} times", s.worker_restarts) : "",
               s.time_limit_hit ? "; stopped at the --time limit" : "");
    // What the searches started from: transfer's hints and the model's other problems.
    std::int64_t searched = 0, hints = 0, stored_hints = 0, modelled = 0, searches = 0, learned_problems = 0,
                 learned_results = 0;
    for (const auto& po : s.problems) {
        searched += po.hints > 0;
        hints += po.hints;
        stored_hints += po.stored_hints;
        modelled += po.learned_searches > 0;
        searches += po.learned_searches;
        learned_problems += po.learned_problems;
        learned_results += po.learned_results;
    }
    if (hints > 0)
        fmt::print(
            "transfer: {} searches started from {} hints, {} from stored problems (earlier runs) and {} from this "
            "run's\n",
            searched, hints, stored_hints, hints - stored_hints);
    if (searches > 0)
        fmt::print(
            "model: at {} of {} problems the search ranked the space by other problems' results before measuring "
            "(forest; on average {:.1f} problems and {:.0f} results a search)\n",
            modelled, s.problems.size(), double(learned_problems) / double(searches),
            double(learned_results) / double(searches));
    for (const std::string& d : s.dropped_gpus) fmt::print("dropped {}\n", d);
}

int cmd_tune(const GlobalOptions& g, int argc, char** argv) {
    const Paths p = resolve_paths(g);
    TuneOptions o;
    o.root = p.root;
    o.space_path = space_file(p, g_tune.op);
    {
        // What the YAML gets wrong beyond its own validation fails here, naming the file, before anything is written.
        for (const SearchSpace& space : load_space_file(o.space_path)) op_of(space);
    }
    require_writable_cache(p.cache);
    o.db_path = p.db;
    o.cache_dir = p.cache;
    o.worker_path = default_worker_path();
    o.strategy = g_tune.strategy;
    if (g_tune.budget != 0) o.budget = g_tune.budget;
    if (g_tune.time_limit != 0) {
        if (g_tune.time_limit < 0) throw Error(ErrorCategory::bad_input, "must be positive", "--time");
        o.time_limit_s = g_tune.time_limit;
    }
    o.force = g_tune.force;
    o.device = g_tune.device;
    if (!g_tune.gpus.empty()) parse_gpus(g_tune.gpus, o);
    if (!g_tune.shard.empty()) {
        o.shard = parse_shard(g_tune.shard, "--shard");
    } else if (const auto from_scheduler = shard_from_environment([](const char* name) { return std::getenv(name); })) {
        o.shard = *from_scheduler;
    }
    if (!g_tune.arch.empty()) o.arch = g_tune.arch;
    o.compile_only = g_tune.compile_only;
    for (const auto& d : g_tune.dtypes) {
        auto parsed = parse_dtype(d);
        if (!parsed)
            throw Error(ErrorCategory::bad_input, fmt::format("unknown dtype '{}' (fp32, fp16, bf16)", d), "--dtype");
        o.dtypes.push_back(*parsed);
    }
    for (const auto& f : g_tune.problems) o.problem_filters.push_back(parse_named_values(f, "--problem", "AXIS"));
    o.config_filter_texts = g_tune.configs;  // read against the space: choice names and bools
    o.alternatives = g_tune.kernels;
    for (const auto& f : g_tune.shapes) o.shapes.push_back(parse_named_values(f, "--shape", "AXIS"));
    o.threads = g_tune.threads;
    o.seed = g_tune.seed;
    o.transfer = !g_tune.no_transfer;
    o.timing.cold_l2 = !g_tune.hot;
    o.timing.clean_flush = g_tune.flush == "clean";
    o.timing.min_samples = g_tune.min_samples;
    o.timing.max_samples = g_tune.max_samples;
    o.timing.target_rel = g_tune.target_ci;
    o.timing.time_cap_s = g_tune.time_cap;
    o.timing.cupti_samples = g_tune.no_cupti ? 0 : 5;
    if (o.timing.min_samples < 6 || o.timing.max_samples < o.timing.min_samples)
        throw Error(ErrorCategory::bad_input, "need 6 <= --min-samples <= --max-samples", "--min-samples");
    for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);

    ProgressBar bar(!g_tune.quiet);
    const std::vector<TuneSummary> summaries = run_tuning(o, [&](const ProgressEvent& e) { bar.update(e); });
    bar.finish();
    if (!o.shard.whole()) fmt::print(stderr, "ktune: shard {} of the work\n", o.shard.text());

    if (g_tune.json) {
        json all = json::array();
        for (const TuneSummary& s : summaries) all.push_back(tune_summary_json(s));
        // One device (the usual case) prints its object, as before --gpus; several print an array of them.
        std::cout << json_text(all.size() == 1 ? all.front() : all) << "\n";
    } else {
        for (const TuneSummary& s : summaries) print_tune_summary(s, o.db_path);
    }
    int rc = exit_ok;
    for (const TuneSummary& s : summaries) {
        if (!s.compile_only) {
            for (const auto& po : s.problems)
                // A problem with no valid configuration (not one that --config filtered to nothing, nor a shard's
                // share that is empty).
                if (!po.best && !s.time_limit_hit && (po.valid_configs > 0 || o.config_filter_texts.empty()) &&
                    o.shard.whole())
                    rc = exit_failure;
        }
        // The sweep that stands in for a tuning without a GPU fails like an explicit --compile-only one: a kernel that
        // does not compile is a failure whichever way it was found.
        if (s.compile_only && s.compile_failed > 0) {
            fmt::print(stderr, "ktune: {} of {} kernels failed to compile{}\n", s.compile_failed,
                       s.compiled + s.compile_failed,
                       s.no_gpu_reason.empty() ? "" : " (a compile-only sweep, as there is no usable GPU here)");
            rc = exit_failure;
        }
    }
    return rc;
}

int cmd_best(const GlobalOptions& g) {
    const Paths p = resolve_paths(g, RootUse::defaults_only);
    const SpaceRef space = space_named(p, g_best.op);
    Store store = Store::open(p.db, Store::Mode::read_only);
    std::vector<DeviceInfo> devices;
    if (!g_best.device_key.empty()) {
        auto d = store.device(g_best.device_key);
        if (!d)
            throw Error(ErrorCategory::bad_input, fmt::format("no such device in the database: {}", g_best.device_key),
                        "--device-key");
        devices.push_back(*d);
    } else if (g_best.all_devices) {
        devices = store.devices();
    } else {
        if (p.root.empty()) throw_no_root("to compile the kernels that identify this GPU");
        require_writable_cache(p.cache);
        CompileService jit({p.root, p.cache, "", 0});
        DeviceInfo here;
        try {
            here = current_device(default_worker_path(), jit, g_best.device);
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::no_gpu) throw;
            throw Error(ErrorCategory::no_gpu,
                        e.message() + "\n(--all-devices or --device-key KEY read the database without a GPU)",
                        e.where());
        }
        auto d = store.device(here.key);
        if (!d) {
            fmt::print(stderr, "no results for this GPU ({}) in {}; --all-devices shows the others\n", here.key, p.db);
            return exit_failure;
        }
        devices.push_back(*d);
    }
    if (devices.empty() && !g_best.json)
        fmt::print("{} holds no devices and no results yet: `ktune tune {}` on a GPU stores them\n", p.db, g_best.op);
    json out = json::array();
    for (const DeviceInfo& d : devices) {
        for (const std::string& variant : space.variants) {
            const auto rows = store.best(space.op, variant, d.key);
            if (g_best.json) {
                json dj = {{"device", device_json(d)}, {"op", space.op}, {"variant", variant}};
                dj["best"] = json::array();
                for (const auto& r : rows) dj["best"].push_back(record_json(r, d));
                out.push_back(dj);
            } else {
                fmt::print("{} {} on {} (copy ceiling {:.0f} GB/s)\n", space.op, variant, d.key, d.copy_gbps);
                if (rows.empty())
                    fmt::print("  no results\n");
                else
                    print_best_table(rows, d);
            }
        }
    }
    if (g_best.json) std::cout << json_text(out) << "\n";
    return exit_ok;
}

}  // namespace

void register_commands(CLI::App& app, GlobalOptions&) {
    static constexpr const char* k_space_name_help =
        "Search space: a name (search_spaces/<name>.yaml), an op or op/variant (every space that tunes it; tune and "
        "space need exactly one), or a YAML file";
    auto* devices = app.add_subcommand("devices",
                                       "List GPUs with their properties; measure and store each one's "
                                       "copy-bandwidth ceiling and empty-kernel launch floor");
    devices->add_flag("--json", g_devices.json, "Print JSON");
    devices->add_flag("--no-measure", g_devices.no_measure, "Only list; keep the ceilings measured earlier");
    devices->add_option("--copy-mib", g_devices.copy_mib, "Size of the timed device-to-device copy in MiB")
        ->capture_default_str()
        ->check(CLI::Range(16, 16384));

    auto* list = app.add_subcommand("list", "List the search spaces under search_spaces/ and the ops they tune");
    list->add_flag("--json", g_list.json, "Print JSON");

    auto* space = app.add_subcommand("space",
                                     "Show a search space: parameters, constraints, problems, and how many "
                                     "configurations are valid for each problem");
    space->add_option("op", g_space.op, k_space_name_help)->required();
    space->add_flag("--json", g_space.json, "Print JSON");
    space->add_option("--show", g_space.show, "How many example configurations to show")
        ->capture_default_str()
        ->check(integer_at_least(0));

    auto* tune = app.add_subcommand(
        "tune",
        "Tune an op on this GPU: compile every proposed configuration with NVRTC, validate it against the "
        "reference, time it, and store the results. Resumes: what the database already holds for the same "
        "kernel source, configuration, problem and device is skipped unless --force. Without a GPU it runs a "
        "compile-only sweep");
    tune->add_option("op", g_tune.op, k_space_name_help)->required();
    tune->add_option("--strategy", g_tune.strategy,
                     "Search strategy: auto (exhaustive, or a search with a budget above 2000 valid configurations: "
                     "docs/search.md), exhaustive, random, annealing, genetic, pattern, forest")
        ->capture_default_str();
    tune->add_option("--budget", g_tune.budget, "At most N configurations per problem")->check(integer_at_least(1));
    tune->add_option("--time", g_tune.time_limit, "Stop measuring after S seconds (what was measured is kept)")
        ->check(positive_number());
    tune->add_option("--dtype", g_tune.dtypes, "Only these dtypes (fp32, fp16, bf16); repeatable");
    tune->add_option("--problem", g_tune.problems, "Only problems matching AXIS=V[,AXIS=V...]; repeatable");
    tune->add_option("--shape", g_tune.shapes,
                     "Tune at this shape instead of the space's problems: AXIS=V for every axis, plus the op's "
                     "optional axes (e.g. a row stride S: `ktune list` describes them); in each --dtype; repeatable")
        ->type_name("AXIS=V,...");
    tune->add_option("--config", g_tune.configs,
                     "Only configurations matching PARAM=V[,PARAM=V...] (e.g. a stored best, to re-measure it or "
                     "run it under compute-sanitizer); repeatable");
    tune->add_option("--kernel", g_tune.kernels,
                     "Only this kernel of a space of alternative kernels (its name under alternatives:); repeatable");
    tune->add_flag("--force", g_tune.force, "Measure again what the database already holds");
    tune->add_flag("--no-transfer", g_tune.no_transfer,
                   "A search (not exhaustive) starts each problem from the fastest configurations of the most similar "
                   "problems: those of this run tuned before it, and those the database holds for other problems of "
                   "the kernel on this device from earlier runs (docs/search.md); this starts it from scratch");
    auto* hot = tune->add_flag("--hot", g_tune.hot, "Hot L2: do not flush the L2 cache before each sample");
    tune->add_option("--flush", g_tune.flush,
                     "Cold-L2 flush: clean (the flush's lines are dropped from the L2, so the timed kernel writes none "
                     "of them back) or dirty (they stay dirty, as after nvbench's or Triton's flush; a kernel that "
                     "displaces them pays for their write-back). Results of each are stored apart")
        ->capture_default_str()
        ->check(CLI::IsMember({"clean", "dirty"}))
        ->excludes(hot);
    tune->add_flag("--compile-only", g_tune.compile_only, "Only compile every valid configuration (no GPU needed)");
    tune->add_option("--arch", g_tune.arch, "Target architecture of a compile-only sweep (default sm_90)");
    auto* device = tune->add_option("--device", g_tune.device, "GPU ordinal")->capture_default_str();
    tune->add_option("--gpus", g_tune.gpus,
                     "Tune on several GPUs, one worker each: all, or ordinals such as 0,2,3 (identical GPUs share the "
                     "work; different ones are tuned as separate devices)")
        ->excludes(device)
        ->check(not_empty());
    tune->add_option("--shard", g_tune.shard,
                     "Take part INDEX/COUNT of the work (0/4 .. 3/4), to merge later with `ktune db merge`; by default "
                     "from a Slurm job array (SLURM_ARRAY_TASK_ID, _COUNT) or a Kubernetes Indexed Job "
                     "(JOB_COMPLETION_INDEX, KTUNE_SHARD_COUNT)")
        ->check(not_empty());
    tune->add_option("--threads", g_tune.threads, "NVRTC compile threads (default: all cores)")
        ->check(integer_between(1, 1024));
    tune->add_option("--seed", g_tune.seed, "Seed of the input generator and the random strategy")
        ->capture_default_str();
    tune->add_option("--min-samples", g_tune.min_samples, "Minimum timing samples per measurement")
        ->capture_default_str();
    tune->add_option("--max-samples", g_tune.max_samples, "Maximum timing samples per measurement")
        ->capture_default_str();
    tune->add_option("--target-ci", g_tune.target_ci,
                     "Stop sampling when the 95% CI of the median is within this fraction of it")
        ->capture_default_str()
        ->check(CLI::Range(0.0001, 0.5));
    tune->add_option("--time-cap", g_tune.time_cap, "Seconds of sampling per measurement before giving up on the CI")
        ->capture_default_str()
        ->check(positive_number());
    tune->add_flag("--no-cupti", g_tune.no_cupti, "Skip the CUPTI kernel-duration cross-check");
    tune->add_flag("--json", g_tune.json, "Print the summary as JSON");
    tune->add_flag("--quiet", g_tune.quiet, "No progress line");

    auto* best = app.add_subcommand("best", "Print the best stored configuration per problem for this GPU");
    best->add_option("op", g_best.op, k_space_name_help)->required();
    best->add_option("--device", g_best.device, "GPU ordinal whose device key to use")->capture_default_str();
    best->add_option("--device-key", g_best.device_key, "Use this stored device key (no GPU needed)");
    best->add_flag("--all-devices", g_best.all_devices, "Every device in the database (no GPU needed)");
    best->add_flag("--json", g_best.json, "Print JSON");

    register_result_commands(app);
    register_replay_commands(app);
    register_db_commands(app);
}

int run_selected(CLI::App& app, const GlobalOptions& global, int argc, char** argv) {
    if (app.got_subcommand("devices")) return cmd_devices(global);
    if (app.got_subcommand("list")) return cmd_list(global);
    if (app.got_subcommand("space")) return cmd_space(global);
    if (app.got_subcommand("tune")) return cmd_tune(global, argc, argv);
    if (app.got_subcommand("best")) return cmd_best(global);
    if (auto rc = run_result_command(app, global)) return *rc;
    if (auto rc = run_replay_command(app, global)) return *rc;
    if (auto rc = run_db_command(app, global)) return *rc;
    throw Error(ErrorCategory::internal, "no subcommand");
}

}  // namespace ktune::cli
