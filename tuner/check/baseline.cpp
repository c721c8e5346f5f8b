#include "tuner/check/baseline.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <type_traits>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/stats.hpp"

namespace ktune {

std::string BaselineCase::id() const {
    return variant.empty() ? fmt::format("{} {}", op, problem.key())
                           : fmt::format("{}/{} {}", op, variant, problem.key());
}

double BaselineCase::gbps() const { return bytes > 0 && stats.p50 > 0 ? double(bytes) / stats.p50 / 1e3 : 0.0; }

void BaselineCase::refresh_stats() { stats = summarize(samples_us); }

namespace {

using ojson = nlohmann::ordered_json;

// ---- writing ------------------------------------------------------------------------------------------------------

// Divides by a power of ten so the result is the double nearest the decimal (prints as "50.123",
// not 50.123000000000005).
double round_to(double x, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(x * scale) / scale;
}

// Arrays of scalars (samples, shape pairs) stay on one line, wrapped at this width; everything else is indented.
constexpr std::size_t k_line_width = 110;

bool is_scalar_or_flat(const ojson& j) {
    if (!j.is_structured()) return true;
    if (j.is_object()) return false;
    for (const auto& e : j)
        if (e.is_structured()) return false;
    return j.size() <= 4;  // a short flat array inside an array, e.g. ["M", 4096]
}

void write_value(std::string& out, const ojson& j, int indent);

void write_scalar(std::string& out, const ojson& j) {
    if (j.is_number_float()) {
        out += fmt::format("{}", j.get<double>());  // shortest text that reads back as the same double
    } else {
        out += j.dump();
    }
}

void write_array(std::string& out, const ojson& j, int indent) {
    if (j.empty()) {
        out += "[]";
        return;
    }
    bool flat = true;
    for (const auto& e : j) flat = flat && is_scalar_or_flat(e);
    const std::string pad(std::size_t(indent + 2), ' ');
    if (!flat) {
        out += "[\n";
        for (std::size_t i = 0; i < j.size(); ++i) {
            out += pad;
            write_value(out, j[i], indent + 2);
            out += i + 1 < j.size() ? ",\n" : "\n";
        }
        out += std::string(std::size_t(indent), ' ') + "]";
        return;
    }
    std::vector<std::string> items;
    std::size_t total = 0;
    for (const auto& e : j) {
        std::string s;
        write_value(s, e, 0);
        total += s.size() + 2;
        items.push_back(std::move(s));
    }
    if (total + std::size_t(indent) < k_line_width) {
        out += "[";
        for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
        out += "]";
        return;
    }
    out += "[\n" + pad;
    std::size_t col = pad.size();
    for (std::size_t i = 0; i < items.size(); ++i) {
        const bool last = i + 1 == items.size();
        if (col > pad.size() && col + items[i].size() + 1 > k_line_width) {
            out += "\n" + pad;
            col = pad.size();
        } else if (col > pad.size()) {
            out += " ";
            ++col;
        }
        out += items[i];
        col += items[i].size();
        if (!last) {
            out += ",";
            ++col;
        }
    }
    out += "\n" + std::string(std::size_t(indent), ' ') + "]";
}

void write_value(std::string& out, const ojson& j, int indent) {
    if (j.is_object()) {
        if (j.empty()) {
            out += "{}";
            return;
        }
        const std::string pad(std::size_t(indent + 2), ' ');
        out += "{\n";
        std::size_t i = 0;
        for (const auto& [k, v] : j.items()) {
            out += pad + ojson(k).dump() + ": ";
            write_value(out, v, indent + 2);
            out += ++i < j.size() ? ",\n" : "\n";
        }
        out += std::string(std::size_t(indent), ' ') + "}";
    } else if (j.is_array()) {
        write_array(out, j, indent);
    } else {
        write_scalar(out, j);
    }
}

ojson case_to_json(const BaselineCase& c, std::size_t index) {
    if (c.samples_us.empty())
        throw Error(ErrorCategory::bad_input, "has no timing samples",
                    fmt::format("baseline case {} ({})", index, c.id()));
    for (double x : c.samples_us)
        if (!std::isfinite(x) || x <= 0)
            throw Error(ErrorCategory::bad_input, fmt::format("has a sample that is not a positive number ({})", x),
                        fmt::format("baseline case {} ({})", index, c.id()));
    const SampleStats s = summarize(c.samples_us);
    ojson shape = ojson::array();
    for (const auto& [name, value] : c.problem.shape) shape.push_back(ojson::array({name, value}));
    ojson samples = ojson::array();
    for (double x : c.samples_us) samples.push_back(round_to(x, 3));
    ojson j;
    j["op"] = c.op;
    j["variant"] = c.variant;
    j["problem"] = {{"dtype", std::string(dtype_name(c.problem.dtype))}, {"shape", shape}, {"key", c.problem.key()}};
    if (!c.kernel.empty()) j["kernel"] = c.kernel;
    if (c.timer != "events") j["timer"] = c.timer;
    j["config"] = c.config_key;
    j["source_hash"] = c.source_hash;
    j["bytes"] = c.bytes;
    j["n"] = s.n;
    j["p50_us"] = round_to(s.p50, 3);
    j["p95_us"] = round_to(s.p95, 3);
    j["p99_us"] = round_to(s.p99, 3);
    j["gbps"] = c.bytes > 0 ? round_to(double(c.bytes) / s.p50 / 1e3, 2) : 0.0;
    j["samples_us"] = std::move(samples);
    return j;
}

// ---- reading ------------------------------------------------------------------------------------------------------

// Walks the parsed document remembering the field path, so every error names the file and the field.
class Reader {
public:
    explicit Reader(const std::string& origin) : m_origin(origin) {}

