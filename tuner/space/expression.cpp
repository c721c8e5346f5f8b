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

namespace ktune {
namespace {

// Thrown from inside muParser callbacks, which know nothing of the expression; evaluate() turns it into an Error
// that names the expression and its origin.
struct EvalFailure {
    const char* what;
};

bool integral(double v) { return std::abs(v) < 9.0e15 && std::floor(v) == v; }

double op_div(double a, double b) {
    if (b == 0) throw EvalFailure{"division by zero"};
    return a / b;
}

double op_rem(double a, double b) {
    if (b == 0) throw EvalFailure{"remainder by zero"};
    return std::fmod(a, b);  // same sign rule as C's % on integers
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
    KtuneParser() {
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

    void InitOprt() override {
        EnableBuiltInOprt(false);
        DefineInfixOprt("-", [](double a) { return -a; });
        DefineInfixOprt("+", [](double a) { return a; });
        DefineInfixOprt("!", [](double a) { return a == 0 ? 1.0 : 0.0; });
        // Precedence as in C, except that muParser puts all comparisons on one level.
        DefineOprt("*", [](double a, double b) { return a * b; }, mu::prMUL_DIV);
        DefineOprt("/", op_div, mu::prMUL_DIV);
        DefineOprt("%", op_rem, mu::prMUL_DIV);
        DefineOprt("+", [](double a, double b) { return a + b; }, mu::prADD_SUB);
        DefineOprt("-", [](double a, double b) { return a - b; }, mu::prADD_SUB);
        DefineOprt("==", [](double a, double b) { return a == b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt("!=", [](double a, double b) { return a != b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt("<", [](double a, double b) { return a < b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt("<=", [](double a, double b) { return a <= b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(">", [](double a, double b) { return a > b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt(">=", [](double a, double b) { return a >= b ? 1.0 : 0.0; }, mu::prCMP);
        DefineOprt("&&", [](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }, mu::prLAND);
        DefineOprt("||", [](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }, mu::prLOR);
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
    KtuneParser parser;
    std::vector<double> slots;
};

}  // namespace

struct Expression::Impl {
    std::vector<std::string> names;  // sorted, as muParser reports them
    std::mutex mutex;
    std::vector<std::unique_ptr<Evaluator>> idle;

    std::unique_ptr<Evaluator> make(const std::string& text) const {
        auto e = std::make_unique<Evaluator>();
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

Expression::Expression(std::string text, std::string where)
    : m_text(std::move(text)), m_where(std::move(where)), m_impl(std::make_unique<Impl>()) {
    KtuneParser probe;
    try {
        probe.SetExpr(m_text);
        // Parses the whole expression (syntax, argument counts) without needing values for the variables.
        for (const auto& [name, ptr] : probe.GetUsedVar()) {
            // A literal read_number refuses (beyond the range of a double, like 1e999) comes back as a "variable"
            // named by its digits; DefineVar would then throw.
            if (!name.empty() && (std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.'))
                throw Error(ErrorCategory::bad_input,
                            fmt::format("number '{}' in expression '{}' is not a finite double", name, m_text),
                            m_where);
            m_impl->names.push_back(name);
        }
        m_impl->idle.push_back(m_impl->make(m_text));
    } catch (const mu::ParserError& e) {
        // muParser's exception is not a std::exception: none may leave this constructor.
        throw Error(ErrorCategory::bad_input, fmt::format("syntax error in expression '{}': {}", m_text, e.GetMsg()),
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
            throw Error(ErrorCategory::bad_input,
                        fmt::format("variable '{}' used in expression '{}' has no value", names[i], m_text), m_where);
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
        throw Error(ErrorCategory::bad_input, fmt::format("{} in expression '{}'{}", f.what, m_text, values), m_where);
    } catch (const mu::ParserError& err) {
        throw Error(ErrorCategory::bad_input, fmt::format("cannot evaluate expression '{}': {}", m_text, err.GetMsg()),
                    m_where);
    }
    m_impl->release(std::move(e));
    if (!std::isfinite(result))
        throw Error(ErrorCategory::bad_input, fmt::format("expression '{}' evaluated to {}", m_text, result), m_where);
    return result;
}

long long Expression::evaluate_int(const std::map<std::string, double>& vars) const {
    double v = evaluate(vars);
    if (std::floor(v) == v && !integral(v))
        throw Error(ErrorCategory::bad_input,
                    fmt::format("expression '{}' evaluated to {:.0f}, which is out of range: an integer result must lie "
                                "within (-9e15, 9e15), where doubles hold integers exactly",
                                m_text, v),
                    m_where);
    if (!integral(v))
        throw Error(ErrorCategory::bad_input,
                    fmt::format("expression '{}' evaluated to {}, which is not an integer (ceil_div rounds up)", m_text,
                                v),
                    m_where);
    return static_cast<long long>(v);
}

}  // namespace ktune
