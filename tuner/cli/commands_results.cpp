// Subcommands over stored results and regression checks: report, import-peers, baseline save, check.
#include "tuner/cli/commands_results.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "kernels/op.hpp"
#include "reports/peer_import.hpp"
#include "reports/report.hpp"
#include "results/store.hpp"
#include "tuner/check/baseline.hpp"
#include "tuner/check/check_output.hpp"
#include "tuner/check/check_runner.hpp"
#include "tuner/export/export_header.hpp"
#include "tuner/session/check_measurer.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/op_lookup.hpp"

namespace fs = std::filesystem;

namespace ktune::cli {
namespace {

struct ReportCliOptions {
    std::vector<std::string> ops, devices;
    std::string format, out, title = "ktune report";
};
struct ExportCliOptions {
    std::string op, variant = "fwd", out;
    std::vector<std::string> devices;
};
struct ImportOptions {
    std::vector<std::string> files;
};
struct BaselineOptions {
    std::vector<std::string> ops;
    std::string out;
    int sessions = 3, samples = 30, device = 0;
};
struct CheckCliOptions {
    std::string baseline, markdown, junit;
    std::vector<std::string> ops;
    bool force = false;
    int samples = 30, rounds = 5, device = 0;
};

ReportCliOptions g_report;
ExportCliOptions g_export;
CLI::Option* g_export_variant = nullptr;  // to tell a given --variant from its default
ImportOptions g_import;
BaselineOptions g_baseline;
CheckCliOptions g_check;

void write_file(const std::string& path, const std::string& text, const std::string& option) {
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
    std::ofstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorCategory::bad_input, fmt::format("cannot write {}", path), option);
    f << text;
    if (!f.flush()) throw Error(ErrorCategory::bad_input, fmt::format("cannot write {}", path), option);
}

// The filter ("op" or "op/variant") a space name stands for; a name no space knows is kept as written, so the results
// of an op whose space is gone (or a run without a root) can still be selected.
std::string op_filter(const Paths& p, const std::string& name) {
    try {
        return space_named(p, name).filter();
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::bad_input) throw;
        return name;
    }
}

int cmd_report(const GlobalOptions& g) {
    const Paths p = resolve_paths(g, RootUse::defaults_only);
    ReportFormat format = ReportFormat::markdown;  // standard output reads best as Markdown
    if (!g_report.format.empty()) {
        format = parse_report_format(g_report.format);
    } else if (auto from_path = report_format_for_path(g_report.out)) {
        format = *from_path;
    } else if (!g_report.out.empty() && g_report.out != "-") {
        throw Error(ErrorCategory::bad_input,
                    fmt::format("cannot tell the format from {}: give --format md|html|csv|json", g_report.out),
                    "--format");
    }
    Store store = Store::open(p.db, Store::Mode::read_only);
    ReportOptions o;
    for (const std::string& name : g_report.ops) o.ops.push_back(op_filter(p, name));
    o.devices = g_report.devices;
    o.title = g_report.title;
    o.flops = [root = p.root](const std::string& op, const std::string& variant, const Problem& problem) {
        return op_flops(root, op, variant, problem);
    };
    const ReportData data = collect_report_data(store, o);
    const std::string text = render_report(data, format);
    if (g_report.out.empty() || g_report.out == "-") {
        std::cout << text;
    } else {
        write_file(g_report.out, text, "--out");
        fmt::print("wrote {} ({} report)\n", g_report.out, report_format_name(format));
    }
    return exit_ok;
}

int cmd_export_header(const GlobalOptions& g) {
    const Paths p = resolve_paths(g);
    const SpaceRef space = space_named(p, g_export.op);
    ExportOptions o;
    o.op = space.op;
    if (g_export_variant->count() > 0) {
        if (std::find(space.variants.begin(), space.variants.end(), g_export.variant) == space.variants.end())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("'{}' tunes {} {}, not {}", g_export.op, space.op, fmt::join(space.variants, ", "),
                                    g_export.variant),
                        "--variant");
        o.variant = g_export.variant;
    } else if (space.variants.size() == 1) {
        o.variant = space.variants.front();
    } else {
        throw Error(ErrorCategory::bad_input,
                    fmt::format("op {} has the variants {}: name one, e.g. --op {}/{}", space.op,
                                fmt::join(space.variants, ", "), space.op, space.variants.front()),
                    "--op");
    }
    if (space.files.size() == 1) o.space_path = space.files.front();
    Store store = Store::open(p.db, Store::Mode::read_only);
    o.root = p.root;
    o.devices = g_export.devices;
    o.out_dir = g_export.out;
    const ExportResult r = export_header(store, o);
    for (const auto& w : r.warnings) fmt::print(stderr, "warning: {}\n", w);
    fmt::print("wrote {}: {} for {} device(s), {} tuned problems, {} kernel instances\n", r.header_path, r.function,
               r.device_keys.size(), r.entries, r.configs);
    return exit_ok;
}