    [[noreturn]] void fail(const std::string& field, const std::string& message) const {
        throw Error(ErrorCategory::bad_input, message,
                    field.empty() ? m_origin : fmt::format("{}: {}", m_origin, field));
    }

    const nlohmann::json& member(const nlohmann::json& obj, const std::string& field, const char* name) const {
        const auto it = obj.find(name);
        if (it == obj.end()) fail(field.empty() ? name : field + "." + name, "missing");
        return *it;
    }

    std::string string(const nlohmann::json& obj, const std::string& field, const char* name) const {
        const auto& v = member(obj, field, name);
        if (!v.is_string()) fail(join(field, name), fmt::format("expected a string, got {}", v.dump()));
        return v.get<std::string>();
    }

    std::string string_or(const nlohmann::json& obj, const std::string& field, const char* name,
                          std::string fallback) const {
        return obj.contains(name) ? string(obj, field, name) : fallback;
    }

    double number(const nlohmann::json& v, const std::string& field) const {
        if (!v.is_number()) fail(field, fmt::format("expected a number, got {}", v.dump()));
        return v.get<double>();
    }

    std::int64_t integer(const nlohmann::json& v, const std::string& field) const {
        if (!v.is_number_integer()) fail(field, fmt::format("expected an integer, got {}", v.dump()));
        return v.get<std::int64_t>();
    }

    template <typename T>
    T optional(const nlohmann::json& obj, const std::string& field, const char* name, T fallback) const {
        const auto it = obj.find(name);
        if (it == obj.end()) return fallback;
        if constexpr (std::is_same_v<T, bool>) {
            if (!it->is_boolean()) fail(join(field, name), fmt::format("expected true or false, got {}", it->dump()));
            return it->template get<bool>();
        } else if constexpr (std::is_same_v<T, std::string>) {
            return string(obj, field, name);
        } else if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(integer(*it, join(field, name)));
        } else {
            return static_cast<T>(number(*it, join(field, name)));
        }
    }

    const nlohmann::json& object(const nlohmann::json& obj, const std::string& field, const char* name) const {
        const auto& v = member(obj, field, name);
        if (!v.is_object()) fail(join(field, name), fmt::format("expected an object, got {}", v.dump()));
        return v;
    }

    const nlohmann::json& array(const nlohmann::json& obj, const std::string& field, const char* name) const {
        const auto& v = member(obj, field, name);
        if (!v.is_array()) fail(join(field, name), "expected an array");
        return v;
    }

