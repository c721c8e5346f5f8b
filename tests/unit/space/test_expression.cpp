#include "tuner/space/expression.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "tests/unit/space/space_test_util.hpp"

namespace ktune {
namespace {

using ::testing::HasSubstr;

double eval(const std::string& text, const std::map<std::string, double>& vars = {}) {
    return Expression(text, "test").evaluate(vars);
}

TEST(Expression, EvaluatesArithmeticWithUsualPrecedence) {
    EXPECT_EQ(eval("1 + 2 * 3"), 7);
    EXPECT_EQ(eval("(1 + 2) * 3"), 9);
    EXPECT_EQ(eval("10 - 4 - 3"), 3);
    EXPECT_EQ(eval("16 / 4 / 2"), 2);
    EXPECT_EQ(eval("-3 * 2 + 10"), 4);
}

TEST(Expression, DividesIntegersTruncatingTowardZeroAsCppDoes) {
    EXPECT_EQ(eval("7 / 2"), 3);
    EXPECT_EQ(eval("-7 / 2"), -3);
    EXPECT_EQ(eval("7 / -2"), -3);
    EXPECT_EQ(eval("H / VEC", {{"H", 4100}, {"VEC", 8}}), 512);
}

TEST(Expression, HoldsBlockOverThreeTimesThreeOnlyForMultiplesOfThreeAsAStaticAssertDoes) {
    EXPECT_EQ(eval("BLOCK / 3 * 3 == BLOCK", {{"BLOCK", 64}}), 0);
    EXPECT_EQ(eval("BLOCK / 3 * 3 == BLOCK", {{"BLOCK", 96}}), 1);
}

TEST(Expression, TakesTheRemaindersSignFromTheDividendAsCppDoes) {
    EXPECT_EQ(eval("-7 % 2"), -1);
    EXPECT_EQ(eval("7 % -2"), 1);
    EXPECT_EQ(eval("(-7 / 2) * 2 + -7 % 2"), -7);
}

TEST(Expression, RefusesARealLiteralMixedWithDivisionNamingIt) {
    Error err = bad_input_of([] { Expression("BLOCK * 0.5 / 2 >= 1", "space.yaml:4: constraints[0]"); });
    EXPECT_THAT(err.message(), HasSubstr("real value 0.5"));
    EXPECT_EQ(err.where(), "space.yaml:4: constraints[0]");
    bad_input_of([] { Expression("1e3 % 7", "test"); });
    bad_input_of([] { Expression("log2(BLOCK) / 2 <= 5", "test"); });
}

TEST(Expression, KeepsRealValuesWhereNoDivisionIsInvolved) {
    EXPECT_EQ(eval("VEC * 0.5 <= 4", {{"VEC", 8}}), 1);
    EXPECT_EQ(eval("log2(BLOCK) == 8", {{"BLOCK", 256}}), 1);
}

TEST(Expression, RemainderBindsLikeMultiplication) {
    EXPECT_EQ(eval("H % VEC == 0", {{"H", 4096}, {"VEC", 8}}), 1);
    EXPECT_EQ(eval("H % VEC == 0", {{"H", 4100}, {"VEC", 8}}), 0);
    EXPECT_EQ(eval("1 + 7 % 4"), 4);  // % before +
    EXPECT_EQ(eval("2 * 7 % 4"), 2);  // left to right with *: (2 * 7) % 4
    EXPECT_EQ(eval("7 % 4 * 2"), 6);  // (7 % 4) * 2
    EXPECT_EQ(eval("-7 % 4"), -3);    // sign of the dividend, as in C
}

TEST(Expression, ComparisonsYieldOneOrZero) {
    EXPECT_EQ(eval("3 == 3"), 1);
    EXPECT_EQ(eval("3 != 3"), 0);
    EXPECT_EQ(eval("2 < 3"), 1);
    EXPECT_EQ(eval("3 <= 3"), 1);
    EXPECT_EQ(eval("2 > 3"), 0);
    EXPECT_EQ(eval("3 >= 4"), 0);
    EXPECT_EQ(eval("1 + 2 == 3"), 1);  // arithmetic binds tighter than comparison
    EXPECT_EQ(eval("3 > -1"), 1);
}

TEST(Expression, BooleanOperatorsFollowCPrecedence) {
    EXPECT_EQ(eval("1 < 2 && 3 > 4"), 0);
    EXPECT_EQ(eval("1 < 2 || 3 > 4"), 1);
    EXPECT_EQ(eval("1 || 0 && 0"), 1);  // && binds tighter than ||
    EXPECT_EQ(eval("!A", {{"A", 0}}), 1);
    EXPECT_EQ(eval("!A", {{"A", 5}}), 0);
    EXPECT_EQ(eval("!(BLOCK == 64 && UNROLL == 3)", {{"BLOCK", 64}, {"UNROLL", 3}}), 0);
    EXPECT_EQ(eval("!(BLOCK == 64 && UNROLL == 3)", {{"BLOCK", 128}, {"UNROLL", 3}}), 1);
    EXPECT_EQ(eval("BLOCK != 64", {{"BLOCK", 64}}), 0);
}

TEST(Expression, ConditionalEvaluatesOnlyTheChosenBranch) {
    EXPECT_EQ(eval("A ? 5 : 6", {{"A", 1}}), 5);
    EXPECT_EQ(eval("A ? 5 : 6", {{"A", 0}}), 6);
    EXPECT_EQ(eval("0 ? 2 : 1 ? 4 : 5"), 4);
    // The guard pattern: the division by zero in the other branch is never evaluated.
    EXPECT_EQ(eval("V != 0 ? H % V == 0 : 0", {{"V", 0}, {"H", 8}}), 0);
}

TEST(Expression, AndEvaluatesBothOperandsSoOnlyTheConditionalGuardsADivision) {
    // muParser cannot short-circuit user-defined operators: the right side of && runs even when the left is false.
    EXPECT_THROW(eval("V != 0 && H % V == 0", {{"V", 0}, {"H", 8}}), Error);
}

TEST(Expression, FunctionsComputeWhatTheirNamesSay) {
    EXPECT_EQ(eval("min(3, 2)"), 2);
    EXPECT_EQ(eval("max(3, 2)"), 3);
    EXPECT_EQ(eval("ceil_div(10, 4)"), 3);
    EXPECT_EQ(eval("ceil_div(12, 4)"), 3);
    EXPECT_EQ(eval("ceil_div(1, 256)"), 1);
    EXPECT_EQ(eval("log2(1024)"), 10);
    EXPECT_EQ(eval("is_pow2(64)"), 1);
    EXPECT_EQ(eval("is_pow2(96)"), 0);
    EXPECT_EQ(eval("is_pow2(0)"), 0);
    EXPECT_EQ(eval("align_up(100, 32)"), 128);
    EXPECT_EQ(eval("align_up(128, 32)"), 128);
}

TEST(Expression, CeilDivIsExactForLargeIntegers) {
    // 2^53 - 1 over 3 rounds to the wrong integer through floating point division.
    EXPECT_EQ(Expression("ceil_div(X, 3)", "test").evaluate_int({{"X", 9007199254740991.0}}), 3002399751580331LL);
}

TEST(Expression, ReportsTheVariablesItReads) {
    Expression e("ceil_div(M, ROWS) * BLOCK + min(H, 4)", "test");
    EXPECT_EQ(e.variables(), (std::set<std::string>{"BLOCK", "H", "M", "ROWS"}));
}

TEST(Expression, ConstantExpressionReadsNoVariables) { EXPECT_TRUE(Expression("1 + 2", "test").variables().empty()); }

TEST(Expression, DivisionByZeroIsAnErrorNamingTheExpressionAndWhere) {
    Expression e("H / (VEC - 8)", "space.yaml:12: constraints[0]");
    Error err = bad_input_of([&] { e.evaluate({{"H", 4096}, {"VEC", 8}}); });
    EXPECT_THAT(err.message(), HasSubstr("division by zero"));
    EXPECT_THAT(err.message(), HasSubstr("H / (VEC - 8)"));
    EXPECT_THAT(err.message(), HasSubstr("VEC=8"));
    EXPECT_EQ(err.where(), "space.yaml:12: constraints[0]");
}

TEST(Expression, RemainderByZeroIsAnError) {
    Error err = bad_input_of([] { eval("H % V", {{"H", 3}, {"V", 0}}); });
    EXPECT_THAT(err.message(), HasSubstr("remainder by zero"));
}

TEST(Expression, ConstantDivisionByZeroIsAnErrorAtEvaluation) {
    Error err = bad_input_of([] { eval("1 / 0 > 2"); });
    EXPECT_THAT(err.message(), HasSubstr("division by zero"));
}

TEST(Expression, CeilDivAndAlignUpByZeroAreErrors) {
    EXPECT_THAT(bad_input_of([] { eval("ceil_div(8, 0)"); }).message(), HasSubstr("ceil_div by zero"));
    EXPECT_THAT(bad_input_of([] { eval("align_up(8, 0)"); }).message(), HasSubstr("ceil_div by zero"));
}

TEST(Expression, Log2OfZeroIsAnError) {
    EXPECT_THAT(bad_input_of([] { eval("log2(0)"); }).message(), HasSubstr("log2"));
}

TEST(Expression, ExpressionStaysUsableAfterAnEvaluationError) {
    Expression e("H / V", "test");
    bad_input_of([&] { e.evaluate({{"H", 8}, {"V", 0}}); });
    EXPECT_EQ(e.evaluate({{"H", 8}, {"V", 2}}), 4);
}

TEST(Expression, MissingVariableIsAnErrorNamingItTheExpressionAndWhere) {
    Expression e("BLOCK * VEC <= H", "space.yaml:3: constraints[1]");
    Error err = bad_input_of([&] { e.evaluate({{"BLOCK", 256}, {"H", 4096}}); });
    EXPECT_THAT(err.message(), HasSubstr("'VEC'"));
    EXPECT_THAT(err.message(), HasSubstr("BLOCK * VEC <= H"));
    EXPECT_EQ(err.where(), "space.yaml:3: constraints[1]");
}

TEST(Expression, SyntaxErrorAtConstructionCarriesPositionAndWhere) {
    Error err = bad_input_of([] { Expression("BLOCK % == 0", "space.yaml:9: constraints[2]"); });
    EXPECT_THAT(err.message(), HasSubstr("syntax error in expression 'BLOCK % == 0'"));
    EXPECT_THAT(err.message(), HasSubstr("position"));
    EXPECT_EQ(err.where(), "space.yaml:9: constraints[2]");
}

TEST(Expression, RejectsWhatTheLanguageDoesNotHave) {
    bad_input_of([] { Expression("BLOCK = 64", "test"); });        // assignment, not ==
    bad_input_of([] { Expression("sqrt(BLOCK)", "test"); });       // no such function
    bad_input_of([] { Expression("BLOCK ^ 2", "test"); });         // no power operator
    bad_input_of([] { Expression("_pi", "test").evaluate({}); });  // no built-in constants
    bad_input_of([] { Expression("min(1)", "test"); });            // wrong argument count
    bad_input_of([] { Expression("(1 + 2", "test"); });
    bad_input_of([] { Expression("", "test"); });
}

TEST(Expression, EvaluateBoolIsTrueForNonZero) {
    EXPECT_TRUE(Expression("X - 1", "test").evaluate_bool({{"X", 3}}));
    EXPECT_FALSE(Expression("X - 1", "test").evaluate_bool({{"X", 1}}));
}

TEST(Expression, EvaluateIntRejectsAFractionalResult) {
    Expression e("M * 0.5", "space.yaml:20: launch.grid[0]");
    EXPECT_EQ(e.evaluate_int({{"M", 8}}), 4);
    Error err = bad_input_of([&] { e.evaluate_int({{"M", 9}}); });
    EXPECT_THAT(err.message(), HasSubstr("not an integer"));
    EXPECT_EQ(err.where(), "space.yaml:20: launch.grid[0]");
}

TEST(Expression, QuotesAtMostAnExcerptOfAHugeExpressionInItsError) {
    const std::string huge = "BLOCK + " + std::string(1 << 20, '(');
    Error err = bad_input_of([&] { Expression(huge, "test"); });
    EXPECT_LT(err.message().size(), 1000u);
}

TEST(Expression, MovedExpressionKeepsWorking) {
    Expression a("X * 2", "here");
    Expression b(std::move(a));
    EXPECT_EQ(b.evaluate({{"X", 21}}), 42);
    EXPECT_EQ(b.text(), "X * 2");
    Expression c("0", "");
    c = std::move(b);
    EXPECT_EQ(c.evaluate({{"X", 4}}), 8);
    EXPECT_EQ(c.where(), "here");
}

TEST(Expression, ConcurrentEvaluationOfOneExpressionGivesEveryThreadItsOwnResult) {
    Expression shared("X * 3 + Y % 7", "test");
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            Expression own("X - Y", "test");
            for (int i = 0; i < 2000; ++i) {
                double x = t * 100000 + i, y = i;
                if (shared.evaluate({{"X", x}, {"Y", y}}) != x * 3 + (i % 7)) ++wrong;
                if (own.evaluate({{"X", x}, {"Y", y}}) != x - y) ++wrong;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace ktune
