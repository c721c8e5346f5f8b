#include "tuner/space/expression.hpp"

#include <muParserBase.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/space/located_yaml.hpp"  // excerpt

namespace ktune {
namespace {

using detail::excerpt;

// Thrown from inside muParser callbacks, which know nothing of the expression; evaluate() turns it into an Error
// that names the expression and its origin.
struct EvalFailure {
    const char* what;
};

bool integral(double v) { return std::abs(v) < 9.0e15 && std::floor(v) == v; }

// Integral operands divide as C++ divides integers: truncating toward zero. Real operands reach '/' only in an
// expression the constructor refused (first_real_value), so the real branch is for safety, not for use.
double op_div(double a, double b) {
    if (b == 0) throw EvalFailure{"division by zero"};
    if (integral(a) && integral(b))
        return static_cast<double>(static_cast<std::int64_t>(a) / static_cast<std::int64_t>(b));
    return a / b;
}

// Real arithmetic (an op spec's f32 arguments, such as 1 / sqrt(H)): '/' divides as doubles do.
double op_div_real(double a, double b) {
    if (b == 0) throw EvalFailure{"division by zero"};
    return a / b;
}

double op_rem(double a, double b) {
    if (b == 0) throw EvalFailure{"remainder by zero"};
    // C++'s sign rule: the remainder takes the dividend's sign, so (a / b) * b + a % b == a.
    if (integral(a) && integral(b))
        return static_cast<double>(static_cast<std::int64_t>(a) % static_cast<std::int64_t>(b));
    return std::fmod(a, b);
}

// The first real value of an expression's text: a literal with a point or an exponent ("0.5", "1e3"), or a call of
// log2 (whose result is real). "" when every value is an integer.
std::string first_real_value(const std::string& text) {
    auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t j = i;
            while (j < text.size() && name_char(text[j])) ++j;
            const std::string name = text.substr(i, j - i);
            std::size_t k = text.find_first_not_of(" \t", j);
            if (name == "log2" && k != std::string::npos && text[k] == '(') return "log2(...)";
            i = j;
        } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
            std::size_t j = i;
            while (j < text.size() && (name_char(text[j]) || text[j] == '.')) ++j;
            const std::string literal = text.substr(i, j - i);
            if (literal.find_first_of(".eE") != std::string::npos) return literal;
            i = j;
        } else {
            ++i;
        }
    }
    return {};
}

double fn_ceil_div(double a, double b) {
    if (b == 0) throw EvalFailure{"ceil_div by zero"};
    if (integral(a) && integral(b)) {
        // Exact for every integer a double holds; a/b in floating point can round up past an integer.
        auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
        std::int64_t q = x / y;
        if (x % y != 0 && ((x < 0) == (y < 0))) ++q;
        return static_cast<double>(q);
    }
    return std::ceil(a / b);
}

double fn_align_up(double a, double b) { return fn_ceil_div(a, b) * b; }

double fn_log2(double a) {
    if (!(a > 0)) throw EvalFailure{"log2 of a value that is not positive"};
    return std::log2(a);
}

double fn_is_pow2(double a) {
    if (!integral(a) || a < 1) return 0;
    auto x = static_cast<std::int64_t>(a);
    return (x & (x - 1)) == 0 ? 1 : 0;
}

double fn_min(double a, double b) { return a < b ? a : b; }
double fn_max(double a, double b) { return a < b ? b : a; }

// A muParser with exactly the language of the search-space files: no sin/cos/_pi, no "=" assignment, no "^", and
// every binary operator our own so that "/" and "%" can refuse a zero divisor. The built-in operators are switched
// off for that reason (muParser does not let a built-in be redefined); ?: and parentheses stay built in.
class KtuneParser : public mu::ParserBase {
public:
    explicit KtuneParser(Arithmetic arithmetic = Arithmetic::integer) : m_arithmetic(arithmetic) {
        AddValIdent(read_number);
        InitCharSets();
        InitFun();
        InitConst();
        InitOprt();
    }

