// Reading peer-measurement files (reports/PEERS_FORMAT.md). Strict on purpose: an unknown key is more often a typo
// ("p50" for "p50_us") than an extension, and a peer number that is silently dropped makes a wrong speedup.
#include "reports/peer_import.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/stats.hpp"
#include "results/store.hpp"

namespace ktune {
namespace {

// Ordered: a shape's axes keep the order the file gives, as ktune's problem keys do.
using Json = nlohmann::ordered_json;

constexpr int k_format_version = 1;

const char* type_name(const Json& j) {
    if (j.is_null()) return "null";
    if (j.is_boolean()) return "a boolean";
    if (j.is_number()) return "a number";
    if (j.is_string()) return "a string";
    if (j.is_array()) return "an array";
    return "an object";
}

// A value in the file and its JSON path, for messages that point at the field.
class Node {
public:
    Node(const Json& j, std::string path, const std::string& source)
        : m_j(j), m_path(std::move(path)), m_source(source) {}

    [[noreturn]] void fail(const std::string& message) const {
        throw Error(ErrorCategory::bad_input, message, m_path.empty() ? m_source : m_source + ": " + m_path);
    }

    const Json& json() const { return m_j; }
    const std::string& path() const { return m_path; }

    Node member(std::string_view key) const {
        return Node(m_j.at(std::string(key)), m_path.empty() ? std::string(key) : m_path + "." + std::string(key),
                    m_source);
    }
    bool has(std::string_view key) const { return m_j.contains(std::string(key)); }
    Node element(std::size_t i) const { return Node(m_j.at(i), fmt::format("{}[{}]", m_path, i), m_source); }

    void expect_object(std::initializer_list<std::string_view> required,
                       std::initializer_list<std::string_view> optional) const {
        if (!m_j.is_object()) fail(fmt::format("expected an object, got {}", type_name(m_j)));
        for (const std::string_view k : required)
            if (!has(k)) fail(fmt::format("missing required key \"{}\"", k));
        for (const auto& [key, value] : m_j.items()) {
            const auto is = [&](std::string_view k) { return k == key; };
            if (std::none_of(required.begin(), required.end(), is) &&
                std::none_of(optional.begin(), optional.end(), is)) {
                std::string allowed;
                for (const auto list : {required, optional})
                    for (const std::string_view k : list) allowed += (allowed.empty() ? "" : ", ") + std::string(k);
                fail(fmt::format("unknown key \"{}\" (allowed: {})", key, allowed));
            }
        }
    }

    std::string string(bool allow_empty = false) const {
        if (!m_j.is_string()) fail(fmt::format("expected a string, got {}", type_name(m_j)));
        std::string s = m_j.get<std::string>();
        if (s.empty() && !allow_empty) fail("must not be empty");
        return s;
    }

    // impl and method names become report columns and CSV headers: keep them plain.
    std::string name() const {
        std::string s = string();
        for (const char c : s) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' && c != '+')
                fail(fmt::format("\"{}\" may hold only letters, digits and _ - . +", s));
        }
        return s;
    }

    double positive_number() const {
        if (!m_j.is_number()) fail(fmt::format("expected a positive number, got {}", type_name(m_j)));
        const double v = m_j.get<double>();
        if (!std::isfinite(v) || v <= 0) fail(fmt::format("expected a positive number, got {}", m_j.dump()));
        return v;
    }

