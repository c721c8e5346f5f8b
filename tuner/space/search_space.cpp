#include "tuner/space/search_space.hpp"

#include <filesystem>
#include <map>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/library.hpp"
#include "tuner/space/located_yaml.hpp"
#include "tuner/space/op_spec.hpp"

namespace ktune {
namespace detail {

// A search space file as validated, before it becomes a SearchSpace.
struct ParsedSpace {
    std::string op, variant = "default";
    std::string kernel_source, kernel_name, reference_source, reference_name, library;
    bool arch_specific = false;        // kernel.arch_specific: compiled for sm_90a rather than sm_90
    bool programmatic_launch = false;  // kernel.programmatic_launch: waits in-kernel for the kernel before it
    std::vector<std::string> defines;  // parameters passed as -DNAME=VALUE
    std::vector<std::pair<std::string, std::string>> reference_defines;  // -DNAME=VALUE for the reference
    std::vector<ParameterSpec> parameters;
    std::vector<Expression> constraints, prune;
    LaunchSpec launch, reference_launch;
    std::vector<TensorMapSpec> tensor_maps;
    std::vector<ProblemAxis> axes;
    std::vector<Dtype> dtypes;
    std::vector<std::pair<Dtype, Tolerance>> tolerances;
    std::shared_ptr<const DeclaredOp> declared_op;
    std::vector<std::pair<std::string, double>> constants;
};

}  // namespace detail

namespace {

using detail::excerpt;
using detail::find_field;
using detail::Located;

constexpr std::int64_t max_parameter_value = (std::int64_t{1} << 31) - 1;  // a C++ int template argument
constexpr std::int64_t min_parameter_value = -(std::int64_t{1} << 31);
constexpr std::int64_t max_axis_value = std::int64_t{1} << 53;  // exact in the expressions' doubles
constexpr std::int64_t max_values_per_parameter = 65536;
// all_configs() materialises every configuration: a few million are fine, 2^33 would exhaust memory.
constexpr std::uint64_t max_cartesian_size = std::uint64_t{1} << 22;
// Checking a space evaluates every (configuration, problem) pair, streaming: 2^24 take seconds; 2^32 would take hours.
constexpr std::uint64_t max_pairs = std::uint64_t{1} << 24;
// The dynamic shared memory a block can opt into on sm_80 and later (227 KiB).
constexpr long long max_shared_bytes = 232448;
// problems() materialises every problem: a dozen axes of eight values would be 7e10 of them.
constexpr std::uint64_t max_problems = std::uint64_t{1} << 16;
constexpr const char* dtype_bytes_variable = "DTYPE_BYTES";
constexpr const char* sm_count_variable = SearchSpace::sm_count_variable;  // the launch grid's only

// Names that would shadow something in an expression or in kernel.name.
const std::set<std::string>& reserved_names() {
    static const std::set<std::string> names{"T",
                                             dtype_bytes_variable,
                                             sm_count_variable,
                                             "min",
                                             "max",
                                             "ceil_div",
                                             "log2",
                                             "is_pow2",
                                             "align_up",
                                             "true",
                                             "false"};
    return names;
}

bool is_upper_snake(const std::string& s) {
    if (s.empty() || !(s[0] >= 'A' && s[0] <= 'Z')) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool is_identifier(const std::string& s, bool allow_dash = false) {
    auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    if (s.empty() || !alpha(s[0])) return false;
    return std::all_of(s.begin(), s.end(),
                       [&](char c) { return alpha(c) || (c >= '0' && c <= '9') || (allow_dash && c == '-'); });
}

bool is_pow2(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
    return out.empty() ? "none" : out;
}

// A kernel-name template split into literal text and {NAME} placeholders.
struct Piece {
    bool placeholder;
    std::string text;
};

// Returns an error message, or "" on success.
std::string split_template(const std::string& s, std::vector<Piece>& pieces) {
    pieces.clear();
    std::string literal;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '}') return fmt::format("'}}' at offset {} has no matching '{{'", i);
        if (s[i] != '{') {
            literal += s[i];
            continue;
        }
        std::size_t close = s.find('}', i);
        if (close == std::string::npos) return fmt::format("'{{' at offset {} is never closed", i);
        std::string name = s.substr(i + 1, close - i - 1);
        if (name.find('{') != std::string::npos) return fmt::format("'{{' at offset {} is never closed", i);
        if (name.empty()) return fmt::format("empty placeholder '{{}}' at offset {}", i);
        if (!literal.empty()) pieces.push_back({false, std::move(literal)});
        literal.clear();
        pieces.push_back({true, std::move(name)});
        i = close;
    }
    if (!literal.empty()) pieces.push_back({false, std::move(literal)});
    return {};
}

// What a file holds, validated; SearchSpace::load_string moves it into place.

const char* kind_name(ParameterKind k) {
    switch (k) {
        case ParameterKind::integer:
            return "an integer";
        case ParameterKind::boolean:
            return "a bool";
        case ParameterKind::choice:
            return "a choice";
    }
    return "?";
}

// Validates one file. Parameters and axes are read first: everything else refers to them.
class Loader {
public:
    explicit Loader(const std::string& file) : m_file(file) {}
    detail::ParsedSpace load(const Located& root);

private:
    std::vector<ParameterSpec> read_parameters(const Located& node) const;
    ParameterSpec read_parameter(const std::string& name, const Located& node) const;
    std::vector<ProblemAxis> read_axes(const Located& node) const;
    std::vector<Dtype> read_dtypes(const Located& node) const;
    void check_kernel_name(const Located& node, const std::vector<std::string>& defines) const;
    std::vector<std::string> read_defines(const Located& node) const;
    static std::vector<std::pair<std::string, std::string>> read_reference_defines(const Located& node);
    static void check_source_path(const Located& node);
    void check_reference_name(const Located& node) const;
    Expression read_expression(const Located& node) const;
    LaunchSpec read_launch(const Located& node, bool parameters_allowed) const;
    std::vector<TensorMapSpec> read_tensor_maps(const Located& node, const detail::ParsedSpace& out) const;
    // sm_count_allowed: the kernel's launch grid, which may read SMS.
    void check_variables(const Expression& e, bool parameters_allowed, bool sm_count_allowed = false) const;
    void number_choices(std::vector<ParameterSpec>& parameters, detail::ParsedSpace& out);
    void check_choice_names(const std::vector<ParameterSpec>& parameters) const;
    std::vector<std::pair<Dtype, Tolerance>> read_tolerances(const Located& node,
                                                             const std::vector<Dtype>& dtypes) const;
    std::shared_ptr<const DeclaredOp> read_op_spec(const Located& node, const detail::ParsedSpace& out) const;

