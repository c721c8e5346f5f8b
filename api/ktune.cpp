// The library facade (include/ktune/ktune.hpp): thin wrappers over the tuning session, the results store and the
// header export, which own the work; this file only translates between their types and the facade's.
#include "ktune/ktune.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "ktune_build_config.hpp"  // KTUNE_VERSION, KTUNE_SOURCE_ROOT, the installed layout
#include "results/store.hpp"
#include "tuner/export/export_header.hpp"
#include "tuner/session/environment.hpp"
#include "tuner/session/op_lookup.hpp"
#include "tuner/session/space_file.hpp"
#include "tuner/session/tuning_session.hpp"
#include "tuner/space/search_space.hpp"

namespace fs = std::filesystem;

namespace ktune::api {

struct Space::Impl {
    std::vector<SearchSpace> kernels;  // one, or the alternatives in file order
};

namespace {

// The folder libktune was loaded from: the worker and the installed kernels are found relative to it.
fs::path library_folder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&library_folder), &info) == 0 || !info.dli_fname) return {};
    std::error_code ec;
    const fs::path lib = fs::canonical(info.dli_fname, ec);
    return ec ? fs::path(info.dli_fname).parent_path() : lib.parent_path();
}

bool holds_root(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p / "kernels", ec) && fs::is_directory(p / "search_spaces", ec);
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::string default_root() {
    if (!env("KTUNE_ROOT").empty()) return resolve_root("");  // checks it
    const fs::path installed = library_folder() / KTUNE_INSTALL_LIB_TO_DATA;
    if (holds_root(installed)) return installed.lexically_normal().string();
    if (holds_root(KTUNE_SOURCE_ROOT)) return KTUNE_SOURCE_ROOT;  // a libktune in its build tree
    throw Error(ErrorCategory::bad_input,
                fmt::format("no ktune root: neither {} nor {} holds kernels/ and search_spaces/; name one with "
                            "Paths::root or KTUNE_ROOT",
                            installed.lexically_normal().string(), KTUNE_SOURCE_ROOT),
                "root");
}

std::string default_worker() {
    if (const std::string w = env("KTUNE_WORKER"); !w.empty()) return w;
    const fs::path folder = library_folder();
    const fs::path installed = (folder / KTUNE_INSTALL_LIB_TO_BIN / "ktune-worker").lexically_normal();
    std::error_code ec;
    if (fs::exists(installed, ec)) return installed.string();
    if (fs::exists(folder / "ktune-worker", ec)) return (folder / "ktune-worker").string();  // the build tree
    return installed.string();  // missing: the worker client says so when a tuning needs it
}

std::vector<SearchSpace> load_kernels(const std::string& path_or_name, const std::string& root) {
    std::error_code ec;
    if (fs::is_regular_file(path_or_name, ec)) return load_space_file(path_or_name);
    const std::string r = root.empty() ? resolve_paths({}).root : resolve_root(root);
    return load_space_file(resolve_space_path(r, path_or_name));
}

std::string file_of(const std::string& path_or_name, const std::string& root) {
    std::error_code ec;
    if (fs::is_regular_file(path_or_name, ec)) return path_or_name;
    return resolve_space_path(root, path_or_name);
}

const SearchSpace& kernel_named(const std::vector<SearchSpace>& kernels, const std::string& name) {
    if (name.empty()) return kernels.front();
    for (const SearchSpace& k : kernels)
        if (k.alternative() == name) return k;
    throw Error(ErrorCategory::bad_input, fmt::format("{} has no kernel '{}'", kernels.front().file(), name), "kernel");
}

Best best_of(const ResultRecord& r) {
    const Measurement& m = r.measurement;
    return Best{r.kernel.op,
                r.kernel.variant,
                r.kernel.alternative,
                r.device_key,
                r.problem.key(),
                r.config_key,
                m.rank_us(),
                std::string(rank_timer_name(m.ranked_by_kernel_time() ? RankTimer::kernel : RankTimer::event)),
                m.stats.p50,
                m.gbps,
                r.measured_at};
}