    static std::string join(const std::string& field, const char* name) {
        return field.empty() ? std::string(name) : field + "." + name;
    }

private:
    const std::string& m_origin;
};

BaselineCase case_from_json(const Reader& r, const nlohmann::json& j, const std::string& f) {
    if (!j.is_object()) r.fail(f, "expected an object");
    BaselineCase c;
    c.op = r.string(j, f, "op");
    if (c.op.empty()) r.fail(f + ".op", "is empty");
    c.variant = r.string_or(j, f, "variant", "");
    const std::string pf = f + ".problem";
    const auto& p = r.object(j, f, "problem");
    const std::string dtype = r.string(p, pf, "dtype");
    const auto dt = parse_dtype(dtype);
    if (!dt) r.fail(pf + ".dtype", fmt::format("unknown dtype \"{}\" (expected fp32, fp16 or bf16)", dtype));
    c.problem.dtype = *dt;
    const auto& shape = r.array(p, pf, "shape");
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const std::string sf = fmt::format("{}.shape[{}]", pf, i);
        const auto& axis = shape[i];
        if (!axis.is_array() || axis.size() != 2 || !axis[0].is_string())
            r.fail(sf, fmt::format("expected [\"NAME\", value], got {}", axis.dump()));
        c.problem.shape.emplace_back(axis[0].get<std::string>(), r.integer(axis[1], sf + "[1]"));
    }
    if (p.contains("key")) {
        const std::string key = r.string(p, pf, "key");
        if (key != c.problem.key())
            r.fail(pf + ".key", fmt::format("\"{}\" disagrees with dtype and shape (\"{}\")", key, c.problem.key()));
    }
    c.kernel = r.string_or(j, f, "kernel", "");
    c.timer = r.string_or(j, f, "timer", "events");
    if (c.timer != "events" && c.timer != "kernel")
        r.fail(f + ".timer", fmt::format("\"{}\" is neither \"events\" nor \"kernel\"", c.timer));
    c.config_key = r.string(j, f, "config");
    if (c.config_key.empty()) r.fail(f + ".config", "is empty");
    c.source_hash = r.string_or(j, f, "source_hash", "");
    c.bytes = r.optional<std::int64_t>(j, f, "bytes", 0);
    if (c.bytes < 0) r.fail(f + ".bytes", "is negative");
    const auto& samples = r.array(j, f, "samples_us");
    if (samples.empty()) r.fail(f + ".samples_us", "is empty: a baseline case needs its timing samples");
    c.samples_us.reserve(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const std::string sf = fmt::format("{}.samples_us[{}]", f, i);
        const double x = r.number(samples[i], sf);
        if (!std::isfinite(x) || x <= 0) r.fail(sf, fmt::format("{} is not a positive duration", x));
        c.samples_us.push_back(x);
    }
    c.refresh_stats();  // n and the percentiles in the file are for readers
    return c;
}

}  // namespace

std::string format_baseline(const Baseline& b) {
    ojson j;
    j["format_version"] = k_baseline_format_version;
    j["device"] = {{"key", b.device.key}, {"name", b.device.name}, {"arch", b.device.arch}};
    if (b.device.copy_gbps > 0) j["device"]["copy_gbps"] = b.device.copy_gbps;
    if (b.device.launch_floor_us > 0) j["device"]["launch_floor_us"] = b.device.launch_floor_us;
    if (b.device.launch_floor_cupti_us > 0) j["device"]["launch_floor_cupti_us"] = b.device.launch_floor_cupti_us;
    if (!b.device.host.empty()) j["device"]["host"] = b.device.host;
    if (!b.device.gpu_uuid.empty()) j["device"]["gpu_uuid"] = b.device.gpu_uuid;
    j["created_at"] = b.created_at;
    j["git_revision"] = b.git_revision;
    const auto& m = b.method;
    j["method"] = {{"cold_l2", m.cold_l2},       {"clean_flush", m.clean_flush}, {"timer", m.timer},
                   {"warmup", m.warmup},         {"min_samples", m.min_samples}, {"max_samples", m.max_samples},
                   {"target_rel", m.target_rel}, {"time_cap_s", m.time_cap_s},   {"sessions", m.sessions}};
    ojson cases = ojson::array();
    std::set<std::string> ids;
    for (std::size_t i = 0; i < b.cases.size(); ++i) {
        if (!ids.insert(b.cases[i].id()).second)
            throw Error(ErrorCategory::bad_input, "appears twice",
                        fmt::format("baseline case {} ({})", i, b.cases[i].id()));
        cases.push_back(case_to_json(b.cases[i], i));
    }
    j["cases"] = std::move(cases);
    std::string out;
    write_value(out, j, 0);
    out += "\n";
    return out;
}

