#include "tuner/export/export_header.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "tuner/export/cpp_expression.hpp"
#include "tuner/export/header_text.hpp"
#include "tuner/export/op_binding.hpp"
#include "tuner/export/space_text.hpp"

namespace ktune {
namespace fs = std::filesystem;

namespace {

constexpr Dtype k_dtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};  // the header's Dtype enum order

struct ConfigInstance {
    Dtype dtype = Dtype::fp32;
    std::size_t alternative = 0;  // index into Model::kernels
    Config config;
    std::string kernel;  // the template instance: "rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>"
};

struct Entry {
    Problem problem;
    std::vector<std::int64_t> shape;  // the binding's axes, in its order
    std::size_t config = 0;           // index into Model::configs
    double p50_us = 0;
};

struct Device {
    DeviceInfo info;
    std::string source_hash;
    std::vector<Entry> entries;
};

// One TMA descriptor (kernel.tensor_maps) a configuration's kernel takes after the op's arguments, as its launch
// encodes it.
struct TensorMapCall {
    std::string buffer;            // the op spec's buffer: the dispatcher's pointer parameter of that name
    std::size_t buffer_index = 0;  // its index among the table's buffers (buffer_elements)
    std::string data_type;         // "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
    int elem_bytes = 0;
    std::vector<std::string> extents;  // C++ (double) over the dispatcher's `shape`, outermost first
    std::vector<std::int64_t> box;     // outermost first: the configuration's numbers
    std::string swizzle;               // "CU_TENSOR_MAP_SWIZZLE_128B"
    std::string what;                  // for the comment: "x [R, C], swizzle 128"
};

struct Model {
    std::shared_ptr<const OpBinding> binding;
    std::vector<const SearchSpace*> kernels;  // the space's kernels: one, or its alternatives in file order
    std::string stem;                         // "rmsnorm_fwd": the dispatcher's name
    std::vector<ConfigInstance> configs;
    std::vector<Device> devices;
    std::map<Dtype, std::size_t> default_config;
    std::vector<std::string> warnings;
    std::vector<std::vector<TensorMapCall>> tensor_maps;  // per configuration; empty for a kernel without any
};

std::string identifier(const std::string& s) {
    std::string out;
    for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
}

// A C++ string literal holding exactly `s`. Octal escapes (always three digits) cannot swallow the characters after
// them as \x escapes do; only printable ASCII is written as itself, so a database string never ends the literal,
// starts a new line or forms a trigraph.
std::string cpp_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\' || c == '?')
            out += '\\', out += c;
        else if (u < 0x20 || u > 0x7e)
            out += fmt::format("\\{:03o}", u);
        else
            out += c;
    }
    return out + "\"";
}

// Text for a // comment: printable ASCII but the backslash (a trailing one would continue the comment onto the next
// line); anything else, newlines included, as a visible \xNN.
std::string comment_text(std::string_view s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e || c == '\\')
            out += fmt::format("\\x{:02x}", u);
        else
            out += c;
    }
    return out;
}

// The kernel source as it goes into #include "...": a relative path of plain characters, since a quoted include has
// no escapes.
std::string include_path(const std::string& path, const std::string& where) {
    const bool plain = !path.empty() && path.front() != '/' && std::all_of(path.begin(), path.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
    });
    bool dotdot = false;
    for (const auto& part : fs::path(path)) dotdot = dotdot || part == "..";
    if (!plain || dotdot)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("kernel source '{}' cannot be #included by the header: it must be a relative path of "
                                "letters, digits and _ - . /",
                                comment_text(path.substr(0, 120))),
                    where);
    return path;
}

// A template instance name as it goes into code ("rmsnorm_fwd<__nv_bfloat16, 256, 8>"): identifiers, numbers, and
// the punctuation of template arguments, nothing that could end a statement or open a comment.
std::string instance_name(const std::string& name, const std::string& where) {
    const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("_:<>, -").find(c) != std::string_view::npos;
    });
    if (!plain)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("kernel instance '{}' is not a plain template name (identifiers, numbers, < > , : -)",
                                comment_text(name.substr(0, 120))),
                    where);
    return name;
}

std::string dtype_enum(Dtype d) { return fmt::format("Dtype::{}", dtype_name(d)); }

std::vector<std::int64_t> bound_shape(const Problem& p, const OpBinding& b, const std::string& where) {
    for (const auto& [name, value] : p.shape) {
        const bool known =
            std::any_of(b.axes.begin(), b.axes.end(), [&](const AxisBinding& a) { return a.axis == name; });
        if (!known)
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("problem {} has axis {}, which the {} dispatcher does not take", p.key(), name, b.op),
                where);
    }
    std::vector<std::int64_t> shape;
    for (const AxisBinding& a : b.axes) {
        std::optional<std::int64_t> v = lookup(p.shape, a.axis);
        if (!v && !a.default_axis.empty()) v = lookup(p.shape, a.default_axis);
        if (!v) throw Error(ErrorCategory::bad_input, fmt::format("problem {} lacks axis {}", p.key(), a.axis), where);
        if (*v < 1) throw Error(ErrorCategory::bad_input, fmt::format("problem {} has {} < 1", p.key(), a.axis), where);
        shape.push_back(*v);
    }
    return shape;
}

// A declared op's problem as the dispatcher's shape: every axis in the op's order, optional ones at their defaults.
std::vector<std::int64_t> declared_shape(const Problem& p, const DeclaredOp& op, const std::string& where) {
    std::map<std::string, double> vars;
    try {
        vars = op.variables(p);
    } catch (const Error& e) {
        throw Error(ErrorCategory::bad_input, e.what(), where);
    }
    std::vector<std::int64_t> shape;
    for (const OpAxis& a : op.axes()) {
        const auto v = static_cast<std::int64_t>(vars.at(a.name));
        if (v < 1) throw Error(ErrorCategory::bad_input, fmt::format("problem {} has {} < 1", p.key(), a.name), where);
        shape.push_back(v);
    }
    return shape;
}

// The axis an optional axis defaults to (its own index for a required axis).
std::size_t default_index(const OpBinding& b, std::size_t axis) {
    for (std::size_t i = 0; i < b.axes.size(); ++i)
        if (!b.axes[axis].default_axis.empty() && b.axes[i].axis == b.axes[axis].default_axis) return i;
    return axis;
}

// One coordinate of a shape's log point, as the header's log_point() computes it.
double log_coordinate(const OpBinding& b, const std::vector<std::int64_t>& shape, std::size_t axis) {
    const std::size_t d = default_index(b, axis);
    const double v = std::log(static_cast<double>(shape[axis]));
    return d == axis ? v : v - std::log(static_cast<double>(shape[d]));
}

bool device_selected(const std::string& key, const std::vector<std::string>& filter) {
    if (filter.empty()) return true;
    return std::any_of(filter.begin(), filter.end(),
                       [&](const std::string& f) { return key == f || key.find(f) != std::string::npos; });
}

// The alternative of a stored result: its index among the space's kernels.
std::size_t alternative_of(const ResultRecord& r, const std::vector<const SearchSpace*>& kernels,
                           const std::string& where) {
    for (std::size_t i = 0; i < kernels.size(); ++i)
        if (kernels[i]->alternative() == r.kernel.alternative) return i;
    std::string known;
    for (const SearchSpace* k : kernels) known += (known.empty() ? "" : ", ") + k->alternative();
    throw Error(ErrorCategory::bad_input,
                fmt::format("the stored result names kernel '{}', which the search space {} does not have ({})",
                            comment_text(r.kernel.alternative), kernels.front()->file(),
                            known.empty() ? "one kernel, no alternatives" : known),
                where);
}

// A source hash as messages show it: enough to tell two apart.
std::string short_hash(const std::string& hash) { return hash.substr(0, 8); }

