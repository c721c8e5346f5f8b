#pragma once
// Internal to tuner/export: fixed text of the generated headers.
#include <string_view>

namespace ktune::export_detail {

// The op-independent part of every generated header (header_common.cpp). It needs <cmath> and <limits>, and
// <cuda_runtime.h> unless KTUNE_TUNED_HOST_ONLY is defined.
std::string_view header_common_text();

// What a header whose kernels take TMA descriptors (kernel.tensor_maps) adds to the common part, and only such a
// header: cuTensorMapEncodeTiled from the driver through the runtime (no -lcuda), the descriptor as a kernel argument
// and its checked encoding. Needs the common part; includes <cuda.h>, <cudaTypedefs.h> and <cstring> itself.
std::string_view tensor_map_helper_text();

}  // namespace ktune::export_detail
