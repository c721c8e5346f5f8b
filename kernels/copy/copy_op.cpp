// copy/fwd: y = x over N elements, the same-method copy roofline at each problem size (kernels/copy/copy_fwd.cuh).
// copy/read: x read once, one max per 512-byte chunk written, the read roofline (kernels/copy/copy_read.cuh).
// Problem axis: N (elements).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "core/error.hpp"

namespace ktune {
namespace {

// N, the one axis; Error(bad_input) naming `op_key` and the problem otherwise.
std::int64_t elements(const Problem& p, std::string_view op_key) {
    const std::string where = fmt::format("{} {}", op_key, p.key());
    for (const auto& [name, value] : p.shape)
        if (name != "N")
            throw Error(ErrorCategory::bad_input, fmt::format("copy has one axis, N; unknown axis {}", name), where);
    const auto n = lookup(p.shape, "N");
    if (!n) throw Error(ErrorCategory::bad_input, "copy needs axis N", where);
    if (*n < 1) throw Error(ErrorCategory::bad_input, fmt::format("copy needs N >= 1, got {}", *n), where);
    if (*n > std::numeric_limits<std::int64_t>::max() / 16)
        throw Error(ErrorCategory::bad_input, "copy buffer size overflows", where);
    return *n;
}

class CopyOp final : public OpDescription {
public:
    std::string_view name() const override { return "copy"; }
    std::string_view variant() const override { return "fwd"; }
    std::string_view summary() const override {
        return "Copy: y = x over N elements, the copy roofline at each size with ktune's timing method (axis N)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const std::int64_t n = elements(p, "copy/fwd");
        const ElemType t = elem_type(p.dtype);
        return {{"x", t, n, BufferRole::input, -4.0, 4.0}, {"y", t, n, BufferRole::output, 0.0, 0.0}};
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        return {KernelArg::buf("y"), KernelArg::buf("x"), KernelArg::i64(elements(p, "copy/fwd"))};
    }

    double bytes_moved(const Problem& p) const override {
        return 2.0 * static_cast<double>(elements(p, "copy/fwd")) * elem_bytes(elem_type(p.dtype));
    }

    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const std::int64_t n = elements(p, "copy/fwd");
        const std::vector<double>& x = host_input(buffers, "x", n, "copy/fwd");
        host_output(buffers, "y", n) = x;
    }
};

// The read kernel writes one max per 512-byte chunk of x: elements per chunk, and chunks of n elements.
std::int64_t read_chunk_elements(const Problem& p) { return 512 / elem_bytes(elem_type(p.dtype)); }
std::int64_t read_chunks(const Problem& p, std::int64_t n) {
    const std::int64_t chunk = read_chunk_elements(p);
    return (n + chunk - 1) / chunk;
}

class CopyReadOp final : public OpDescription {
public:
    std::string_view name() const override { return "copy"; }
    std::string_view variant() const override { return "read"; }
    std::string_view summary() const override {
        return "Read: x read once, one max per 512 bytes written; the read roofline at each size (axis N)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const std::int64_t n = elements(p, "copy/read");
        const ElemType t = elem_type(p.dtype);
        return {{"x", t, n, BufferRole::input, -4.0, 4.0}, {"y", t, read_chunks(p, n), BufferRole::output, 0.0, 0.0}};
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        return {KernelArg::buf("y"), KernelArg::buf("x"), KernelArg::i64(elements(p, "copy/read"))};
    }

    double bytes_moved(const Problem& p) const override {
        const std::int64_t n = elements(p, "copy/read");
        return static_cast<double>(n + read_chunks(p, n)) * elem_bytes(elem_type(p.dtype));
    }

    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const std::int64_t n = elements(p, "copy/read");
        const std::vector<double>& x = host_input(buffers, "x", n, "copy/read");
        const std::int64_t chunk = read_chunk_elements(p);
        std::vector<double>& y = host_output(buffers, "y", read_chunks(p, n));
        for (std::int64_t c = 0; c < static_cast<std::int64_t>(y.size()); ++c) {
            double m = x[c * chunk];
            for (std::int64_t i = c * chunk + 1; i < std::min(n, (c + 1) * chunk); ++i) m = std::fmax(m, x[i]);
            y[c] = m;
        }
    }
};

}  // namespace

const OpDescription& copy_fwd_op() {
    static const CopyOp op;
    return op;
}

const OpDescription& copy_read_op() {
    static const CopyReadOp op;
    return op;
}

}  // namespace ktune
