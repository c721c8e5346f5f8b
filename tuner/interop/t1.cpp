#include "tuner/interop/t1.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file.hpp"

using json = nlohmann::ordered_json;  // the space keeps the T1 file's order (buffers, parameters)

namespace ktune {
namespace {

// What a T1 file maps onto, as ktune's space needs it: its tunables become kernel.defines (T1 kernels read them as
// macros), ProblemSize[i] the axes problem_size_x/y/z, the kernel at every parameter's Default (else its first value)
// the reference.
constexpr const char* k_axis_names[] = {"problem_size_x", "problem_size_y", "problem_size_z"};
constexpr const char* k_dims[] = {"X", "Y", "Z"};
// Configurations of one kernel sum in other orders; T1 gives no tolerance that ktune could use.
constexpr double k_tolerance = 1e-4;

class T1Reader {
public:
    T1Reader(const json& doc, const std::string& path) : m_doc(doc), m_path(path) {}
    json space();

private:
    [[noreturn]] void fail(const std::string& field, const std::string& message) const {
        throw Error(ErrorCategory::bad_input, message, m_path + ": " + field);
    }
    const json& member(const json& object, const char* key, const std::string& field, bool required = true) const;
    std::string text(const json& object, const char* key, const std::string& field) const;

    void read_parameters(const json& space_node, json& out);
    json parameter_values(const json& p, const std::string& field, std::vector<std::string>& choices) const;
    // A T1 expression (Python) as a ktune expression; `substitute` replaces names by values (the reference's launch).
    std::string expression(const std::string& python, const std::string& field,
                           const std::map<std::string, std::string>& substitute = {}) const;
    std::string size_expression(const json& size, const std::string& field) const;
    void read_arguments(const json& kernel, json& op_spec);
    void read_launch(const json& kernel, json& out);