Baseline parse_baseline(std::string_view text, const std::string& origin) {
    const Reader r(origin);
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        r.fail("", fmt::format("not valid JSON: {}", e.what()));
    }
    if (!doc.is_object()) r.fail("", "expected a JSON object at the top level");

    Baseline b;
    b.path = origin;
    b.format_version = static_cast<int>(r.integer(r.member(doc, "", "format_version"), "format_version"));
    if (b.format_version > k_baseline_format_version)
        r.fail("format_version", fmt::format("{} was written by a newer ktune (this one reads up to version {}): "
                                             "upgrade ktune or record the baseline again",
                                             b.format_version, k_baseline_format_version));
    if (b.format_version < 1) r.fail("format_version", fmt::format("{} is not a valid version", b.format_version));

    const auto& d = r.object(doc, "", "device");
    b.device.key = r.string(d, "device", "key");
    if (b.device.key.empty()) r.fail("device.key", "is empty");
    b.device.name = r.string_or(d, "device", "name", "");
    b.device.arch = r.string_or(d, "device", "arch", "");
    b.device.copy_gbps = r.optional(d, "device", "copy_gbps", 0.0);
    b.device.launch_floor_us = r.optional(d, "device", "launch_floor_us", 0.0);
    b.device.launch_floor_cupti_us = r.optional(d, "device", "launch_floor_cupti_us", 0.0);
    b.device.host = r.string_or(d, "device", "host", "");
    b.device.gpu_uuid = r.string_or(d, "device", "gpu_uuid", "");
    b.created_at = r.string_or(doc, "", "created_at", "");
    b.git_revision = r.string_or(doc, "", "git_revision", "");

    if (doc.contains("method")) {
        const auto& m = r.object(doc, "", "method");
        BaselineMethod& bm = b.method;
        bm.cold_l2 = r.optional(m, "method", "cold_l2", bm.cold_l2);
        bm.clean_flush = r.optional(m, "method", "clean_flush", false);  // older files: the flush left dirty lines
        bm.timer = r.optional(m, "method", "timer", bm.timer);
        bm.warmup = r.optional(m, "method", "warmup", bm.warmup);
        bm.min_samples = r.optional(m, "method", "min_samples", bm.min_samples);
        bm.max_samples = r.optional(m, "method", "max_samples", bm.max_samples);
        bm.target_rel = r.optional(m, "method", "target_rel", bm.target_rel);
        bm.time_cap_s = r.optional(m, "method", "time_cap_s", bm.time_cap_s);
        bm.sessions = r.optional(m, "method", "sessions", bm.sessions);
    }

    const auto& cases = r.array(doc, "", "cases");
    std::set<std::string> ids;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string f = fmt::format("cases[{}]", i);
        BaselineCase c = case_from_json(r, cases[i], f);
        if (!ids.insert(c.id()).second) r.fail(f, fmt::format("{} appears twice", c.id()));
        b.cases.push_back(std::move(c));
    }
    return b;
}

Baseline load_baseline(const std::string& path) { return parse_baseline(read_file(path, "the baseline file"), path); }

void save_baseline(const Baseline& b, const std::string& path) {
    const std::string text = format_baseline(b);  // throws before anything is written
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path target(path);
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    if (ec) throw Error(ErrorCategory::bad_input, fmt::format("cannot create the folder: {}", ec.message()), path);
    const fs::path tmp = target.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        if (!out) throw Error(ErrorCategory::bad_input, "cannot write the baseline file", tmp.string());
    }
    fs::rename(tmp, target, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw Error(ErrorCategory::bad_input, "cannot replace the baseline file", path);
    }
}

std::string baseline_file_name(const BaselineDevice& d) {
    std::string base = d.name.empty() ? d.key : d.name;
    if (!d.arch.empty()) base += "-" + d.arch;
    std::string out;
    for (char ch : base) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c == '_') {
            out += static_cast<char>(std::tolower(c));
        } else if (!out.empty() && out.back() != '-') {
            out += '-';
        }
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return (out.empty() ? std::string("device") : out) + ".json";
}

}  // namespace ktune
