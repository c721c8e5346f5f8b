// The CPU references of copy/fwd (y = x) and copy/read (one max per 512-byte chunk of x): kernels/copy/*.op.yaml.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/op.hpp"

namespace ktune {

void copy_fwd_cpu_reference(const Problem& p, HostBuffers& buffers) {
    const std::int64_t n = axis(p, "N", "copy/fwd");
    const std::vector<double>& x = host_input(buffers, "x", n, "copy/fwd");
    host_output(buffers, "y", n) = x;
}

void copy_read_cpu_reference(const Problem& p, HostBuffers& buffers) {
    const std::int64_t n = axis(p, "N", "copy/read");
    const std::vector<double>& x = host_input(buffers, "x", n, "copy/read");
    const std::int64_t chunk = 512 / elem_bytes(elem_type(p.dtype));  // elements of one 512-byte chunk
    std::vector<double>& y = host_output(buffers, "y", (n + chunk - 1) / chunk);
    for (std::int64_t c = 0; c < static_cast<std::int64_t>(y.size()); ++c) {
        double m = x[c * chunk];
        for (std::int64_t i = c * chunk + 1; i < std::min(n, (c + 1) * chunk); ++i) m = std::fmax(m, x[i]);
        y[c] = m;
    }
}

}  // namespace ktune