    const json& m_doc;
    const std::string& m_path;
    std::vector<std::string> m_parameters;          // in file order
    std::map<std::string, std::string> m_defaults;  // parameter -> the reference's value, as expressions read it
    std::map<std::string, std::vector<std::int64_t>> m_integer_values;  // for max(P) / min(P) in sizes
    std::set<std::string> m_choice_names;                               // string values: constants in expressions
    std::vector<std::string> m_axes;                                    // problem_size_x, ...
};

const json& T1Reader::member(const json& object, const char* key, const std::string& field, bool required) const {
    static const json k_null;
    if (!object.is_object()) fail(field, "expected an object");
    const auto it = object.find(key);
    if (it == object.end()) {
        if (required) fail(field + "." + key, "is required");
        return k_null;
    }
    return *it;
}

std::string T1Reader::text(const json& object, const char* key, const std::string& field) const {
    const json& v = member(object, key, field);
    if (!v.is_string()) fail(field + "." + key, "expected a string");
    return v.get<std::string>();
}

bool is_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

// The items of a Python list literal or range() as T1 writes Values: "[1, 2, 4]", "list(range(1, 9))",
// "range(0, 64, 8)", "[True, False]", "['a', 'b']".
std::vector<std::string> python_list(std::string s, std::string& error) {
    auto trim = [](std::string t) {
        const auto b = t.find_first_not_of(" \t\n");
        const auto e = t.find_last_not_of(" \t\n");
        return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
    };
    s = trim(s);
    if (s.starts_with("list(") && s.ends_with(")")) s = trim(s.substr(5, s.size() - 6));
    std::vector<std::string> items;
    if (s.starts_with("range(") && s.ends_with(")")) {
        std::vector<std::int64_t> args;
        std::string inner = s.substr(6, s.size() - 7);
        std::size_t start = 0;
        while (start <= inner.size()) {
            const auto comma = inner.find(',', start);
            const std::string a =
                trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
            std::int64_t v = 0;
            const auto [p, ec] = std::from_chars(a.data(), a.data() + a.size(), v);
            if (a.empty() || ec != std::errc() || p != a.data() + a.size()) {
                error = fmt::format("range() takes integers here, not '{}'", a);
                return {};
            }
            args.push_back(v);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        if (args.empty() || args.size() > 3 || (args.size() == 3 && args[2] == 0)) {
            error = "range() takes 1 to 3 integers, the step not 0";
            return {};
        }
        const std::int64_t lo = args.size() == 1 ? 0 : args[0], hi = args.size() == 1 ? args[0] : args[1];
        const std::int64_t step = args.size() == 3 ? args[2] : 1;
        for (std::int64_t v = lo; (step > 0 ? v < hi : v > hi) && items.size() <= 65536; v += step)
            items.push_back(std::to_string(v));
        return items;
    }
    if (!(s.starts_with("[") && s.ends_with("]"))) {
        error = "expected a Python list ('[1, 2, 4]') or range ('list(range(1, 9))')";
        return {};
    }
    const std::string inner = s.substr(1, s.size() - 2);
    std::size_t start = 0;
    while (start < inner.size()) {
        const auto comma = inner.find(',', start);
        const std::string item =
            trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!item.empty()) items.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return items;
}

json T1Reader::parameter_values(const json& p, const std::string& field, std::vector<std::string>& choices) const {
    const std::string type = text(p, "Type", field);
    const json& raw = member(p, "Values", field);
    if (!raw.is_string()) fail(field + ".Values", "expected a string holding a Python list");
    std::string error;
    const std::vector<std::string> items = python_list(raw.get<std::string>(), error);
    if (!error.empty()) fail(field + ".Values", error);
    if (items.empty()) fail(field + ".Values", "lists no value");
    json values = json::array();
    if (type == "int" || type == "uint") {
        for (const std::string& item : items) {
            std::int64_t v = 0;
            const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
            if (ec != std::errc() || ptr != item.data() + item.size())
                fail(field + ".Values", fmt::format("'{}' is not an integer", item));
            values.push_back(v);
        }
    } else if (type == "bool") {
        for (const std::string& item : items) {
            if (item != "True" && item != "False" && item != "0" && item != "1")
                fail(field + ".Values", fmt::format("'{}' is not True or False", item));
            values.push_back(item == "True" || item == "1");
        }
    } else if (type == "string") {
        for (const std::string& item : items) {
            const bool quoted =
                item.size() >= 2 && (item.front() == '\'' || item.front() == '"') && item.back() == item.front();
            const std::string name = quoted ? item.substr(1, item.size() - 2) : item;
            if (!is_identifier(name))
                fail(field + ".Values",
                     fmt::format("'{}' is not an identifier: ktune's named choices are names the kernel's C++ can "
                                 "use",
                                 name));
            choices.push_back(name);
        }
        return json(choices);
    } else {
        fail(field + ".Type",
             fmt::format("{} tunables do not map: ktune's are integers, bools and named choices", type));
    }
    return values;
}

void T1Reader::read_parameters(const json& space_node, json& out) {
    const json& list = member(space_node, "TuningParameters", "ConfigurationSpace");
    if (!list.is_array() || list.empty()) fail("ConfigurationSpace.TuningParameters", "expected a non-empty array");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string field = fmt::format("ConfigurationSpace.TuningParameters[{}]", i);
        const std::string name = text(list[i], "Name", field);
        if (!is_identifier(name)) fail(field + ".Name", fmt::format("'{}' is not a macro name", name));
        std::vector<std::string> choices;
        const json values = parameter_values(list[i], field, choices);
        json spec;
        if (!choices.empty()) {
            spec["choices"] = values;
            m_choice_names.insert(choices.begin(), choices.end());
        } else {
            spec["values"] = values;
        }
        if (const json& doc = member(list[i], "Description", field, false); doc.is_string()) spec["doc"] = doc;
        out["parameters"][name] = spec;
        m_parameters.push_back(name);

        // The reference kernel's value: Default (Kernel Tuner writes one), else the first value.
        json chosen = values.front();
        if (const json& d = member(list[i], "Default", field, false); !d.is_null()) {
            const json as_value =
                d.is_string() && choices.empty() ? json::parse(d.get<std::string>(), nullptr, false) : d;
            if (std::find(values.begin(), values.end(), as_value) == values.end())
                fail(field + ".Default", fmt::format("{} is not one of the parameter's values", d.dump()));
            chosen = as_value;
        }
        if (chosen.is_boolean()) {
            m_defaults[name] = chosen.get<bool>() ? "1" : "0";
            out["kernel"]["reference_defines"][name] = chosen.get<bool>() ? "true" : "false";
        } else if (chosen.is_string()) {
            m_defaults[name] = chosen.get<std::string>();
            out["kernel"]["reference_defines"][name] = chosen.get<std::string>();
        } else {
            m_defaults[name] = std::to_string(chosen.get<std::int64_t>());
            out["kernel"]["reference_defines"][name] = std::to_string(chosen.get<std::int64_t>());
            for (const json& v : values) m_integer_values[name].push_back(v.get<std::int64_t>());
        }
    }
    out["kernel"]["defines"] = m_parameters;
}

// Python's operators as ktune's (muParser with C's logic): and/or/not, // (floor division of the non-negative sizes
// and parameters T1 holds), True/False, ProblemSize[i], and chains such as 32 <= x <= 1024 spelled out.
std::string T1Reader::expression(const std::string& python, const std::string& field,
                                 const std::map<std::string, std::string>& substitute) const {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < python.size();) {
        const char c = python[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t j = i;
            while (j < python.size() && (std::isalnum(static_cast<unsigned char>(python[j])) || python[j] == '_')) ++j;
            tokens.push_back(python.substr(i, j - i));
            i = j;
        } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
            std::size_t j = i;
            while (j < python.size() && (std::isalnum(static_cast<unsigned char>(python[j])) || python[j] == '.')) ++j;
            tokens.push_back(python.substr(i, j - i));
            i = j;
        } else if (c == '\'' || c == '"') {
            const auto end = python.find(c, i + 1);
            if (end == std::string::npos) fail(field, fmt::format("'{}': an unterminated string", python));
            tokens.push_back(python.substr(i, end - i + 1));
            i = end + 1;
        } else {
            static const char* const k_two[] = {"//", "**", "<=", ">=", "==", "!=", "&&", "||"};
            std::string op(1, c);
            for (const char* two : k_two)
                if (python.compare(i, 2, two) == 0) op = two;
            tokens.push_back(op);
            i += op.size();
        }
    }
    auto unsupported = [&](const std::string& what) {
        fail(field, fmt::format("'{}': {} does not map onto ktune's expressions", python, what));
    };
    std::vector<std::string> out;  // translated tokens
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        if (t == "and") {
            out.push_back("&&");
        } else if (t == "or") {
            out.push_back("||");
        } else if (t == "not") {
            out.push_back("!");
        } else if (t == "True" || t == "False") {
            out.push_back(t == "True" ? "1" : "0");
        } else if (t == "//") {
            out.push_back("/");
        } else if (t == "/") {
            unsupported("'/' (Python's exact division; ktune's truncates: write //)");
        } else if (t == "**" || t == "in" || t == "is" || t == "lambda" || t == "if" || t == "else") {
            unsupported("'" + t + "'");
        } else if (t == "ProblemSize" || t == "problem_size") {
            if (i + 3 >= tokens.size() || tokens[i + 1] != "[" || tokens[i + 3] != "]")
                unsupported("ProblemSize without an index");
            const std::string& index = tokens[i + 2];
            if (index != "0" && index != "1" && index != "2") unsupported("ProblemSize[" + index + "]");
            const std::size_t axis = std::size_t(index[0] - '0');
            if (axis >= m_axes.size()) fail(field, fmt::format("'{}': ProblemSize has no [{}]", python, axis));
            out.push_back(m_axes[axis]);
            i += 3;
        } else if ((t == "max" || t == "min") && i + 3 < tokens.size() && tokens[i + 1] == "(" &&
                   tokens[i + 3] == ")" && m_integer_values.count(tokens[i + 2])) {
            // max(P) of a parameter: its largest value (sizes that fit every configuration, as Kernel Tuner reads).
            const auto& v = m_integer_values.at(tokens[i + 2]);
            out.push_back(std::to_string(t == "max" ? *std::max_element(v.begin(), v.end())
                                                    : *std::min_element(v.begin(), v.end())));
            i += 3;
        } else if (t.front() == '\'' || t.front() == '"') {
            const std::string name = t.substr(1, t.size() - 2);
            if (!m_choice_names.count(name)) unsupported("the string " + t + ", which names no choice,");
            out.push_back(name);
        } else if (t == "[" || t == "]" || t == "{" || t == "}" || t == ";" || t == ":") {
            unsupported("'" + t + "'");
        } else if (const auto s = substitute.find(t); s != substitute.end()) {
            out.push_back(s->second);
        } else {
            out.push_back(t);
        }
    }
    // Python chains comparisons (a <= b <= c means a <= b and b <= c); C would compare a truth value with c.
    // Spelled out between the top level's && and ||.
    auto is_comparison = [](const std::string& t) {
        return t == "<" || t == ">" || t == "<=" || t == ">=" || t == "==" || t == "!=";
    };
    std::string result;
    std::vector<std::string> operands, comparisons;
    std::string current;
    int depth = 0;
    auto flush_term = [&]() {
        operands.push_back(current);
        current.clear();
        if (comparisons.size() <= 1) {
            result += operands.front();
            if (!comparisons.empty()) result += " " + comparisons.front() + " " + operands.back();
        } else {
            for (std::size_t k = 0; k < comparisons.size(); ++k)
                result += fmt::format("{}({} {} {})", k ? " && " : "(", operands[k], comparisons[k], operands[k + 1]);
            result += ")";
        }
        operands.clear();
        comparisons.clear();
    };
    for (const std::string& t : out) {
        if (t == "(") ++depth;
        if (t == ")") --depth;
        if (depth == 0 && (t == "&&" || t == "||")) {
            flush_term();
            result += " " + t + " ";
        } else if (depth == 0 && is_comparison(t)) {
            operands.push_back(current);
            comparisons.push_back(t);
            current.clear();
        } else {
            current += (current.empty() || t == ")" || current.back() == '(' || current.back() == '!' ? "" : " ") + t;
        }
    }
    flush_term();
    return result;
}

