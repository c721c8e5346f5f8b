// Search-space expressions translated to C++: the text, the errors, and (compiled by the host compiler) the values,
// compared with what the space's own evaluator computes.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "tests/unit/export/export_test_util.hpp"
#include "tuner/export/cpp_expression.hpp"
#include "tuner/export/header_text.hpp"
#include "tuner/space/expression.hpp"

namespace ktune::test {
namespace {

CppExpressionNames names() {
    CppExpressionNames n;
    n.constants = {{"BLOCK", 256}, {"VEC", 8}, {"ROWS_PER_BLOCK", 2}, {"DTYPE_BYTES", 2}};
    n.variables = {{"M", "m"}, {"H", "h"}};
    n.helper_prefix = "detail::";
    return n;
}

std::string cpp(const std::string& text) { return expression_to_cpp(text, names(), "test"); }

TEST(CppExpression, TurnsParametersIntoLiteralsAndAxesIntoVariables) {
    EXPECT_EQ(cpp("ceil_div(M, ROWS_PER_BLOCK)"), "detail::ex_ceil_div((m), 2.0)");
}

TEST(CppExpression, KeepsTheSearchSpacePrecedence) {
    EXPECT_EQ(cpp("1 + 2 * H"), "(1.0 + (2.0 * (h)))");
    EXPECT_EQ(cpp("(1 + 2) * H"), "((1.0 + 2.0) * (h))");
    EXPECT_EQ(cpp("M < H == 1"), "detail::ex_eq(detail::ex_lt((m), (h)), 1.0)");  // one comparison level
    EXPECT_EQ(cpp("M > 1 || H > 1 && VEC"),
              "detail::ex_or(detail::ex_gt((m), 1.0), "
              "detail::ex_and(detail::ex_gt((h), 1.0), 8.0))");
}

TEST(CppExpression, DividesInFloatingPointAndTakesRemaindersWithFmod) {
    EXPECT_EQ(cpp("BLOCK / ROWS_PER_BLOCK % 3"), "detail::ex_rem(detail::ex_div(256.0, 2.0), 3.0)");
}

TEST(CppExpression, TranslatesUnaryOperatorsAndTheConditional) {
    EXPECT_EQ(cpp("-M"), "(-(m))");
    EXPECT_EQ(cpp("+M"), "(m)");
    EXPECT_EQ(cpp("!M ? 1 : 2"), "detail::ex_select(detail::ex_not((m)), 1.0, 2.0)");
}

TEST(CppExpression, WritesNumbersThatReadBackExactly) {
    EXPECT_EQ(cpp_double_literal(256), "256.0");
    EXPECT_EQ(cpp_double_literal(-3), "(-3.0)");
    EXPECT_EQ(std::strtod(cpp_double_literal(0.1).c_str(), nullptr), 0.1);
    EXPECT_EQ(cpp("1e3 + .5"), "(1000.0 + 0.5)");
}

TEST(CppExpression, RefusesAnUnknownName) {
    const Error e = error_of([] { cpp("BLOCK * K"); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), "test");
    EXPECT_NE(std::string(e.what()).find("unknown name K"), std::string::npos) << e.what();
}

TEST(CppExpression, RefusesAnUnknownFunctionAndAWrongArgumentCount) {
    EXPECT_NE(std::string(error_of([] { cpp("sin(M)"); }).what()).find("unknown function sin"), std::string::npos);
    EXPECT_NE(std::string(error_of([] { cpp("min(M)"); }).what()).find("min takes 2"), std::string::npos);
}

TEST(CppExpression, RefusesASyntaxError) {
    EXPECT_EQ(error_of([] { cpp("M + * H"); }).category(), ErrorCategory::bad_input);
    EXPECT_EQ(error_of([] { cpp("(M + H"); }).category(), ErrorCategory::bad_input);
    EXPECT_EQ(error_of([] { cpp("M $ H"); }).category(), ErrorCategory::bad_input);
}

// Compiles the translations of many expressions with the host compiler and checks each value against
// Expression::evaluate() (NaN where the evaluator throws).
TEST_F(ExportTest, TranslatedExpressionsComputeWhatTheSearchSpaceComputes) {
    const char* compiler = std::getenv("CXX");
    const std::string cxx = compiler != nullptr && *compiler != '\0' ? compiler : "c++";
    if (std::system((cxx + " --version > /dev/null 2>&1").c_str()) != 0) GTEST_SKIP() << "no host C++ compiler";

    const std::vector<std::string> texts = {
        "ceil_div(M, ROWS_PER_BLOCK)",
        "BLOCK / ROWS_PER_BLOCK * VEC <= H",
        "H % VEC == 0",
        "M / 0",
        "ceil_div(M, 0)",
        "log2(H)",
        "log2(M - M)",
        "is_pow2(H) && is_pow2(M)",
        "min(M, H) + max(M, H)",
        "align_up(H, 96)",
        "M > 100 ? M : -H",
        "!(M % 3) || H < 5",
        "ceil_div(-M, 3) + ceil_div(7, -2)",
        "M % -3",
        "(M / 3) * 3 != M",
        "BLOCK * VEC * DTYPE_BYTES <= 65536 && H >= 32 * VEC",
        "M == 0 ? 1 : H / M",
        "ceil_div(M / 2, 3)",
    };
    const std::vector<std::pair<double, double>> points = {{1, 4096}, {7, 4095}, {300, 8192}, {65536, 3}, {0, 1}};
    std::string src =
        std::string("#define KTUNE_TUNED_HOST_ONLY\n#include <cmath>\n#include <cstdio>\n#include <limits>\n") +
        std::string(export_detail::header_common_text()) +
        "using namespace ktune_tuned;\nint failures = 0;\n"
        "void check(double got, double want, int line) {\n"
        "    if (std::isnan(want) ? !std::isnan(got) : got != want) {\n"
        "        std::printf(\"case %d: got %.17g want %.17g\\n\", line, got, want);\n"
        "        ++failures;\n    }\n}\nint main() {\n";
    int cases = 0;
    for (const std::string& t : texts) {
        const std::string c = cpp(t);
        const Expression e(t, "test");
        for (const auto& [m, h] : points) {
            double want;
            try {
                want = e.evaluate(
                    {{"M", m}, {"H", h}, {"BLOCK", 256}, {"VEC", 8}, {"ROWS_PER_BLOCK", 2}, {"DTYPE_BYTES", 2}});
            } catch (const Error&) {
                want = std::nan("");
            }
            src += fmt::format("    {{ const double m = {}, h = {}; check({}, {}, {}); }}\n", cpp_double_literal(m),
                               cpp_double_literal(h), c,
                               std::isnan(want) ? "std::numeric_limits<double>::quiet_NaN()" : cpp_double_literal(want),
                               cases++);
        }
    }
    src += "    std::printf(\"%d failures\\n\", failures);\n    return failures == 0 ? 0 : 1;\n}\n";
    const auto cpp_file = dir() / "expr.cpp";
    const auto exe = dir() / "expr";
    std::ofstream(cpp_file) << src;
    const std::string log = (dir() / "log.txt").string();
    const std::string build =
        fmt::format("{} -std=c++17 -O0 -o {} {} > {} 2>&1", cxx, exe.string(), cpp_file.string(), log);
    ASSERT_EQ(std::system(build.c_str()), 0) << read_text(log);
    EXPECT_EQ(std::system((exe.string() + " > " + log + " 2>&1").c_str()), 0) << read_text(log);
    EXPECT_GE(cases, 80);
}

}  // namespace
}  // namespace ktune::test