// One warning per alternative and device whose valid results were passed over because a newer source of it was
// measured since: the header never ranks them, so the alternative may lose problems it won before its edit. The first
// few problems are named with their counts, so a long tuning does not flood the output.
// `device` is how they name the device ("" for none); `stale` is in Store::stale_results' order.
std::vector<std::string> stale_warnings(const std::string& what, const std::string& device,
                                        const std::vector<StaleResults>& stale) {
    constexpr std::size_t k_listed = 3;
    std::vector<std::string> out;
    for (auto group = stale.begin(); group != stale.end();) {
        const auto end = std::find_if(group, stale.end(),
                                      [&](const StaleResults& s) { return s.alternative != group->alternative; });
        std::vector<std::pair<Problem, std::int64_t>> problems;  // in the store's problem order
        std::vector<std::string> sources;
        std::int64_t total = 0;
        for (auto it = group; it != end; ++it) {
            if (problems.empty() || problems.back().first != it->problem) problems.emplace_back(it->problem, 0);
            problems.back().second += it->results;
            total += it->results;
            if (std::find(sources.begin(), sources.end(), it->source_hash) == sources.end())
                sources.push_back(it->source_hash);
        }
        std::string where = problems.size() == 1 ? " " + problems.front().first.key() : "";
        if (!device.empty()) where += " on " + device;
        std::string at;
        if (problems.size() > 1) {
            std::vector<std::string> listed;
            for (std::size_t i = 0; i < problems.size() && i < k_listed; ++i)
                listed.push_back(fmt::format("{}: {}", problems[i].first.key(), problems[i].second));
            if (problems.size() > k_listed) listed.push_back(fmt::format("{} more", problems.size() - k_listed));
            at = fmt::format(" at {} problems ({})", problems.size(), fmt::join(listed, "; "));
        }
        std::vector<std::string> shown;
        for (std::size_t i = 0; i < sources.size() && i < k_listed; ++i) shown.push_back(short_hash(sources[i]));
        if (sources.size() > k_listed) shown.push_back("...");
        const std::string kernel = group->alternative.empty() ? "the kernel" : group->alternative;
        const std::string older =
            sources.size() == 1 ? "an older source" : fmt::format("{} older sources", sources.size());
        out.push_back(
            fmt::format("{}{}: passed over {} result{} of {}{} from {} ({}; newest {}): re-tune {} to rank "
                        "it there again",
                        what, where, total, total == 1 ? "" : "s", kernel, at, older, fmt::join(shown, ", "),
                        short_hash(group->ranked_hash), kernel));
        group = end;
    }
    return out;
}

Model collect(const Store& store, const std::vector<const SearchSpace*>& kernels, const ExportOptions& o) {
    const SearchSpace& space = *kernels.front();
    Model m;
    m.kernels = kernels;
    // A hand-written binding stays where there is one: rmsnorm's takes eps at run time, where its op spec fixes it.
    if (const OpBinding* hand = find_op_binding(space.op(), space.variant())) {
        OpBinding b = *hand;
        // Its buffers, as its op spec declares them, for callers that allocate them (buffer_elements()).
        if (space.declared_op() != nullptr) {
            const OpBinding derived = derive_op_binding(*space.declared_op(), space.file() + ": op_spec");
            b.lets = derived.lets;
            b.buffers = derived.buffers;
        }
        m.binding = std::make_shared<OpBinding>(std::move(b));
    } else if (space.declared_op() != nullptr)
        m.binding = std::make_shared<OpBinding>(derive_op_binding(*space.declared_op(), space.file() + ": op_spec"));
    if (m.binding == nullptr) {
        std::string known;
        for (const std::string& s : exportable_ops()) known += (known.empty() ? "" : ", ") + s;
        throw Error(ErrorCategory::bad_input,
                    fmt::format("export-header cannot export {}/{}: it has no op spec (op_spec:) to derive the "
                                "dispatcher from, and no hand-written one ({})",
                                space.op(), space.variant(), known),
                    "--op");
    }
    m.stem = identifier(space.op() + "_" + space.variant());

    std::vector<std::string> tuned;
    for (const TunedOp& t : store.tuned_ops())
        if (t.op == space.op() && t.variant == space.variant()) tuned.push_back(t.device_key);
    for (const std::string& f : o.devices)
        if (std::none_of(tuned.begin(), tuned.end(), [&](const std::string& k) { return device_selected(k, {f}); }))
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("no device with tuned results for {}/{} matches '{}'", space.op(), space.variant(), f),
                "--devices");

    std::map<std::pair<Dtype, std::string>, std::size_t> config_index;
    const bool declared = find_op_binding(space.op(), space.variant()) == nullptr;  // the binding is derived
    struct StaleOnDevice {
        std::string key, name;
        std::vector<StaleResults> results;
    };
    std::vector<StaleOnDevice> stale;
    std::vector<std::string> described;  // the names of the selected devices with a description
    for (const std::string& key : tuned) {
        if (!device_selected(key, o.devices)) continue;
        std::optional<DeviceInfo> info = store.device(key);
        // A result recorded before its device was described leaves a bare row: nothing a user's device can match.
        if (!info || info->name.empty() || info->cc_major == 0) {
            m.warnings.push_back(fmt::format("device '{}' has results but no device description: left out", key));
            continue;
        }
        Device d;
        d.info = *info;
        for (const ResultRecord& r : store.best(space.op(), space.variant(), key)) {
            const std::string where = fmt::format("{} ({} on {})", store.path(), r.problem.key(), key);
            Entry e;
            e.problem = r.problem;
            e.shape = declared ? declared_shape(r.problem, *space.declared_op(), where)
                               : bound_shape(r.problem, *m.binding, where);
            e.p50_us = r.measurement.stats.p50;
            const std::size_t alt = alternative_of(r, kernels, where);
            const SearchSpace& kernel = *kernels[alt];
            Config c = kernel.parse_config(r.config_key, where);
            auto [it, added] =
                config_index.try_emplace({r.problem.dtype, kernel.alternative() + ":" + c.key()}, m.configs.size());
            if (added)
                m.configs.push_back(
                    {r.problem.dtype, alt, c, instance_name(kernel.kernel_name(c, r.problem.dtype), where)});
            e.config = it->second;
            d.source_hash = r.kernel.source_hash;
            d.entries.push_back(std::move(e));
        }
        // Passed over by design (best() ranks each alternative's newest source), but said, so that an edited
        // kernel's earlier wins do not vanish from the header unnoticed.
        std::vector<StaleResults> stale_here = store.stale_results(space.op(), space.variant(), key);
        if (!stale_here.empty()) stale.push_back({key, d.info.name, std::move(stale_here)});
        described.push_back(d.info.name);
        if (!d.entries.empty()) m.devices.push_back(std::move(d));
    }
    std::int64_t stale_total = 0;
    for (const StaleOnDevice& s : stale) {
        // A device is named only when several are exported, by its key when another has the same name.
        std::string device;
        if (described.size() > 1) device = std::count(described.begin(), described.end(), s.name) == 1 ? s.name : s.key;
        for (const StaleResults& r : s.results) stale_total += r.results;
        for (std::string& w : stale_warnings(space.op() + "/" + space.variant(), device, s.results))
            m.warnings.push_back(std::move(w));
    }
    if (m.devices.empty())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("no tuned results for {}/{} in {}{}{}", space.op(), space.variant(), store.path(),
                                o.devices.empty() ? "" : " on the selected devices",
                                stale_total == 0 ? ""
                                                 : fmt::format(" ({} results of older kernel sources passed over: "
                                                               "re-tune)",
                                                               stale_total)),
                    "--op");

    // Configurations in (dtype, parameter values) order, so the header does not depend on the store's row order.
    std::vector<std::size_t> order(m.configs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto& ca = m.configs[a];
        const auto& cb = m.configs[b];
        if (ca.dtype != cb.dtype) return ca.dtype < cb.dtype;
        if (ca.alternative != cb.alternative) return ca.alternative < cb.alternative;
        return ca.config.values < cb.config.values;
    });
    std::vector<std::size_t> new_index(order.size());
    std::vector<ConfigInstance> sorted;
    for (std::size_t i = 0; i < order.size(); ++i) {
        new_index[order[i]] = i;
        sorted.push_back(m.configs[order[i]]);
    }
    m.configs = std::move(sorted);
    for (Device& d : m.devices)
        for (Entry& e : d.entries) e.config = new_index[e.config];

    // The most thoroughly tuned device first among those of one level; then by key.
    std::stable_sort(m.devices.begin(), m.devices.end(), [](const Device& a, const Device& b) {
        if (a.entries.size() != b.entries.size()) return a.entries.size() > b.entries.size();
        return a.info.key < b.info.key;
    });

    // Default per dtype: the configuration that is best for the most tuned problems over all devices (ties: the
    // earlier configuration).
    for (Dtype dt : k_dtypes) {
        std::map<std::size_t, int> wins;
        for (const Device& d : m.devices)
            for (const Entry& e : d.entries)
                if (e.problem.dtype == dt) ++wins[e.config];
        std::optional<std::size_t> best;
        for (const auto& [config, count] : wins)
            if (!best || count > wins[*best]) best = config;
        if (best) m.default_config[dt] = *best;
    }
    return m;
}

