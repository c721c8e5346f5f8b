#include "tuner/interop/t4.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file.hpp"

namespace ktune {
namespace {

using json = nlohmann::json;

bool ends_with_gz(const std::string& path) { return path.size() > 3 && path.ends_with(".gz"); }

std::string read_gzip(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw Error(ErrorCategory::bad_input, "cannot open the gzip'd T4 file", path);
    std::string out;
    char buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) {
        out.append(buf, std::size_t(n));
        if (out.size() > 16 * k_max_input_file_bytes) {
            gzclose(f);
            throw Error(ErrorCategory::bad_input, "the T4 file is larger than ktune reads", path);
        }
    }
    const bool failed = n < 0;
    gzclose(f);
    if (failed) throw Error(ErrorCategory::bad_input, "cannot decompress the T4 file", path);
    return out;
}

double unit_to_ms(const std::string& unit, const std::string& where) {
    if (unit.empty() || unit == "milliseconds" || unit == "miliseconds" || unit == "ms") return 1;
    if (unit == "seconds" || unit == "s") return 1000;
    if (unit == "microseconds" || unit == "us") return 1e-3;
    throw Error(ErrorCategory::bad_input, fmt::format("unknown metadata.timeunit '{}'", unit), where);
}

double number_or(const json& j, const char* key, double fallback) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

double T4Result::total_ms() const {
    return compile_ms + framework_ms + search_ms + validation_ms +
           std::accumulate(runtimes_ms.begin(), runtimes_ms.end(), 0.0);
}

T4File parse_t4(std::string_view text, const std::string& where) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(ErrorCategory::bad_input, fmt::format("not JSON: {}", e.what()), where);
    }
    if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
        throw Error(ErrorCategory::bad_input, "not a T4 file: no \"results\" array", where);
    T4File f;
    if (j.contains("schema_version") && j["schema_version"].is_string())
        f.schema_version = j["schema_version"].get<std::string>();
    std::string unit;
    if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("timeunit"))
        unit = j["metadata"]["timeunit"].get<std::string>();
    const double to_ms = unit_to_ms(unit, where);

    // First pass: every parameter's values, to tell the integral parameters from the others.
    const json& results = j["results"];
    std::map<std::string, std::set<std::string>> texts;
    std::map<std::string, bool> integral;
    for (std::size_t r = 0; r < results.size(); ++r) {
        const json& e = results[r];
        if (!e.is_object() || !e.contains("configuration") || !e["configuration"].is_object())
            throw Error(ErrorCategory::bad_input, fmt::format("results[{}] has no \"configuration\" object", r), where);
        for (const auto& [name, v] : e["configuration"].items()) {
            if (r == 0) f.parameters.push_back(name);
            const bool is_int =
                v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
            auto [it, fresh] = integral.emplace(name, is_int);
            if (!fresh) it->second = it->second && is_int;
            texts[name].insert(v.dump());
        }
    }
    for (const std::string& name : f.parameters)
        if (!integral[name]) {
            // Positions in numeric order where the values are numbers, in text order otherwise.
            std::vector<std::string> v(texts[name].begin(), texts[name].end());
            std::ranges::sort(v, [](const std::string& a, const std::string& b) {
                const json ja = json::parse(a), jb = json::parse(b);
                if (ja.is_number() && jb.is_number()) return ja.get<double>() < jb.get<double>();
                return a < b;
            });
            f.labels[name] = std::move(v);
        }

    for (std::size_t r = 0; r < results.size(); ++r) {
        const json& e = results[r];
        T4Result out;
        for (const std::string& name : f.parameters) {
            if (!e["configuration"].contains(name))
                throw Error(ErrorCategory::bad_input, fmt::format("results[{}] has no value for parameter {}", r, name),
                            where);
            const json& v = e["configuration"][name];
            if (const auto l = f.labels.find(name); l != f.labels.end())
                out.config.emplace_back(name, std::ranges::find(l->second, v.dump()) - l->second.begin());
            else
                out.config.emplace_back(name, std::int64_t(std::llround(v.get<double>())));
        }
        if (e.contains("invalidity") && e["invalidity"].is_string()) out.invalidity = e["invalidity"];
        if (e.contains("measurements") && e["measurements"].is_array())
            for (const json& m : e["measurements"])
                if (m.is_object() && m.value("name", "") == "time" && m.contains("value") && m["value"].is_number())
                    out.time_ms = m["value"].get<double>() * to_ms;
        if (e.contains("times") && e["times"].is_object()) {
            const json& t = e["times"];
            out.compile_ms = number_or(t, "compilation", 0) * to_ms;
            out.framework_ms = number_or(t, "framework", 0) * to_ms;
            out.search_ms = number_or(t, "search_algorithm", 0) * to_ms;
            out.validation_ms = number_or(t, "validation", 0) * to_ms;
            if (t.contains("runtimes") && t["runtimes"].is_array())
                for (const json& x : t["runtimes"])
                    if (x.is_number()) out.runtimes_ms.push_back(x.get<double>() * to_ms);
        }
        if (e.contains("timestamp") && e["timestamp"].is_string()) out.timestamp = e["timestamp"];
        f.results.push_back(std::move(out));
    }
    return f;
}