    const std::string& m_file;
    std::vector<std::string> m_parameter_names;
    std::vector<std::string> m_axis_names;
    std::set<std::string> m_constant_names;    // choice names, true, false
    std::set<std::string> m_macro_parameters;  // kernel.defines as written
};

detail::ParsedSpace Loader::load(const Located& root) {
    detail::ParsedSpace out;
    if (root.is_null()) root.fail("the search space file is empty");
    auto top = root.fields({"op", "variant", "op_spec", "kernel", "parameters", "constraints", "prune", "launch",
                            "reference_launch", "problems", "tolerances"},
                           {"op", "kernel", "parameters", "problems", "tolerances"});

    const Located& op = *find_field(top, "op");
    out.op = op.text();
    if (!is_identifier(out.op))
        op.fail(fmt::format("op '{}' is not an identifier like rmsnorm or layer_norm", excerpt(out.op)));
    if (const Located* v = find_field(top, "variant")) {
        out.variant = v->text();
        if (!is_identifier(out.variant, true))
            v->fail(fmt::format("variant '{}' is not an identifier like fwd", excerpt(out.variant)));
    }

    // A parameter that reaches the kernel as a macro keeps the name the kernel gives it (block_size_x), validated
    // against the parameters with the rest of kernel: below.
    if (const Located* k = find_field(top, "kernel");
        k && k->node().IsMap() && k->node()["defines"] && k->node()["defines"].IsSequence())
        for (const auto& item : k->node()["defines"])
            if (item.IsScalar()) m_macro_parameters.insert(item.Scalar());
    out.parameters = read_parameters(*find_field(top, "parameters"));
    for (const auto& p : out.parameters) m_parameter_names.push_back(p.name);
    number_choices(out.parameters, out);

    auto problems = find_field(top, "problems")->fields({"axes", "dtypes"}, {"axes", "dtypes"});
    out.axes = read_axes(*find_field(problems, "axes"));
    for (const auto& a : out.axes) m_axis_names.push_back(a.name);
    check_choice_names(out.parameters);
    out.dtypes = read_dtypes(*find_field(problems, "dtypes"));
    if (const Located* spec = find_field(top, "op_spec")) {
        out.declared_op = read_op_spec(*spec, out);
        // Expressions may read the op's optional axes too: they take their defaults where a problem has none.
        for (const OpAxis& a : out.declared_op->axes())
            if (std::find(m_axis_names.begin(), m_axis_names.end(), a.name) == m_axis_names.end())
                m_axis_names.push_back(a.name);
    }
    std::uint64_t problem_count = out.dtypes.size();
    for (const auto& a : out.axes) {
        problem_count *= a.values.size();  // both factors are below 2^32: no overflow before the check
        if (problem_count > max_problems)
            find_field(problems, "axes")
                ->fail(fmt::format("the axes and dtypes make more than {} problems", max_problems));
    }

    const Located& kernel_node = *find_field(top, "kernel");
    auto kernel = kernel_node.fields({"source", "library", "name", "reference", "reference_source", "defines",
                                      "reference_defines", "arch_specific", "programmatic_launch", "tensor_maps"},
                                     {"name", "reference"});
    const Located* source = find_field(kernel, "source");
    const Located* library = find_field(kernel, "library");
    if ((source == nullptr) == (library == nullptr))
        kernel_node.fail("give either source (a kernel template) or library (a library baseline), not both or neither");
    if (const Located* d = find_field(kernel, "defines")) {
        if (library != nullptr) d->fail("a library baseline takes its parameters as arguments, not as defines");
        out.defines = read_defines(*d);
    }
    if (const Located* d = find_field(kernel, "reference_defines")) out.reference_defines = read_reference_defines(*d);
    if (const Located* a = find_field(kernel, "arch_specific")) {
        // wgmma, setmaxnreg and the like exist only in the arch-specific target (sm_90a), which runs on that chip only.
        const std::string flag = a->text();
        if (flag != "true" && flag != "false")
            a->fail(fmt::format("arch_specific is true or false, not '{}'", excerpt(flag)));
        if (library != nullptr && flag == "true")
            a->fail("a library baseline is not compiled: arch_specific does not apply");
        out.arch_specific = flag == "true";
    }
    if (const Located* a = find_field(kernel, "programmatic_launch")) {
        // The kernel calls griddepcontrol.wait before it touches what the kernel before it wrote
        // (kernels/common/dependent_launch.cuh): exported headers may then launch it before that one has finished.
        const std::string flag = a->text();
        if (flag != "true" && flag != "false")
            a->fail(fmt::format("programmatic_launch is true or false, not '{}'", excerpt(flag)));
        if (library != nullptr && flag == "true")
            a->fail("a library baseline is launched by its library: programmatic_launch does not apply");
        out.programmatic_launch = flag == "true";
    }
    if (const Located* t = find_field(kernel, "tensor_maps")) {
        if (library != nullptr) t->fail("a library baseline takes the op's arguments only: tensor_maps does not apply");
        out.tensor_maps = read_tensor_maps(*t, out);
    }
    out.kernel_name = find_field(kernel, "name")->text();
    check_kernel_name(*find_field(kernel, "name"), out.defines);
    out.reference_name = find_field(kernel, "reference")->text();
    check_reference_name(*find_field(kernel, "reference"));
    const Located* reference_source = find_field(kernel, "reference_source");
    if (source != nullptr) check_source_path(*source);
    if (reference_source != nullptr) check_source_path(*reference_source);
    if (source != nullptr) {
        out.kernel_source = source->text();
    } else {
        out.library = library->text();
        const LibraryBaseline* lib = find_library_baseline(out.library);
        if (lib == nullptr) {
            std::string known;
            for (const LibraryBaseline& l : library_baselines())
                known += (known.empty() ? "" : ", ") + std::string(l.name);
            library->fail(fmt::format("unknown library baseline '{}' (known: {})", excerpt(out.library), known));
        }
        for (const ParameterSpec& p : out.parameters) {
            if (p.kind != ParameterKind::integer)
                throw Error(ErrorCategory::bad_input,
                            fmt::format("library baseline {} takes integer parameters; {} is {}", out.library, p.name,
                                        kind_name(p.kind)),
                            p.where);
            if (std::find(lib->parameters.begin(), lib->parameters.end(), p.name) == lib->parameters.end())
                throw Error(ErrorCategory::bad_input,
                            fmt::format("library baseline {} takes no parameter {} (it takes: {})", out.library, p.name,
                                        join(std::vector<std::string>(lib->parameters.begin(), lib->parameters.end()))),
                            p.where);
        }
        if (reference_source == nullptr)
            kernel_node.fail("a library baseline needs reference_source: the reference kernel's file");
        out.kernel_source = "library:" + out.library;
    }
    out.reference_source = reference_source ? reference_source->text() : out.kernel_source;

    for (auto [key, list] : {std::pair{"constraints", &out.constraints}, std::pair{"prune", &out.prune}}) {
        if (const Located* c = find_field(top, key); c && !c->is_null()) {
            for (const Located& item : c->items()) {
                list->push_back(read_expression(item));
                check_variables(list->back(), true);
            }
        }
    }

    const Located* launch = find_field(top, "launch");
    if (!out.library.empty()) {
        // The library picks its own grids; the reference kernel still needs one.
        if (launch != nullptr) launch->fail("a library baseline has no launch geometry: the library chooses its own");
        if (find_field(top, "reference_launch") == nullptr)
            kernel_node.fail("a library baseline needs a reference_launch section for its reference kernel");
    } else {
        if (launch == nullptr) root.missing("launch").fail("missing required key 'launch'");
        out.launch = read_launch(*launch, true);
    }
    if (const Located* r = find_field(top, "reference_launch")) {
        out.reference_launch = read_launch(*r, false);
    } else {
        // The reference kernel has no configuration, so launch stands in for it only if it needs none.
        auto copy = [&](const Expression& e) {
            for (const auto& v : e.variables())
                if (std::find(m_parameter_names.begin(), m_parameter_names.end(), v) != m_parameter_names.end())
                    throw Error(ErrorCategory::bad_input,
                                fmt::format("launch expression '{}' uses parameter {}, so a reference_launch section "
                                            "is required (the reference kernel has no parameters)",
                                            excerpt(e.text()), v),
                                e.where());
            return Expression(e.text(), e.where());
        };
        for (const auto& e : out.launch.grid) out.reference_launch.grid.push_back(copy(e));
        for (const auto& e : out.launch.block) out.reference_launch.block.push_back(copy(e));
        out.reference_launch.shared_bytes = copy(out.launch.shared_bytes);
    }

    out.tolerances = read_tolerances(*find_field(top, "tolerances"), out.dtypes);

    std::uint64_t size = 1;
    for (const auto& p : out.parameters) {
        size *= p.values.size();  // both factors are at most 2^22 and 2^16: no overflow before the check
        if (size > max_cartesian_size)
            find_field(top, "parameters")
                ->fail(fmt::format("the parameters' cartesian product has more than {} (2^22) configurations",
                                   max_cartesian_size));
    }
    if (size * problem_count > max_pairs)
        find_field(top, "parameters")
            ->fail(fmt::format("{} configurations x {} problems make {} (configuration, problem) pairs, more than the "
                               "{} (2^24) a space may have: narrow the parameters or the problems",
                               size, problem_count, size * problem_count, max_pairs));
    return out;
}

std::vector<ParameterSpec> Loader::read_parameters(const Located& node) const {
    std::vector<ParameterSpec> out;
    for (const auto& [name, value] : node.entries("parameter")) out.push_back(read_parameter(name, value));
    if (out.empty()) node.fail("at least one parameter is required");
    return out;
}

ParameterSpec Loader::read_parameter(const std::string& name, const Located& node) const {
    if (m_macro_parameters.count(name) ? !is_identifier(name) : !is_upper_snake(name))
        node.fail(
            fmt::format("parameter name '{}' must be UPPER_SNAKE, like BLOCK or ROWS_PER_BLOCK: it is the "
                        "kernel's template parameter (a parameter in kernel.defines may be any macro name)",
                        excerpt(name)));
    if (reserved_names().count(name)) node.fail(fmt::format("parameter name '{}' is reserved", excerpt(name)));

    ParameterSpec spec;
    spec.name = name;
    spec.where = fmt::format("{}:{}: {}", m_file, node.key_line(), node.field());
    auto f = node.fields({"values", "range", "pow2", "choices", "doc"}, {});
    if (const Located* doc = find_field(f, "doc")) spec.doc = doc->scalar();

    std::vector<const Located*> kinds;
    for (const char* k : {"values", "range", "pow2", "choices"})
        if (const Located* l = find_field(f, k)) kinds.push_back(l);
    if (kinds.empty())
        node.fail(fmt::format("parameter {} needs exactly one of 'values', 'range', 'pow2' or 'choices'", name));
    if (kinds.size() > 1)
        kinds[1]->fail(fmt::format(
            "parameter {} has more than one of 'values', 'range', 'pow2' and 'choices'; give exactly one", name));
    const Located& kind = *kinds.front();
    const std::string what = "parameter value";

    if (const Located* choices = find_field(f, "choices")) {
        // Numbered by number_choices once every parameter is read.
        spec.kind = ParameterKind::choice;
        auto items = choices->items();
        if (items.empty()) choices->fail(fmt::format("parameter {} has an empty list of choices", name));
        std::unordered_map<std::string, std::size_t> index;
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string choice = items[i].text();
            if (!is_identifier(choice))
                items[i].fail(
                    fmt::format("choice '{}' of parameter {} is not an identifier: it is a constant in "
                                "expressions and a name in the kernel's C++",
                                excerpt(choice), name));
            if (reserved_names().count(choice))
                items[i].fail(fmt::format("choice {} of parameter {} is reserved", choice, name));
            if (const auto [seen, added] = index.try_emplace(choice, i); !added)
                items[i].fail(
                    fmt::format("duplicate choice {} in parameter {} (also choices[{}])", choice, name, seen->second));
            spec.labels.push_back(choice);
        }
        return spec;
    }

