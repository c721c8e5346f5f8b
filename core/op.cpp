#include "core/op.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {
namespace {

constexpr ElemType k_elem_types[] = {ElemType::f32, ElemType::f16, ElemType::bf16, ElemType::i32,
                                     ElemType::i64, ElemType::i8,  ElemType::u8};
constexpr BufferRole k_buffer_roles[] = {BufferRole::input, BufferRole::output, BufferRole::inout, BufferRole::scratch};

}  // namespace

ElemType elem_type(Dtype d) {
    switch (d) {
        case Dtype::fp32:
            return ElemType::f32;
        case Dtype::fp16:
            return ElemType::f16;
        case Dtype::bf16:
            return ElemType::bf16;
    }
    throw Error(ErrorCategory::internal, fmt::format("no element type for dtype {}", static_cast<int>(d)), "elem_type");
}

int elem_bytes(ElemType t) {
    switch (t) {
        case ElemType::f32:
            return 4;
        case ElemType::f16:
            return 2;
        case ElemType::bf16:
            return 2;
        case ElemType::i32:
            return 4;
        case ElemType::i64:
            return 8;
        case ElemType::i8:
            return 1;
        case ElemType::u8:
            return 1;
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown element type {}", static_cast<int>(t)), "elem_bytes");
}

// The C++ spelling, as a template argument of the harness kernels: "ktune_fill_uniform<__nv_bfloat16>".
std::string_view elem_name(ElemType t) {
    switch (t) {
        case ElemType::f32:
            return "float";
        case ElemType::f16:
            return "__half";
        case ElemType::bf16:
            return "__nv_bfloat16";
        case ElemType::i32:
            return "int";
        case ElemType::i64:
            return "long long";
        case ElemType::i8:
            return "signed char";
        case ElemType::u8:
            return "unsigned char";
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown element type {}", static_cast<int>(t)), "elem_name");
}

std::string_view elem_wire_name(ElemType t) {
    switch (t) {
        case ElemType::f32:
            return "f32";
        case ElemType::f16:
            return "f16";
        case ElemType::bf16:
            return "bf16";
        case ElemType::i32:
            return "i32";
        case ElemType::i64:
            return "i64";
        case ElemType::i8:
            return "i8";
        case ElemType::u8:
            return "u8";
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown element type {}", static_cast<int>(t)), "elem_wire_name");
}

std::optional<ElemType> parse_elem_type(std::string_view name) {
    for (ElemType t : k_elem_types)
        if (elem_wire_name(t) == name) return t;
    return std::nullopt;
}

std::string_view buffer_role_name(BufferRole r) {
    switch (r) {
        case BufferRole::input:
            return "input";
        case BufferRole::output:
            return "output";
        case BufferRole::inout:
            return "inout";
        case BufferRole::scratch:
            return "scratch";
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown buffer role {}", static_cast<int>(r)),
                "buffer_role_name");
}

std::optional<BufferRole> parse_buffer_role(std::string_view name) {
    for (BufferRole r : k_buffer_roles)
        if (buffer_role_name(r) == name) return r;
    return std::nullopt;
}

std::string_view arg_kind_name(KernelArg::Kind k) {
    switch (k) {
        case KernelArg::Kind::buffer:
            return "buffer";
        case KernelArg::Kind::i32:
            return "i32";
        case KernelArg::Kind::i64:
            return "i64";
        case KernelArg::Kind::f32:
            return "f32";
    }
    throw Error(ErrorCategory::internal, fmt::format("unknown argument kind {}", static_cast<int>(k)), "arg_kind_name");
}

}  // namespace ktune
