#pragma once
// Search-space expressions (the language of tuner/space/expression.hpp) translated to C++ for the generated headers.
// A generated header cannot run muParser, so the YAML's launch geometry and shape-dependent constraints become C++
// expressions of type double that compute the same value with the same rules: "/" divides in floating point, "%" is
// fmod, comparisons and logic give 1.0 or 0.0, ceil_div is exact on integers. What muParser reports as an error
// (division by zero, log2 of a non-positive value) yields NaN, which propagates; the header treats NaN as "not legal"
// or "no launch". The helpers (ex_div, ex_ceil_div, ...) live in the header's common part (header_common.cpp).
#include <map>
#include <string>

namespace ktune {

struct CppExpressionNames {
    std::map<std::string, double> constants;       // parameters and DTYPE_BYTES of one configuration: literals
    std::map<std::string, std::string> variables;  // shape axes: the C++ expression (of type double) that holds each
    std::string helper_prefix = "::ktune_tuned::detail::";
    bool real_division = false;  // Arithmetic::real: "/" divides as doubles do (an op spec's f32 arguments)
};

// The C++ text of `text`. Throws Error(bad_input, where) on a syntax error, an unknown name or function, or a wrong
// number of function arguments.
std::string expression_to_cpp(const std::string& text, const CppExpressionNames& names, const std::string& where);

// A double as a C++ literal that reads back as the same value: "256.0", "0.5", "1.0000000000000001e-05".
std::string cpp_double_literal(double v);

}  // namespace ktune
