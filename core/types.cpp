#include "core/types.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {

std::string_view dtype_name(Dtype d) {
    switch (d) {
        case Dtype::fp32:
            return "fp32";
        case Dtype::fp16:
            return "fp16";
        case Dtype::bf16:
            return "bf16";
    }
    return "?";
}

std::string_view dtype_cpp_type(Dtype d) {
    switch (d) {
        case Dtype::fp32:
            return "float";
        case Dtype::fp16:
            return "__half";
        case Dtype::bf16:
            return "__nv_bfloat16";
    }
    return "?";
}

int dtype_bytes(Dtype d) { return d == Dtype::fp32 ? 4 : 2; }

std::optional<Dtype> parse_dtype(std::string_view n) {
    if (n == "fp32" || n == "float32" || n == "f32" || n == "float") return Dtype::fp32;
    if (n == "fp16" || n == "float16" || n == "f16" || n == "half") return Dtype::fp16;
    if (n == "bf16" || n == "bfloat16") return Dtype::bf16;
    return std::nullopt;
}

std::string format_named_values(const NamedValues& v, char sep) {
    std::string out;
    for (const auto& [name, value] : v) {
        if (!out.empty()) out += sep;
        out += fmt::format("{}={}", name, value);
    }
    return out;
}

std::optional<std::int64_t> lookup(const NamedValues& v, std::string_view name) {
    for (const auto& [n, value] : v)
        if (n == name) return value;
    return std::nullopt;
}

std::string Config::key() const {
    if (labels.empty()) return format_named_values(values);
    std::string out;
    for (const auto& [name, value] : values) {
        if (!out.empty()) out += ',';
        const std::string* l = label(name);
        out += l != nullptr ? fmt::format("{}={}", name, *l) : fmt::format("{}={}", name, value);
    }
    return out;
}

const std::string* Config::label(std::string_view name) const {
    for (const auto& [n, text] : labels)
        if (n == name) return &text;
    return nullptr;
}

std::string Config::text(std::string_view name) const {
    if (const std::string* l = label(name)) return *l;
    return std::to_string(at(name));
}

std::int64_t Config::at(std::string_view name) const {
    if (auto v = lookup(values, name)) return *v;
    throw Error(ErrorCategory::internal, fmt::format("configuration {} has no parameter {}", key(), name));
}

std::string Problem::key() const { return fmt::format("{}:{}", dtype_name(dtype), format_named_values(shape)); }

std::int64_t Problem::at(std::string_view name) const {
    if (auto v = lookup(shape, name)) return *v;
    throw Error(ErrorCategory::internal, fmt::format("problem {} has no axis {}", key(), name));
}

std::map<std::string, double> expression_variables(const Config& c, const Problem& p) {
    std::map<std::string, double> vars;
    for (const auto& [n, v] : p.shape) vars[n] = static_cast<double>(v);
    for (const auto& [n, v] : c.values) vars[n] = static_cast<double>(v);
    vars["DTYPE_BYTES"] = dtype_bytes(p.dtype);
    return vars;
}

std::string_view status_name(Status s) {
    switch (s) {
        case Status::ok:
            return "ok";
        case Status::compile_error:
            return "compile_error";
        case Status::invalid_result:
            return "invalid_result";
        case Status::launch_error:
            return "launch_error";
        case Status::timeout:
            return "timeout";
        case Status::compiled:
            return "compiled";
    }
    return "?";
}

std::optional<Status> parse_status(std::string_view s) {
    for (Status st : {Status::ok, Status::compile_error, Status::invalid_result, Status::launch_error, Status::timeout,
                      Status::compiled})
        if (status_name(st) == s) return st;
    return std::nullopt;
}

}  // namespace ktune
