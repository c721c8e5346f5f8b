#pragma once
// Value types shared by every module: element types, configurations, problems, measurement statuses.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktune {

enum class Dtype { fp32, fp16, bf16 };

std::string_view dtype_name(Dtype d);      // "fp32", "fp16", "bf16": the spelling used in YAML, CLI and the store
std::string_view dtype_cpp_type(Dtype d);  // "float", "__half", "__nv_bfloat16": the kernel template argument
int dtype_bytes(Dtype d);
std::optional<Dtype> parse_dtype(std::string_view name);  // accepts fp32/float32/f32, fp16/float16/half, bf16/bfloat16

// Ordered name=value pairs. Order is the declaration order of the YAML (parameters) or of the axes (problems), so keys
// are stable and readable: "BLOCK=256,VEC=8,UNROLL=2".
using NamedValues = std::vector<std::pair<std::string, std::int64_t>>;

std::string format_named_values(const NamedValues& v, char sep = ',');
std::optional<std::int64_t> lookup(const NamedValues& v, std::string_view name);

// One point of the search space: a value for every tunable parameter. A bool or a named choice also has a label, its
// text ("true", "wgmma"): keys and kernel names show the label, expressions read the value (0/1, the choice's number).
struct Config {
    NamedValues values;
    std::vector<std::pair<std::string, std::string>> labels;  // (parameter, text), only for bool and choice parameters

    Config() = default;
    Config(NamedValues v, std::vector<std::pair<std::string, std::string>> l = {})  // NOLINT: Config{values} reads well
        : values(std::move(v)), labels(std::move(l)) {}

    // "BLOCK=256,VEC=8"; a labelled parameter as its label: "ENGINE=wgmma,FLAG=true". Integer-only keys are exactly
    // format_named_values(values), so keys stored before labels existed still match.
    std::string key() const;
    std::int64_t at(std::string_view name) const;           // throws Error(internal) when absent
    const std::string* label(std::string_view name) const;  // nullptr for an integer parameter
    // The value as a kernel template argument or key shows it: the label, else the decimal number.
    std::string text(std::string_view name) const;
    bool operator==(const Config&) const = default;
};

// One problem to tune for: an element type and a value for every shape axis ("M=4096,H=8192").
struct Problem {
    Dtype dtype = Dtype::fp32;
    NamedValues shape;

    std::string key() const;  // "bf16:M=4096,H=8192"
    std::int64_t at(std::string_view name) const;
    bool operator==(const Problem&) const = default;
};

// Variables visible to YAML expressions for one (config, problem): parameters, shape axes, DTYPE_BYTES.
std::map<std::string, double> expression_variables(const Config& c, const Problem& p);

// compiled: compiled by a compile-only sweep and never run (no GPU), filed under a compile-only device (see
// compile_only_device in tuner/session/tuning_session.cpp).
enum class Status { ok, compile_error, invalid_result, launch_error, timeout, compiled };
std::string_view status_name(Status s);
std::optional<Status> parse_status(std::string_view s);

// Tolerances for validation: |out - ref| <= atol + rtol * |ref|, NaN never passes.
struct Tolerance {
    double rtol = 0;
    double atol = 0;
};

}  // namespace ktune
