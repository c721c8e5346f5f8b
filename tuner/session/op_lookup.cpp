#include "tuner/session/op_lookup.hpp"

#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/session/environment.hpp"

namespace ktune {
namespace {

const DeclaredOp* find_builtin(const std::string& root, const std::string& op, const std::string& variant) {
    for (const auto& d : builtin_ops(root))
        if (d->name() == op && d->variant() == variant) return d.get();
    return nullptr;
}

}  // namespace

const std::vector<std::shared_ptr<const DeclaredOp>>& builtin_ops(const std::string& root) {
    static std::mutex mutex;
    static std::map<std::string, std::vector<std::shared_ptr<const DeclaredOp>>>
        loaded;  // never evicted: references stay valid
    std::lock_guard lock(mutex);
    auto it = loaded.find(root);
    if (it == loaded.end())
        it = loaded.emplace(root, DeclaredOp::load_folder((std::filesystem::path(root) / "kernels").string())).first;
    return it->second;
}

const OpDescription& op_of(const SearchSpace& space) {
    if (const DeclaredOp* declared = space.declared_op()) return *declared;
    const std::string root = resolve_root("");
    if (const DeclaredOp* builtin = find_builtin(root, space.op(), space.variant())) return *builtin;
    std::string known;
    for (const auto& d : builtin_ops(root))
        known += fmt::format("{}{}/{}", known.empty() ? "" : ", ", d->name(), d->variant());
    throw Error(ErrorCategory::bad_input,
                fmt::format("unknown op {}/{}; known ops: {}; or declare the op in the file (op_spec: see "
                            "tuner/space/op_spec.hpp)",
                            space.op(), space.variant(), known.empty() ? "none" : known),
                space.file() + ": op");
}

double op_flops(const std::string& root, const std::string& op, const std::string& variant, const Problem& p) {
    try {
        if (const DeclaredOp* builtin = find_builtin(root, op, variant)) return builtin->flops(p);
        const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(find_space_file(root, op, variant));
        return op_of(kernels.front()).flops(p);
    } catch (const Error&) {
        return 0;
    }
}

}  // namespace ktune