int cmd_import_peers(const GlobalOptions& g) {
    const Paths p = resolve_paths(g, RootUse::defaults_only);
    // Every file is validated before the database is opened, so a bad file leaves no new database behind.
    for (const std::string& f : g_import.files) {
        parse_peers(read_file(f, "the peer measurement file"), f);
    }
    Store store = Store::open(p.db);
    for (const std::string& f : g_import.files) {
        const PeerImportResult r = import_peers(store, f);
        fmt::print("{}: {} peer measurements stored ({} new, {} replaced) for {}\n", f, r.inserted + r.replaced,
                   r.inserted, r.replaced, r.device_name);
    }
    return exit_ok;
}

// The GPU, its worker and a compile service, for the commands that measure.
struct Gpu {
    CompileService jit;
    GpuWorker worker;
    Gpu(const Paths& p, int ordinal)
        : jit((require_writable_cache(p.cache), CompileServiceOptions{p.root, p.cache, "", 0})),
          worker(default_worker_path(), ordinal, jit) {
        worker.start();
    }
};

// This GPU's ceilings, measured now (a few seconds): what a baseline records and a check compares.
DeviceInfo measured_calibration(Gpu& gpu) {
    DeviceInfo d = with_ceilings(gpu.worker.device(), gpu.worker.measure_ceilings(std::size_t{1} << 30));
    d.host = hostname();
    return d;
}

int cmd_baseline_save(const GlobalOptions& g) {
    const Paths p = resolve_paths(g);
    Store store = Store::open(p.db, Store::Mode::read_only);
    Gpu gpu(p, g_baseline.device);
    const DeviceInfo& dev = gpu.worker.device();
    Baseline b;
    b.device = BaselineDevice{.key = dev.key, .name = dev.name, .arch = dev.arch()};
    const DeviceInfo calibration = measured_calibration(gpu);
    b.device.copy_gbps = calibration.copy_gbps;
    b.device.launch_floor_us = calibration.launch_floor_us;
    b.device.launch_floor_cupti_us = calibration.launch_floor_cupti_us;
    b.device.host = calibration.host;
    b.device.gpu_uuid = dev.uuid;
    b.created_at = utc_now_iso();
    b.git_revision = git_revision(p.root);
    b.method.min_samples = g_baseline.samples;
    b.method.sessions = g_baseline.sessions;
    std::vector<std::string> ops;
    for (const std::string& name : g_baseline.ops) ops.push_back(op_filter(p, name));
    for (const TunedOp& t : store.tuned_ops()) {
        if (t.device_key != dev.key) continue;
        if (!ops.empty() && std::find(ops.begin(), ops.end(), t.op) == ops.end() &&
            std::find(ops.begin(), ops.end(), t.op + "/" + t.variant) == ops.end())
            continue;
        for (const ResultRecord& r : store.best(t.op, t.variant, dev.key)) {
            BaselineCase c;
            c.op = t.op;
            c.variant = t.variant;
            c.problem = r.problem;
            c.kernel = r.kernel.alternative;
            c.config_key = r.config_key;
            c.source_hash = r.kernel.source_hash;
            c.bytes = static_cast<std::int64_t>(r.measurement.gbps * 1e9 * r.measurement.stats.p50 * 1e-6 + 0.5);
            b.cases.push_back(std::move(c));
        }
    }
    if (b.cases.empty())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no tuned results for this GPU ({}) in {}{}", dev.key, p.db,
                                g_baseline.ops.empty() ? "" : " for the --ops given"),
                    "--ops");
    GpuCaseMeasurer measurer(p.root, gpu.jit, gpu.worker, &store, b.method);
    fmt::print(stderr, "measuring {} cases, {} sessions of {} samples each...\n", b.cases.size(), b.method.sessions,
               b.method.min_samples);
    record_baseline_samples(b, measurer, b.method.sessions, b.method.min_samples);
    const std::string out = g_baseline.out.empty()
                                ? (fs::path(p.root) / "results" / "baselines" / baseline_file_name(b.device)).string()
                                : g_baseline.out;
    std::error_code ec;
    fs::create_directories(fs::path(out).parent_path(), ec);
    save_baseline(b, out);
    fmt::print("wrote {} ({} cases on {})\n", out, b.cases.size(), dev.name);
    return exit_ok;
}

int cmd_check(const GlobalOptions& g) {
    const Paths p = resolve_paths(g);
    const Baseline baseline = load_baseline(g_check.baseline);
    std::optional<Store> store;
    if (fs::exists(p.db)) store.emplace(Store::open(p.db, Store::Mode::read_only));
    Gpu gpu(p, g_check.device);
    GpuCaseMeasurer measurer(p.root, gpu.jit, gpu.worker, store ? &*store : nullptr, baseline.method);
    CheckOptions o;
    o.ops = g_check.ops;
    o.force = g_check.force;
    if (baseline.device.copy_gbps > 0 || baseline.device.launch_floor_us > 0)
        o.current_calibration = measured_calibration(gpu);
    o.min_samples = g_check.samples;
    o.remeasure_rounds = g_check.rounds;
    o.on_case = [](const CaseResult& r) { fmt::print(stderr, "  {:<44} {}\n", r.id, verdict_name(r.verdict)); };
    const CheckReport report = run_check(baseline, gpu.worker.device().key, measurer, o);
    std::cout << format_check_table(report);
    if (!g_check.markdown.empty()) write_file(g_check.markdown, format_check_markdown(report), "--markdown");
    if (!g_check.junit.empty()) write_file(g_check.junit, format_check_junit(report), "--junit");
    return check_exit_code(report);
}

}  // namespace

