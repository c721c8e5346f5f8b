#pragma once
// Internal to tuner/export: fixed text of the generated headers.
#include <string_view>

namespace ktune::export_detail {

// The op-independent part of every generated header (header_common.cpp). It needs <cmath> and <limits>, and
// <cuda_runtime.h> unless KTUNE_TUNED_HOST_ONLY is defined.
std::string_view header_common_text();

}  // namespace ktune::export_detail
