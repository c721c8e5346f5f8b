#pragma once
// Golden files with placeholders, as google/benchmark's output tests do: "{num}" in a golden file matches any number
// (-12, 3.5, 1e-06, +34.2), so timings never make a report test flaky, while every word, name and shape must match.
//
// To write a golden file from what the renderer produces now, run the tests with KTUNE_UPDATE_GOLDEN=1: measured
// numbers become {num}; numbers that are part of a name or a shape (bf16, sm_90, M=4096, #1f6feb) stay literal.
// Review the diff before committing it.
#include <string>
#include <string_view>

namespace ktune::test {

// Empty when `actual` matches `golden`; otherwise says which line differs and how. Line ends are compared after
// turning CRLF into LF (CSV's own line ends are tested separately).
std::string golden_mismatch(std::string_view golden, std::string_view actual);

// The golden text for `actual`: measured numbers replaced by {num}.
std::string golden_from(std::string_view actual);

// Compares `actual` with tests/data/reports/<name> (or rewrites that file under KTUNE_UPDATE_GOLDEN=1).
void expect_matches_golden(const std::string& actual, const std::string& name);

}  // namespace ktune::test
