#pragma once
// `ktune export-header`: the best configuration per tuned problem and device, from the results store, written as a
// C++ header that a user's program compiles with nvcc together with kernels/ (design.md: the library integrator).
//
// The header (namespace ktune_tuned) holds, per tuned device, a table from problem (dtype and shape: a "bucket") to
// the best configuration, every distinct configuration as an ahead-of-time instance of the kernel template, and:
//   <op>_<variant>_select(device, dtype, shape...)   host only: which entry and configuration a call would use;
//   <op>_<variant>(device, dtype, buffers..., stream, &choice)   validates, selects, launches; returns a Status;
//   <op>_<variant>_launch(device, dtype, buffers[], shape[], ...)   the same for generic callers; with
//   KTUNE_TUNED_WITH_REFERENCE, <op>_<variant>_reference(...) launches the op's reference kernel (tests).
// For an op declared as data the table also sizes its buffers (lets and all) and holds its tolerances
// (docs/export.md).
// Selection falls back from the exact device to the same chip, the same architecture, then a default configuration
// per dtype, and reports the level in its Choice. Within a device's table an untuned shape takes the nearest bucket:
// same dtype, then the smallest sum over the axes of |ln(value / bucket value)| (an optional axis such as the row
// stride S by its ratio to the axis it defaults to, so unpadded rows add nothing; ties to the earlier entry), among
// the buckets whose configuration the YAML's shape-dependent constraints allow for it. The launch geometry and those
// constraints are the YAML's own expressions, translated to C++ (cpp_expression.hpp). See the generated file's top
// comment for how to use it; examples/rmsnorm_aot is a worked user project.
#include <cstddef>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {

struct ExportOptions {
    std::string op;               // "rmsnorm"
    std::string variant = "fwd";  // "fwd", "fwd_gemma"
    // The search-space YAML of op/variant. Empty: the file under <root>/search_spaces whose op and variant match.
    std::string space_path;
    std::string root = ".";  // repository root, holding kernels/ and search_spaces/
    // Devices to include: each entry a stored device key or a part of one ("H100"). Empty: every device with tuned
    // results for op/variant. An entry that matches no such device is an error.
    std::vector<std::string> devices;
    std::string out_dir;       // created when missing
    std::string generated_at;  // written in the header's comment; empty: now, ISO-8601 UTC
    std::string note;          // an extra line for the header's comment ("synthetic data: ...")
};

struct ExportResult {
    std::string header_path;               // <out_dir>/ktune_tuned_<op>_<variant>.hpp ("" from render_header)
    std::string file_name;                 // ktune_tuned_<op>_<variant>.hpp
    std::string function;                  // "ktune_tuned::rmsnorm_fwd"
    std::vector<std::string> device_keys;  // the tuned devices in the header, in table order
    std::size_t entries = 0;               // tuned problems over all devices
    std::size_t configs = 0;               // distinct kernel instances compiled into the header
    // Devices left out and why; per alternative (and device), the valid results passed over because they are of an
    // older kernel source than the one ranked (Store::stale_results): which problems, how many.
    std::vector<std::string> warnings;
};

struct RenderedHeader {
    std::string text;
    ExportResult result;
};

// The header's text and what it holds, without writing anything. Throws Error(bad_input) when op/variant cannot be
// exported, no device has tuned results for it (after the device filter), or a stored configuration does not fit the
// search space; Error(store) on a database failure.
RenderedHeader render_header(const Store& store, const SearchSpace& space, const ExportOptions& options);
// The same for a space of alternative kernels (SearchSpace::load_alternatives, in file order): each bucket launches
// the kernel of the alternative that won it (ResultRecord::kernel.alternative), and the header includes every
// alternative's source.
RenderedHeader render_header(const Store& store, const std::vector<const SearchSpace*>& kernels,
                             const ExportOptions& options);

// Loads the search space (options.space_path or the one found under <root>/search_spaces), renders the header and
// writes it to <out_dir>/ktune_tuned_<op>_<variant>.hpp (through a temporary file: a failed export writes nothing).
// Throws as render_header, and Error(bad_input) naming the path when the file cannot be written.
ExportResult export_header(const Store& store, const ExportOptions& options);

// The search-space file under <root>/search_spaces with this op and variant. Throws Error(bad_input) when none.

}  // namespace ktune
