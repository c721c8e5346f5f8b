#pragma once
// The host-side description of an operation: the buffers its kernels take, their scalar arguments, and the bytes and
// flops it must move. The tuner and the GPU worker are generic: everything op-specific that is not in the YAML search
// space is here. Every op is declared in YAML (tuner/space/op_spec.hpp: kernels/<op>/*.op.yaml for the built-in ones);
// what YAML cannot say, a CPU reference for tests, is C++ (kernels/op.hpp).
//
// Conventions every op follows:
// - The tuned kernel and the reference kernel take the same argument list (arguments()). The worker runs the
//   reference into separate copies of the output buffers and compares.
// - Inputs are filled on the device by the seeded generator in kernels/common/random.cuh: ktune_uniform(seed, index)
//   mapped to [lo, hi); the seed of a buffer is buffer_seed(run seed, buffer name). Never zeros.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace ktune {

enum class ElemType { f32, f16, bf16, i32, i64, i8, u8 };
ElemType elem_type(Dtype d);
int elem_bytes(ElemType t);
std::string_view elem_name(ElemType t);

enum class BufferRole {
    input,    // filled once by the generator, never written by the kernel
    output,   // poisoned (NaN) before each validation, compared with the reference's copy
    inout,    // restored from a pristine copy before each validation run, then compared
    scratch,  // workspace (partial sums, counters): zero-filled before each validation run, never compared; a kernel
              // that uses it across blocks must leave it as it found it (e.g. the last block resets its counter), as
              // timing runs do not re-zero it
};

// The rows of a padded batch past each sequence's length (op spec `pad`). The buffer's first sequences * heads *
// tokens * token_elements elements are [sequences, heads, tokens, token_elements], one length per sequence in the i32
// input `lengths` (sequences: its element count). After every input is generated, each element of a token t >=
// clamp(lengths[b], 0, tokens) of sequence b is NaN: in real use those rows hold anything, and a kernel must not let
// them reach its result.
struct BufferPad {
    std::string lengths;
    std::int64_t sequences = 0, heads = 1, tokens = 0, token_elements = 0;
};

struct BufferSpec {
    std::string name;
    ElemType type = ElemType::f32;
    std::int64_t elements = 0;
    BufferRole role = BufferRole::input;
    double lo = -1.0, hi = 1.0;    // generator range for inputs (integers: [lo, hi) truncated)
    std::optional<BufferPad> pad;  // floating-point inputs and inouts only
};

struct KernelArg {
    enum class Kind { buffer, i32, i64, f32 };
    Kind kind = Kind::i32;
    std::string buffer;  // Kind::buffer: a BufferSpec name
    std::int64_t integer = 0;
    double real = 0;

    static KernelArg buf(std::string name) { return {Kind::buffer, std::move(name), 0, 0}; }
    static KernelArg i32(std::int64_t v) { return {Kind::i32, {}, v, 0}; }
    static KernelArg i64(std::int64_t v) { return {Kind::i64, {}, v, 0}; }
    static KernelArg f32(double v) { return {Kind::f32, {}, 0, v}; }
};

class OpDescription {
public:
    virtual ~OpDescription() = default;
    virtual std::string_view name() const = 0;     // "rmsnorm": the YAML's op
    virtual std::string_view variant() const = 0;  // "fwd": the YAML's variant
    virtual std::string_view summary() const = 0;  // one line for `ktune list`

    // Throws Error(bad_input) when the problem lacks an axis the op needs or has a shape it cannot take.
    virtual std::vector<BufferSpec> buffers(const Problem& p) const = 0;
    virtual std::vector<KernelArg> arguments(const Problem& p) const = 0;

    // The fewest bytes the op must read and write (each input once, each output once): the roofline numerator.
    virtual double bytes_moved(const Problem& p) const = 0;
    virtual double flops(const Problem& p) const {
        (void)p;
        return 0;
    }
};

// The spellings of the wire protocol and of op specs: "f32" "f16" "bf16" "i32" "i64" "i8" "u8"; "input" "output"
// "inout" "scratch"; "buffer" "i32" "i64" "f32".
std::string_view elem_wire_name(ElemType t);
std::optional<ElemType> parse_elem_type(std::string_view name);
std::string_view buffer_role_name(BufferRole r);
std::optional<BufferRole> parse_buffer_role(std::string_view name);
std::string_view arg_kind_name(KernelArg::Kind k);

}  // namespace ktune
