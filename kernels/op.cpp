#include "kernels/op.hpp"

#include <limits>

#include <fmt/format.h>

#include "kernels/common/random.cuh"
#include "core/error.hpp"

namespace ktune {

// kernels/registry.cpp: every op, in the order `ktune list` shows them.
std::vector<const OpDescription*> registered_ops();

const std::vector<const OpDescription*>& all_ops() {
    static const std::vector<const OpDescription*> ops = [] {
        std::vector<const OpDescription*> list = registered_ops();
        for (std::size_t i = 0; i < list.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (list[i]->name() == list[j]->name() && list[i]->variant() == list[j]->variant())
                    throw Error(ErrorCategory::internal,
                                fmt::format("op {}/{} is registered twice", list[i]->name(), list[i]->variant()),
                                "kernels/registry.cpp");
        return list;
    }();
    return ops;
}

const OpDescription& find_op(std::string_view name, std::string_view variant) {
    std::string known;
    for (const OpDescription* op : all_ops()) {
        if (op->name() == name && op->variant() == variant) return *op;
        known += fmt::format("{}{}/{}", known.empty() ? "" : ", ", op->name(), op->variant());
    }
    throw Error(ErrorCategory::bad_input,
                fmt::format("unknown op {}/{}; known ops: {}", name, variant, known.empty() ? "none" : known), "op");
}

std::uint64_t buffer_seed(std::uint64_t run_seed, std::string_view buffer_name) {
    // FNV-1a 64 of the name: stable across platforms and releases (std::hash is neither).
    std::uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : buffer_name) {
        h ^= c;
        h *= 0x100000001B3ull;
    }
    return ktune_splitmix64(run_seed ^ ktune_splitmix64(h));
}

RowShape row_shape(const Problem& p, std::string_view op_key) {
    for (const auto& [name, value] : p.shape)
        if (name != "M" && name != "H" && name != "S")
            throw Error(ErrorCategory::bad_input,
                        fmt::format("{} has axes M, H and optionally S; unknown axis {}", op_key, name), p.key());
    auto required = [&](std::string_view name) {
        if (auto v = lookup(p.shape, name)) return *v;
        throw Error(ErrorCategory::bad_input, fmt::format("{} needs axis {}", op_key, name), p.key());
    };
    RowShape s;
    s.m = required("M");
    s.h = required("H");
    s.s = lookup(p.shape, "S").value_or(s.h);
    constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
    if (s.m < 1 || s.h < 1)
        throw Error(ErrorCategory::bad_input, fmt::format("{} needs M >= 1 and H >= 1, got M={} H={}", op_key, s.m, s.h),
                    p.key());
    if (s.m > int_max || s.h > int_max)  // the kernels take rows and hidden as int
        throw Error(ErrorCategory::bad_input, fmt::format("{} needs M and H <= {}", op_key, int_max), p.key());
    if (s.s < s.h)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("{} row stride S={} is smaller than the row length H={}", op_key, s.s, s.h), p.key());
    if (s.s > std::numeric_limits<std::int64_t>::max() / s.m)
        throw Error(ErrorCategory::bad_input, fmt::format("{} M*S overflows: M={} S={}", op_key, s.m, s.s), p.key());
    return s;
}

const std::vector<double>& host_input(const HostBuffers& buffers, const std::string& name, std::int64_t elements,
                                      std::string_view op_key) {
    auto it = buffers.find(name);
    if (it == buffers.end())
        throw Error(ErrorCategory::bad_input, fmt::format("cpu_reference needs buffer {}", name), std::string(op_key));
    if (static_cast<std::int64_t>(it->second.size()) != elements)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("buffer {} has {} elements, the problem needs {}", name, it->second.size(), elements),
                    std::string(op_key));
    return it->second;
}

std::vector<double>& host_output(HostBuffers& buffers, const std::string& name, std::int64_t elements) {
    std::vector<double>& v = buffers[name];
    if (static_cast<std::int64_t>(v.size()) != elements)
        v.assign(static_cast<std::size_t>(elements), std::numeric_limits<double>::quiet_NaN());
    return v;
}

}  // namespace ktune
