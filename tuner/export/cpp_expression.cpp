#include "tuner/export/cpp_expression.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {
namespace {

struct Token {
    enum class Kind { number, name, op, end } kind = Kind::end;
    std::string text;
    double value = 0;
    std::size_t pos = 0;
};

// Recursive descent with muParser's precedence as the space's parser configures it (lowest first): ?:, ||, &&, the
// comparisons (all on one level, left to right), + -, * / %, unary + - !. Every level emits fully parenthesised C++.
class Translator {
public:
    Translator(const std::string& text, const CppExpressionNames& names, const std::string& where)
        : m_text(text), m_names(names), m_where(where) {
        tokenize();
    }

    std::string run() {
        std::string out = ternary();
        if (peek().kind != Token::Kind::end) fail(fmt::format("unexpected '{}'", peek().text), peek().pos);
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& message, std::size_t pos) const {
        throw Error(ErrorCategory::bad_input,
                    fmt::format("cannot translate expression '{}' to C++: {} (at column {})", m_text, message, pos + 1),
                    m_where);
    }

    void tokenize() {
        static constexpr std::string_view two_char[] = {"&&", "||", "==", "!=", "<=", ">="};
        std::size_t i = 0;
        const std::string& s = m_text;
        while (i < s.size()) {
            const char c = s[i];
            if (std::isspace(static_cast<unsigned char>(c))) {
                ++i;
                continue;
            }
            Token t;
            t.pos = i;
            if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
                auto [end, ec] = std::from_chars(s.data() + i, s.data() + s.size(), t.value);
                if (ec != std::errc()) fail("bad number", i);
                t.kind = Token::Kind::number;
                t.text = s.substr(i, static_cast<std::size_t>(end - (s.data() + i)));
                i += t.text.size();
            } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                std::size_t j = i;
                while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
                t.kind = Token::Kind::name;
                t.text = s.substr(i, j - i);
                i = j;
            } else {
                t.kind = Token::Kind::op;
                for (std::string_view op : two_char)
                    if (s.compare(i, 2, op) == 0) t.text = std::string(op);
                if (t.text.empty()) {
                    if (std::string_view("+-*/%<>!?:(),").find(c) == std::string_view::npos)
                        fail(fmt::format("unexpected character '{}'", c), i);
                    t.text = std::string(1, c);
                }
                i += t.text.size();
            }
            m_tokens.push_back(std::move(t));
        }
        Token end;
        end.pos = s.size();
        m_tokens.push_back(end);
    }

    const Token& peek() const { return m_tokens[m_next]; }
    bool accept(std::string_view op) {
        if (peek().kind == Token::Kind::op && peek().text == op) {
            ++m_next;
            return true;
        }
        return false;
    }
    void expect(std::string_view op) {
        if (!accept(op)) fail(fmt::format("expected '{}'", op), peek().pos);
    }
    std::string helper(std::string_view name) const { return m_names.helper_prefix + std::string(name); }

    std::string ternary() {
        std::string c = logical_or();
        if (!accept("?")) return c;
        std::string a = ternary();
        expect(":");
        std::string b = ternary();
        return fmt::format("{}({}, {}, {})", helper("ex_select"), c, a, b);
    }

    std::string logical_or() {
        std::string a = logical_and();
        while (accept("||")) a = fmt::format("{}({}, {})", helper("ex_or"), a, logical_and());
        return a;
    }

    std::string logical_and() {
        std::string a = comparison();
        while (accept("&&")) a = fmt::format("{}({}, {})", helper("ex_and"), a, comparison());
        return a;
    }

    std::string comparison() {
        static constexpr std::pair<std::string_view, std::string_view> ops[] = {
            {"==", "ex_eq"}, {"!=", "ex_ne"}, {"<=", "ex_le"}, {">=", "ex_ge"}, {"<", "ex_lt"}, {">", "ex_gt"}};
        std::string a = additive();
        for (;;) {
            bool matched = false;
            for (const auto& [op, fn] : ops) {
                if (accept(op)) {
                    a = fmt::format("{}({}, {})", helper(fn), a, additive());
                    matched = true;
                    break;
                }
            }
            if (!matched) return a;
        }
    }

    std::string additive() {
        std::string a = multiplicative();
        for (;;) {
            if (accept("+"))
                a = fmt::format("({} + {})", a, multiplicative());
            else if (accept("-"))
                a = fmt::format("({} - {})", a, multiplicative());
            else
                return a;
        }
    }

    std::string multiplicative() {
        std::string a = unary();
        for (;;) {
            if (accept("*"))
                a = fmt::format("({} * {})", a, unary());
            else if (accept("/"))
                a = fmt::format("{}({}, {})", helper(m_names.real_division ? "ex_fdiv" : "ex_div"), a, unary());
            else if (accept("%"))
                a = fmt::format("{}({}, {})", helper("ex_rem"), a, unary());
            else
                return a;
        }
    }

    std::string unary() {
        if (accept("-")) return fmt::format("(-{})", unary());
        if (accept("+")) return unary();
        if (accept("!")) return fmt::format("{}({})", helper("ex_not"), unary());
        return primary();
    }

    std::string primary() {
        const Token t = peek();
        if (t.kind == Token::Kind::number) {
            ++m_next;
            return cpp_double_literal(t.value);
        }
        if (accept("(")) {
            std::string inner = ternary();
            expect(")");
            return inner;
        }
        if (t.kind != Token::Kind::name)
            fail(t.kind == Token::Kind::end ? "unexpected end" : "unexpected '" + t.text + "'", t.pos);
        ++m_next;
        if (accept("(")) return call(t);
        if (auto it = m_names.constants.find(t.text); it != m_names.constants.end())
            return cpp_double_literal(it->second);
        if (auto it = m_names.variables.find(t.text); it != m_names.variables.end()) return "(" + it->second + ")";
        fail(fmt::format("unknown name {}", t.text), t.pos);
    }

    std::string call(const Token& fn) {
        static constexpr std::pair<std::string_view, int> functions[] = {{"min", 2},      {"max", 2},  {"ceil_div", 2},
                                                                         {"align_up", 2}, {"log2", 1}, {"is_pow2", 1}};
        int arity = -1;
        for (const auto& [name, n] : functions)
            if (fn.text == name) arity = n;
        if (arity < 0) fail(fmt::format("unknown function {}", fn.text), fn.pos);
        std::vector<std::string> args;
        if (!accept(")")) {
            do args.push_back(ternary());
            while (accept(","));
            expect(")");
        }
        if (static_cast<int>(args.size()) != arity)
            fail(fmt::format("{} takes {} argument(s), got {}", fn.text, arity, args.size()), fn.pos);
        std::string out = helper("ex_" + fn.text) + "(";
        for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
        return out + ")";
    }

    const std::string& m_text;
    const CppExpressionNames& m_names;
    const std::string& m_where;
    std::vector<Token> m_tokens;
    std::size_t m_next = 0;
};

}  // namespace

std::string cpp_double_literal(double v) {
    std::string s;
    if (std::isfinite(v) && std::floor(v) == v && std::abs(v) < 1e15)
        s = fmt::format("{}.0", static_cast<long long>(v));
    else
        s = fmt::format("{}", v);  // the shortest text that reads back as v
    return v < 0 ? "(" + s + ")" : s;
}

std::string expression_to_cpp(const std::string& text, const CppExpressionNames& names, const std::string& where) {
    return Translator(text, names, where).run();
}

}  // namespace ktune
