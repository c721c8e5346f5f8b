#pragma once
// A search space as loaded from search_spaces/<op>.yaml: the tunable parameters, the constraints between them and the
// problem sizes, the launch geometry, the problems to tune over and the validation tolerances. Validated on load:
// every error names the file, line and field (Error(bad_input) with where = "path:line: field").
//
// File format (search_spaces/rmsnorm.yaml is the worked example):
//   op: rmsnorm                       # registered op name (kernels/registry)
//   variant: fwd                      # optional, default "default"
//   op_spec: ../kernels/my_op/my_op.op.yaml   # optional: the op declared as data (tuner/space/op_spec.hpp), inline
//                                             # or a file relative to this one; otherwise a C++ op (kernels/registry)
//   kernel:
//     source: kernels/rmsnorm/rmsnorm_fwd.cuh          # relative to the repository / --kernels root
//     name: "rmsnorm_fwd<{T}, {BLOCK}, {VEC}, {UNROLL}, {ROWS_PER_BLOCK}>"   # {T} = element type, {P} = parameter
//     reference: "rmsnorm_fwd_reference<{T}>"
//     reference_source: kernels/rmsnorm/rmsnorm_reference.cuh
//     defines: [BLOCK]               # optional: these parameters also reach the kernel as -DNAME=VALUE (as the
//                                    # name shows them), for kernels written for Kernel Tuner or KTT (macros);
//                                    # a parameter in defines need not appear in the name
//     reference_defines: {BLOCK: 256}  # optional: -DNAME=VALUE for the reference kernel
//     tensor_maps:                   # optional (an op_spec's buffers): TMA descriptors (CUtensorMap, by value) the
//       - {buffer: x, shape: [M, K], box: [64, "BK"], swizzle: 128}   # kernel takes after the op's arguments, in
//                                    # order: a dense row-major view of the buffer (shape: problem axes, outermost
//                                    # first), the box one copy moves (parameters allowed), the shared-memory swizzle
//                                    # span in bytes (0, 32, 64 or 128); elements outside the shape read as zeros
//     # or, for a library baseline (core/library.hpp), `library: cublas_gemm` instead of source, with a name
//     # such as "cublas_gemm<{T}, {ALGO}>", a reference_source and a reference_launch, and no launch section
//   parameters:                       # each exactly one of values / range / pow2 / choices; optional doc
//     BLOCK: {pow2: [64, 1024], doc: "threads per block"}
//     VEC: {values: [1, 2, 4, 8]}       # any C++ int, 0 and negatives included
//     UNROLL: {range: [1, 4]}          # inclusive; optional third element = step
//     FLAG: {values: [false, true]}    # a bool: {FLAG} is true / false in kernel.name, 1 / 0 in expressions
//     ENGINE: {choices: [simt, wgmma]} # named choices: {ENGINE} is the name in kernel.name (an enumerator, a type);
//                                      # in expressions every choice name is a constant, so "ENGINE == wgmma"
//                                      # tests one. A name is an identifier, once per list, and neither a parameter,
//                                      # an axis nor reserved (T, DTYPE_BYTES, the functions, true, false); two
//                                      # parameters may share a name, which then means the same constant in both.
//   Configuration keys show bools and choices by name: "FLAG=true,ENGINE=wgmma,BLOCK=256" (parse_config).
//   constraints:                      # legality: all must hold (non-zero); the kernel repeats those that read only
//     - "BLOCK % (32 * ROWS_PER_BLOCK) == 0"   # parameters and DTYPE_BYTES as static_asserts
//   prune:                            # optional heuristics: legal configurations not worth measuring
//     - "VEC * DTYPE_BYTES >= 8"
//   launch:                           # grid and block take 1 to 3 expressions (x, y, z); the grid may also read
//     grid: ["ceil_div(M, ROWS_PER_BLOCK)"]   # SMS, the GPU's streaming multiprocessors ("min(tiles, SMS)")
//     block: ["BLOCK"]
//     shared_bytes: "0"
//   reference_launch: {grid: ["M"], block: ["1"], shared_bytes: "0"}
//   problems:
//     axes: {M: [1, 16, 256, 4096, 32768], H: [4096, 8192]}   # cartesian product, in this order
//     dtypes: [fp32, fp16, bf16]
//   tolerances: {fp32: {rtol: 1e-5, atol: 1e-5}, fp16: {...}, bf16: {...}}   # one entry per dtype used
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "tuner/space/expression.hpp"
#include "tuner/space/op_spec.hpp"

