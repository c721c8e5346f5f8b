#include "tuner/space/located_yaml.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune::detail {
namespace {

std::string join_field(const std::string& parent, std::string_view key) {
    return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

// Nodes built from an empty value ("key:") may carry no mark; they inherit the line of the key.
int line_of(const YAML::Node& node, int fallback) {
    if (!node) return fallback;
    const YAML::Mark m = node.Mark();
    return m.is_null() ? fallback : m.line + 1;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
            diag = up;
        }
    }
    return row[b.size()];
}

std::string describe(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Null:
            return "nothing";
        case YAML::NodeType::Scalar:
            return fmt::format("'{}'", excerpt(node.Scalar()));
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Map:
            return "a mapping";
        default:
            return "an undefined node";
    }
}

}  // namespace

Located::Located(YAML::Node node, std::string field, int line, const std::string* file)
    : m_node(std::move(node)), m_field(std::move(field)), m_line(line), m_key_line(line), m_file(file) {}

Located Located::parse(const std::string& text, const std::string* file) {
    try {
        YAML::Node root = YAML::Load(text);
        return Located(root, "", line_of(root, 1), file);
    } catch (const YAML::Exception& e) {
        int line = e.mark.is_null() ? 1 : e.mark.line + 1;
        throw Error(ErrorCategory::bad_input,
                    fmt::format("malformed YAML: {} (column {})", e.msg, e.mark.is_null() ? 1 : e.mark.column + 1),
                    fmt::format("{}:{}", *file, line));
    }
}

std::string Located::where() const {
    return m_field.empty() ? fmt::format("{}:{}", *m_file, m_line) : fmt::format("{}:{}: {}", *m_file, m_line, m_field);
}

void Located::fail(const std::string& message) const { throw Error(ErrorCategory::bad_input, message, where()); }

Located Located::missing(std::string_view key) const {
    return Located(YAML::Node(), join_field(m_field, key), m_key_line, m_file);
}

std::vector<std::pair<std::string, Located>> Located::entries(std::string_view what) const {
    if (!m_node || !m_node.IsMap()) fail(fmt::format("expected a mapping, got {}", describe(m_node)));
    std::vector<std::pair<std::string, Located>> out;
    std::unordered_map<std::string, int> first_line;  // n log n over many keys, not n^2
    for (const auto& kv : m_node) {
        // Copies: yaml-cpp's iterator hands out temporaries, a reference into one dangles.
        const YAML::Node key = kv.first;
        const YAML::Node node = kv.second;
        int key_line = line_of(key, m_line);
        if (!key.IsScalar())
            Located(key, m_field, key_line, m_file).fail(fmt::format("a {} name must be a plain string", what));
        std::string name = key.Scalar();
        Located value(node, join_field(m_field, name), line_of(node, key_line), m_file);
        // yaml-cpp 0.7 keeps repeated keys; silently taking one of them would hide a mistake.
        if (node.IsNull()) value.m_line = key_line;
        if (const auto [it, added] = first_line.try_emplace(name, value.m_line); !added)
            Located(key, value.field(), key_line, m_file)
                .fail(fmt::format("duplicated {} '{}' (first defined on line {})", what, excerpt(name), it->second));
        value.m_key_line = key_line;
        out.emplace_back(std::move(name), std::move(value));
    }
    return out;
}

std::vector<std::pair<std::string, Located>> Located::fields(std::initializer_list<std::string_view> allowed,
                                                             std::initializer_list<std::string_view> required) const {
    auto out = entries("key");
    for (const auto& [name, value] : out) {
        if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
        std::string_view best;
        std::size_t best_distance = 3;  // suggest only close misspellings
        for (auto a : allowed) {
            if (name.size() > a.size() + best_distance) continue;  // too far anyway; and a huge key costs nothing
            std::size_t d = edit_distance(name, a);
            if (d < best_distance) best_distance = d, best = a;
        }
        std::string list;
        for (auto a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
        std::string hint =
            best.empty() ? fmt::format("expected one of: {}", list) : fmt::format("did you mean '{}'?", best);
        Located(value.node(), value.field(), value.key_line(), m_file)
            .fail(fmt::format("unknown key '{}' ({})", excerpt(name), hint));
    }
    for (auto r : required)
        if (!find_field(out, r)) missing(r).fail(fmt::format("missing required key '{}'", join_field(m_field, r)));
    return out;
}

std::vector<Located> Located::items() const {
    if (!m_node || !m_node.IsSequence()) fail(fmt::format("expected a list, got {}", describe(m_node)));
    std::vector<Located> out;
    std::size_t i = 0;
    for (const auto& item : m_node) {
        out.emplace_back(item, fmt::format("{}[{}]", m_field, i), line_of(item, m_line), m_file);
        ++i;
    }
    return out;
}

std::string Located::scalar() const {
    if (!m_node || !m_node.IsScalar()) fail(fmt::format("expected a single value, got {}", describe(m_node)));
    return m_node.Scalar();
}

std::string Located::text() const {
    std::string s = scalar();
    if (s.find_first_not_of(" \t") == std::string::npos) fail("expected a non-empty string");
    return s;
}

std::int64_t Located::integer(std::int64_t lo, std::int64_t hi, std::string_view what) const {
    std::string s = scalar();
    const char* begin = s.data();
    const char* end = s.data() + s.size();
    if (begin != end && *begin == '+') ++begin;
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(begin, end, v);
    bool all_digits = begin != end && ptr == end;
    if (all_digits && ec == std::errc::result_out_of_range)
        fail(fmt::format("{} {} is out of range: expected an integer in [{}, {}]", what, excerpt(s), lo, hi));
    if (!all_digits || ec != std::errc()) fail(fmt::format("{} '{}' is not an integer", what, excerpt(s)));
    if (v < lo || v > hi) fail(fmt::format("{} {} is out of range: expected an integer in [{}, {}]", what, v, lo, hi));
    return v;
}

double Located::number() const {
    std::string s = scalar();
    const char* begin = s.data();
    const char* end = s.data() + s.size();
    if (begin != end && *begin == '+') ++begin;
    double v = 0;
    auto [ptr, ec] = std::from_chars(begin, end, v);
    if (begin == end || ptr != end || ec != std::errc() || !std::isfinite(v))
        fail(fmt::format("'{}' is not a finite number", excerpt(s)));
    return v;
}

std::string excerpt(std::string_view text, std::size_t max) {
    std::string out;
    const std::size_t shown = std::min(text.size(), max);
    for (std::size_t i = 0; i < shown; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n')
            out += "\\n";
        else if (c < 0x20 || c == 0x7f)
            out += fmt::format("\\x{:02x}", c);
        else
            out += text[i];
    }
    if (shown < text.size()) out += fmt::format("... ({} characters)", text.size());
    return out;
}

const Located* find_field(const std::vector<std::pair<std::string, Located>>& fields, std::string_view key) {
    for (const auto& [name, value] : fields)
        if (name == key) return &value;
    return nullptr;
}

}  // namespace ktune::detail