    if (const Located* values = find_field(f, "values")) {
        auto items = values->items();
        if (items.empty()) values->fail(fmt::format("parameter {} has an empty list of values", name));
        // true / false make a bool parameter; mixed with integers they are a mistake.
        auto is_bool = [](const Located& item) {
            return item.node().IsScalar() && (item.node().Scalar() == "true" || item.node().Scalar() == "false");
        };
        const std::size_t bools = static_cast<std::size_t>(std::count_if(items.begin(), items.end(), is_bool));
        if (bools != 0 && bools != items.size())
            values->fail(
                fmt::format("parameter {} mixes true/false with integers: a bool takes [false, true], an "
                            "integer parameter numbers",
                            name));
        if (bools != 0) spec.kind = ParameterKind::boolean;
        std::unordered_map<std::int64_t, std::size_t> index;  // n log n over long lists, not n^2
        for (std::size_t i = 0; i < items.size(); ++i) {
            const bool flag = spec.kind == ParameterKind::boolean && items[i].node().Scalar() == "true";
            std::int64_t v = spec.kind == ParameterKind::boolean
                                 ? (flag ? 1 : 0)
                                 : items[i].integer(min_parameter_value, max_parameter_value, what);
            if (spec.kind == ParameterKind::boolean) spec.labels.push_back(flag ? "true" : "false");
            if (const auto [seen, added] = index.try_emplace(v, i); !added)
                items[i].fail(fmt::format("duplicate value {} in parameter {} (also values[{}])",
                                          spec.kind == ParameterKind::boolean ? spec.labels.back() : std::to_string(v),
                                          name, seen->second));
            spec.values.push_back(v);
        }
        return spec;
    }

    auto items = kind.items();
    const bool range = find_field(f, "range") != nullptr;
    if (range && items.size() != 2 && items.size() != 3)
        kind.fail(fmt::format("range takes [lo, hi] or [lo, hi, step], got {} element{}", items.size(),
                              items.size() == 1 ? "" : "s"));
    if (!range && items.size() != 2) kind.fail(fmt::format("pow2 takes [lo, hi], got {} elements", items.size()));
    // A range takes any int; pow2 bounds are powers of two, so at least 1.
    const std::int64_t min_value = range ? min_parameter_value : 1;
    std::int64_t lo = items[0].integer(min_value, max_parameter_value, what);
    std::int64_t hi = items[1].integer(min_value, max_parameter_value, what);
    if (range) {
        std::int64_t step = items.size() == 3 ? items[2].integer(1, max_parameter_value, "range step") : 1;
        if (lo > hi) kind.fail(fmt::format("range lower bound {} is greater than upper bound {}", lo, hi));
        if ((hi - lo) / step + 1 > max_values_per_parameter)
            kind.fail(fmt::format("range [{}, {}] has more than {} values", lo, hi, max_values_per_parameter));
        for (std::int64_t v = lo; v <= hi; v += step) spec.values.push_back(v);
    } else {
        for (std::size_t i = 0; i < 2; ++i)
            if (!is_pow2(i == 0 ? lo : hi))
                items[i].fail(fmt::format("pow2 bound {} is not a power of two", i == 0 ? lo : hi));
        if (lo > hi) kind.fail(fmt::format("pow2 lower bound {} is greater than upper bound {}", lo, hi));
        for (std::int64_t v = lo; v <= hi; v *= 2) spec.values.push_back(v);
    }
    return spec;
}

