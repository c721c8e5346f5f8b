#pragma once
// Division by a run-time divisor that is fixed for the whole launch, as one multiply-high and a shift (Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994). The RoPE kernel splits a flat work index
// into (token, head, chunk) with two of these per item; a hardware-less 32-bit division costs about 20 instructions.
//
// Plain C++ as well as CUDA (KTUNE_HD), so host tests check it against the / operator.
#include "kernels/common/ktune_device.cuh"

namespace ktune::dev {

// Valid for divisors d >= 1 and dividends n in [0, 2^31): with l = ceil(log2 d) and m = ceil(2^(31+l) / d) < 2^32,
// floor(n * m / 2^(31+l)) = floor(n / d), because the rounding error of m adds less than 1/d to n / d.
struct FastDivmod {
    unsigned divisor = 1;
    unsigned multiplier = 0;
    unsigned shift = 0;  // right shift after the multiply-high: l - 1

    FastDivmod() = default;
    KTUNE_HD explicit FastDivmod(unsigned d) : divisor(d) {
        if (d <= 1) return;  // multiplier 0 marks "divide by one"
        unsigned l = 0;
        while ((1ull << l) < d) ++l;
        multiplier = static_cast<unsigned>(((1ull << (31 + l)) + d - 1) / d);
        shift = l - 1;
    }

    KTUNE_HD unsigned div(unsigned n) const {
        if (multiplier == 0) return n;
        const unsigned hi = static_cast<unsigned>((static_cast<unsigned long long>(n) * multiplier) >> 32);
        return hi >> shift;
    }
    // quotient and remainder
    KTUNE_HD unsigned divmod(unsigned n, unsigned& rem) const {
        const unsigned q = div(n);
        rem = n - q * divisor;
        return q;
    }
};

}  // namespace ktune::dev
