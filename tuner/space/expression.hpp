#pragma once
// Arithmetic and boolean expressions over parameters and problem sizes, as written in search-space YAML files:
//   "BLOCK * VEC <= H", "H % VEC == 0", "ceil_div(M, ROWS_PER_BLOCK)", "BLOCK >= 64 && UNROLL <= 8".
// Operators: + - * / %, comparison (== != < <= > >=), && || !, ?:, parentheses.
// Functions: min(a,b), max(a,b), ceil_div(a,b), log2(a), is_pow2(a), align_up(a,b).
// Arithmetic means what it means in the kernel's C++: '/' on integers truncates toward zero (7 / 2 == 3, -7 / 2 == -3)
// and '%' takes the dividend's sign (-7 % 2 == -1), so "BLOCK / 3 * 3 == BLOCK" holds only for multiples of 3, as in a
// static_assert. An expression with a real value (a literal such as 0.5 or 1e3, or log2) may not use '/' or '%': which
// operands C++ would see as integers is not tracked, so it is refused when parsed.
// Division or remainder by zero is an error (not inf), so a constraint cannot silently pass.
#include <map>
#include <memory>
#include <set>
#include <string>

namespace ktune {

// integer: C++'s integer arithmetic, as above (constraints, launch geometry, sizes). real: '/' divides as doubles do
// and real literals may meet it (an op spec's f32 kernel arguments, such as "1 / sqrt(H)").
enum class Arithmetic { integer, real };

class Expression {
public:
    // Parses `text` once. `where` ("file.yaml:12: constraints[0]") prefixes every error message.
    // Throws Error(bad_input) on a syntax error.
    Expression(std::string text, std::string where, Arithmetic arithmetic = Arithmetic::integer);
    ~Expression();
    Expression(Expression&&) noexcept;
    Expression& operator=(Expression&&) noexcept;

    const std::string& text() const { return m_text; }
    const std::string& where() const { return m_where; }

    // Names of the variables the expression reads.
    std::set<std::string> variables() const;

    // Throws Error(bad_input) naming the variable and `where` if a variable is missing, or on division by zero.
    double evaluate(const std::map<std::string, double>& vars) const;
    bool evaluate_bool(const std::map<std::string, double>& vars) const { return evaluate(vars) != 0.0; }
    // Evaluates and requires an integral result (launch geometry); throws Error(bad_input) otherwise.
    long long evaluate_int(const std::map<std::string, double>& vars) const;

private:
    struct Impl;
    std::string m_text;
    std::string m_where;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace ktune