// Checks that the launch texts read from the file are the expressions the space evaluates: their values must agree
// with SearchSpace::launch() for every exported (configuration, problem).
void check_launch_texts(const std::vector<export_detail::LaunchTexts>& launches, const Model& m) {
    for (const Device& d : m.devices)
        for (const Entry& e : d.entries) {
            const std::size_t alt = m.configs[e.config].alternative;
            const export_detail::LaunchTexts& t = launches[alt];
            const SearchSpace& space = *m.kernels[alt];
            std::vector<Expression> grid, block;
            for (const auto& s : t.grid) grid.emplace_back(s, t.where);
            for (const auto& s : t.block) block.emplace_back(s, t.where);
            const Expression shared(t.shared_bytes, t.where);
            const Config& c = m.configs[e.config].config;
            // A compile-only sweep (no GPU) stores its target without an SM count.
            const int sms = d.info.sm_count > 0 ? d.info.sm_count : SearchSpace::nominal_sm_count;
            const LaunchGeometry g = space.launch(c, e.problem, sms);
            const auto vars = space.launch_variables(c, e.problem, sms);
            bool same = shared.evaluate_int(vars) == g.shared_bytes;
            for (std::size_t i = 0; i < grid.size(); ++i) same = same && grid[i].evaluate_int(vars) == g.grid[i];
            for (std::size_t i = 0; i < block.size(); ++i) same = same && block[i].evaluate_int(vars) == g.block[i];
            if (!same)
                throw Error(ErrorCategory::internal,
                            fmt::format("the launch expressions read from {} disagree with the search space for {} {}",
                                        space.file(), c.key(), e.problem.key()),
                            t.where);
        }
}

CppExpressionNames names_for(const ConfigInstance& ci, const Model& m) {
    const OpBinding& b = *m.binding;
    CppExpressionNames n;
    for (const auto& [name, value] : ci.config.values) n.constants[name] = static_cast<double>(value);
    // A named choice is a constant in expressions ("LOAD == streaming"), its number as the space assigns it.
    for (const SearchSpace* k : m.kernels)
        for (const ParameterSpec& p : k->parameters())
            if (p.kind == ParameterKind::choice)
                for (std::size_t i = 0; i < p.labels.size(); ++i)
                    n.constants[p.labels[i]] = static_cast<double>(p.values[i]);
    n.constants["DTYPE_BYTES"] = dtype_bytes(ci.dtype);
    n.variables[SearchSpace::sm_count_variable] =
        "static_cast<double>(sm_count)";  // geometry()'s parameter: the launch grid may read it
    n.constants["true"] = 1;              // a bool parameter's value is already 0 / 1
    n.constants["false"] = 0;
    for (std::size_t i = 0; i < b.axes.size(); ++i)
        n.variables[b.axes[i].axis] = fmt::format("static_cast<double>(shape[{}])", i);
    n.helper_prefix = "detail::";
    return n;
}

std::string tensor_map_data_type(ElemType t) {
    switch (t) {
        case ElemType::f32:
            return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
        case ElemType::f16:
            return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
        case ElemType::bf16:
            return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
        case ElemType::i32:
            return "CU_TENSOR_MAP_DATA_TYPE_INT32";
        case ElemType::i64:
            return "CU_TENSOR_MAP_DATA_TYPE_INT64";
        case ElemType::i8:
        case ElemType::u8:
            return "CU_TENSOR_MAP_DATA_TYPE_UINT8";  // TMA copies bytes: signedness is the kernel's (as the worker)
    }
    return "CU_TENSOR_MAP_DATA_TYPE_UINT8";
}

// The descriptors of every configuration whose kernel takes some (kernel.tensor_maps): the extents translated to C++
// over the dispatcher's shape, the element type of the instance's dtype, the box as the search space evaluates and
// checks it for the configuration's tuned problems (numbers: one box per configuration).
std::vector<std::vector<TensorMapCall>> plan_tensor_maps(const Model& m) {
    std::vector<std::vector<TensorMapCall>> out(m.configs.size());
    for (std::size_t i = 0; i < m.configs.size(); ++i) {
        const ConfigInstance& ci = m.configs[i];
        const SearchSpace& k = *m.kernels[ci.alternative];
        if (k.tensor_maps().empty()) continue;
        const std::string where = k.file() + ": kernel.tensor_maps";
        if (find_op_binding(k.op(), k.variant()) != nullptr || k.declared_op() == nullptr)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}/{} has a hand-written dispatcher: kernels with tensor maps are exported "
                                    "through the dispatcher derived from the op spec only",
                                    k.op(), k.variant()),
                        where);
        std::optional<std::vector<TensorMapValue>> values;
        for (const Device& d : m.devices)
            for (const Entry& e : d.entries) {
                if (e.config != i) continue;
                std::vector<TensorMapValue> v = k.tensor_map_values(ci.config, e.problem);  // throws when invalid
                if (!values) {
                    values = std::move(v);
                    continue;
                }
                for (std::size_t j = 0; j < v.size(); ++j)
                    if (v[j].box != (*values)[j].box)
                        throw Error(ErrorCategory::bad_input,
                                    fmt::format("the box of the tensor map over {} differs between problems of {}: "
                                                "the exported dispatcher takes one box per configuration (a box of "
                                                "parameters, not of problem axes)",
                                                v[j].buffer, ci.config.key()),
                                    where);
            }
        if (!values) continue;  // a configuration is exported for the problems it won: never here
        const std::vector<DeclaredOp::BufferDeclaration> declarations = k.declared_op()->buffer_declarations();
        const CppExpressionNames names = names_for(ci, m);
        for (std::size_t j = 0; j < k.tensor_maps().size(); ++j) {
            const TensorMapSpec& spec = k.tensor_maps()[j];
            TensorMapCall call;
            call.buffer = spec.buffer;
            const auto& buffers = m.binding->buffers;
            const auto b = std::find_if(buffers.begin(), buffers.end(),
                                        [&](const OpBinding::Buffer& x) { return x.name == spec.buffer; });
            const auto d = std::find_if(declarations.begin(), declarations.end(),
                                        [&](const DeclaredOp::BufferDeclaration& x) { return x.name == spec.buffer; });
            if (b == buffers.end() || d == declarations.end())
                throw Error(ErrorCategory::bad_input,
                            fmt::format("the tensor map over {} views a buffer that the kernel does not take among "
                                        "the op's arguments: the dispatcher has no pointer for it",
                                        spec.buffer),
                            spec.where);
            call.buffer_index = static_cast<std::size_t>(b - buffers.begin());
            const auto type = d->types.find(ci.dtype);
            if (type == d->types.end())
                throw Error(
                    ErrorCategory::bad_input,
                    fmt::format("the op spec gives buffer {} no element type at {}", spec.buffer, dtype_name(ci.dtype)),
                    spec.where);
            call.data_type = tensor_map_data_type(type->second);
            call.elem_bytes = elem_bytes(type->second);
            for (const Expression& e : spec.shape)
                call.extents.push_back(expression_to_cpp(e.text(), names, spec.where));
            call.box = (*values)[j].box;
            call.swizzle = spec.swizzle == 0 ? "CU_TENSOR_MAP_SWIZZLE_NONE"
                                             : fmt::format("CU_TENSOR_MAP_SWIZZLE_{}B", spec.swizzle);
            std::string shape;
            for (const Expression& e : spec.shape) shape += (shape.empty() ? "" : ", ") + e.text();
            call.what = fmt::format("{} [{}], swizzle {}", spec.buffer, shape, spec.swizzle);
            out[i].push_back(std::move(call));
        }
    }
    return out;
}

bool has_tensor_maps(const Model& m) {
    return std::any_of(m.tensor_maps.begin(), m.tensor_maps.end(),
                       [](const std::vector<TensorMapCall>& maps) { return !maps.empty(); });
}

class Writer {
public:
    void line(const std::string& s = {}) { m_text += s + "\n"; }
    template <typename... A>
    void linef(fmt::format_string<A...> f, A&&... a) {
        line(fmt::format(f, std::forward<A>(a)...));
    }
    void raw(std::string_view s) { m_text += s; }
    std::string take() { return std::move(m_text); }

private:
    std::string m_text;
};

// The kernel arguments of one dtype's instance, "{T}" replaced by its element type.
std::string call_arguments(const Model& m, Dtype dtype) {
    const OpBinding& b = *m.binding;
    const SearchSpace& space = *m.kernels.front();
    std::string args = b.call_arguments;
    if (!b.call_arguments_by_dtype.empty()) {
        const auto it = b.call_arguments_by_dtype.find(dtype);
        if (it == b.call_arguments_by_dtype.end())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{}/{} was tuned at {}, for which its op spec names no element type of some buffer",
                                    space.op(), space.variant(), dtype_name(dtype)),
                        space.file() + ": op_spec");
        args = it->second;
    }
    const std::string type(dtype_cpp_type(dtype));
    for (std::size_t p = args.find("{T}"); p != std::string::npos; p = args.find("{T}", p + type.size()))
        args.replace(p, 3, type);
    return args;
}

