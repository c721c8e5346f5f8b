#include "tuner/export/op_binding.hpp"

namespace ktune {
namespace {

// rmsnorm/fwd and rmsnorm/fwd_gemma: kernels/rmsnorm/rmsnorm_fwd.cuh (y, x, w, rows, hidden, x_row_stride,
// y_row_stride, eps). The problem axes M, H and the optional row stride S (kernels/rmsnorm/rmsnorm_fwd.op.yaml).
// Misaligned rows are legal (the kernel has a scalar path); only element misalignment is refused, as no path can
// load a 2-byte element from an odd address.
OpBinding rmsnorm_fwd_binding() {
    OpBinding b;
    b.op = "rmsnorm";
    b.variants = {"fwd", "fwd_gemma"};
    b.axes = {{"M", "rows", ""}, {"H", "hidden", ""}, {"S", "x_row_stride", "H"}};
    b.parameters =
        "void* y, const void* x, const void* w, int rows, int hidden, long long x_row_stride, "
        "long long y_row_stride, float eps";
    b.shape_parameters = "int rows, int hidden, long long x_row_stride";
    b.checks = {
        "if (y == nullptr || x == nullptr || w == nullptr) return Status::null_pointer;",
        "if (rows <= 0 || hidden <= 0) return Status::bad_size;",
        "if (x_row_stride < hidden || y_row_stride < hidden) return Status::bad_stride;",
        "if (x_row_stride > 9223372036854775807LL / elem_bytes / rows || "
        "y_row_stride > 9223372036854775807LL / elem_bytes / rows) return Status::bad_stride;",
        "if (!(eps >= 0.0f) || !std::isfinite(eps)) return Status::bad_argument;",
        "if (!detail::aligned(y, elem_bytes) || !detail::aligned(x, elem_bytes) || !detail::aligned(w, elem_bytes)) "
        "return Status::misaligned;",
    };
    b.call_arguments =
        "static_cast<{T}*>(y), static_cast<const {T}*>(x), static_cast<const {T}*>(w), rows, hidden, "
        "x_row_stride, y_row_stride, eps";
    // From the op spec's buffers (y, x, w) and axes (M, H, S), with its eps: what the tuner measured.
    b.generic_call =
        "buffers[0], buffers[1], buffers[2], static_cast<int>(shape[0]), static_cast<int>(shape[1]), shape[2], "
        "shape[2], 1e-6f";
    b.doc = {
        "y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * w[c] (fwd_gemma: 1 + w[c]), r < rows, c < hidden.",
        "x, y: rows of `hidden` elements, x_row_stride / y_row_stride elements apart; w: hidden elements. Element type",
        "per `dtype` (float, __half, __nv_bfloat16). Any alignment of the rows works; pointers need element alignment.",
        "Asynchronous on `stream`; the status covers validation and the launch, not the kernel's execution.",
    };
    return b;
}

const std::vector<OpBinding>& bindings() {
    static const std::vector<OpBinding> all = {rmsnorm_fwd_binding()};
    return all;
}

}  // namespace

const OpBinding* find_op_binding(std::string_view op, std::string_view variant) {
    for (const OpBinding& b : bindings()) {
        if (b.op != op) continue;
        for (const std::string& v : b.variants)
            if (v == variant) return &b;
    }
    return nullptr;
}

HostHeader host_header_of(std::string_view op) {
    // The tuner fills packed buffers with random bytes; a caller with real weights packs them with these, header-only,
    // so the user's program links nothing of ktune.
    if (op == "linear_int4")
        return {"kernels/quant_linear/quant_linear_packing.hpp",
                {"w, scales, zeros are in the kernels' packed layout (kernels/quant_linear/quant_linear_layout.cuh):",
                 "ktune::quant_linear_packing::pack_int4() and pack_int4_params() (included below, header-only) pack",
                 "plain weights, scales and zero points into it."}};
    if (op == "linear_int8")
        return {
            "kernels/quant_linear/quant_linear_packing.hpp",
            {"w is in the kernels' packed layout (kernels/quant_linear/quant_linear_layout.cuh):",
             "ktune::quant_linear_packing::pack_int8() (included below, header-only) packs plain weights into it."}};
    return {};
}

std::vector<std::string> exportable_ops() {
    std::vector<std::string> out;
    for (const OpBinding& b : bindings())
        for (const std::string& v : b.variants) out.push_back(b.op + "/" + v);
    return out;
}

}  // namespace ktune
