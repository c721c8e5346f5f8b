#pragma once
// Helpers the tests of tuner/space share.
#include <gtest/gtest.h>

#include "core/error.hpp"

namespace ktune {

// Runs `f`, which must throw Error(bad_input), and returns the error.
template <typename F>
Error bad_input_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input) << e.what();
        return e;
    }
    ADD_FAILURE() << "no Error was thrown";
    return Error(ErrorCategory::internal, "not thrown");
}

}  // namespace ktune