std::vector<Dtype> dtypes_of(const std::vector<std::string>& names) {
    std::vector<Dtype> out;
    for (const std::string& n : names) {
        const auto d = parse_dtype(n);
        if (!d)
            throw Error(ErrorCategory::bad_input, fmt::format("unknown dtype '{}' (fp32, fp16, bf16)", n), "dtypes");
        out.push_back(*d);
    }
    return out;
}

}  // namespace

std::string version() { return KTUNE_VERSION; }

Paths resolve_paths(const Paths& given) {
    Paths p = given;
    p.root = p.root.empty() ? default_root() : resolve_root(p.root);
    if (p.db.empty()) p.db = env("KTUNE_DB").empty() ? "ktune.db" : env("KTUNE_DB");
    if (p.cache_dir.empty()) p.cache_dir = default_cache_dir();
    if (p.worker.empty()) p.worker = default_worker();
    return p;
}

Space::Space(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}

Space Space::load(const std::string& path_or_name, const std::string& root) {
    auto impl = std::make_shared<Impl>();
    impl->kernels = load_kernels(path_or_name, root);
    for (const SearchSpace& k : impl->kernels) op_of(k);  // an op that cannot be found fails here, not when tuning
    return Space(std::move(impl));
}

const std::string& Space::file() const { return m_impl->kernels.front().file(); }
const std::string& Space::op() const { return m_impl->kernels.front().op(); }
const std::string& Space::variant() const { return m_impl->kernels.front().variant(); }

std::vector<std::string> Space::kernels() const {
    std::vector<std::string> out;
    for (const SearchSpace& k : m_impl->kernels) out.push_back(k.alternative());
    return out;
}

std::vector<Parameter> Space::parameters(const std::string& kernel) const {
    std::vector<Parameter> out;
    for (const ParameterSpec& p : kernel_named(m_impl->kernels, kernel).parameters()) {
        Parameter q{p.name, "int", {}, p.doc};
        if (p.kind == ParameterKind::boolean) q.kind = "bool";
        if (p.kind == ParameterKind::choice) q.kind = "choice";
        for (std::size_t i = 0; i < p.values.size(); ++i)
            q.values.push_back(p.labels.empty() ? std::to_string(p.values[i]) : p.labels[i]);
        out.push_back(std::move(q));
    }
    return out;
}

std::vector<std::string> Space::problems() const {
    std::vector<std::string> out;
    for (const Problem& p : m_impl->kernels.front().problems()) out.push_back(p.key());
    return out;
}

std::vector<std::string> Space::configurations(const std::string& problem, const std::string& kernel) const {
    const SearchSpace& k = kernel_named(m_impl->kernels, kernel);
    for (const Problem& p : k.problems()) {
        if (p.key() != problem) continue;
        std::vector<std::string> out;
        for (const Config& c : k.valid_configs(p)) out.push_back(c.key());
        return out;
    }
    throw Error(ErrorCategory::bad_input, fmt::format("{} has no problem {}", k.file(), problem), "problem");
}