    std::int64_t positive_integer() const {
        if (!m_j.is_number_integer() || m_j.get<std::int64_t>() <= 0)
            fail(fmt::format("expected a positive integer, got {}", m_j.is_number() ? m_j.dump() : type_name(m_j)));
        return m_j.get<std::int64_t>();
    }

private:
    const Json& m_j;
    std::string m_path;
    const std::string& m_source;
};

Problem parse_problem(const Node& result) {
    Problem p;
    const Node dtype = result.member("dtype");
    const std::string name = dtype.string();
    const auto parsed = parse_dtype(name);
    if (!parsed) dtype.fail(fmt::format("unknown dtype \"{}\" (expected fp32, fp16 or bf16)", name));
    p.dtype = *parsed;
    const Node shape = result.member("shape");
    if (!shape.json().is_object() || shape.json().empty())
        shape.fail(fmt::format("expected an object of axis sizes such as {{\"M\": 4096, \"H\": 4096}}, got {}",
                               shape.json().is_object() ? "an empty object" : type_name(shape.json())));
    for (const auto& [axis, value] : shape.json().items()) {
        (void)value;
        p.shape.emplace_back(axis, shape.member(axis).positive_integer());
    }
    return p;
}

PeerRecord parse_result(const Node& r, const std::string& device_name, const std::string& device_key,
                        const std::string& default_method, const std::string& environment, const std::string& source) {
    r.expect_object({"op", "variant", "dtype", "shape", "impl"},
                    {"method", "p50_us", "p95_us", "p99_us", "mean_us", "n", "samples_us"});
    PeerRecord p;
    p.op = r.member("op").string();
    p.variant = r.member("variant").string(true);
    p.problem = parse_problem(r);
    p.impl = r.member("impl").name();
    if (r.has("method")) {
        p.method = r.member("method").name();
    } else if (default_method.empty()) {
        r.fail("missing \"method\": give one for the whole file or for this result");
    } else {
        p.method = default_method;
    }
    p.device_name = device_name;
    p.device_key = device_key;
    p.environment_json = environment;
    p.source = source;

    if (r.has("samples_us")) {
        const Node samples = r.member("samples_us");
        if (!samples.json().is_array())
            samples.fail(fmt::format("expected an array, got {}", type_name(samples.json())));
        for (std::size_t i = 0; i < samples.json().size(); ++i)
            p.samples_us.push_back(samples.element(i).positive_number());
    }
    // Percentiles the file gives win; those it leaves out come from the samples.
    const SampleStats stats = p.samples_us.empty() ? SampleStats{} : summarize(p.samples_us);
    auto percentile = [&](std::string_view key, double from_samples) {
        if (r.has(key)) return r.member(key).positive_number();
        if (p.samples_us.empty()) r.fail(fmt::format("missing \"{}\" (required unless \"samples_us\" is given)", key));
        return from_samples;
    };
    p.p50_us = percentile("p50_us", stats.p50);
    p.p95_us = percentile("p95_us", stats.p95);
    p.p99_us = percentile("p99_us", stats.p99);
    if (p.p95_us < p.p50_us)
        r.member(r.has("p95_us") ? "p95_us" : "p50_us")
            .fail(fmt::format("p95_us ({}) is smaller than p50_us ({})", p.p95_us, p.p50_us));
    if (p.p99_us < p.p95_us)
        r.member(r.has("p99_us") ? "p99_us" : "p95_us")
            .fail(fmt::format("p99_us ({}) is smaller than p95_us ({})", p.p99_us, p.p95_us));
    if (r.has("mean_us")) {
        p.mean_us = r.member("mean_us").positive_number();
    } else if (!p.samples_us.empty()) {
        p.mean_us = stats.mean;
    }
    p.n = r.has("n") ? r.member("n").positive_integer() : static_cast<std::int64_t>(p.samples_us.size());
    return p;
}

struct PeerFile {
    std::string device_name;
    std::vector<PeerRecord> results;
};

PeerFile parse_file(std::string_view text, const std::string& source) {
    Json doc;
    try {
        doc = Json::parse(text);
    } catch (const Json::parse_error& e) {
        // "[json.exception.parse_error.101] parse error at line 3, column 5: ..." without the exception's name.
        std::string what = e.what();
        if (const auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
            what = what.substr(close + 2);
        throw Error(ErrorCategory::bad_input, "not valid JSON: " + what, source);
    }
    const Node root(doc, "", source);
    root.expect_object({"device", "results"}, {"format_version", "method", "environment"});
    if (root.has("format_version")) {
        const Node v = root.member("format_version");
        if (!v.json().is_number_integer() || v.json().get<std::int64_t>() != k_format_version)
            v.fail(fmt::format("this ktune reads format_version {}, got {}", k_format_version, v.json().dump()));
    }
    const Node device = root.member("device");
    device.expect_object({"name"}, {"key"});
    const std::string device_name = device.member("name").string();
    const std::string device_key = device.has("key") ? device.member("key").string(true) : std::string();
    const std::string method = root.has("method") ? root.member("method").name() : std::string();
    std::string environment = "{}";
    if (root.has("environment")) {
        const Node env = root.member("environment");
        if (!env.json().is_object()) env.fail(fmt::format("expected an object, got {}", type_name(env.json())));
        environment = env.json().dump();
    }

    const Node results = root.member("results");
    if (!results.json().is_array()) results.fail(fmt::format("expected an array, got {}", type_name(results.json())));
    PeerFile out{device_name, {}};
    std::map<std::string, std::size_t> seen;  // identity -> index, to refuse a result given twice
    for (std::size_t i = 0; i < results.json().size(); ++i) {
        const Node r = results.element(i);
        PeerRecord p = parse_result(r, device_name, device_key, method, environment, source);
        const std::string identity =
            fmt::format("{}\n{}\n{}\n{}\n{}", p.op, p.variant, p.problem.key(), p.impl, p.method);
        if (const auto [it, added] = seen.emplace(identity, i); !added)
            r.fail(fmt::format("repeats results[{}] (same op, variant, dtype, shape, impl and method)", it->second));
        out.results.push_back(std::move(p));
    }
    return out;
}

}  // namespace

std::vector<PeerRecord> parse_peers(std::string_view text, const std::string& source) {
    return parse_file(text, source).results;
}

PeerImportResult import_peers(Store& store, const std::string& path) {
    const PeerFile file = parse_file(read_file(path, "the peer measurement file"), path);
    const PeerWriteCounts counts = store.record_peers(file.results);
    return PeerImportResult{counts.inserted, counts.replaced, file.device_name};
}

}  // namespace ktune