// One `case` of a launch switch: the instance, its shared-memory opt-in, the launch and its error into `err`. A kernel
// that waits in-kernel for the one before it (kernel.programmatic_launch) launches with the programmatic stream
// serialization attribute where detail::programmatic_launch() allows it. A kernel that takes TMA descriptors
// (kernel.tensor_maps) gets them encoded first, for this call's pointers and shape, after the op's arguments; a
// descriptor that cannot be encoded returns its status before anything is launched.
void write_launch_case(Writer& w, const std::string& label, const std::string& kernel, std::string args,
                       bool programmatic, const std::vector<TensorMapCall>& maps = {}, const std::string& table = {}) {
    w.linef("    {}: {{", label);
    if (!maps.empty()) {
        w.linef("        detail::TensorMapArg ktune_maps[{}];", maps.size());
        w.line("        int ktune_driver_error = 0;");
        w.line("        Status ktune_status = Status::ok;");
    }
    for (std::size_t i = 0; i < maps.size(); ++i) {
        const TensorMapCall& t = maps[i];
        std::string extents, box;
        for (const std::string& e : t.extents) extents += (extents.empty() ? "" : ", ") + e;
        for (const std::int64_t b : t.box) box += fmt::format("{}{}u", box.empty() ? "" : ", ", b);
        w.linef("        // The tensor map over {}", comment_text(t.what));
        w.linef("        const double ktune_extents{}[] = {{{}}};", i, extents);
        w.linef("        const unsigned ktune_box{}[] = {{{}}};", i, box);
        w.linef(
            "        ktune_status = detail::encode_tensor_map(&ktune_maps[{}], {}, {}, {}, {}, ktune_extents{}, "
            "ktune_box{},",
            i, t.data_type, t.elem_bytes, t.buffer, t.extents.size(), i, i);
        w.linef(
            "                                                {}, {}::buffer_elements({}, shape, dtype), "
            "&ktune_driver_error);",
            t.swizzle, table, t.buffer_index);
        w.line(
            "        if (ktune_status != Status::ok) return detail::tensor_map_status(ktune_status, "
            "ktune_driver_error, choice);");
        args += fmt::format(", ktune_maps[{}]", i);
    }
    w.linef("        auto* kernel = &::{};", kernel);
    w.line("        static const bool ktune_clusters = detail::allow_large_clusters(kernel);");
    w.line("        (void)ktune_clusters;");
    w.line("        if (g.shared_bytes > 48u * 1024u)");
    w.line("            err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,");
    w.line("                                       static_cast<int>(g.shared_bytes));");
    w.line("        if (err == cudaSuccess) {");
    if (programmatic) {
        w.line("            cudaLaunchAttribute attribute = {};");
        w.line("            attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;");
        w.line("            attribute.val.programmaticStreamSerializationAllowed = 1;");
        w.line("            cudaLaunchConfig_t launch = {};");
        w.line("            launch.gridDim = grid;");
        w.line("            launch.blockDim = block;");
        w.line("            launch.dynamicSmemBytes = g.shared_bytes;");
        w.line("            launch.stream = stream;");
        w.line("            launch.attrs = &attribute;");
        w.line("            launch.numAttrs = detail::programmatic_launch(device) ? 1 : 0;");
        w.linef("            err = cudaLaunchKernelEx(&launch, kernel, {});", args);
    } else {
        w.linef("            kernel<<<grid, block, g.shared_bytes, stream>>>({});", args);
        w.line("            err = cudaGetLastError();");
    }
    w.line("        }");
    w.line("        break;");
    w.line("    }");
}

// The dtypes the header has configurations for, in the Dtype enum's order.
std::vector<Dtype> exported_dtypes(const Model& m) {
    std::vector<Dtype> out;
    for (Dtype dt : k_dtypes)
        if (std::any_of(m.configs.begin(), m.configs.end(), [&](const ConfigInstance& c) { return c.dtype == dt; }))
            out.push_back(dt);
    return out;
}

// Inside the table: the op spec's named values and buffers (what a caller allocates and how the tuner fills them),
// the tolerances the tuner validated with, and the reference kernel's launch geometry.
void render_buffers(Writer& w, const Model& m, const export_detail::LaunchTexts& reference_launch) {
    const OpBinding& b = *m.binding;
    const SearchSpace& space = *m.kernels.front();
    if (!b.lets.empty()) {
        std::string names;
        for (const OpBinding::Let& l : b.lets) names += (names.empty() ? "" : ", ") + cpp_string(l.name);
        w.line("// The op spec's named values (let:), in order, for a shape and element size; false when one is not a");
        w.line("// number (the shape fails the op's checks).");
        w.linef("inline constexpr int let_count = {};", b.lets.size());
        w.linef("inline constexpr const char* let_names[let_count] = {{{}}};", names);
        w.line("inline bool let_values(const long long* shape, int elem_bytes, double* out) {");
        w.line("    (void)shape;");
        w.line("    (void)elem_bytes;");
        for (std::size_t i = 0; i < b.lets.size(); ++i) w.linef("    out[{}] = {};", i, b.lets[i].cpp);
        w.line("    for (int i = 0; i < let_count; ++i)");
        w.line("        if (std::isnan(out[i])) return false;");
        w.line("    return true;");
        w.line("}");
        w.line();
    }
    if (!b.buffers.empty()) {
        std::string names, roles, types;
        for (const OpBinding::Buffer& buf : b.buffers) {
            names += (names.empty() ? "" : ", ") + cpp_string(buf.name);
            roles += fmt::format("{}BufferRole::{}", roles.empty() ? "" : ", ", buffer_role_name(buf.role));
            std::string per;
            for (Dtype dt : k_dtypes) {
                const auto it = buf.types.find(dt);
                per += (per.empty() ? "" : ", ") + (it == buf.types.end()
                                                        ? std::string("nullptr")
                                                        : cpp_string(std::string(elem_wire_name(it->second))));
            }
            types += fmt::format("{}{{{}}}", types.empty() ? "" : ", ", per);
        }
        w.line(
            "// The op's buffers, in the order of the dispatcher's pointer parameters, and per dtype (fp32, fp16, "
            "bf16)");
        w.line("// the element type of each (f32 f16 bf16 i32 i64 i8 u8; nullptr: none for that dtype).");
        w.linef("inline constexpr int buffer_count = {};", b.buffers.size());
        w.linef("inline constexpr const char* buffer_names[buffer_count] = {{{}}};", names);
        w.linef("inline constexpr BufferRole buffer_roles[buffer_count] = {{{}}};", roles);
        w.linef("inline constexpr const char* buffer_types[buffer_count][3] = {{{}}};", types);
        w.line();
        const auto prologue = [&](const char* fail) {
            w.line("    const int elem_bytes = dtype_bytes(dtype);");
            w.linef("    if (elem_bytes == 0 || shape == nullptr) return {};", fail);
            if (!b.shape_checks.empty())
                w.linef("    if (failed_check(shape, elem_bytes) != nullptr) return {};", fail);
            if (!b.lets.empty()) {
                w.line("    double lets[let_count];");
                w.linef("    if (!let_values(shape, elem_bytes, lets)) return {};", fail);
            }
        };
        w.line(
            "// Elements of a buffer for a shape (in the order of axis_names, optional axes included) and dtype: what "
            "a");
        w.line("// caller allocates. -1 when the shape fails the op's checks.");
        w.line("inline long long buffer_elements(int buffer, const long long* shape, Dtype dtype) {");
        prologue("-1");
        w.line("    double v = detail::ex_nan();");
        w.line("    switch (buffer) {");
        for (std::size_t i = 0; i < b.buffers.size(); ++i)
            w.linef("    case {}: v = {}; break;", i, b.buffers[i].elements);
        w.line("    default: return -1;");
        w.line("    }");
        w.line("    return detail::ex_integral(v) && v >= 0 ? static_cast<long long>(v) : -1;");
        w.line("}");
        w.line();
        w.line(
            "// The range [lo, hi) the tuner draws an input's (or inout's) elements from, uniformly; [0, 0] for "
            "outputs");
        w.line("// and scratch. False when the shape fails the op's checks.");
        w.line("inline bool buffer_range(int buffer, const long long* shape, Dtype dtype, double* lo, double* hi) {");
        prologue("false");
        w.line("    switch (buffer) {");
        for (std::size_t i = 0; i < b.buffers.size(); ++i)
            w.linef("    case {}: *lo = {}; *hi = {}; break;", i, b.buffers[i].lo, b.buffers[i].hi);
        w.line("    default: return false;");
        w.line("    }");
        w.line("    return !std::isnan(*lo) && !std::isnan(*hi);");
        w.line("}");
        w.line();
        w.line(
            "// A padded batch (the op spec's pad): the buffer starts with [sequences, heads, tokens, token_elements]");
        w.line(
            "// elements, sequences the elements of buffer *lengths (i32, one length per sequence); after filling the");
        w.line(
            "// inputs the tuner sets every token t >= clamp(lengths[b], 0, tokens) of sequence b to NaN, so that a");
        w.line("// kernel reading them fails. False when the buffer has no pad or the shape fails the op's checks.");
        w.line(
            "inline bool buffer_pad(int buffer, const long long* shape, Dtype dtype, int* lengths, long long* heads,");
        w.line("                       long long* tokens, long long* token_elements) {");
        if (std::none_of(b.buffers.begin(), b.buffers.end(),
                         [](const OpBinding::Buffer& x) { return x.pad_lengths >= 0; })) {
            w.line("    (void)buffer;");
            w.line("    (void)shape;");
            w.line("    (void)dtype;");
            w.line("    (void)lengths;");
            w.line("    (void)heads;");
            w.line("    (void)tokens;");
            w.line("    (void)token_elements;");
            w.line("    return false;  // no buffer of this op is padded");
        } else {
            prologue("false");
            w.line("    double h = detail::ex_nan(), t = detail::ex_nan(), e = detail::ex_nan();");
            w.line("    switch (buffer) {");
            for (std::size_t i = 0; i < b.buffers.size(); ++i)
                if (b.buffers[i].pad_lengths >= 0)
                    w.linef("    case {}: *lengths = {}; h = {}; t = {}; e = {}; break;", i, b.buffers[i].pad_lengths,
                            b.buffers[i].pad_heads, b.buffers[i].pad_tokens, b.buffers[i].pad_token_elements);
            w.line("    default: return false;");
            w.line("    }");
            w.line(
                "    if (!detail::ex_integral(h) || !detail::ex_integral(t) || !detail::ex_integral(e)) return false;");
            w.line("    *heads = static_cast<long long>(h);");
            w.line("    *tokens = static_cast<long long>(t);");
            w.line("    *token_elements = static_cast<long long>(e);");
            w.line("    return *heads >= 0 && *tokens >= 0 && *token_elements >= 0;");
        }
        w.line("}");
        w.line();
    }
    std::string tolerances;
    for (Dtype dt : k_dtypes) {
        Tolerance t{0, 0};
        if (std::find(space.dtypes().begin(), space.dtypes().end(), dt) != space.dtypes().end())
            t = space.tolerance(dt);
        tolerances += fmt::format("{}{{{}, {}}}", tolerances.empty() ? "" : ", ", cpp_double_literal(t.rtol),
                                  cpp_double_literal(t.atol));
    }
    w.line("// The tuner validated every configuration against the reference kernel with these tolerances: per dtype");
    w.line("// (fp32, fp16, bf16) {rtol, atol}, an element passing when |out - ref| <= atol + rtol * |ref|.");
    w.linef("inline constexpr double tolerances[3][2] = {{{}}};", tolerances);
    w.line();

    CppExpressionNames n;
    n.helper_prefix = "detail::";
    n.variables["DTYPE_BYTES"] = "static_cast<double>(elem_bytes)";
    for (std::size_t i = 0; i < b.axes.size(); ++i)
        n.variables[b.axes[i].axis] = fmt::format("static_cast<double>(shape[{}])", i);
    static constexpr const char* grid_limit[] = {"2147483647.0", "65535.0", "65535.0"};
    static constexpr const char* block_limit[] = {"1024.0", "1024.0", "64.0"};
    w.line("// The reference kernel's launch geometry (the YAML's reference_launch); false when out of range.");
    w.line("inline bool reference_geometry(const long long* shape, int elem_bytes, detail::Geometry* g) {");
    w.line("    (void)shape;");
    w.line("    (void)elem_bytes;");
    w.line("    *g = detail::Geometry{{1, 1, 1}, {1, 1, 1}, 0};");
    for (std::size_t k = 0; k < reference_launch.grid.size(); ++k)
        w.linef("    g->grid[{}] = detail::ex_dim({}, {});", k,
                expression_to_cpp(reference_launch.grid[k], n, reference_launch.where), grid_limit[k]);
    for (std::size_t k = 0; k < reference_launch.block.size(); ++k)
        w.linef("    g->block[{}] = detail::ex_dim({}, {});", k,
                expression_to_cpp(reference_launch.block[k], n, reference_launch.where), block_limit[k]);
    w.linef("    if (!detail::ex_shared({}, &g->shared_bytes)) return false;",
            expression_to_cpp(reference_launch.shared_bytes, n, reference_launch.where));
    w.line("    for (int i = 0; i < 3; ++i)");
    w.line("        if (g->grid[i] == 0 || g->block[i] == 0) return false;");
    w.line("    return g->block[0] * g->block[1] * g->block[2] <= 1024u;");
    w.line("}");
    w.line();
}