TuneResult tune(const std::string& space, const TuneSettings& settings, const ProgressCallback& progress) {
    const Paths p = resolve_paths(settings.paths);
    TuneOptions o;
    o.root = p.root;
    o.space_path = file_of(space, p.root);
    Space::load(o.space_path);  // validates the space and finds its op before anything is written
    o.db_path = p.db;
    o.cache_dir = p.cache_dir;
    o.worker_path = p.worker;
    o.strategy = settings.strategy;
    if (settings.budget > 0) o.budget = settings.budget;
    if (settings.time_limit_s > 0) o.time_limit_s = settings.time_limit_s;
    o.force = settings.force;
    o.device = settings.device;
    if (!settings.arch.empty()) o.arch = settings.arch;
    o.compile_only = settings.compile_only;
    o.dtypes = dtypes_of(settings.dtypes);
    for (const std::string& f : settings.problems)
        o.problem_filters.push_back(parse_named_values(f, "problems", "AXIS"));
    for (const std::string& f : settings.shapes) o.shapes.push_back(parse_named_values(f, "shapes", "AXIS"));
    o.config_filter_texts = settings.configs;
    o.alternatives = settings.kernels;
    o.seed = settings.seed;
    o.timing.cold_l2 = !settings.hot_l2;
    o.command_line = "ktune::api::tune " + o.space_path;

    // One GPU (settings.device): one device's summary.
    const TuneSummary s = run_tuning(o, [&](const ProgressEvent& e) {
                              if (progress) progress(Progress{e.done, e.total, e.phase, e.notice, e.problem, e.config});
                          }).front();
    TuneResult r;
    r.compile_only = s.compile_only;
    r.no_gpu_reason = s.no_gpu_reason;
    r.arch = s.arch;
    if (s.device) r.device = s.device->key;
    r.run_id = s.run_id;
    for (const ProblemOutcome& po : s.problems)
        if (po.best) r.best.push_back(best_of(*po.best));
    r.status_counts = s.status_counts;
    r.compiled = s.compiled;
    r.compile_failed = s.compile_failed;
    r.compile_errors = s.compile_errors;
    r.elapsed_s = s.elapsed_s;
    return r;
}

std::vector<Best> best(const std::string& op, const std::string& device, const Paths& paths) {
    const std::string db = paths.db.empty() ? (env("KTUNE_DB").empty() ? "ktune.db" : env("KTUNE_DB")) : paths.db;
    const auto slash = op.find('/');
    const std::string op_name = op.substr(0, slash);
    const std::optional<std::string> variant =
        slash == std::string::npos ? std::nullopt : std::optional(op.substr(slash + 1));
    const Store store = Store::open(db, Store::Mode::read_only);
    std::vector<Best> out;
    for (const TunedOp& t : store.tuned_ops()) {
        if (t.op != op_name || (variant && t.variant != *variant)) continue;
        if (!device.empty() && t.device_key.find(device) == std::string::npos) {
            const auto d = store.device(t.device_key);
            if (!d || d->name.find(device) == std::string::npos) continue;
        }
        for (const ResultRecord& r : store.best(t.op, t.variant, t.device_key)) out.push_back(best_of(r));
    }
    return out;
}

ExportedHeader export_header(const ExportSettings& settings) {
    const Paths p = resolve_paths(settings.paths);
    ExportOptions o;
    o.op = settings.op;
    o.variant = settings.variant;
    o.space_path = settings.space;
    if (!o.space_path.empty() && is_t1_file(o.space_path))
        throw Error(ErrorCategory::bad_input,
                    "a T1 space's kernel takes its parameters as macros: it has no ahead-of-time header", o.space_path);
    if (o.variant.empty() && !o.space_path.empty()) o.variant = Space::load(o.space_path).variant();
    const Store store = Store::open(p.db, Store::Mode::read_only);
    if (o.variant.empty()) {
        std::vector<std::string> variants;
        for (const TunedOp& t : store.tuned_ops())
            if (t.op == o.op && std::find(variants.begin(), variants.end(), t.variant) == variants.end())
                variants.push_back(t.variant);
        if (variants.size() != 1)
            throw Error(ErrorCategory::bad_input,
                        variants.empty() ? fmt::format("{} holds no tuned results of op {}", p.db, o.op)
                                         : fmt::format("op {} has the variants {} in {}: name one", o.op,
                                                       fmt::join(variants, ", "), p.db),
                        "variant");
        o.variant = variants.front();
    }
    o.root = p.root;
    o.devices = settings.devices;
    o.out_dir = settings.out_dir;
    const ExportResult r = ktune::export_header(store, o);
    return ExportedHeader{r.header_path, r.function, r.device_keys, r.entries, r.configs, r.warnings};
}

}  // namespace ktune::api