void register_result_commands(CLI::App& app) {
    auto* report = app.add_subcommand("report",
                                      "Write a report of the stored results: best configuration, p50/p95/p99, "
                                      "bandwidth against the copy ceiling, speedups over stored peers");
    report->add_option("--op", g_report.ops,
                       "Only these search spaces: a name (rmsnorm), an op or op/variant (glu, rmsnorm/bwd) or a YAML "
                       "file; repeatable");
    report->add_option("--device", g_report.devices, "Only devices whose key or name contains this; repeatable");
    report->add_option("--format", g_report.format, "md, html, csv or json (default: from --out's extension)");
    report->add_option("--out", g_report.out, "Output file (default: standard output, as Markdown)")
        ->check(not_empty());
    report->add_option("--title", g_report.title, "Report title")->capture_default_str();

    auto* exp = app.add_subcommand(
        "export-header",
        "Write a C++ header with the best configuration per device and problem and a dispatcher that "
        "launches the ahead-of-time instantiated kernel (exact device, same chip, same architecture, "
        "default; an untuned shape takes the nearest tuned one). Only the newest measured source of each kernel is "
        "ranked: a warning counts the results of older sources passed over where the newest has not measured the "
        "problem, per kernel");
    exp->add_option("--op", g_export.op,
                    "Search space to export: a name (rmsnorm), op/variant (rmsnorm/fwd_gemma) or a YAML file")
        ->required();
    g_export_variant = exp->add_option("--variant", g_export.variant, "Variant, when --op names only an op");
    exp->add_option("--devices", g_export.devices, "Only devices whose key contains this; repeatable (default: all)");
    exp->add_option("--out", g_export.out, "Output directory")->required()->check(not_empty());

    auto* peers = app.add_subcommand("import-peers",
                                     "Store peer measurements (PyTorch, torch.compile, Liger...) from "
                                     "JSON files written by bench/peers/measure_peers.py");
    peers->add_option("files", g_import.files, "JSON files (format: reports/PEERS_FORMAT.md)")
        ->required()
        ->check(CLI::ExistingFile);

    auto* baseline = app.add_subcommand("baseline", "Performance baselines for `ktune check`");
    baseline->require_subcommand(1);
    auto* save = baseline->add_subcommand("save",
                                          "Measure the best configuration of every tuned op on this GPU and "
                                          "write its timing distribution as a readable JSON baseline");
    save->add_option("--ops", g_baseline.ops, "Only these search spaces (as report --op); repeatable");
    save->add_option("--out", g_baseline.out, "Output file (default: results/baselines/<device>.json)")
        ->check(not_empty());
    save->add_option("--sessions", g_baseline.sessions, "Measurement sessions pooled per case")
        ->capture_default_str()
        ->check(CLI::Range(1, 20));
    save->add_option("--samples", g_baseline.samples, "Samples per session")
        ->capture_default_str()
        ->check(CLI::Range(10, 10000));
    save->add_option("--device", g_baseline.device, "GPU ordinal")->capture_default_str();

    auto* check = app.add_subcommand(
        "check",
        "Measure the current kernels at the baseline's configurations and compare (bootstrap CI of the ratio "
        "of medians, duration-dependent threshold); slower and unclear cases are re-measured, interleaved, "
        "before the verdict. Exit 1 only for a reproduced slowdown or a correctness failure");
    check->add_option("--baseline", g_check.baseline, "Baseline JSON (ktune baseline save)")
        ->required()
        ->check(CLI::ExistingFile);
    check->add_option("--ops", g_check.ops, "Only these ops; repeatable");
    check->add_flag("--force", g_check.force, "Compare even when this GPU's device key differs from the baseline's");
    check->add_option("--markdown", g_check.markdown, "Also write a Markdown summary for the pull request")
        ->check(not_empty());
    check->add_option("--junit", g_check.junit, "Also write JUnit XML for the CI system")->check(not_empty());
    check->add_option("--samples", g_check.samples, "Samples per measurement session")
        ->capture_default_str()
        ->check(CLI::Range(10, 10000));
    check->add_option("--rounds", g_check.rounds, "Interleaved re-measurement rounds for slower/unclear cases")
        ->capture_default_str()
        ->check(CLI::Range(1, 50));
    check->add_option("--device", g_check.device, "GPU ordinal")->capture_default_str();
}

std::optional<int> run_result_command(CLI::App& app, const GlobalOptions& global) {
    if (app.got_subcommand("report")) return cmd_report(global);
    if (app.got_subcommand("import-peers")) return cmd_import_peers(global);
    if (app.got_subcommand("export-header")) return cmd_export_header(global);
    if (app.got_subcommand("baseline")) return cmd_baseline_save(global);
    if (app.got_subcommand("check")) return cmd_check(global);
    return std::nullopt;
}

}  // namespace ktune::cli
