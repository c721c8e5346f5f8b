#include "core/error.hpp"

namespace ktune {

const char* category_name(ErrorCategory c) {
    switch (c) {
        case ErrorCategory::bad_input:
            return "bad input";
        case ErrorCategory::no_gpu:
            return "no GPU";
        case ErrorCategory::compile:
            return "compile";
        case ErrorCategory::device:
            return "device";
        case ErrorCategory::store:
            return "store";
        case ErrorCategory::internal:
            return "internal";
    }
    return "unknown";
}

int exit_code(ErrorCategory c) {
    switch (c) {
        case ErrorCategory::bad_input:
            return exit_bad_input;
        case ErrorCategory::no_gpu:
            return exit_no_gpu;
        case ErrorCategory::store:
            return exit_store;
        default:
            return exit_failure;
    }
}

static std::string compose(const std::string& message, const std::string& where) {
    return where.empty() ? message : where + ": " + message;
}

Error::Error(ErrorCategory category, std::string message, std::string where)
    : std::runtime_error(compose(message, where)),
      m_category(category),
      m_message(std::move(message)),
      m_where(std::move(where)) {}

}  // namespace ktune
