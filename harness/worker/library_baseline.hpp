#pragma once
// The worker's side of the library baselines (core/library.hpp): a vendor library call that is validated and
// timed where a compiled kernel would be. Only this file and its .cpp include the libraries' headers.
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/protocol/protocol.hpp"

namespace ktune::worker {

// The library refused the call or the configuration (no such algorithm for the shape, an unsupported type): the
// configuration's failure, recorded as a launch error; the context is intact.
class LibraryError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class LibraryCall {
public:
    virtual ~LibraryCall() = default;
    // Enqueues the call on `stream`. `arg_values` holds the op's arguments in order, 8 bytes each (buffers as device
    // pointers), for the buffers in use (the rotation copies of a small problem differ only there).
    virtual void launch(const std::vector<std::uint64_t>& arg_values, CUstream stream) = 0;
};

// Prepares launch.library with launch.config for the current problem (its arguments and buffers): picks the
// algorithm once, so that launches only enqueue. Throws LibraryError for an unknown library or a configuration the
// library cannot run.
std::unique_ptr<LibraryCall> make_library_call(const wire::Launch& launch, const std::vector<wire::Arg>& args,
                                               const std::vector<wire::Buffer>& buffers);

}  // namespace ktune::worker
