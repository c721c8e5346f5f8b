#include "kernels/op.hpp"

#include <fmt/format.h>

#include "kernels/common/random.cuh"
#include "tuner/core/error.hpp"

namespace ktune {

// kernels/registry.cpp: every op, in the order `ktune list` shows them.
std::vector<const OpDescription*> registered_ops();

ElemType elem_type(Dtype d) {
    switch (d) {
        case Dtype::fp32: return ElemType::f32;
        case Dtype::fp16: return ElemType::f16;
        case Dtype::bf16: return ElemType::bf16;
    }
    throw Error(ErrorCategory::internal, fmt::format("no element type for dtype {}", static_cast<int>(d)), "elem_type");
}

int elem_bytes(ElemType t) {
    switch (t) {
        case ElemType::f32: return 4;
        case ElemType::f16: return 2;
        case ElemType::bf16: return 2;
        case ElemType::i32: return 4;
        case ElemType::i64: return 8;
        case ElemType::i8: return 1;
        case ElemType::u8: return 1;
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown element type {}", static_cast<int>(t)), "elem_bytes");
}

// The C++ spelling, as a template argument of the harness kernels: "ktune_fill_uniform<__nv_bfloat16>".
std::string_view elem_name(ElemType t) {
    switch (t) {
        case ElemType::f32: return "float";
        case ElemType::f16: return "__half";
        case ElemType::bf16: return "__nv_bfloat16";
        case ElemType::i32: return "int";
        case ElemType::i64: return "long long";
        case ElemType::i8: return "signed char";
        case ElemType::u8: return "unsigned char";
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown element type {}", static_cast<int>(t)), "elem_name");
}

const std::vector<const OpDescription*>& all_ops() {
    static const std::vector<const OpDescription*> ops = [] {
        std::vector<const OpDescription*> list = registered_ops();
        for (std::size_t i = 0; i < list.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (list[i]->name() == list[j]->name() && list[i]->variant() == list[j]->variant())
                    throw Error(ErrorCategory::internal,
                                fmt::format("op {}/{} is registered twice", list[i]->name(), list[i]->variant()),
                                "kernels/registry.cpp");
        return list;
    }();
    return ops;
}

const OpDescription& find_op(std::string_view name, std::string_view variant) {
    std::string known;
    for (const OpDescription* op : all_ops()) {
        if (op->name() == name && op->variant() == variant) return *op;
        known += fmt::format("{}{}/{}", known.empty() ? "" : ", ", op->name(), op->variant());
    }
    throw Error(ErrorCategory::bad_input,
                fmt::format("unknown op {}/{}; known ops: {}", name, variant, known.empty() ? "none" : known), "op");
}

std::uint64_t buffer_seed(std::uint64_t run_seed, std::string_view buffer_name) {
    // FNV-1a 64 of the name: stable across platforms and releases (std::hash is neither).
    std::uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : buffer_name) {
        h ^= c;
        h *= 0x100000001B3ull;
    }
    return ktune_splitmix64(run_seed ^ ktune_splitmix64(h));
}

}  // namespace ktune