namespace ktune {

namespace detail {
struct ParsedSpace;
}

enum class ParameterKind { integer, boolean, choice };

struct ParameterSpec {
    std::string name;
    ParameterKind kind = ParameterKind::integer;
    // Expanded, in declaration order, no duplicates: the integers; a bool's 0 / 1; a choice's constants (see labels).
    std::vector<std::int64_t> values;
    std::vector<std::string> labels;  // bool and choice: the text of each value ("false", "wgmma"); empty otherwise
    std::string doc;
    std::string where;  // "file:line: parameters.NAME"
};

struct LaunchSpec {
    std::vector<Expression> grid;   // 1..3 entries
    std::vector<Expression> block;  // 1..3 entries
    Expression shared_bytes{"0", ""};
};

struct LaunchGeometry {
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared_bytes = 0;
    std::int64_t threads() const { return std::int64_t(block[0]) * block[1] * block[2]; }
};

// kernel.tensor_maps: one TMA descriptor a kernel takes after the op's arguments.
struct TensorMapSpec {
    std::string buffer;             // the op spec's buffer it views
    std::vector<Expression> shape;  // extents, row-major, outermost first: problem axes
    std::vector<Expression> box;    // the elements one copy moves per dimension: parameters and axes
    int swizzle = 0;                // bytes: 0 (none), 32, 64, 128
    std::string where;
};

// A TMA descriptor's values for one (configuration, problem), checked against the buffer and TMA's limits.
struct TensorMapValue {
    std::string buffer;
    std::vector<std::int64_t> shape, box;
    int swizzle = 0;
};

struct ProblemAxis {
    std::string name;
    std::vector<std::int64_t> values;
};

class SearchSpace {
public:
    // Loads and validates. Throws Error(bad_input) naming file, line and field.
    static SearchSpace load_file(const std::string& path);
    static SearchSpace load_string(const std::string& yaml, const std::string& path_for_messages);
    // A file may hold several kernels of one op (`alternatives:`, each with its own kernel, parameters, constraints
    // and launch, sharing the op, reference, problems and tolerances): one SearchSpace each, in file order. A file of
    // one kernel gives one, whose alternative() is "". load_file and load_string refuse a file of alternatives.
    //   alternatives:
    //     flat: {kernel: {source: k_flat.cuh, name: "k_flat<{T}, {BLOCK}>"}, parameters: {BLOCK: {pow2: [64, 1024]}},
    //            launch: {grid: ["ceil_div(N, BLOCK)"], block: ["BLOCK"]}}
    //     rows: {kernel: {...}, parameters: {...}, constraints: [...], launch: {...}}
    // Top-level parameters, constraints and prune rules are shared: every alternative adds its own to them.
    static std::vector<SearchSpace> load_alternatives(const std::string& path);
    static std::vector<SearchSpace> load_alternatives_string(const std::string& yaml,
                                                             const std::string& path_for_messages);
    // The alternative's name ("" for a file of one kernel): results carry it, `best` says which kernel won.
    const std::string& alternative() const { return m_alternative; }

    const std::string& file() const { return m_file; }
    const std::string& op() const { return m_op; }
    const std::string& variant() const { return m_variant; }
    // The kernel template's file, or "library:NAME" for a library baseline.
    const std::string& kernel_source() const { return m_kernel_source; }
    // A library baseline (core/library.hpp) that the worker calls instead of a compiled kernel; "" otherwise.
    const std::string& library() const { return m_library; }
    bool is_library() const { return !m_library.empty(); }
    const std::string& reference_source() const { return m_reference_source; }
    // kernel.arch_specific: the tuned kernel uses features of the arch-specific target (wgmma: sm_90a), so it is
    // compiled for target_arch(device arch) and runs on that architecture only; the reference is compiled as usual.
    bool arch_specific() const { return m_arch_specific; }
    // kernel.programmatic_launch: the kernel waits in-kernel (griddepcontrol.wait) for the kernel before it before it
    // touches that one's data, so exported headers launch it with programmatic dependent launch (Hopper and later).
    bool programmatic_launch() const { return m_programmatic_launch; }
    // The architecture the tuned kernel is compiled for on a device of `arch` ("sm_90" -> "sm_90a" if arch_specific).
    std::string target_arch(const std::string& arch) const;
    const std::vector<ParameterSpec>& parameters() const { return m_parameters; }
    const std::vector<Expression>& constraints() const { return m_constraints; }  // legality
    const std::vector<Expression>& prune() const { return m_prune; }              // heuristics
    const std::vector<ProblemAxis>& axes() const { return m_axes; }
    const std::vector<Dtype>& dtypes() const { return m_dtypes; }

    // The NVRTC name expression of the tuned kernel / of the reference kernel for one configuration and dtype:
    // "rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>".
    std::string kernel_name(const Config& c, Dtype d) const;
    const std::string& kernel_name_template() const { return m_kernel_name; }  // "rmsnorm_fwd<{T}, {BLOCK}, 1>"
    std::string reference_name(Dtype d) const;
    // The NVRTC options of a configuration (kernel.defines: "-DBLOCK=256") and of the reference; empty for a template.
    std::vector<std::string> compile_options(const Config& c) const;
    std::vector<std::string> reference_compile_options() const;
    const std::vector<std::string>& defines() const { return m_defines; }

    // Every problem: axes' cartesian product (first axis outermost) times dtypes (outermost).
    std::vector<Problem> problems() const;

    // Every configuration of the parameters' cartesian product, in lexicographic order of declaration.
    std::uint64_t cartesian_size() const;
    std::vector<Config> all_configs() const;
    // The same one at a time, without materialising them: `visit` returns false to stop. Returns false when stopped.
    bool for_each_config(const std::function<bool(const Config&)>& visit) const;

