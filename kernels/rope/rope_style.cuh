#pragma once
// The two RoPE pairings, a template argument of rope_fwd and rope_fwd_reference (see kernels/rope/rope_fwd.cuh).
namespace ktune::dev::rope {

enum class Style {
    neox,  // rotate-half (GPT-NeoX, Llama): pair i is (x[i], x[i + rotary_dim / 2])
    gptj,  // interleaved (GPT-J): pair i is (x[2i], x[2i + 1])
};

}  // namespace ktune::dev::rope