std::vector<ProblemAxis> Loader::read_axes(const Located& node) const {
    std::vector<ProblemAxis> out;
    for (const auto& [name, value] : node.entries("axis")) {
        if (!is_identifier(name)) value.fail(fmt::format("axis name '{}' is not an identifier", excerpt(name)));
        if (reserved_names().count(name)) value.fail(fmt::format("axis name '{}' is reserved", excerpt(name)));
        if (std::find(m_parameter_names.begin(), m_parameter_names.end(), name) != m_parameter_names.end())
            value.fail(fmt::format("axis '{}' has the same name as a parameter", name));
        ProblemAxis axis{name, {}};
        auto items = value.items();
        if (items.empty()) value.fail(fmt::format("axis {} has an empty list of values", name));
        std::unordered_set<std::int64_t> seen;
        for (const Located& item : items) {
            std::int64_t v = item.integer(1, max_axis_value, "axis value");
            if (!seen.insert(v).second) item.fail(fmt::format("duplicate value {} in axis {}", v, name));
            axis.values.push_back(v);
        }
        out.push_back(std::move(axis));
    }
    if (out.empty()) node.fail("at least one problem axis is required");
    return out;
}

std::vector<Dtype> Loader::read_dtypes(const Located& node) const {
    std::vector<Dtype> out;
    auto items = node.items();
    if (items.empty()) node.fail("at least one dtype is required");
    for (const Located& item : items) {
        std::string name = item.text();
        auto d = parse_dtype(name);
        if (!d) item.fail(fmt::format("unknown dtype '{}' (expected fp32, fp16 or bf16)", excerpt(name)));
        if (std::find(out.begin(), out.end(), *d) != out.end())
            item.fail(fmt::format("dtype {} is listed twice", dtype_name(*d)));
        out.push_back(*d);
    }
    return out;
}

std::vector<std::string> Loader::read_defines(const Located& node) const {
    std::vector<std::string> out;
    for (const Located& item : node.items()) {
        const std::string name = item.text();
        if (std::find(m_parameter_names.begin(), m_parameter_names.end(), name) == m_parameter_names.end())
            item.fail(fmt::format("'{}' is not a parameter (parameters: {})", excerpt(name), join(m_parameter_names)));
        if (std::find(out.begin(), out.end(), name) != out.end()) item.fail(fmt::format("{} is listed twice", name));
        out.push_back(name);
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> Loader::read_reference_defines(const Located& node) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [name, value] : node.entries("define")) {
        if (!is_identifier(name)) value.fail(fmt::format("'{}' is not a macro name", excerpt(name)));
        const std::string text = value.text();
        // One token, so that a value cannot smuggle another compiler option in.
        if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
            }))
            value.fail(fmt::format("'{}' is not a number or a name", excerpt(text)));
        out.emplace_back(name, text);
    }
    return out;
}

void Loader::check_kernel_name(const Located& node, const std::vector<std::string>& defines) const {
    std::vector<Piece> pieces;
    if (auto err = split_template(node.scalar(), pieces); !err.empty()) node.fail("kernel name: " + err);
    std::set<std::string> used;
    for (const auto& p : pieces) {
        if (!p.placeholder) continue;
        if (p.text != "T" &&
            std::find(m_parameter_names.begin(), m_parameter_names.end(), p.text) == m_parameter_names.end())
            node.fail(fmt::format("placeholder {{{}}} in the kernel name is neither T nor a parameter (parameters: {})",
                                  excerpt(p.text), join(m_parameter_names)));
        used.insert(p.text);
    }
    // A parameter that never reaches the kernel multiplies the work for nothing.
    used.insert(defines.begin(), defines.end());
    for (const auto& name : m_parameter_names)
        if (!used.count(name))
            node.fail(
                fmt::format("parameter {} does not appear in the kernel name; add {{{}}} to it, or list it in "
                            "kernel.defines",
                            name, name));
}

void Loader::check_reference_name(const Located& node) const {
    std::vector<Piece> pieces;
    if (auto err = split_template(node.scalar(), pieces); !err.empty()) node.fail("reference name: " + err);
    for (const auto& p : pieces)
        if (p.placeholder && p.text != "T")
            node.fail(
                fmt::format("placeholder {{{}}} in the reference name is not allowed: only {{T}} is, the "
                            "reference kernel has no parameters",
                            excerpt(p.text)));
}

// The compile service resolves sources against the kernel root and refuses, symlinks resolved, whatever lies outside
// it; a path that is absolute or steps upwards is refused here already, with the line it is on.
void Loader::check_source_path(const Located& node) {
    const std::string path = node.text();
    if (std::any_of(path.begin(), path.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
        node.fail("a kernel file path may not contain control characters");
    if (path.front() == '/' || path.front() == '~')
        node.fail(
            fmt::format("'{}' is an absolute path: give a path relative to the kernel root, like "
                        "kernels/rmsnorm/rmsnorm_fwd.cuh",
                        detail::excerpt(path)));
    for (const auto& part : std::filesystem::path(path))
        if (part == "..")
            node.fail(fmt::format("'{}' steps out with '..': kernel files must lie under the kernel root",
                                  detail::excerpt(path)));
}

// op_spec: the op declared inline, or the path of a file declaring it (relative to this file's folder), which the
// problems must fit: every axis is one of the op's, every required one of the op's is there.
std::shared_ptr<const DeclaredOp> Loader::read_op_spec(const Located& node, const detail::ParsedSpace& out) const {
    std::shared_ptr<const DeclaredOp> op;
    if (node.node().IsMap()) {
        op = DeclaredOp::parse(node, out.op, out.variant);
    } else {
        namespace fs = std::filesystem;
        const std::string path = (fs::path(m_file).parent_path() / node.text()).lexically_normal().string();
        std::string text;
        try {
            text = read_file(path, "the op spec file");
        } catch (const Error& e) {
            node.fail(fmt::format("{} ({})", e.message(), path));
        }
        op = DeclaredOp::parse(Located::parse(text, &path), out.op, out.variant);
    }
    for (const ProblemAxis& a : out.axes)
        if (!op->has_axis(a.name))
            node.fail(
                fmt::format("problems.axes has {}, which op {}/{} does not declare", a.name, out.op, out.variant));
    for (const OpAxis& a : op->axes())
        if (!a.default_value &&
            std::none_of(out.axes.begin(), out.axes.end(), [&](const ProblemAxis& p) { return p.name == a.name; }))
            node.fail(fmt::format("op {}/{} needs axis {}, which problems.axes lacks", out.op, out.variant, a.name));
    return op;
}

// Every distinct choice name gets one number, in order of first appearance, and is a constant of that value in
// expressions: "ENGINE == wgmma" compares numbers, and a name two parameters share means the same in both.
void Loader::number_choices(std::vector<ParameterSpec>& parameters, detail::ParsedSpace& out) {
    std::map<std::string, std::int64_t> number;
    for (ParameterSpec& p : parameters) {
        if (p.kind != ParameterKind::choice) continue;
        for (const std::string& choice : p.labels) {
            const auto [it, added] = number.try_emplace(choice, static_cast<std::int64_t>(out.constants.size()));
            if (added) out.constants.emplace_back(choice, static_cast<double>(it->second));
            p.values.push_back(it->second);
        }
    }
    out.constants.emplace_back("true", 1.0);
    out.constants.emplace_back("false", 0.0);
    for (const auto& [name, value] : out.constants) m_constant_names.insert(name);
}

// A choice name is a constant in the expressions that also read parameters and axes: it may be neither.
void Loader::check_choice_names(const std::vector<ParameterSpec>& parameters) const {
    for (const ParameterSpec& p : parameters)
        for (const std::string& choice : p.labels) {
            if (p.kind != ParameterKind::choice) continue;
            const char* clash = nullptr;
            if (std::find(m_parameter_names.begin(), m_parameter_names.end(), choice) != m_parameter_names.end())
                clash = "a parameter";
            else if (std::find(m_axis_names.begin(), m_axis_names.end(), choice) != m_axis_names.end())
                clash = "a problem axis";
            if (clash != nullptr)
                throw Error(ErrorCategory::bad_input,
                            fmt::format("choice {} of parameter {} has the name of {}: in an expression it would be "
                                        "ambiguous",
                                        choice, p.name, clash),
                            p.where);
        }
}

Expression Loader::read_expression(const Located& node) const { return Expression(node.text(), node.where()); }

void Loader::check_variables(const Expression& e, bool parameters_allowed, bool sm_count_allowed) const {
    for (const auto& v : e.variables()) {
        bool parameter = std::find(m_parameter_names.begin(), m_parameter_names.end(), v) != m_parameter_names.end();
        bool axis = std::find(m_axis_names.begin(), m_axis_names.end(), v) != m_axis_names.end();
        if (axis || v == dtype_bytes_variable || (parameter && parameters_allowed) || m_constant_names.count(v) ||
            (v == sm_count_variable && sm_count_allowed))
            continue;
        if (v == sm_count_variable)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("expression '{}' reads {}, the GPU's streaming multiprocessors: only the kernel's "
                                    "launch grid may (the space, its constraints and the block are the same on every "
                                    "GPU)",
                                    excerpt(e.text()), sm_count_variable),
                        e.where());
        if (parameter)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("reference_launch expression '{}' uses parameter {}: the reference kernel has no "
                                    "parameters, only problem axes and DTYPE_BYTES",
                                    excerpt(e.text()), v),
                        e.where());
        throw Error(ErrorCategory::bad_input,
                    fmt::format("unknown variable '{}' in expression '{}' (known: {}{}; problem axes: {}; {})",
                                excerpt(v), excerpt(e.text()), parameters_allowed ? "parameters: " : "",
                                parameters_allowed ? join(m_parameter_names) : "no parameters", join(m_axis_names),
                                dtype_bytes_variable),
                    e.where());
    }
}

