#pragma once
// Internal to tuner/space: a YAML node together with the file, line and field path it came from, so that every
// validation error can say "search_spaces/rmsnorm.yaml:12: parameters.BLOCK.values[2]". yaml-cpp 0.7 does not
// reject repeated mapping keys or tell us about unknown ones, so the checks live here.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace ktune::detail {

class Located {
public:
    Located(YAML::Node node, std::string field, int line, const std::string* file);

    // The root of a parsed document; throws Error(bad_input) with the parse error's line on malformed YAML.
    static Located parse(const std::string& text, const std::string* file);

    const YAML::Node& node() const { return m_node; }
    const std::string& field() const { return m_field; }
    int line() const { return m_line; }
    // For a mapping value, the line of its key (a nested block starts on the line after it).
    int key_line() const { return m_key_line; }
    std::string where() const;  // "file:line: field"
    [[noreturn]] void fail(const std::string& message) const;

    bool is_null() const { return !m_node || m_node.IsNull(); }

    // A mapping with keys from `allowed`, each at most once, `required` ones present. The entries in file order.
    std::vector<std::pair<std::string, Located>> fields(std::initializer_list<std::string_view> allowed,
                                                        std::initializer_list<std::string_view> required) const;
    // A mapping with free-form keys (parameter names, axes, dtypes), each at most once, in file order.
    // `what` names the entries in messages ("parameter", "axis").
    std::vector<std::pair<std::string, Located>> entries(std::string_view what) const;
    // A sequence, its items with field paths "field[i]".
    std::vector<Located> items() const;

    std::string scalar() const;  // any scalar, as written
    std::string text() const;    // a non-empty scalar
    std::int64_t integer(std::int64_t lo, std::int64_t hi, std::string_view what) const;
    double number() const;  // a finite number

    // The line of a missing key's parent and the key's full field path.
    Located missing(std::string_view key) const;

private:
    YAML::Node m_node;
    std::string m_field;
    int m_line;
    int m_key_line;
    const std::string* m_file;
};

// User text as a message quotes it: at most `max` characters (then "..." and the full length), control characters as
// escapes, so a 50 MB one-line value or a newline cannot flood or forge a message.
std::string excerpt(std::string_view text, std::size_t max = 80);

// The value of `key` among `fields`, if present.
const Located* find_field(const std::vector<std::pair<std::string, Located>>& fields, std::string_view key);

}  // namespace ktune::detail