std::string T1Reader::size_expression(const json& size, const std::string& field) const {
    if (size.is_number_integer()) return std::to_string(size.get<std::int64_t>());
    if (!size.is_string()) fail(field, "expected an integer or an expression");
    const std::string e = expression(size.get<std::string>(), field);
    for (const std::string& p : m_parameters)
        if (fmt::format(" {} ", e).find(fmt::format(" {} ", p)) != std::string::npos)
            fail(field, fmt::format("'{}' depends on parameter {}: a buffer's size must not change with the "
                                    "configuration (max({}) gives its largest value)",
                                    size.get<std::string>(), p, p));
    return e;
}

void T1Reader::read_arguments(const json& kernel, json& op_spec) {
    static const std::map<std::string, std::pair<const char*, int>> k_types = {
        {"float", {"f32", 4}}, {"half", {"f16", 2}}, {"int32", {"i32", 4}},
        {"int64", {"i64", 8}}, {"int8", {"i8", 1}},  {"uint8", {"u8", 1}}};
    const json& args = member(kernel, "Arguments", "KernelSpecification");
    if (!args.is_array() || args.empty()) fail("KernelSpecification.Arguments", "expected a non-empty array");
    std::vector<std::string> bytes;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string field = fmt::format("KernelSpecification.Arguments[{}]", i);
        const json& a = args[i];
        const std::string name =
            member(a, "Name", field, false).is_string() ? text(a, "Name", field) : fmt::format("arg{}", i);
        if (!is_identifier(name)) fail(field + ".Name", fmt::format("'{}' is not an identifier", name));
        const std::string type = text(a, "Type", field);
        const std::string memory = text(a, "MemoryType", field);
        if (member(a, "MemType", field, false) == "Constant")
            fail(field + ".MemType", "constant-memory arguments do not map: ktune passes every buffer as a pointer");
        if (memory == "Scalar") {
            const std::string scalar = type == "float" ? "f32" : type == "int32" ? "i32" : type == "int64" ? "i64" : "";
            if (scalar.empty())
                fail(field + ".Type", fmt::format("a {} scalar does not map (float, int32, int64 do)", type));
            const json& v = member(a, "FillValue", field);
            if (!v.is_number()) fail(field + ".FillValue", "expected a number");
            op_spec["arguments"].push_back(json{{scalar, v.dump()}});
            continue;
        }
        if (memory != "Vector")
            fail(field + ".MemoryType", fmt::format("{} arguments do not map (Vector and Scalar do)", memory));
        const auto t = k_types.find(type);
        if (t == k_types.end())
            fail(field + ".Type",
                 fmt::format("{} buffers do not map (float, half, int32, int64, int8, uint8 do)", type));
        std::string role = "input";
        if (const json& access = member(a, "AccessType", field, false); !access.is_null()) {
            role = access == "WriteOnly" ? "output" : access == "ReadWrite" ? "inout" : "input";
        } else if (const json& output = member(a, "Output", field, false); output == 1 || output == true) {
            role = "output";
        }
        json buffer = {{"type", t->second.first},
                       {"count", size_expression(member(a, "Size", field), field + ".Size")},
                       {"role", role}};
        if (role != "output") {
            const json& fill = member(a, "FillType", field, false);
            if (fill == "Constant") {
                const json& v = member(a, "FillValue", field);
                if (!v.is_number()) fail(field + ".FillValue", "expected a number");
                buffer["range"] = json::array({v, v});
            } else if (!fill.is_null() && fill != "Random") {
                fail(field + ".FillType",
                     fmt::format("{} does not map: ktune fills inputs from its seeded generator (Random) or with a "
                                 "Constant",
                                 fill.dump()));
            }
        }
        const std::string elements = "(" + buffer["count"].get<std::string>() + ")";
        bytes.push_back(fmt::format("{}{} * {}", role == "inout" ? "2 * " : "", elements, t->second.second));
        op_spec["buffers"][name] = buffer;
        op_spec["arguments"].push_back(name);
    }
    op_spec["bytes"] = fmt::format("{}", fmt::join(bytes, " + "));
    if (bytes.empty()) op_spec["bytes"] = "0";
}