LaunchSpec Loader::read_launch(const Located& node, bool parameters_allowed) const {
    LaunchSpec spec;
    auto f = node.fields({"grid", "block", "shared_bytes"}, {"grid", "block"});
    for (const char* key : {"grid", "block"}) {
        const Located& list = *find_field(f, key);
        auto items = list.items();
        if (items.empty() || items.size() > 3)
            list.fail(fmt::format("{} takes 1 to 3 expressions (x, y, z), got {}", key, items.size()));
        auto& to = std::string_view(key) == "grid" ? spec.grid : spec.block;
        const bool grid = &to == &spec.grid;
        for (const Located& item : items) {
            to.push_back(read_expression(item));
            check_variables(to.back(), parameters_allowed, grid && parameters_allowed);
        }
    }
    if (const Located* s = find_field(f, "shared_bytes")) {
        spec.shared_bytes = read_expression(*s);
        check_variables(spec.shared_bytes, parameters_allowed);
    }
    return spec;
}

std::vector<TensorMapSpec> Loader::read_tensor_maps(const Located& node, const detail::ParsedSpace& out) const {
    if (!out.declared_op) node.fail("tensor_maps view the op spec's buffers: the space needs an op_spec");
    std::vector<std::string> buffers;
    for (const DeclaredOp::BufferDeclaration& b : out.declared_op->buffer_declarations()) buffers.push_back(b.name);
    std::vector<TensorMapSpec> maps;
    for (const Located& item : node.items()) {
        auto f = item.fields({"buffer", "shape", "box", "swizzle"}, {"buffer", "shape", "box"});
        TensorMapSpec m;
        m.where = item.where();
        const Located& buffer = *find_field(f, "buffer");
        m.buffer = buffer.text();
        if (std::find(buffers.begin(), buffers.end(), m.buffer) == buffers.end())
            buffer.fail(
                fmt::format("unknown buffer '{}' (the op spec's buffers: {})", excerpt(m.buffer), join(buffers)));
        for (auto [key, list, parameters] : {std::tuple{"shape", &m.shape, false}, std::tuple{"box", &m.box, true}}) {
            const Located& l = *find_field(f, key);
            for (const Located& e : l.items()) {
                list->push_back(read_expression(e));
                if (!parameters)
                    for (const auto& v : list->back().variables())
                        if (std::find(m_parameter_names.begin(), m_parameter_names.end(), v) != m_parameter_names.end())
                            e.fail(
                                fmt::format("the shape reads parameter {}: it is the problem's view of the buffer, "
                                            "the same for every configuration (the box may read parameters)",
                                            v));
                check_variables(list->back(), parameters);
            }
            if (list->empty() || list->size() > 5) l.fail(fmt::format("{} takes 1 to 5 dimensions", key));
        }
        if (m.box.size() != m.shape.size())
            find_field(f, "box")->fail(fmt::format("box has {} dimensions, shape {}", m.box.size(), m.shape.size()));
        if (const Located* sw = find_field(f, "swizzle")) {
            const std::string t = sw->text();
            if (t != "0" && t != "32" && t != "64" && t != "128")
                sw->fail(fmt::format("swizzle is a span in bytes: 0, 32, 64 or 128, not '{}'", excerpt(t)));
            m.swizzle = std::stoi(t);
        }
        maps.push_back(std::move(m));
    }
    if (maps.empty()) node.fail("tensor_maps lists at least one map (or leave it out)");
    return maps;
}

std::vector<std::pair<Dtype, Tolerance>> Loader::read_tolerances(const Located& node,
                                                                 const std::vector<Dtype>& dtypes) const {
    std::vector<std::pair<Dtype, Tolerance>> out;
    for (const auto& [name, value] : node.entries("dtype")) {
        auto d = parse_dtype(name);
        if (!d) value.fail(fmt::format("unknown dtype '{}' (expected fp32, fp16 or bf16)", excerpt(name)));
        for (const auto& [seen, tol] : out)
            if (seen == *d) value.fail(fmt::format("tolerance for {} is given twice", dtype_name(*d)));
        auto f = value.fields({"rtol", "atol"}, {"rtol", "atol"});
        Tolerance t;
        for (const char* key : {"rtol", "atol"}) {
            const Located& l = *find_field(f, key);
            double v = l.number();
            if (v < 0) l.fail(fmt::format("{} must be a non-negative number, got {}", key, excerpt(l.scalar())));
            (std::string_view(key) == "rtol" ? t.rtol : t.atol) = v;
        }
        out.emplace_back(*d, t);
    }
    for (Dtype d : dtypes) {
        bool found = std::any_of(out.begin(), out.end(), [&](const auto& e) { return e.first == d; });
        if (!found)
            node.missing(dtype_name(d))
                .fail(fmt::format("missing tolerance for dtype {} (listed in problems.dtypes)", dtype_name(d)));
    }
    return out;
}

std::string context(const Config* c, const Problem& p) {
    return c ? fmt::format("configuration {} and problem {}", c->key(), p.key()) : fmt::format("problem {}", p.key());
}

