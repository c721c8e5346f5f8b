#pragma once
// Thin checked wrappers over the CUDA driver API for the worker. Only harness/ includes cuda.h.
#include <cuda.h>

#include <stdexcept>
#include <string>

namespace ktune::worker {

// A driver call failed. `sticky` marks errors after which the context cannot be used again (a faulting kernel):
// the worker reports them as fatal and the host restarts it.
class DriverError : public std::runtime_error {
public:
    DriverError(CUresult code, const std::string& what);
    CUresult code() const { return m_code; }
    bool sticky() const;

private:
    CUresult m_code;
};

std::string driver_error_string(CUresult r);
void check(CUresult r, const char* call);

#define KTUNE_CU(call) ::ktune::worker::check((call), #call)

}  // namespace ktune::worker