// The reference kernel behind KTUNE_TUNED_WITH_REFERENCE: the dispatcher's checks, then the reference's launch.
void render_reference(Writer& w, const Model& m) {
    const OpBinding& b = *m.binding;
    const SearchSpace& space = *m.kernels.front();
    const std::string table = m.stem + "_table";
    std::string shape_init;
    for (const AxisBinding& a : b.axes) shape_init += (shape_init.empty() ? "" : ", ") + a.cpp;
    w.line();
    w.line("#ifdef KTUNE_TUNED_WITH_REFERENCE");
    w.linef("// The op's reference kernel ({}), what the tuner validated every configuration against, on the",
            comment_text(space.reference_source()));
    w.linef("// dispatcher's arguments: for tests that compare {}() with it ({}::tolerances).", m.stem, table);
    w.linef("inline Status {}_reference(Dtype dtype, {}, cudaStream_t stream = nullptr) {{", m.stem, b.parameters);
    w.linef("    using namespace {};", table);
    w.line("    const int elem_bytes = dtype_bytes(dtype);");
    w.line("    if (elem_bytes == 0) return Status::bad_argument;");
    for (const std::string& c : b.checks) w.linef("    {}", c);
    w.linef("    const long long shape[axis_count] = {{{}}};", shape_init);
    w.line("    detail::Geometry g;");
    w.line("    if (!reference_geometry(shape, elem_bytes, &g)) return Status::bad_launch;");
    w.line("    const dim3 grid(g.grid[0], g.grid[1], g.grid[2]), block(g.block[0], g.block[1], g.block[2]);");
    w.line("    cudaError_t err = cudaSuccess;");
    w.line("    switch (dtype) {");
    for (Dtype dt : exported_dtypes(m))
        write_launch_case(w, "case " + dtype_enum(dt), instance_name(space.reference_name(dt), space.file()),
                          call_arguments(m, dt), false);
    w.line("    default: return Status::unsupported_dtype;");
    w.line("    }");
    w.line("    return err == cudaSuccess ? Status::ok : Status::cuda_error;");
    w.line("}");
    if (!b.generic_call.empty()) {
        w.line();
        w.linef("inline Status {}_reference_launch(Dtype dtype, void* const* buffers, const long long* shape,", m.stem);
        w.line("                                    cudaStream_t stream = nullptr) {");
        w.line("    if (buffers == nullptr || shape == nullptr) return Status::null_pointer;");
        w.linef("    return {}_reference(dtype, {}, stream);", m.stem, b.generic_call);
        w.line("}");
    }
    w.line("#endif  // KTUNE_TUNED_WITH_REFERENCE");
}