LaunchGeometry evaluate_launch(const LaunchSpec& spec, const std::map<std::string, double>& vars,
                               const std::string& ctx) {
    static constexpr char axis_names[] = "xyz";
    static constexpr std::array<long long, 3> grid_limit{(1LL << 31) - 1, 65535, 65535};
    static constexpr std::array<long long, 3> block_limit{1024, 1024, 64};
    LaunchGeometry g;
    for (std::size_t i = 0; i < spec.grid.size(); ++i) {
        const Expression& e = spec.grid[i];
        long long v = e.evaluate_int(vars);
        if (v < 1 || v > grid_limit[i])
            throw Error(ErrorCategory::bad_input,
                        fmt::format("grid.{} '{}' is {} for {}; it must be in [1, {}]", axis_names[i],
                                    excerpt(e.text()), v, ctx, grid_limit[i]),
                        e.where());
        g.grid[i] = static_cast<unsigned>(v);
    }
    for (std::size_t i = 0; i < spec.block.size(); ++i) {
        const Expression& e = spec.block[i];
        long long v = e.evaluate_int(vars);
        if (v < 1 || v > block_limit[i])
            throw Error(ErrorCategory::bad_input,
                        fmt::format("block.{} '{}' is {} for {}; it must be in [1, {}]", axis_names[i],
                                    excerpt(e.text()), v, ctx, block_limit[i]),
                        e.where());
        g.block[i] = static_cast<unsigned>(v);
    }
    if (g.threads() > 1024) {
        std::string texts;
        for (const auto& e : spec.block) texts += fmt::format("{}'{}'", texts.empty() ? "" : " x ", excerpt(e.text()));
        throw Error(ErrorCategory::bad_input,
                    fmt::format("block {} has {} threads for {}; at most 1024 are allowed", texts, g.threads(), ctx),
                    spec.block.front().where());
    }
    long long shared = spec.shared_bytes.evaluate_int(vars);
    if (shared < 0 || shared > max_shared_bytes)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("shared_bytes '{}' is {} for {}; it must be in [0, {}]",
                                excerpt(spec.shared_bytes.text()), shared, ctx, max_shared_bytes),
                    spec.shared_bytes.where());
    g.shared_bytes = static_cast<unsigned>(shared);
    return g;
}

}  // namespace

SearchSpace SearchSpace::load_file(const std::string& path) {
    return load_string(read_file(path, "the search space file"), path);
}

SearchSpace SearchSpace::load_string(const std::string& yaml, const std::string& path_for_messages) {
    std::vector<SearchSpace> all = load_alternatives_string(yaml, path_for_messages);
    if (all.size() != 1 || !all.front().alternative().empty())
        throw Error(
            ErrorCategory::bad_input,
            fmt::format("{} holds {} alternative kernels, where one space was expected", path_for_messages, all.size()),
            path_for_messages);
    return std::move(all.front());
}

std::vector<SearchSpace> SearchSpace::load_alternatives(const std::string& path) {
    return load_alternatives_string(read_file(path, "the search space file"), path);
}

namespace {

// One alternative's document: the file's top level with the alternative's keys laid over it. kernel merges key by
// key (the reference stays shared), parameters join (a name given twice is refused), constraints and prune add up,
// anything else the alternative gives replaces the top level's. The nodes keep their marks, so errors name the lines
// they come from.
YAML::Node merge_alternative(const YAML::Node& top, const Located& alternative) {
    YAML::Node merged(YAML::NodeType::Map);
    for (const auto& kv : top)
        if (kv.first.Scalar() != "alternatives") merged[kv.first.Scalar()] = kv.second;
    for (const auto& [key, value] : alternative.fields(
             {"kernel", "parameters", "constraints", "prune", "launch", "reference_launch", "doc"}, {"kernel"})) {
        if (key == "doc") continue;
        const YAML::Node base = top[key];
        if ((key == "kernel" || key == "parameters") && base && base.IsMap() && value.node().IsMap()) {
            YAML::Node joined(YAML::NodeType::Map);
            for (const auto& kv : base) joined[kv.first.Scalar()] = kv.second;
            for (const auto& kv : value.node()) {
                if (key == "parameters" && joined[kv.first.Scalar()])
                    value.fail(
                        fmt::format("parameter {} is declared at the top level and again here", kv.first.Scalar()));
                joined[kv.first.Scalar()] = kv.second;
            }
            merged[key] = joined;
        } else if ((key == "constraints" || key == "prune") && base && base.IsSequence() && value.node().IsSequence()) {
            YAML::Node joined(YAML::NodeType::Sequence);
            for (const auto& item : base) joined.push_back(item);
            for (const auto& item : value.node()) joined.push_back(item);
            merged[key] = joined;
        } else {
            merged[key] = value.node();
        }
    }
    return merged;
}

bool is_alternative_name(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
}

}  // namespace

std::vector<SearchSpace> SearchSpace::load_alternatives_string(const std::string& yaml,
                                                               const std::string& path_for_messages) {
    const Located root = Located::parse(yaml, &path_for_messages);
    std::vector<std::pair<std::string, Located>> alternatives;
    if (root.node().IsMap() && root.node()["alternatives"]) {
        for (const auto& kv : root.node())
            if (kv.first.Scalar() == "alternatives")
                alternatives = Located(kv.second, "alternatives", kv.second.Mark().line + 1, &path_for_messages)
                                   .entries("alternative");
        if (alternatives.empty()) root.fail("alternatives is empty: name at least one kernel");
    }
    std::vector<SearchSpace> out;
    if (alternatives.empty()) {
        out.push_back(from_parsed(Loader(path_for_messages).load(root), path_for_messages, ""));
        return out;
    }
    for (const auto& [name, node] : alternatives) {
        if (!is_alternative_name(name))
            node.fail(fmt::format("alternative name '{}' is not a name like simt or row_per_block", name));
        const YAML::Node merged = merge_alternative(root.node(), node);
        out.push_back(from_parsed(Loader(path_for_messages).load(Located(merged, "", root.line(), &path_for_messages)),
                                  path_for_messages, name));
    }
    return out;
}

SearchSpace SearchSpace::from_parsed(detail::ParsedSpace&& p, const std::string& path_for_messages,
                                     std::string alternative) {
    SearchSpace s;
    s.m_alternative = std::move(alternative);
    s.m_file = path_for_messages;
    s.m_op = std::move(p.op);
    s.m_variant = std::move(p.variant);
    s.m_kernel_source = std::move(p.kernel_source);
    s.m_kernel_name = std::move(p.kernel_name);
    s.m_arch_specific = p.arch_specific;
    s.m_programmatic_launch = p.programmatic_launch;
    s.m_defines = std::move(p.defines);
    s.m_reference_defines = std::move(p.reference_defines);
    s.m_reference_source = std::move(p.reference_source);
    s.m_reference_name = std::move(p.reference_name);
    s.m_library = std::move(p.library);
    s.m_parameters = std::move(p.parameters);
    s.m_constraints = std::move(p.constraints);
    s.m_prune = std::move(p.prune);
    s.m_launch = std::move(p.launch);
    s.m_reference_launch = std::move(p.reference_launch);
    s.m_tensor_maps = std::move(p.tensor_maps);
    s.m_axes = std::move(p.axes);
    s.m_dtypes = std::move(p.dtypes);
    s.m_tolerances = std::move(p.tolerances);
    s.m_declared_op = std::move(p.declared_op);
    s.m_constants = std::move(p.constants);
    return s;
}

std::string SearchSpace::kernel_name(const Config& c, Dtype d) const {
    std::vector<Piece> pieces;
    split_template(m_kernel_name, pieces);  // validated on load
    std::string out;
    for (const auto& p : pieces) {
        if (!p.placeholder)
            out += p.text;
        else if (p.text == "T")
            out += dtype_cpp_type(d);
        else
            out += c.text(p.text);
    }
    return out;
}

std::vector<std::string> SearchSpace::compile_options(const Config& c) const {
    std::vector<std::string> out;
    for (const std::string& name : m_defines) out.push_back(fmt::format("-D{}={}", name, c.text(name)));
    return out;
}

std::vector<std::string> SearchSpace::reference_compile_options() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : m_reference_defines) out.push_back(fmt::format("-D{}={}", name, value));
    return out;
}