    // What an expression of this space reads for (config, problem): the parameters (a bool as 1 / 0, a choice as its
    // constant), the problem axes, DTYPE_BYTES, every choice name as its constant, true / false as 1 / 0, and a
    // declared op's optional axes at their defaults.
    std::map<std::string, double> variables(const Config& c, const Problem& p) const;
    // A configuration key read back: "BLOCK=256,ENGINE=wgmma,FLAG=true", every parameter once (any order); integers as
    // numbers, bools as true / false (or 1 / 0), choices by name. Throws Error(bad_input) naming `where`.
    Config parse_config(const std::string& key, const std::string& where) const;
    // Some of the parameters (a --config filter), in the same spellings, as Config::values holds them.
    NamedValues parse_config_filter(const std::string& text, const std::string& where) const;

    // True when every constraint and every prune rule holds for this (config, problem): a configuration to measure.
    bool is_valid(const Config& c, const Problem& p) const;
    // The first constraint or prune rule that fails, as its text, or "" when all hold.
    std::string failed_constraint(const Config& c, const Problem& p) const;
    std::vector<Config> valid_configs(const Problem& p) const;
    std::uint64_t count_valid_configs(const Problem& p) const;
    // Throws Error(bad_input) when no problem has a valid configuration, naming the rule that rejects the most
    // (configuration, problem) pairs first, with its file:line. Streams: nothing is materialised.
    void require_some_valid_config() const;
    // Evaluates the launch geometry of every valid (configuration, problem), streaming, and throws Error(bad_input)
    // for the first one out of range (a zero or oversized grid, a block over 1024 threads, shared memory over the
    // 227 KiB a block can have), naming the expression's file:line, the configuration and the problem. What the GPU
    // would only find for some problems is found here, without one. The reference kernel's launch is checked for every
    // problem too.
    void check_launches() const;

    // The grid's expressions may read SMS, the streaming multiprocessors of the GPU the kernel runs on: a kernel that
    // strides over its tiles takes a grid of one block per SM ("min(tiles, SMS)"), which no count of tiles a block
    // can give on every GPU. Checks and listings without a GPU take nominal_sm_count.
    LaunchGeometry launch(const Config& c, const Problem& p, int sm_count) const;
    static constexpr int nominal_sm_count = 132;  // an H100 SXM's
    static constexpr const char* sm_count_variable = "SMS";
    // What the launch expressions see: variables(c, p) and SMS.
    std::map<std::string, double> launch_variables(const Config& c, const Problem& p, int sm_count) const;
    // Whether the launch grid reads SMS (its geometry then depends on the GPU).
    bool grid_reads_sm_count() const;
    const std::vector<TensorMapSpec>& tensor_maps() const { return m_tensor_maps; }
    // kernel.tensor_maps for (config, problem). Throws Error(bad_input) naming the entry for a view larger than its
    // buffer, a box beyond TMA's limits (1 to 256 elements a dimension, the innermost a multiple of 16 bytes and
    // within the swizzle span) or rows whose pitch is not a multiple of 16 bytes; check_launches() runs it too.
    std::vector<TensorMapValue> tensor_map_values(const Config& c, const Problem& p) const;
    // The launch section's expressions as one line ("grid: ...; block: ...; shared_bytes: ..."; then "; tensor_maps:
    // ..." if any; "" for a library baseline): part of what a measurement is of, so of the kernel's identity.
    std::string launch_text() const;
    LaunchGeometry reference_launch(const Problem& p) const;

    Tolerance tolerance(Dtype d) const;

    // The op as this file declares it (op_spec), or null: then the built-in declaration of its name (op_of).
    const DeclaredOp* declared_op() const { return m_declared_op.get(); }

private:
    static SearchSpace from_parsed(detail::ParsedSpace&& p, const std::string& path_for_messages,
                                   std::string alternative);

    std::string m_file, m_op, m_variant = "default", m_alternative;
    std::string m_kernel_source, m_kernel_name, m_reference_source, m_reference_name, m_library;
    bool m_arch_specific = false;
    bool m_programmatic_launch = false;
    std::vector<std::string> m_defines;
    std::vector<std::pair<std::string, std::string>> m_reference_defines;
    std::vector<ParameterSpec> m_parameters;
    std::vector<Expression> m_constraints, m_prune;
    LaunchSpec m_launch, m_reference_launch;
    std::vector<TensorMapSpec> m_tensor_maps;
    std::vector<ProblemAxis> m_axes;
    std::vector<Dtype> m_dtypes;
    std::vector<std::pair<Dtype, Tolerance>> m_tolerances;
    std::shared_ptr<const DeclaredOp> m_declared_op;
    std::vector<std::pair<std::string, double>> m_constants;  // choice names, true, false
};

// The search-space file of an op and variant under <root>/search_spaces (files that do not load are skipped: they
// belong to other ops). Throws Error(bad_input) when there is none.
std::string find_space_file(const std::string& root, const std::string& op, const std::string& variant);

}  // namespace ktune
