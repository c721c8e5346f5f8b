// The one list of ops. Adding an op: a kernels/<op>/ folder whose .cpp defines the factory, a
// search_spaces/<op>.yaml, and one line below.
#include <vector>

#include "kernels/op.hpp"

#define KTUNE_REGISTERED_OPS(X) \
    X(rmsnorm_fwd_op) /* kernels/rmsnorm/rmsnorm_fwd_op.cpp: rmsnorm/fwd */

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