std::string SearchSpace::target_arch(const std::string& arch) const {
    // "sm_90" -> "sm_90a"; an arch that already names a variant (sm_90a, sm_100f) is kept.
    if (!m_arch_specific || arch.empty() || !std::isdigit(static_cast<unsigned char>(arch.back()))) return arch;
    return arch + "a";
}

std::string SearchSpace::reference_name(Dtype d) const {
    std::vector<Piece> pieces;
    split_template(m_reference_name, pieces);
    std::string out;
    for (const auto& p : pieces) out += p.placeholder ? std::string(dtype_cpp_type(d)) : p.text;
    return out;
}

std::vector<Problem> SearchSpace::problems() const {
    std::vector<Problem> out;
    for (Dtype d : m_dtypes) {
        std::vector<std::size_t> index(m_axes.size(), 0);
        while (true) {
            Problem p;
            p.dtype = d;
            for (std::size_t i = 0; i < m_axes.size(); ++i)
                p.shape.emplace_back(m_axes[i].name, m_axes[i].values[index[i]]);
            out.push_back(std::move(p));
            // Odometer: the last axis turns fastest, so the first axis is outermost.
            std::size_t i = m_axes.size();
            while (i > 0 && ++index[i - 1] == m_axes[i - 1].values.size()) index[--i] = 0;
            if (i == 0) break;
        }
    }
    return out;
}

std::uint64_t SearchSpace::cartesian_size() const {
    std::uint64_t n = 1;
    for (const auto& p : m_parameters) n *= p.values.size();
    return n;
}

std::vector<Config> SearchSpace::all_configs() const {
    std::vector<Config> out;
    out.reserve(cartesian_size());
    for_each_config([&](const Config& c) {
        out.push_back(c);
        return true;
    });
    return out;
}

bool SearchSpace::for_each_config(const std::function<bool(const Config&)>& visit) const {
    // One Config, its values turned like an odometer (the last parameter fastest): no allocation per configuration.
    constexpr std::size_t no_label = std::size_t(-1);
    Config c;
    c.values.reserve(m_parameters.size());
    std::vector<std::size_t> label_slot(m_parameters.size(), no_label);
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const ParameterSpec& p = m_parameters[i];
        c.values.emplace_back(p.name, p.values.front());
        if (!p.labels.empty()) {
            label_slot[i] = c.labels.size();
            c.labels.emplace_back(p.name, p.labels.front());
        }
    }
    auto set = [&](std::size_t i, std::size_t k) {
        c.values[i].second = m_parameters[i].values[k];
        if (label_slot[i] != no_label) c.labels[label_slot[i]].second = m_parameters[i].labels[k];
    };
    std::vector<std::size_t> index(m_parameters.size(), 0);
    while (true) {
        if (!visit(c)) return false;
        std::size_t i = m_parameters.size();
        while (i > 0 && ++index[i - 1] == m_parameters[i - 1].values.size()) {
            index[i - 1] = 0;
            set(i - 1, 0);
            --i;
        }
        if (i == 0) return true;
        set(i - 1, index[i - 1]);
    }
}

namespace {

// "NAME=TEXT,NAME=TEXT" split, each name once; bad_input naming `where` otherwise.
std::vector<std::pair<std::string, std::string>> split_key(const std::string& text, const std::string& where) {
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("'{}' is not PARAM=VALUE (write e.g. BLOCK=256,ENGINE=wgmma,FLAG=true)", excerpt(item)),
                where);
        std::string name = item.substr(0, eq);
        for (const auto& [seen, value] : out)
            if (seen == name)
                throw Error(ErrorCategory::bad_input,
                            fmt::format("parameter {} is given twice in '{}'", excerpt(name), excerpt(text)), where);
        out.emplace_back(std::move(name), item.substr(eq + 1));
        if (comma == text.size()) return out;
        start = comma + 1;
    }
}

// The value of one parameter from its text in a key, and the index of that value in the parameter's list (or
// npos for an integer outside it).
std::pair<std::int64_t, std::size_t> parse_value(const ParameterSpec& p, const std::string& text,
                                                 const std::string& key, const std::string& where) {
    constexpr std::size_t npos = std::size_t(-1);
    if (p.kind == ParameterKind::choice) {
        for (std::size_t i = 0; i < p.labels.size(); ++i)
            if (p.labels[i] == text) return {p.values[i], i};
        throw Error(ErrorCategory::bad_input,
                    fmt::format("'{}' is not a choice of {} in '{}' (choices: {})", excerpt(text), p.name, excerpt(key),
                                join(p.labels)),
                    where);
    }
    if (p.kind == ParameterKind::boolean) {
        const std::int64_t v = text == "true" || text == "1" ? 1 : text == "false" || text == "0" ? 0 : -1;
        if (v < 0)
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("{} is a bool: '{}' in '{}' must be true or false", p.name, excerpt(text), excerpt(key)),
                where);
        for (std::size_t i = 0; i < p.values.size(); ++i)
            if (p.values[i] == v) return {v, i};
        return {v, npos};
    }
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} needs an integer value, not '{}' (in '{}')", p.name, excerpt(text), excerpt(key)),
                    where);
    return {v, npos};
}

}  // namespace

Config SearchSpace::parse_config(const std::string& key, const std::string& where) const {
    const auto items = split_key(key, where);
    Config c;
    std::vector<std::string> parameter_names;
    for (const ParameterSpec& p : m_parameters) {
        parameter_names.push_back(p.name);
        const auto it =
            std::find_if(items.begin(), items.end(), [&](const auto& item) { return item.first == p.name; });
        if (it == items.end())
            throw Error(ErrorCategory::bad_input,
                        fmt::format("configuration '{}' lacks parameter {} of the search space {}", excerpt(key),
                                    p.name, m_file),
                        where);
        const auto [value, index] = parse_value(p, it->second, key, where);
        c.values.emplace_back(p.name, value);
        if (p.kind == ParameterKind::boolean) c.labels.emplace_back(p.name, value != 0 ? "true" : "false");
        if (p.kind == ParameterKind::choice) c.labels.emplace_back(p.name, p.labels[index]);
    }
    if (items.size() != m_parameters.size())
        throw Error(ErrorCategory::bad_input,
                    fmt::format("configuration '{}' has parameters the search space {} does not have (it has: {})",
                                excerpt(key), m_file, join(parameter_names)),
                    where);
    return c;
}

NamedValues SearchSpace::parse_config_filter(const std::string& text, const std::string& where) const {
    NamedValues out;
    for (const auto& item : split_key(text, where)) {
        const std::string& name = item.first;  // not a structured binding: clang 14 cannot capture one
        const std::string& value = item.second;
        const auto p = std::find_if(m_parameters.begin(), m_parameters.end(),
                                    [&](const ParameterSpec& spec) { return spec.name == name; });
        if (p == m_parameters.end())
            throw Error(ErrorCategory::bad_input, fmt::format("'{}' is not a parameter of {}", excerpt(name), m_file),
                        where);
        out.emplace_back(name, parse_value(*p, value, text, where).first);
    }
    return out;
}

bool SearchSpace::is_valid(const Config& c, const Problem& p) const { return failed_constraint(c, p).empty(); }

