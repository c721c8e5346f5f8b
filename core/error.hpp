#pragma once
// The one exception type of ktune's host code. Library code throws it; only main() turns it into a message and an
// exit code (see exit_code()).
#include <stdexcept>
#include <string>

namespace ktune {

enum class ErrorCategory {
    bad_input,  // YAML, CLI arguments, shapes, unknown names: the user must change something
    no_gpu,     // no NVIDIA driver or no device: the command needs one
    compile,    // NVRTC failed in a way that is not a per-configuration result
    device,     // the GPU worker failed outside a configuration's own measurement
    store,      // the results database cannot be opened, read or written
    internal,   // a bug in ktune
};

const char* category_name(ErrorCategory c);

// Process exit codes: distinct per category so scripts can tell bad input from a missing GPU from a failure.
enum ExitCode : int {
    exit_ok = 0,
    exit_failure = 1,  // internal / device / compile failures
    exit_bad_input = 2,
    exit_no_gpu = 3,
    exit_store = 4,
};
int exit_code(ErrorCategory c);

class Error : public std::runtime_error {
public:
    // `where` names the origin: "search_spaces/rmsnorm.yaml:12: parameters.BLOCK", "--budget", "store".
    Error(ErrorCategory category, std::string message, std::string where = {});

    ErrorCategory category() const { return m_category; }
    const std::string& message() const { return m_message; }
    const std::string& where() const { return m_where; }

private:
    ErrorCategory m_category;
    std::string m_message;
    std::string m_where;
};

}  // namespace ktune
