// copy/fwd: y = x over N elements, the same-method copy roofline at each problem size (kernels/copy/copy_fwd.cuh).
// Problem axis: N (elements).
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "kernels/op.hpp"
#include "tuner/core/error.hpp"

namespace ktune {
namespace {

class CopyOp final : public OpDescription {
public:
    std::string_view name() const override { return "copy"; }
    std::string_view variant() const override { return "fwd"; }
    std::string_view summary() const override {
        return "Copy: y = x over N elements, the copy roofline at each size with ktune's timing method (axis N)";
    }

    std::vector<BufferSpec> buffers(const Problem& p) const override {
        const std::int64_t n = elements(p);
        const ElemType t = elem_type(p.dtype);
        return {{"x", t, n, BufferRole::input, -4.0, 4.0}, {"y", t, n, BufferRole::output, 0.0, 0.0}};
    }

    std::vector<KernelArg> arguments(const Problem& p) const override {
        return {KernelArg::buf("y"), KernelArg::buf("x"), KernelArg::i64(elements(p))};
    }

    double bytes_moved(const Problem& p) const override {
        return 2.0 * static_cast<double>(elements(p)) * elem_bytes(elem_type(p.dtype));
    }

    void cpu_reference(const Problem& p, HostBuffers& buffers) const override {
        const std::int64_t n = elements(p);
        const std::vector<double>& x = host_input(buffers, "x", n, "copy/fwd");
        host_output(buffers, "y", n) = x;
    }

private:
    static std::int64_t elements(const Problem& p) {
        const std::string where = fmt::format("copy/fwd {}", p.key());
        for (const auto& [name, value] : p.shape)
            if (name != "N")
                throw Error(ErrorCategory::bad_input, fmt::format("copy has one axis, N; unknown axis {}", name),
                            where);
        const auto n = lookup(p.shape, "N");
        if (!n) throw Error(ErrorCategory::bad_input, "copy needs axis N", where);
        if (*n < 1) throw Error(ErrorCategory::bad_input, fmt::format("copy needs N >= 1, got {}", *n), where);
        if (*n > std::numeric_limits<std::int64_t>::max() / 16)
            throw Error(ErrorCategory::bad_input, "copy buffer size overflows", where);
        return *n;
    }
};

}  // namespace

const OpDescription& copy_fwd_op() {
    static const CopyOp op;
    return op;
}

}  // namespace ktune