// A space whose rules reject every configuration for every problem is a mistake in its YAML, not something to sweep:
// it fails before anything is compiled or written.
void SearchSpace::require_some_valid_config() const {
    const std::vector<Problem> all_problems = problems();
    std::map<std::string, std::int64_t> first_failures;  // rule text -> pairs it is the first to reject
    std::int64_t pairs = 0;
    for (const Problem& p : all_problems) {
        const bool stopped = !for_each_config([&](const Config& c) {
            std::string rule = failed_constraint(c, p);
            if (rule.empty()) return false;
            ++first_failures[std::move(rule)];
            ++pairs;
            return true;
        });
        if (stopped) return;
    }
    if (first_failures.empty()) throw Error(ErrorCategory::bad_input, "the space has no problem to tune", m_file);
    const auto& [rule, rejected] = *std::max_element(first_failures.begin(), first_failures.end(),
                                                     [](const auto& a, const auto& b) { return a.second < b.second; });
    std::string where = m_file;
    for (const auto* rules : {&m_constraints, &m_prune})
        for (const Expression& e : *rules)
            if (where == m_file && e.text() == rule) where = e.where();
    throw Error(ErrorCategory::bad_input,
                fmt::format("no configuration is valid for any problem of {}: '{}' is the first rule to reject {} of "
                            "the {} (configuration, problem) pairs",
                            m_file, excerpt(rule), rejected, pairs),
                where);
}

void SearchSpace::check_launches() const {
    for (const Problem& p : problems()) {
        reference_launch(p);
        if (is_library()) continue;
        for_each_config([&](const Config& c) {
            if (is_valid(c, p)) {
                launch(c, p, nominal_sm_count);  // throws for the first geometry out of range
                tensor_map_values(c, p);
            }
            return true;
        });
    }
}

std::string SearchSpace::failed_constraint(const Config& c, const Problem& p) const {
    if (m_constraints.empty() && m_prune.empty()) return {};
    const auto vars = variables(c, p);
    for (const auto* list : {&m_constraints, &m_prune})
        for (const auto& e : *list)
            if (!e.evaluate_bool(vars)) return e.text();
    return {};
}

std::vector<Config> SearchSpace::valid_configs(const Problem& p) const {
    std::vector<Config> out;
    for_each_config([&](const Config& c) {
        if (is_valid(c, p)) out.push_back(c);
        return true;
    });
    return out;
}

std::uint64_t SearchSpace::count_valid_configs(const Problem& p) const {
    std::uint64_t n = 0;
    for_each_config([&](const Config& c) {
        n += is_valid(c, p) ? 1 : 0;
        return true;
    });
    return n;
}

std::map<std::string, double> SearchSpace::launch_variables(const Config& c, const Problem& p, int sm_count) const {
    if (sm_count < 1)
        throw Error(ErrorCategory::internal, fmt::format("launch for {}: {} SMs", context(&c, p), sm_count), m_file);
    auto vars = variables(c, p);
    vars[sm_count_variable] = sm_count;
    return vars;
}

LaunchGeometry SearchSpace::launch(const Config& c, const Problem& p, int sm_count) const {
    return evaluate_launch(m_launch, launch_variables(c, p, sm_count), context(&c, p));
}

bool SearchSpace::grid_reads_sm_count() const {
    return std::any_of(m_launch.grid.begin(), m_launch.grid.end(),
                       [](const Expression& e) { return e.variables().count(sm_count_variable) > 0; });
}

std::vector<TensorMapValue> SearchSpace::tensor_map_values(const Config& c, const Problem& p) const {
    if (m_tensor_maps.empty()) return {};
    const auto vars = variables(c, p);
    const std::vector<BufferSpec> buffers = m_declared_op->buffers(p);
    std::vector<TensorMapValue> out;
    for (const TensorMapSpec& m : m_tensor_maps) {
        const auto fail = [&](const std::string& why) {
            throw Error(ErrorCategory::bad_input,
                        fmt::format("tensor map over {} for {}: {}", m.buffer, context(&c, p), why), m.where);
        };
        const auto b =
            std::find_if(buffers.begin(), buffers.end(), [&](const BufferSpec& x) { return x.name == m.buffer; });
        const std::int64_t elem = static_cast<std::int64_t>(elem_bytes(b->type));
        TensorMapValue v{m.buffer, {}, {}, m.swizzle};
        std::int64_t elements = 1;
        for (std::size_t i = 0; i < m.shape.size(); ++i) {
            v.shape.push_back(m.shape[i].evaluate_int(vars));
            v.box.push_back(m.box[i].evaluate_int(vars));
            if (v.shape[i] < 1 || v.shape[i] > (std::int64_t{1} << 32))
                fail(fmt::format("extent '{}' is {}; TMA takes 1 to 2^32", excerpt(m.shape[i].text()), v.shape[i]));
            if (v.box[i] < 1 || v.box[i] > 256)
                fail(fmt::format("box '{}' is {}; TMA moves 1 to 256 elements a dimension", excerpt(m.box[i].text()),
                                 v.box[i]));
            elements *= v.shape[i];
            if (elements > b->elements)
                fail(fmt::format("the view [{}] is larger than the buffer's {} elements", fmt::join(v.shape, ", "),
                                 b->elements));
        }
        const std::int64_t row_bytes = v.shape.back() * elem, box_row_bytes = v.box.back() * elem;
        if (v.shape.size() > 1 && row_bytes % 16 != 0)
            fail(fmt::format("rows of {} bytes: TMA needs a pitch that is a multiple of 16", row_bytes));
        if (box_row_bytes % 16 != 0)
            fail(fmt::format("the box's rows are {} bytes: TMA needs a multiple of 16", box_row_bytes));
        if (m.swizzle != 0 && box_row_bytes > m.swizzle)
            fail(fmt::format("the box's rows are {} bytes, beyond the {}-byte swizzle span", box_row_bytes, m.swizzle));
        out.push_back(std::move(v));
    }
    return out;
}

std::string SearchSpace::launch_text() const {
    if (is_library()) return "";
    auto list = [](const std::vector<Expression>& es) {
        std::string out;
        for (const Expression& e : es) out += (out.empty() ? "" : ", ") + e.text();
        return out;
    };
    std::string text = fmt::format("grid: {}; block: {}; shared_bytes: {}", list(m_launch.grid), list(m_launch.block),
                                   m_launch.shared_bytes.text());
    for (const TensorMapSpec& m : m_tensor_maps)
        text +=
            fmt::format("; tensor_map: {} [{}] box [{}] swizzle {}", m.buffer, list(m.shape), list(m.box), m.swizzle);
    return text;
}

LaunchGeometry SearchSpace::reference_launch(const Problem& p) const {
    return evaluate_launch(m_reference_launch, variables(Config{}, p), context(nullptr, p));
}

std::map<std::string, double> SearchSpace::variables(const Config& c, const Problem& p) const {
    std::map<std::string, double> vars = expression_variables(c, p);
    for (const auto& [name, value] : m_constants) vars.emplace(name, value);
    if (m_declared_op)
        for (const auto& [name, value] : m_declared_op->variables(p)) vars.emplace(name, value);
    return vars;
}

Tolerance SearchSpace::tolerance(Dtype d) const {
    for (const auto& [dtype, t] : m_tolerances)
        if (dtype == d) return t;
    throw Error(ErrorCategory::bad_input, fmt::format("no tolerance for dtype {}", dtype_name(d)), m_file);
}

std::string find_space_file(const std::string& root, const std::string& op, const std::string& variant) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(root) / "search_spaces";
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    if (ec) throw Error(ErrorCategory::bad_input, "cannot list the search spaces: " + ec.message(), dir.string());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
        try {
            const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(f.string());
            const SearchSpace& s = kernels.front();
            if (s.op() == op && s.variant() == variant) return f.string();
        } catch (const Error&) {
            // Another op's file that does not load is not this look-up's problem; `ktune list` reports it.
        }
    }
    throw Error(ErrorCategory::bad_input, fmt::format("no search space for {}/{} under {}", op, variant, dir.string()),
                "--op");
}

}  // namespace ktune
