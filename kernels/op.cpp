#include "kernels/op.hpp"

#include <limits>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/common/random.cuh"

namespace ktune {

// kernels/registry.cpp: every CPU reference.
std::vector<CpuReference> registered_cpu_references();

const std::vector<CpuReference>& cpu_references() {
    static const std::vector<CpuReference> references = [] {
        std::vector<CpuReference> list = registered_cpu_references();
        for (std::size_t i = 0; i < list.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (list[i].op == list[j].op && list[i].variant == list[j].variant)
                    throw Error(
                        ErrorCategory::internal,
                        fmt::format("the CPU reference of {}/{} is registered twice", list[i].op, list[i].variant),
                        "kernels/registry.cpp");
        return list;
    }();
    return references;
}

const CpuReference& find_cpu_reference(std::string_view op, std::string_view variant) {
    std::string known;
    for (const CpuReference& r : cpu_references()) {
        if (r.op == op && r.variant == variant) return r;
        known += fmt::format("{}{}/{}", known.empty() ? "" : ", ", r.op, r.variant);
    }
    throw Error(
        ErrorCategory::bad_input,
        fmt::format("no CPU reference for op {}/{}; ops with one: {}", op, variant, known.empty() ? "none" : known),
        "kernels/registry.cpp");
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

std::int64_t axis(const Problem& p, std::string_view name, std::string_view op_key) {
    if (const std::optional<std::int64_t> v = lookup(p.shape, name)) return *v;
    throw Error(ErrorCategory::bad_input, fmt::format("{}: the CPU reference needs axis {}", op_key, name), p.key());
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

std::vector<double>& host_inout(HostBuffers& buffers, const std::string& name, std::int64_t elements,
                                std::string_view op_key) {
    host_input(buffers, name, elements, op_key);
    return buffers[name];
}

std::vector<double>& host_output(HostBuffers& buffers, const std::string& name, std::int64_t elements) {
    std::vector<double>& v = buffers[name];
    if (static_cast<std::int64_t>(v.size()) != elements)
        v.assign(static_cast<std::size_t>(elements), std::numeric_limits<double>::quiet_NaN());
    return v;
}

}  // namespace ktune
