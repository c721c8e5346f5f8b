// The one list of CPU references. Every op is declared as data (kernels/<op>/*.op.yaml, referenced by its search
// spaces); what the declaration cannot say, the CPU reference tests compare the kernels' semantics with, is a function
// in kernels/<op>/*_cpu_reference.cpp and one line below.
#include <vector>

#include "kernels/op.hpp"

// clang-format off
#define KTUNE_CPU_REFERENCES(X) \
    X(rmsnorm, fwd)                 /* kernels/rmsnorm/rmsnorm_fwd_cpu_reference.cpp */ \
    X(rmsnorm, fwd_gemma)           /* kernels/rmsnorm/rmsnorm_fwd_cpu_reference.cpp */ \
    X(rmsnorm, bwd)                 /* kernels/rmsnorm/rmsnorm_bwd_cpu_reference.cpp */ \
    X(add_rmsnorm, fwd)             /* kernels/add_rmsnorm/add_rmsnorm_cpu_reference.cpp */ \
    X(add_rmsnorm, fwd_inplace)     /* kernels/add_rmsnorm/add_rmsnorm_cpu_reference.cpp */ \
    X(add_rmsnorm, fwd_gemma)       /* kernels/add_rmsnorm/add_rmsnorm_cpu_reference.cpp */ \
    X(layernorm, fwd)               /* kernels/layernorm/layernorm_cpu_reference.cpp */ \
    X(layernorm, fwd_nobias)        /* kernels/layernorm/layernorm_cpu_reference.cpp */ \
    X(rope, neox)                   /* kernels/rope/rope_cpu_reference.cpp */ \
    X(rope, gptj)                   /* kernels/rope/rope_cpu_reference.cpp */ \
    X(rope, neox_cache)             /* kernels/rope/rope_cpu_reference.cpp */ \
    X(glu, swiglu)                  /* kernels/glu/glu_cpu_reference.cpp */ \
    X(glu, swiglu_cat)              /* kernels/glu/glu_cpu_reference.cpp */ \
    X(glu, geglu)                   /* kernels/glu/glu_cpu_reference.cpp */ \
    X(glu, geglu_cat)               /* kernels/glu/glu_cpu_reference.cpp */ \
    X(glu, swiglu_bwd)              /* kernels/glu/glu_cpu_reference.cpp */ \
    X(softmax, fwd)                 /* kernels/softmax/softmax_cpu_reference.cpp */ \
    X(decode_attention, fwd)        /* kernels/attention/decode_attention_cpu_reference.cpp */ \
    X(prefill_attention, causal)    /* kernels/attention/prefill_attention_cpu_reference.cpp */ \
    X(prefill_attention, full)      /* kernels/attention/prefill_attention_cpu_reference.cpp */ \
    X(linear_int4, fwd)             /* kernels/quant_linear/quant_linear_cpu_reference.cpp */ \
    X(linear_int8, fwd)             /* kernels/quant_linear/quant_linear_cpu_reference.cpp */ \
    X(linear, fwd)                  /* kernels/quant_linear/quant_linear_cpu_reference.cpp: dense, the cuBLAS baseline */ \
    X(linear_skinny, fwd)           /* kernels/linear_skinny/linear_skinny_cpu_reference.cpp */ \
    X(linear_skinny, fwd_swiglu)    /* kernels/linear_skinny/linear_skinny_cpu_reference.cpp */ \
    X(linear_skinny, fwd_add_rmsnorm) /* kernels/linear_skinny/linear_skinny_cpu_reference.cpp */ \
    X(copy, fwd)                    /* kernels/copy/copy_cpu_reference.cpp */ \
    X(copy, read)                   /* kernels/copy/copy_cpu_reference.cpp */ \
    X(gemm_act, none)               /* kernels/gemm/gemm_cpu_reference.cpp */ \
    X(gemm_act, gelu)               /* kernels/gemm/gemm_cpu_reference.cpp */ \
    X(gemm_act, silu)               /* kernels/gemm/gemm_cpu_reference.cpp */ \
    X(ffn_gated, swiglu)            /* kernels/gemm/gemm_cpu_reference.cpp */ \
    X(ffn_gated, geglu)             /* kernels/gemm/gemm_cpu_reference.cpp */
// clang-format on

namespace ktune {

#define KTUNE_DECLARE_REFERENCE(op, variant) void op##_##variant##_cpu_reference(const Problem&, HostBuffers&);
KTUNE_CPU_REFERENCES(KTUNE_DECLARE_REFERENCE)
#undef KTUNE_DECLARE_REFERENCE

std::vector<CpuReference> registered_cpu_references() {
    return {
#define KTUNE_LIST_REFERENCE(op, variant) {#op, #variant, &op##_##variant##_cpu_reference},
        KTUNE_CPU_REFERENCES(KTUNE_LIST_REFERENCE)
#undef KTUNE_LIST_REFERENCE
    };
}

}  // namespace ktune