std::string render(const Model& m, const std::vector<export_detail::LaunchTexts>& launches,
                   const export_detail::LaunchTexts& reference_launch, const Store& store, const ExportOptions& o) {
    const SearchSpace& space = *m.kernels.front();
    const bool alternatives = !space.alternative().empty();  // each configuration names its kernel
    std::size_t parameter_count = 0;
    for (const SearchSpace* k : m.kernels) parameter_count = std::max(parameter_count, k->parameters().size());
    const OpBinding& b = *m.binding;
    const std::string file_name = "ktune_tuned_" + m.stem + ".hpp";
    const std::string table = m.stem + "_table";
    const std::size_t axes = b.axes.size();
    std::size_t entry_count = 0;
    for (const Device& d : m.devices) entry_count += d.entries.size();

    Writer w;
    w.linef("// {}: tuned configurations of {}/{}, compiled ahead of time.", file_name, space.op(), space.variant());
    w.linef("// GENERATED by `ktune export-header` from {} ({}); do not edit: regenerate.",
            comment_text(fs::path(store.path()).filename().string()),
            comment_text(o.generated_at.empty() ? utc_now_iso() : o.generated_at));
    if (!o.note.empty()) {
        // Wrapped at 120 columns.
        std::string line = "// NOTE:";
        std::size_t start = 0;
        while (start < o.note.size()) {
            std::size_t end = o.note.find(' ', start);
            if (end == std::string::npos) end = o.note.size();
            const std::string word = comment_text(o.note.substr(start, end - start));
            if (line.size() + 1 + word.size() > 120 && line.size() > 9) {
                w.line(line);
                line = "//      ";
            }
            line += " " + word;
            start = end + 1;
        }
        w.line(line);
    }
    if (!alternatives) {
        w.linef("// Kernel {} (search space {}). Tuned devices, in lookup order:", comment_text(space.kernel_source()),
                comment_text(fs::path(space.file()).filename().string()));
    } else {
        w.linef("// Alternative kernels of search space {}, each bucket launching the one that won it:",
                comment_text(fs::path(space.file()).filename().string()));
        for (const SearchSpace* k : m.kernels)
            w.linef("//   {}: {} ({})", comment_text(k->alternative()), comment_text(k->kernel_name_template()),
                    comment_text(k->kernel_source()));
        w.line("// Tuned devices, in lookup order:");
    }
    for (std::size_t i = 0; i < m.devices.size(); ++i)
        w.linef("//   [{}] {}: {} problems, kernel identity {} (sources, name template, L2 state)", i,
                comment_text(m.devices[i].info.key), m.devices[i].entries.size(),
                comment_text(m.devices[i].source_hash.substr(0, 16)));
    const bool arch_specific =
        std::any_of(m.kernels.begin(), m.kernels.end(), [](const SearchSpace* k) { return k->arch_specific(); });
    w.line("//");
    if (arch_specific)
        w.line(
            "// Its kernels use Hopper's arch-specific instructions (wgmma; kernel.arch_specific): compile with "
            "-arch=sm_90a;\n// built for another target they trap when launched.");
    if (has_tensor_maps(m))
        w.line(
            "// Some kernels take TMA descriptors (kernel.tensor_maps): each launch encodes them for its pointers and "
            "shape\n// with the driver's cuTensorMapEncodeTiled, found through the runtime (no -lcuda needed).");
    w.linef("// Use: nvcc -std=c++17 -arch={} -I<ktune root> -I<this folder>, then",
            arch_specific ? "sm_90a" : "sm_90");
    w.line("//   ktune_tuned::DeviceProps props;");
    w.line("//   ktune_tuned::query_device_props(device, &props);  // once");
    w.line("//   ktune_tuned::Choice choice;");
    w.linef("//   ktune_tuned::Status s = ktune_tuned::{}(props, ktune_tuned::Dtype::bf16, ..., stream, &choice);",
            m.stem);
    w.line("//   if (s != ktune_tuned::Status::ok) ... ktune_tuned::status_message(s) ...");
    w.line(
        "// Selection: the first tuned device below that matches at the most specific level (exact device, same chip,");
    w.line(
        "// same architecture) and has an entry for the dtype; in its table the nearest tuned problem (bucket): same");
    w.line(
        "// dtype, smallest sum over the axes of |ln(value / bucket value)| (an optional axis, such as a row stride, "
        "by");
    w.line(
        "// its ratio to the axis it defaults to), ties to the earlier entry, among the buckets whose configuration "
        "the");
    w.line(
        "// YAML's constraints allow for the problem. No matching device: the dtype's default configuration (best for");
    w.line("// the most tuned problems over all devices). Choice says which level was used.");
    w.line(
        "// Define KTUNE_TUNED_HOST_ONLY for the tables and the selection alone (no CUDA), e.g. in host-only tests.");
    w.line("#pragma once");
    w.line("#include <cmath>");
    w.line("#include <cstdint>");
    w.line("#include <limits>");
    w.line("#ifndef KTUNE_TUNED_HOST_ONLY");
    w.line("#include <atomic>");
    w.line("#include <cuda_runtime.h>");
    std::set<std::string> included;
    for (const SearchSpace* k : m.kernels)
        if (included.insert(k->kernel_source()).second)
            w.linef("#include \"{}\"", include_path(k->kernel_source(), k->file() + ": kernel.source"));
    w.line("#endif");
    w.line("#if defined(KTUNE_TUNED_WITH_REFERENCE) && !defined(KTUNE_TUNED_HOST_ONLY)");
    w.linef("#include \"{}\"", include_path(space.reference_source(), space.file() + ": kernel.reference_source"));
    w.line("#endif");
    if (!b.host_header.empty()) w.linef("#include \"{}\"", include_path(b.host_header, "the op's host header"));
    w.line();
    w.raw(export_detail::header_common_text());
    if (has_tensor_maps(m)) {
        w.line();
        w.raw(export_detail::tensor_map_helper_text());
    }
    w.line();
    w.line("namespace ktune_tuned {");
    w.linef("namespace {} {{", table);
    w.line();
    w.linef("inline constexpr const char* op = {};", cpp_string(space.op()));
    w.linef("inline constexpr const char* variant = {};", cpp_string(space.variant()));
    std::string axis_names, param_names;
    if (!alternatives) {
        w.linef("inline constexpr const char* kernel_source = {};", cpp_string(space.kernel_source()));
        for (const ParameterSpec& p : space.parameters())
            param_names += (param_names.empty() ? "" : ", ") + cpp_string(p.name);
    } else {
        std::string names, sources;
        for (const SearchSpace* k : m.kernels) {
            names += (names.empty() ? "" : ", ") + cpp_string(k->alternative());
            sources += (sources.empty() ? "" : ", ") + cpp_string(k->kernel_source());
            std::string own;
            for (std::size_t i = 0; i < parameter_count; ++i)
                own += (i ? ", " : "") + cpp_string(i < k->parameters().size() ? k->parameters()[i].name : "");
            param_names += fmt::format("{}{{{}}}", param_names.empty() ? "" : ", ", own);
        }
        w.linef("inline constexpr int alternative_count = {};", m.kernels.size());
        w.linef("inline constexpr const char* alternative_names[alternative_count] = {{{}}};", names);
        w.linef("inline constexpr const char* kernel_sources[alternative_count] = {{{}}};", sources);
    }
    for (const AxisBinding& a : b.axes) axis_names += (axis_names.empty() ? "" : ", ") + cpp_string(a.axis);
    std::string axis_doc;
    for (const AxisBinding& a : b.axes)
        axis_doc += fmt::format("{}{} = {}{}", axis_doc.empty() ? "" : ", ", a.axis, a.cpp,
                                a.default_axis.empty() ? "" : fmt::format(" (default {})", a.default_axis));
    w.linef("// Shape axes: {}.", axis_doc);
    w.linef("inline constexpr int axis_count = {};", axes);
    w.linef("inline constexpr const char* axis_names[axis_count] = {{{}}};", axis_names);
    if (!alternatives) {
        w.linef("inline constexpr int parameter_count = {};", space.parameters().size());
        w.linef("inline constexpr const char* parameter_names[parameter_count] = {{{}}};", param_names);
    } else {
        w.line("// Per alternative, its parameters (the most any alternative has; \"\" pads).");
        w.linef("inline constexpr int parameter_count = {};", parameter_count);
        w.linef("inline constexpr const char* parameter_names[alternative_count][parameter_count] = {{{}}};",
                param_names);
    }
    w.line();

    w.line("struct Config {");
    w.line("    Dtype dtype;");
    if (alternatives) w.line("    int alternative;  // the kernel: alternative_names[alternative]");
    w.line("    int values[parameter_count];");
    w.line("    const char* key;");
    w.line("    const char* kernel;");
    w.line("};");
    w.linef("inline constexpr int config_count = {};", m.configs.size());
    w.line("inline constexpr Config configs[config_count] = {");
    for (std::size_t i = 0; i < m.configs.size(); ++i) {
        const ConfigInstance& c = m.configs[i];
        std::string values;
        for (const auto& [name, v] : c.config.values) values += (values.empty() ? "" : ", ") + std::to_string(v);
        if (alternatives)
            for (std::size_t k = c.config.values.size(); k < parameter_count; ++k)
                values += values.empty() ? "0" : ", 0";
        w.linef("    /* {} */ {{{}, {}{{{}}}, {}, {}}},", i, dtype_enum(c.dtype),
                alternatives ? std::to_string(c.alternative) + ", " : "", values, cpp_string(c.config.key()),
                cpp_string(c.kernel));
    }
    w.line("};");
    w.line();

    w.line(
        "// One tuned problem (bucket) of one device: its shape, its log point (see log_point), the best configuration "
        "and");
    w.line("// the tuner's p50 in microseconds.");
    w.line("struct Entry {");
    w.line("    Dtype dtype;");
    w.line("    long long shape[axis_count];");
    w.line("    double log_shape[axis_count];");
    w.line("    int config;");
    w.line("    double p50_us;");
    w.line("    const char* problem;");
    w.line("};");
    w.linef("inline constexpr int entry_count = {};", entry_count);
    w.line("inline constexpr Entry entries[entry_count] = {");
    std::size_t index = 0;
    for (std::size_t di = 0; di < m.devices.size(); ++di) {
        w.linef("    // [{}] {}", di, comment_text(m.devices[di].info.key));
        for (const Entry& e : m.devices[di].entries) {
            std::string shape, logs;
            for (std::size_t a = 0; a < axes; ++a) {
                shape += (a ? ", " : "") + std::to_string(e.shape[a]);
                logs += (a ? ", " : "") + cpp_double_literal(log_coordinate(b, e.shape, a));
            }
            w.linef("    /* {} */ {{{}, {{{}}}, {{{}}}, {}, {}, {}}},", index++, dtype_enum(e.problem.dtype), shape,
                    logs, e.config, cpp_double_literal(e.p50_us), cpp_string(e.problem.key()));
        }
    }
    w.line("};");
    w.line();

    w.linef("inline constexpr int device_count = {};", m.devices.size());
    w.line("inline constexpr detail::DeviceRecord devices[device_count] = {");
    index = 0;
    for (const Device& d : m.devices) {
        const DeviceInfo& i = d.info;
        int drv_major = -1, drv_minor = -1;
        if (std::sscanf(i.driver_version.c_str(), "%d.%d", &drv_major, &drv_minor) != 2) drv_major = drv_minor = -1;
        w.linef("    {{{}, {}, {}, {}, {}, {}LL, {}LL, {}, {}, {}, {}, {}, {}}},", cpp_string(i.key),
                cpp_string(i.name), i.cc_major, i.cc_minor, i.sm_count, i.l2_bytes,
                i.memory_bytes / (1024LL * 1024 * 1024), (i.memory_clock_khz + 500) / 1000, i.memory_bus_bits,
                drv_major, drv_minor, index, d.entries.size());
        index += d.entries.size();
    }
    w.line("};");
    w.line();
    std::string defaults;
    for (Dtype dt : k_dtypes) {
        auto it = m.default_config.find(dt);
        defaults += fmt::format("{}{}", defaults.empty() ? "" : ", ",
                                it == m.default_config.end() ? -1 : static_cast<long long>(it->second));
    }
    w.line("// Per dtype (fp32, fp16, bf16): the configuration best for the most tuned problems; -1 when none.");
    w.linef("inline constexpr int default_config[3] = {{{}}};", defaults);
    w.line();

    // Shape-dependent legality: the YAML constraints that read a shape axis. Those on parameters alone held when the
    // configuration was tuned; prune rules are heuristics, not legality, and are left out.
    std::set<std::string> axis_set;
    for (const AxisBinding& a : b.axes) axis_set.insert(a.axis);
    w.line("// True when the YAML's constraints that read the shape hold for this configuration and shape.");
    w.line("inline bool legal(int config, const long long* shape) {");
    w.line("    (void)shape;");
    w.line("    switch (config) {");
    for (std::size_t i = 0; i < m.configs.size(); ++i) {
        std::string conds;
        for (const Expression& c : m.kernels[m.configs[i].alternative]->constraints()) {
            const auto vars = c.variables();
            if (std::none_of(vars.begin(), vars.end(), [&](const std::string& v) { return axis_set.count(v) > 0; }))
                continue;
            conds += fmt::format("{}detail::ex_holds({})", conds.empty() ? "" : " && ",
                                 expression_to_cpp(c.text(), names_for(m.configs[i], m), c.where()));
        }
        if (!conds.empty()) w.linef("    case {}: return {};", i, conds);
    }
    w.line("    default: return config >= 0 && config < config_count;");
    w.line("    }");
    w.line("}");
    w.line();

    static constexpr const char* grid_limit[] = {"2147483647.0", "65535.0", "65535.0"};
    static constexpr const char* block_limit[] = {"1024.0", "1024.0", "64.0"};
    w.line(
        "// The launch geometry of a configuration for a shape (the YAML's launch expressions) on a GPU of sm_count");
    w.line("// streaming multiprocessors (a grid may read them); false when it is out of range.");
    w.line("inline bool geometry(int config, const long long* shape, int sm_count, detail::Geometry* g) {");
    w.line("    (void)shape;");
    w.line("    (void)sm_count;");
    w.line("    *g = detail::Geometry{{1, 1, 1}, {1, 1, 1}, 0};");
    w.line("    switch (config) {");
    for (std::size_t i = 0; i < m.configs.size(); ++i) {
        const CppExpressionNames n = names_for(m.configs[i], m);
        const export_detail::LaunchTexts& launch = launches[m.configs[i].alternative];
        w.linef("    case {}:", i);
        for (std::size_t k = 0; k < launch.grid.size(); ++k)
            w.linef("        g->grid[{}] = detail::ex_dim({}, {});", k,
                    expression_to_cpp(launch.grid[k], n, launch.where), grid_limit[k]);
        for (std::size_t k = 0; k < launch.block.size(); ++k)
            w.linef("        g->block[{}] = detail::ex_dim({}, {});", k,
                    expression_to_cpp(launch.block[k], n, launch.where), block_limit[k]);
        w.linef("        if (!detail::ex_shared({}, &g->shared_bytes)) return false;",
                expression_to_cpp(launch.shared_bytes, n, launch.where));
        w.line("        break;");
    }
    w.line("    default: return false;");
    w.line("    }");
    w.line("    for (int i = 0; i < 3; ++i)");
    w.line("        if (g->grid[i] == 0 || g->block[i] == 0) return false;");
    w.line("    return g->block[0] * g->block[1] * g->block[2] <= 1024u;");
    w.line("}");
    w.line();

    w.line(
        "// Where a shape lies for the distance between shapes: the natural log of each axis; an optional axis that");
    w.line(
        "// defaults to another counts by its ratio to it (a row stride by its padding), so that its default adds "
        "nothing.");
    w.line("inline void log_point(const long long* shape, double* out) {");
    for (std::size_t a = 0; a < axes; ++a) {
        const std::string v = fmt::format("std::log(static_cast<double>(shape[{}] < 1 ? 1 : shape[{}]))", a, a);
        const std::size_t d = default_index(b, a);
        if (d == a)
            w.linef("    out[{}] = {};", a, v);
        else
            w.linef("    out[{}] = {} - std::log(static_cast<double>(shape[{}] < 1 ? 1 : shape[{}]));", a, v, d, d);
    }
    w.line("}");
    w.line();
    w.line(
        "// The entry nearest to `shape` among entries [begin, end) of this dtype whose configuration is legal for "
        "it;");
    w.line("// -1 when none.");
    w.line("inline int nearest(int begin, int end, Dtype dtype, const long long* shape) {");
    w.line("    int best = -1;");
    w.line("    double best_distance = 0;");
    w.line("    double point[axis_count];");
    w.line("    log_point(shape, point);");
    w.line("    for (int i = begin; i < end; ++i) {");
    w.line("        const Entry& e = entries[i];");
    w.line("        if (e.dtype != dtype || !legal(e.config, shape)) continue;");
    w.line("        if (detail::same_shape(e.shape, shape, axis_count)) return i;");
    w.line("        const double d = detail::log_distance(e.log_shape, point, axis_count);");
    w.line("        if (best < 0 || d < best_distance) {");
    w.line("            best = i;");
    w.line("            best_distance = d;");
    w.line("        }");
    w.line("    }");
    w.line("    return best;");
    w.line("}");
    w.line();
    w.line(
        "inline Choice choose(Level level, const char* device_key, int entry, int config, const long long* shape) {");
    w.line("    Choice c;");
    w.line("    c.level = level;");
    w.line("    c.device_key = device_key;");
    w.line("    c.entry = entry;");
    w.line("    c.config = config;");
    w.line("    c.config_key = configs[config].key;");
    w.line("    c.kernel = configs[config].kernel;");
    w.line("    if (entry >= 0) {");
    w.line("        c.exact_bucket = detail::same_shape(entries[entry].shape, shape, axis_count);");
    w.line("        c.tuned_p50_us = entries[entry].p50_us;");
    w.line("    }");
    w.line("    return c;");
    w.line("}");
    w.line();
    w.line("inline bool supports(Dtype dtype) {");
    w.line("    for (const Config& c : configs)");
    w.line("        if (c.dtype == dtype) return true;");
    w.line("    return false;");
    w.line("}");
    w.line();
    if (!b.shape_checks.empty()) {
        w.line(
            "// The op spec's checks, in order: the message of the first that fails for this shape (the axes in the "
            "order");
        w.line("// of axis_names) and element size, or nullptr when all hold.");
        w.line("inline const char* failed_check(const long long* shape, int elem_bytes) {");
        w.line("    (void)shape;");
        w.line("    (void)elem_bytes;");
        for (const OpBinding::ShapeCheck& c : b.shape_checks)
            w.linef("    if (!detail::ex_holds({})) return {};", c.cpp, cpp_string(c.message));
        w.line("    return nullptr;");
        w.line("}");
        w.line();
    }
    render_buffers(w, m, reference_launch);
    w.linef("}}  // namespace {}", table);
    w.line();

    std::string shape_init;
    for (const AxisBinding& a : b.axes) shape_init += (shape_init.empty() ? "" : ", ") + a.cpp;
    w.linef("// Which entry and configuration {}() uses for this device, dtype and shape ({} values, in the order of",
            m.stem, axes);
    w.linef("// {}::axis_names). Host code: no CUDA needed. Choice::config is -1 when nothing fits.", table);
    w.linef("inline Choice {}_select(const DeviceProps& device, Dtype dtype, const long long* shape) {{", m.stem);
    w.linef("    using namespace {};", table);
    w.line("    const int dt = static_cast<int>(dtype);");
    w.line("    if (dt < 0 || dt > 2 || shape == nullptr) return Choice{};");
    w.line("    for (int level = 0; level < 3; ++level)");
    w.line("        for (const detail::DeviceRecord& d : devices) {");
    w.line("            if (!detail::device_matches(d, device, static_cast<Level>(level))) continue;");
    w.line("            const int e = nearest(d.first_entry, d.first_entry + d.entry_count, dtype, shape);");
    w.line("            if (e >= 0) return choose(static_cast<Level>(level), d.key, e, entries[e].config, shape);");
    w.line("        }");
    w.line("    const int k = default_config[dt];");
    w.line("    if (k >= 0 && legal(k, shape)) return choose(Level::default_config, \"\", -1, k, shape);");
    w.line("    // The default is not legal for this shape: the nearest legal bucket of any device.");
    w.line("    const int e = nearest(0, entry_count, dtype, shape);");
    w.line("    if (e >= 0) return choose(Level::default_config, \"\", e, entries[e].config, shape);");
    w.line("    return Choice{};");
    w.line("}");
    w.line();
    w.linef("inline Choice {}_select(const DeviceProps& device, Dtype dtype, {}) {{", m.stem, b.shape_parameters);
    w.linef("    const long long shape[{}::axis_count] = {{{}}};", table, shape_init);
    w.linef("    return {}_select(device, dtype, shape);", m.stem);
    w.line("}");
    w.line();

    w.line("#ifndef KTUNE_TUNED_HOST_ONLY");
    for (const std::string& d : b.doc) w.linef("// {}", comment_text(d));
    w.line(
        "// Validates the arguments, selects the configuration (see the top of this file) and launches it. Writes "
        "what");
    w.line("// it picked to *choice when given. Never faults on bad input: returns a Status instead.");
    w.linef("inline Status {}(const DeviceProps& device, Dtype dtype, {}, cudaStream_t stream = nullptr,", m.stem,
            b.parameters);
    w.line("                   Choice* choice = nullptr) {");
    w.linef("    using namespace {};", table);
    w.line("    if (choice != nullptr) *choice = Choice{};");
    w.line("    const int elem_bytes = dtype_bytes(dtype);");
    w.line("    if (elem_bytes == 0) return Status::bad_argument;");
    for (const std::string& c : b.checks) w.linef("    {}", c);
    w.line("    if (!supports(dtype)) return Status::unsupported_dtype;");
    w.linef("    const long long shape[axis_count] = {{{}}};", shape_init);
    w.linef("    const Choice c = {}_select(device, dtype, shape);", m.stem);
    w.line("    if (choice != nullptr) *choice = c;");
    w.line("    if (c.config < 0) return Status::no_config;");
    w.line("    detail::Geometry g;");
    w.line("    if (!geometry(c.config, shape, device.sm_count, &g)) return Status::bad_launch;");
    w.line("    const dim3 grid(g.grid[0], g.grid[1], g.grid[2]), block(g.block[0], g.block[1], g.block[2]);");
    w.line("    cudaError_t err = cudaSuccess;");
    w.line("    switch (c.config) {");
    for (std::size_t i = 0; i < m.configs.size(); ++i) {
        const std::string args = call_arguments(m, m.configs[i].dtype);
        write_launch_case(w, fmt::format("case {}", i), m.configs[i].kernel, args,
                          m.kernels[m.configs[i].alternative]->programmatic_launch(), m.tensor_maps[i], table);
    }
    w.line("    default: return Status::no_config;");
    w.line("    }");
    w.line("    if (err != cudaSuccess) {");
    w.line("        if (choice != nullptr) choice->cuda_error = static_cast<int>(err);");
    w.line("        return Status::cuda_error;");
    w.line("    }");
    w.line("    return Status::ok;");
    w.line("}");
    if (!b.generic_call.empty()) {
        w.line();
        w.linef("// {}() for a generic caller (a framework binding, a test): the buffers in the order of", m.stem);
        w.linef("// {}::buffer_names, the shape as {}_select() takes it.", table, m.stem);
        w.linef("inline Status {}_launch(const DeviceProps& device, Dtype dtype, void* const* buffers,", m.stem);
        w.line(
            "                          const long long* shape, cudaStream_t stream = nullptr, Choice* choice = "
            "nullptr) {");
        w.line("    if (choice != nullptr) *choice = Choice{};");
        w.line("    if (buffers == nullptr || shape == nullptr) return Status::null_pointer;");
        w.linef("    return {}(device, dtype, {}, stream, choice);", m.stem, b.generic_call);
        w.line("}");
    }
    render_reference(w, m);
    w.line("#endif  // KTUNE_TUNED_HOST_ONLY");
    w.line();
    w.line("}  // namespace ktune_tuned");
    return w.take();
}

}  // namespace