T4File read_t4(const std::string& path) {
    return parse_t4(ends_with_gz(path) ? read_gzip(path) : read_file(path, "T4 file"), path);
}

std::string t4_json(const T4File& f) {
    json results = json::array();
    for (const T4Result& r : f.results) {
        json config = json::object();
        for (const auto& [name, v] : r.config) {
            const auto l = f.labels.find(name);
            if (l != f.labels.end() && v >= 0 && std::size_t(v) < l->second.size())
                config[name] = json::parse(l->second[std::size_t(v)]);
            else
                config[name] = v;
        }
        json times = {{"compilation", r.compile_ms},
                      {"framework", r.framework_ms},
                      {"search_algorithm", r.search_ms},
                      {"validation", r.validation_ms}};
        if (!r.runtimes_ms.empty()) times["runtimes"] = r.runtimes_ms;
        json value = r.time_ms ? json(*r.time_ms)
                               : json(r.invalidity == "compile"   ? "CompilationFailedConfig"
                                      : r.invalidity == "runtime" ? "RuntimeFailedConfig"
                                                                  : "InvalidConfig");
        results.push_back({{"timestamp", r.timestamp},
                           {"configuration", config},
                           {"times", times},
                           {"invalidity", r.invalidity},
                           {"correctness", r.valid() ? 1 : 0},
                           {"measurements", json::array({{{"name", "time"}, {"value", value}, {"unit", "ms"}}})},
                           {"objectives", json::array({"time"})}});
    }
    return json{
        {"schema_version", f.schema_version}, {"metadata", {{"timeunit", "milliseconds"}}}, {"results", results}}
        .dump(1);
}

void write_t4(const T4File& f, const std::string& path) {
    const std::string text = t4_json(f);
    if (ends_with_gz(path)) {
        gzFile g = gzopen(path.c_str(), "wb");
        if (!g || gzwrite(g, text.data(), unsigned(text.size())) != int(text.size()) || gzclose(g) != Z_OK)
            throw Error(ErrorCategory::bad_input, "cannot write the gzip'd T4 file", path);
        return;
    }
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (!out) throw Error(ErrorCategory::bad_input, "cannot write the T4 file", path);
    const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    if (std::fclose(out) != 0 || !ok) throw Error(ErrorCategory::bad_input, "cannot write the T4 file", path);
}

T4File t4_from_results(const std::vector<ResultRecord>& records) {
    T4File f;
    for (const ResultRecord& rec : records) {
        T4Result r;
        std::size_t start = 0;
        const std::string& key = rec.config_key;  // "A=1,B=2"
        while (start < key.size()) {
            const std::size_t comma = std::min(key.find(',', start), key.size());
            const std::string item = key.substr(start, comma - start);
            const std::size_t eq = item.find('=');
            if (eq != std::string::npos) r.config.emplace_back(item.substr(0, eq), std::stoll(item.substr(eq + 1)));
            start = comma + 1;
        }
        if (f.parameters.empty())
            for (const auto& [name, v] : r.config) f.parameters.push_back(name);
        const Measurement& m = rec.measurement;
        switch (m.status) {
            case Status::ok:
                r.invalidity = "correct";
                break;
            case Status::compile_error:
                r.invalidity = "compile";
                break;
            case Status::invalid_result:
                r.invalidity = "correctness";
                break;
            case Status::launch_error:
            case Status::timeout:
                r.invalidity = "runtime";
                break;
            case Status::compiled:  // a compile-only sweep's row was never run: no result to give
                continue;
        }
        if (m.status == Status::ok && m.rank_us() > 0) r.time_ms = m.rank_us() / 1000;
        r.compile_ms = m.compile.compile_seconds * 1000;
        for (double s : m.samples_us) r.runtimes_ms.push_back(s / 1000);
        r.timestamp = rec.measured_at;
        f.results.push_back(std::move(r));
    }
    return f;
}

}  // namespace ktune