void T1Reader::read_launch(const json& kernel, json& out) {
    const std::string kind = member(kernel, "GlobalSizeType", "KernelSpecification", false).is_string()
                                 ? text(kernel, "GlobalSizeType", "KernelSpecification")
                                 : "OpenCL";  // KTT's default: GlobalSize counts threads
    if (kind != "CUDA" && kind != "OpenCL")
        fail("KernelSpecification.GlobalSizeType", fmt::format("{} does not map (CUDA and OpenCL do)", kind));
    const json& local = member(kernel, "LocalSize", "KernelSpecification");
    const json& global = member(kernel, "GlobalSize", "KernelSpecification");
    for (const bool reference : {false, true}) {
        const std::map<std::string, std::string> values = reference ? m_defaults : std::map<std::string, std::string>{};
        json launch;
        for (int d = 0; d < 3; ++d) {
            const std::string dim = k_dims[d];
            const json& l = member(local, k_dims[d], "KernelSpecification.LocalSize", d == 0);
            const std::string block = l.is_null() ? "1"
                                                  : expression(l.is_string() ? l.get<std::string>() : l.dump(),
                                                               "KernelSpecification.LocalSize." + dim, values);
            // Kernel Tuner divides the problem size by GridDivX/Y/Z; without them, GlobalSize as KTT reads it.
            std::string grid;
            const std::string div_key = "GridDiv" + dim;
            const json& div = member(kernel, div_key.c_str(), "KernelSpecification", false);
            if (div.is_array() && !div.empty() && std::size_t(d) < m_axes.size()) {
                std::vector<std::string> factors;
                for (const json& f : div) {
                    if (!f.is_string()) fail("KernelSpecification." + div_key, "expected parameter names");
                    factors.push_back("(" + expression(f.get<std::string>(), "KernelSpecification." + div_key, values) +
                                      ")");
                }
                grid = fmt::format("ceil_div({}, {})", m_axes[d], fmt::join(factors, " * "));
            } else {
                const json& g = member(global, k_dims[d], "KernelSpecification.GlobalSize", d == 0);
                const std::string size = g.is_null() ? "1"
                                                     : expression(g.is_string() ? g.get<std::string>() : g.dump(),
                                                                  "KernelSpecification.GlobalSize." + dim, values);
                grid = kind == "CUDA" ? size : fmt::format("ceil_div({}, {})", size, block);
            }
            launch["grid"].push_back(grid);
            launch["block"].push_back(block);
        }
        if (const json& shared = member(kernel, "SharedMemory", "KernelSpecification", false); !shared.is_null()) {
            if (!shared.is_number_integer() || shared.get<std::int64_t>() < 0)
                fail("KernelSpecification.SharedMemory", "expected a number of bytes");
            launch["shared_bytes"] = shared.dump();
        }
        out[reference ? "reference_launch" : "launch"] = launch;
    }
}

