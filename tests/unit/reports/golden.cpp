#include "tests/unit/reports/golden.hpp"
#include "ktune_test_config.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace ktune::test {
namespace {

constexpr std::string_view k_num = "{num}";

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Length of the number at the start of s: [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?; 0 when none.
std::size_t number_length(std::string_view s) {
    std::size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t mantissa = i;
    while (i < s.size() && digit(s[i])) ++i;
    const bool int_digits = i > mantissa;
    if (i < s.size() && s[i] == '.' && (int_digits || (i + 1 < s.size() && digit(s[i + 1])))) {
        ++i;
        while (i < s.size() && digit(s[i])) ++i;
    }
    if (i == mantissa || (i == mantissa + 1 && s[mantissa] == '.')) return 0;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && digit(s[j])) {
            while (j < s.size() && digit(s[j])) ++j;
            i = j;
        }
    }
    return i;
}

std::vector<std::string_view> lines(std::string_view s, std::string& storage) {
    storage.clear();
    for (std::size_t i = 0; i < s.size(); ++i)
        if (!(s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')) storage += s[i];
    std::vector<std::string_view> out;
    std::string_view rest = storage;
    while (!rest.empty()) {
        const std::size_t nl = rest.find('\n');
        out.push_back(rest.substr(0, nl));
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
    }
    return out;
}

// Where the line stops matching, or npos when it matches.
std::size_t line_mismatch(std::string_view golden, std::string_view actual) {
    std::size_t g = 0, a = 0;
    while (g < golden.size()) {
        if (golden.substr(g, k_num.size()) == k_num) {
            const std::size_t n = number_length(actual.substr(a));
            if (n == 0) return a;
            a += n;
            g += k_num.size();
        } else {
            if (a >= actual.size() || golden[g] != actual[a]) return a;
            ++g;
            ++a;
        }
    }
    return a == actual.size() ? std::string_view::npos : a;
}

}  // namespace

std::string golden_mismatch(std::string_view golden, std::string_view actual) {
    std::string gs, as;
    const auto gl = lines(golden, gs);
    const auto al = lines(actual, as);
    for (std::size_t i = 0; i < std::max(gl.size(), al.size()); ++i) {
        if (i >= gl.size()) return "line " + std::to_string(i + 1) + ": extra line: " + std::string(al[i]);
        if (i >= al.size()) return "line " + std::to_string(i + 1) + ": missing line: " + std::string(gl[i]);
        const std::size_t at = line_mismatch(gl[i], al[i]);
        if (at != std::string_view::npos)
            return "line " + std::to_string(i + 1) + ", column " + std::to_string(at + 1) +
                   ":\n  golden: " + std::string(gl[i]) + "\n  actual: " + std::string(al[i]);
    }
    return {};
}

std::string golden_from(std::string_view actual) {
    std::string out;
    for (std::size_t i = 0; i < actual.size();) {
        // A number glued to a name stays: bf16, sm_90, M=4096, #1f6feb, &#39;.
        // So do numbers glued to a unit other than the speedup's x (80GB, 132SM, 12px), the parts of a date or
        // time (2025-06-01T12:00:00Z), of a version (2.5.1) and of a path or URL (w3.org/2000/svg).
        const auto at = [&](std::size_t k) { return k < actual.size() ? actual[k] : ' '; };
        const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
        const char before = i > 0 ? actual[i - 1] : ' ';
        const bool part_of_name = alnum(before) || before == '_' || before == '=' || before == '#' || before == '/' ||
                                  ((before == '-' || before == ':' || before == '.') && i > 1 && digit(actual[i - 2]));
        std::size_t n = part_of_name ? 0 : number_length(actual.substr(i));
        if (n > 0) {
            const char after = at(i + n);
            if ((alnum(after) && after != 'x') || after == '/' ||
                ((after == '-' || after == ':' || after == '.') && digit(at(i + n + 1))))
                n = 0;
        }
        if (n > 0) {
            out += k_num;
            i += n;
        } else {
            out += actual[i++];
        }
    }
    return out;
}

void expect_matches_golden(const std::string& actual, const std::string& name) {
    const std::string path = std::string(KTUNE_TEST_DATA) + "/reports/" + name;
    if (const char* update = std::getenv("KTUNE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
        std::ofstream(path, std::ios::binary) << golden_from(actual);
        return;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in.good()) << "no golden file " << path << " (write it with KTUNE_UPDATE_GOLDEN=1)";
    const std::string golden(std::istreambuf_iterator<char>(in), {});
    const std::string mismatch = golden_mismatch(golden, actual);
    EXPECT_EQ(mismatch, "") << path;
}

}  // namespace ktune::test