RenderedHeader render_header(const Store& store, const SearchSpace& space, const ExportOptions& options) {
    return render_header(store, std::vector<const SearchSpace*>{&space}, options);
}

RenderedHeader render_header(const Store& store, const std::vector<const SearchSpace*>& kernels,
                             const ExportOptions& options) {
    if (kernels.empty()) throw Error(ErrorCategory::internal, "no kernel to export", "render_header");
    const SearchSpace& space = *kernels.front();
    if (space.is_library())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} is a library baseline ({}): it has no kernel to export, only measurements to "
                                "compare with",
                                space.file(), space.library()),
                    "--op");
    if (!options.op.empty() && (options.op != space.op() || options.variant != space.variant()))
        throw Error(ErrorCategory::bad_input,
                    fmt::format("the search space {} is {}/{}, not {}/{}", space.file(), space.op(), space.variant(),
                                options.op, options.variant),
                    "--op");
    Model m = collect(store, kernels, options);
    m.tensor_maps = plan_tensor_maps(m);
    std::vector<export_detail::LaunchTexts> launches;
    for (const SearchSpace* k : kernels)
        launches.push_back(export_detail::read_launch_texts(k->file(), k->alternative()));
    check_launch_texts(launches, m);

    RenderedHeader h;
    h.text = render(m, launches, export_detail::read_reference_launch_texts(space.file()), store, options);
    h.result.file_name = "ktune_tuned_" + m.stem + ".hpp";
    h.result.function = "ktune_tuned::" + m.stem;
    for (const Device& d : m.devices) {
        h.result.device_keys.push_back(d.info.key);
        h.result.entries += d.entries.size();
    }
    h.result.configs = m.configs.size();
    h.result.warnings = m.warnings;
    return h;
}

ExportResult export_header(const Store& store, const ExportOptions& options) {
    if (options.out_dir.empty()) throw Error(ErrorCategory::bad_input, "no output folder given", "--out");
    const std::string space_path =
        options.space_path.empty() ? find_space_file(options.root, options.op, options.variant) : options.space_path;
    const std::vector<SearchSpace> spaces = SearchSpace::load_alternatives(space_path);
    std::vector<const SearchSpace*> kernels;
    for (const SearchSpace& k : spaces) kernels.push_back(&k);
    RenderedHeader h = render_header(store, kernels, options);

    const fs::path dir(options.out_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(ErrorCategory::bad_input, "cannot create the output folder: " + ec.message(), dir.string());
    const fs::path target = dir / h.result.file_name;
    const fs::path temp = dir / (h.result.file_name + ".tmp");
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out << h.text;
        out.close();
        if (!out) {
            fs::remove(temp, ec);
            throw Error(ErrorCategory::bad_input, "cannot write the header", temp.string());
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        fs::remove(temp, ec);
        throw Error(ErrorCategory::bad_input, "cannot write the header", target.string());
    }
    h.result.header_path = target.string();
    return h.result;
}

}  // namespace ktune
