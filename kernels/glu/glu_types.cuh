#pragma once
// Template arguments of the glu kernels and glu_fwd_reference (see kernels/glu/glu_common.cuh).
namespace ktune::dev::glu {

enum class Act {
    silu,       // SwiGLU: silu(g) = g * sigmoid(g)
    gelu_tanh,  // GeGLU: gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
};

enum class Layout {
    split,  // gate and up are separate [rows, cols] tensors
    cat,    // one [rows, 2 * cols] tensor, gate in columns 0..cols-1, up in cols..2*cols-1 (passed as both gate and up)
};

}  // namespace ktune::dev::glu
