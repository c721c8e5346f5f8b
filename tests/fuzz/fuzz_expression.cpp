// libFuzzer target: the expression language of search-space files (ktune::Expression: parse, variables, evaluate,
// evaluate_int). Input: the expression text up to the first newline; the bytes after it, if any, give the variables'
// values (small integers, large integers, zero, negative, fractional, inf, NaN). Only ktune::Error may be thrown.
// Built and run by scripts/fuzz.sh; seeds: tests/fuzz/corpus/expression.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "core/error.hpp"
#include "tuner/space/expression.hpp"

namespace {

double fuzzed_value(FuzzedDataProvider& in, double fallback) {
    if (in.remaining_bytes() == 0) return fallback;
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
        case 0:
            return in.ConsumeIntegralInRange<int>(-4, 4096);
        case 1:
            return static_cast<double>(in.ConsumeIntegral<std::int64_t>());
        case 2:
            return in.ConsumeFloatingPoint<double>();
        case 3:
            return 0;
        case 4:
            return std::numeric_limits<double>::quiet_NaN();
        default:
            return std::numeric_limits<double>::infinity() * (in.ConsumeBool() ? 1 : -1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string all(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = all.find('\n');
    const std::string text = all.substr(0, newline);
    FuzzedDataProvider in(data + (newline == std::string::npos ? size : newline + 1),
                          newline == std::string::npos ? 0 : size - newline - 1);
    // The names search spaces use, with the values of a typical configuration unless the input overrides them.
    std::map<std::string, double> vars = {{"BLOCK", 256}, {"VEC", 4},   {"UNROLL", 2}, {"ROWS_PER_BLOCK", 1},
                                          {"M", 4096},    {"H", 8192},  {"N", 1000},   {"DTYPE_BYTES", 2},
                                          {"WARPS", 8},   {"STAGES", 3}};
    for (auto& [name, value] : vars) value = fuzzed_value(in, value);
    try {
        const ktune::Expression e(text, "fuzz.yaml:1: constraints[0]");
        (void)e.variables();
        (void)e.evaluate(vars);
        (void)e.evaluate_bool(vars);
        (void)e.evaluate_int(vars);
    } catch (const ktune::Error&) {
        // The one acceptable answer to bad input.
    }
    return 0;
}
