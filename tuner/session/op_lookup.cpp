#include "tuner/session/op_lookup.hpp"

#include "core/error.hpp"
#include "kernels/op.hpp"

namespace ktune {

const OpDescription& op_of(const SearchSpace& space) {
    if (const DeclaredOp* declared = space.declared_op()) return *declared;
    try {
        return find_op(space.op(), space.variant());
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::bad_input) throw;
        throw Error(ErrorCategory::bad_input,
                    e.message() + "; or declare the op in the file (op_spec: see tuner/space/op_spec.hpp)",
                    space.file() + ": op");
    }
}

double op_flops(const std::string& root, const std::string& op, const std::string& variant, const Problem& p) {
    try {
        for (const OpDescription* o : all_ops())
            if (o->name() == op && o->variant() == variant) return o->flops(p);
        const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(find_space_file(root, op, variant));
        return op_of(kernels.front()).flops(p);
    } catch (const Error&) {
        return 0;
    }
}

}  // namespace ktune