    void InitCharSets() override {
        DefineNameChars("0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
        DefineOprtChars("+-*/%<>=!&|");
        DefineInfixOprtChars("+-!");
    }

    void InitFun() override {
        // Callbacks that can throw are not constant-folded, so "1/0" fails at evaluation with a proper message.
        DefineFun("min", fn_min);
        DefineFun("max", fn_max);
        DefineFun("ceil_div", fn_ceil_div, false);
        DefineFun("align_up", fn_align_up, false);
        DefineFun("log2", fn_log2, false);
        DefineFun("is_pow2", fn_is_pow2);
    }

    void InitConst() override {}

    Arithmetic m_arithmetic;

    void InitOprt() override {
        EnableBuiltInOprt(false);
        DefineInfixOprt("-", [](double a) { return -a; });
        DefineInfixOprt("+", [](double a) { return a; });
        DefineInfixOprt("!", [](double a) { return a == 0 ? 1.0 : 0.0; });
        // Precedence as in C, except that muParser puts all comparisons on one level.
        DefineOprt(
            "*", [](double a, double b) { return a * b; }, mu::prMUL_DIV);
        DefineOprt("/", m_arithmetic == Arithmetic::real ? op_div_real : op_div, mu::prMUL_DIV);
        DefineOprt("%", op_rem, mu::prMUL_DIV);
        DefineOprt(
            "+", [](double a, double b) { return a + b; }, mu::prADD_SUB);
        DefineOprt(
            "-", [](double a, double b) { return a - b; }, mu::prADD_SUB);
        DefineOprt(
            "==", [](double a, double b) { return a == b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(
            "!=", [](double a, double b) { return a != b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(
            "<", [](double a, double b) { return a < b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(
            "<=", [](double a, double b) { return a <= b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(
            ">", [](double a, double b) { return a > b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(
            ">=", [](double a, double b) { return a >= b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(
            "&&", [](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }, mu::prLAND);
        DefineOprt(
            "||", [](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }, mu::prLOR);
    }

private:
    // Decimal literals only, independent of the C locale. muParser passes the text at the token (not the start of
    // the expression) and the absolute position to advance.
    static int read_number(const char* text, int* pos, double* value) {
        if (!((*text >= '0' && *text <= '9') || *text == '.')) return 0;
        auto [end, ec] = std::from_chars(text, text + std::strlen(text), *value);
        if (ec != std::errc()) return 0;
        *pos += static_cast<int>(end - text);
        return 1;
    }
};

// One parser bound to its own variable slots. muParser's Eval uses per-parser scratch state, so a parser serves
// one thread at a time; an Expression keeps a small pool of them.
struct Evaluator {
    explicit Evaluator(Arithmetic arithmetic) : parser(arithmetic) {}
    KtuneParser parser;
    std::vector<double> slots;
};

}  // namespace

struct Expression::Impl {
    std::vector<std::string> names;  // sorted, as muParser reports them
    Arithmetic arithmetic = Arithmetic::integer;
    std::mutex mutex;
    std::vector<std::unique_ptr<Evaluator>> idle;

    std::unique_ptr<Evaluator> make(const std::string& text) const {
        auto e = std::make_unique<Evaluator>(arithmetic);
        e->slots.assign(names.size(), 0.0);
        for (std::size_t i = 0; i < names.size(); ++i) e->parser.DefineVar(names[i], &e->slots[i]);
        e->parser.SetExpr(text);
        return e;
    }

    std::unique_ptr<Evaluator> acquire(const std::string& text) {
        {
            std::lock_guard lock(mutex);
            if (!idle.empty()) {
                auto e = std::move(idle.back());
                idle.pop_back();
                return e;
            }
        }
        return make(text);
    }

    void release(std::unique_ptr<Evaluator> e) {
        std::lock_guard lock(mutex);
        idle.push_back(std::move(e));
    }
};

Expression::Expression(std::string text, std::string where, Arithmetic arithmetic)
    : m_text(std::move(text)), m_where(std::move(where)), m_impl(std::make_unique<Impl>()) {
    m_impl->arithmetic = arithmetic;
    KtuneParser probe(arithmetic);
    try {
        probe.SetExpr(m_text);
        // Parses the whole expression (syntax, argument counts) without needing values for the variables.
        for (const auto& [name, ptr] : probe.GetUsedVar()) {
            // A literal read_number refuses (beyond the range of a double, like 1e999) comes back as a "variable"
            // named by its digits; DefineVar would then throw.
            if (!name.empty() && (std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.'))
                throw Error(ErrorCategory::bad_input,
                            fmt::format("number '{}' in expression '{}' is not a finite double", excerpt(name, 24),
                                        excerpt(m_text)),
                            m_where);
            m_impl->names.push_back(name);
        }
        // The kernel's static_asserts divide integers as C++ does, and so does evaluation here; with a real value
        // in the expression, which operands C++ would see as integers is not something ktune tracks.
        if (arithmetic == Arithmetic::integer && m_text.find_first_of("/%") != std::string::npos) {
            if (const std::string real = first_real_value(m_text); !real.empty())
                throw Error(ErrorCategory::bad_input,
                            fmt::format("expression '{}' mixes the real value {} with '/' or '%', which divide "
                                        "integers as in C++ (7 / 2 is 3): write it with integers only, e.g. X * 3 / 2 "
                                        "for X * 1.5",
                                        excerpt(m_text), excerpt(real, 24)),
                            m_where);
        }
        m_impl->idle.push_back(m_impl->make(m_text));
    } catch (const mu::ParserError& e) {
        // muParser's exception is not a std::exception: none may leave this constructor.
        throw Error(ErrorCategory::bad_input,
                    fmt::format("syntax error in expression '{}': {}", excerpt(m_text), excerpt(e.GetMsg(), 160)),
                    m_where);
    }
}

Expression::~Expression() = default;
Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;

std::set<std::string> Expression::variables() const {
    if (!m_impl) return {};
    return {m_impl->names.begin(), m_impl->names.end()};
}

double Expression::evaluate(const std::map<std::string, double>& vars) const {
    if (!m_impl) throw Error(ErrorCategory::internal, "evaluating a moved-from expression", m_where);
    auto e = m_impl->acquire(m_text);
    const auto& names = m_impl->names;
    for (std::size_t i = 0; i < names.size(); ++i) {
        auto it = vars.find(names[i]);
        if (it == vars.end()) {
            m_impl->release(std::move(e));
            throw Error(
                ErrorCategory::bad_input,
                fmt::format("variable '{}' used in expression '{}' has no value", excerpt(names[i]), excerpt(m_text)),
                m_where);
        }
        e->slots[i] = it->second;
    }
    double result = 0;
    try {
        result = e->parser.Eval();
    } catch (const EvalFailure& f) {
        // The evaluator is dropped, not returned: muParser's state after a throwing callback is not promised.
        std::string values;
        for (std::size_t i = 0; i < names.size(); ++i)
            values += fmt::format("{}{}={}", i ? ", " : " with ", names[i], e->slots[i]);
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} in expression '{}'{}", f.what, excerpt(m_text), excerpt(values, 240)), m_where);
    } catch (const mu::ParserError& err) {
        throw Error(ErrorCategory::bad_input,
                    fmt::format("cannot evaluate expression '{}': {}", excerpt(m_text), excerpt(err.GetMsg(), 160)),
                    m_where);
    }
    m_impl->release(std::move(e));
    if (!std::isfinite(result))
        throw Error(ErrorCategory::bad_input, fmt::format("expression '{}' evaluated to {}", excerpt(m_text), result),
                    m_where);
    return result;
}

long long Expression::evaluate_int(const std::map<std::string, double>& vars) const {
    double v = evaluate(vars);
    if (std::floor(v) == v && !integral(v))
        throw Error(
            ErrorCategory::bad_input,
            fmt::format("expression '{}' evaluated to {:.0f}, which is out of range: an integer result must lie "
                        "within (-9e15, 9e15), where doubles hold integers exactly",
                        m_text, v),
            m_where);
    if (!integral(v))
        throw Error(ErrorCategory::bad_input,
                    fmt::format("expression '{}' evaluated to {}, which is not an integer (ceil_div rounds up)",
                                excerpt(m_text), v),
                    m_where);
    return static_cast<long long>(v);
}

}  // namespace ktune
