// The one list of ops. Adding an op: a kernels/<op>/ folder whose .cpp defines the factory, a
// search_spaces/<op>.yaml, and one line below.
#include <vector>

#include "kernels/op.hpp"

#define KTUNE_REGISTERED_OPS(X) \
    X(rmsnorm_fwd_op) /* kernels/rmsnorm/rmsnorm_fwd_op.cpp: rmsnorm/fwd */ \
    X(rmsnorm_fwd_gemma_op) /* kernels/rmsnorm/rmsnorm_fwd_op.cpp: rmsnorm/fwd_gemma */ \
    X(rmsnorm_bwd_op) /* kernels/rmsnorm/rmsnorm_bwd_op.cpp: rmsnorm/bwd */ \
    X(add_rmsnorm_fwd_op) /* kernels/add_rmsnorm/add_rmsnorm_op.cpp: add_rmsnorm/fwd */ \
    X(add_rmsnorm_fwd_inplace_op) /* kernels/add_rmsnorm/add_rmsnorm_op.cpp: add_rmsnorm/fwd_inplace */ \
    X(add_rmsnorm_fwd_gemma_op) /* kernels/add_rmsnorm/add_rmsnorm_op.cpp: add_rmsnorm/fwd_gemma */ \
    X(layernorm_fwd_op) /* kernels/layernorm/layernorm_op.cpp: layernorm/fwd */ \
    X(layernorm_fwd_nobias_op) /* kernels/layernorm/layernorm_op.cpp: layernorm/fwd_nobias */ \
    X(rope_neox_op) /* kernels/rope/rope_op.cpp: rope/neox */ \
    X(rope_gptj_op) /* kernels/rope/rope_op.cpp: rope/gptj */ \
    X(glu_swiglu_op) /* kernels/glu/glu_op.cpp: glu/swiglu */ \
    X(glu_swiglu_cat_op) /* kernels/glu/glu_op.cpp: glu/swiglu_cat */ \
    X(glu_geglu_op) /* kernels/glu/glu_op.cpp: glu/geglu */ \
    X(glu_geglu_cat_op) /* kernels/glu/glu_op.cpp: glu/geglu_cat */ \
    X(softmax_fwd_op) /* kernels/softmax/softmax_op.cpp: softmax/fwd */ \
    X(decode_attention_fwd_op) /* kernels/attention/decode_attention_op.cpp: decode_attention/fwd */ \
    X(linear_int4_fwd_op) /* kernels/quant_linear/quant_linear_op.cpp: linear_int4/fwd */ \
    X(linear_int8_fwd_op) /* kernels/quant_linear/quant_linear_op.cpp: linear_int8/fwd */ \
    X(linear_fwd_op) /* kernels/quant_linear/quant_linear_op.cpp: linear/fwd, dense weights: the cuBLAS baseline */ \
    X(copy_fwd_op) /* kernels/copy/copy_op.cpp: copy/fwd, the same-method copy roofline per size */ \
    X(copy_read_op) /* kernels/copy/copy_op.cpp: copy/read, the same-method read roofline per size */

namespace ktune {

#define KTUNE_DECLARE_OP(factory) const OpDescription& factory();
KTUNE_REGISTERED_OPS(KTUNE_DECLARE_OP)
#undef KTUNE_DECLARE_OP

std::vector<const OpDescription*> registered_ops() {
    return {
#define KTUNE_LIST_OP(factory) &factory(),
        KTUNE_REGISTERED_OPS(KTUNE_LIST_OP)
#undef KTUNE_LIST_OP
    };
}

}  // namespace ktune