json T1Reader::space() {
    if (!m_doc.is_object()) fail("(top level)", "expected a JSON object");
    const json& kernel = member(m_doc, "KernelSpecification", "(top level)");
    const std::string language = text(kernel, "Language", "KernelSpecification");
    if (language != "CUDA")
        fail("KernelSpecification.Language", fmt::format("ktune tunes CUDA kernels; {} does not map", language));
    for (const char* key : {"ReferenceArguments", "CompilerOptions"}) {
        const json& v = member(kernel, key, "KernelSpecification", false);
        if (key == std::string("CompilerOptions") && v.is_array()) {
            for (const json& o : v)  // ktune picks the language standard itself
                if (!(o.is_string() && o.get<std::string>().starts_with("-std=")))
                    fail("KernelSpecification.CompilerOptions",
                         fmt::format("{} does not map: pass values as tunables of one value", o.dump()));
        } else if (!v.is_null()) {
            fail(std::string("KernelSpecification.") + key,
                 "reference data does not map: ktune validates every configuration against the kernel at each "
                 "parameter's Default");
        }
    }

    json out;
    const std::string name = text(kernel, "KernelName", "KernelSpecification");
    if (!is_identifier(name)) fail("KernelSpecification.KernelName", fmt::format("'{}' is not a function name", name));
    out["op"] = name;
    out["variant"] = "t1";
    out["kernel"] = {
        {"source", text(kernel, "KernelFile", "KernelSpecification")}, {"name", name}, {"reference", name}};

    json sizes = member(kernel, "ProblemSize", "KernelSpecification", false);
    if (sizes.is_number_integer()) sizes = json::array({sizes});
    json op_spec = {{"summary", fmt::format("{} from the Kernel Tuner / KTT T1 file {}", name, m_path)}};
    if (!sizes.is_null()) {
        if (!sizes.is_array() || sizes.empty() || sizes.size() > 3)
            fail("KernelSpecification.ProblemSize", "expected one to three integers");
        for (std::size_t d = 0; d < sizes.size(); ++d) {
            if (!sizes[d].is_number_integer() || sizes[d].get<std::int64_t>() < 1)
                fail("KernelSpecification.ProblemSize", "expected positive integers");
            m_axes.push_back(k_axis_names[d]);
            op_spec["axes"][k_axis_names[d]] = json::object();
            out["problems"]["axes"][k_axis_names[d]] = json::array({sizes[d]});
        }
    } else {
        // A problem of fixed sizes: one axis of one value, so that ktune has a problem to key results by.
        op_spec["axes"]["problem"] = json::object();
        out["problems"]["axes"]["problem"] = json::array({1});
    }
    out["problems"]["dtypes"] = json::array({"fp32"});
    out["tolerances"] = {{"fp32", {{"rtol", k_tolerance}, {"atol", k_tolerance}}}};

    read_parameters(member(m_doc, "ConfigurationSpace", "(top level)"), out);
    if (const json& conditions =
            member(member(m_doc, "ConfigurationSpace", "(top level)"), "Conditions", "ConfigurationSpace", false);
        !conditions.is_null()) {
        if (!conditions.is_array()) fail("ConfigurationSpace.Conditions", "expected an array");
        for (std::size_t i = 0; i < conditions.size(); ++i) {
            const std::string field = fmt::format("ConfigurationSpace.Conditions[{}]", i);
            out["constraints"].push_back(expression(text(conditions[i], "Expression", field), field + ".Expression"));
        }
    }
    read_arguments(kernel, op_spec);
    out["op_spec"] = op_spec;
    read_launch(kernel, out);
    return out;
}

}  // namespace

std::string t1_space_document(std::string_view json_text, const std::string& path) {
    const json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded()) throw Error(ErrorCategory::bad_input, "not a JSON document", path);
    return T1Reader(doc, path).space().dump(2);
}

std::vector<SearchSpace> load_t1_space(const std::string& path) {
    return SearchSpace::load_alternatives_string(t1_space_document(read_file(path, "the T1 file"), path), path);
}

}  // namespace ktune
