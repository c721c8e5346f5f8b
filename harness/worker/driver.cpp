#include "harness/worker/driver.hpp"

namespace ktune::worker {

std::string driver_error_string(CUresult r) {
    const char* name = nullptr;
    const char* text = nullptr;
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &text);
    return std::string(name ? name : "CUDA_ERROR_?") + " (" + (text ? text : "unknown") + ")";
}

DriverError::DriverError(CUresult code, const std::string& what)
    : std::runtime_error(what + ": " + driver_error_string(code)), m_code(code) {}

bool DriverError::sticky() const {
    switch (m_code) {
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_LAUNCH_FAILED:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_LAUNCH_TIMEOUT:
        case CUDA_ERROR_ECC_UNCORRECTABLE:
        case CUDA_ERROR_CONTEXT_IS_DESTROYED:
            return true;
        default:
            return false;
    }
}

void check(CUresult r, const char* call) {
    if (r != CUDA_SUCCESS) throw DriverError(r, call);
}

}  // namespace ktune::worker
