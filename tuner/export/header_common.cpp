// The part of every generated header that does not depend on the op: status codes, fallback levels, the device
// properties the user passes, the device match, and the expression helpers that translated YAML expressions call
// (cpp_expression.hpp). Guarded by its own macros so that several generated headers can be included together.
#include "tuner/export/header_text.hpp"

namespace ktune::export_detail {

std::string_view header_common_text() {
    return R"ktune(#ifndef KTUNE_TUNED_COMMON_V2
#define KTUNE_TUNED_COMMON_V2
namespace ktune_tuned {

enum class Dtype : int { fp32 = 0, fp16 = 1, bf16 = 2 };

inline const char* dtype_name(Dtype d) {
    switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    }
    return "?";
}

inline int dtype_bytes(Dtype d) {
    switch (d) {
    case Dtype::fp32: return 4;
    case Dtype::fp16: return 2;
    case Dtype::bf16: return 2;
    }
    return 0;
}

// What a dispatcher returns. Every status but ok and cuda_error is returned before anything is launched.
enum class Status : int {
    ok = 0,
    null_pointer,       // a required pointer is null
    bad_size,           // a size is <= 0
    bad_stride,         // a row stride is smaller than the row, or rows * stride overflows
    bad_argument,       // a scalar argument is out of its range (eps < 0 or not finite, an unknown dtype)
    misaligned,         // a pointer is not aligned to its element size
    unsupported_dtype,  // the header has no configuration for this dtype
    no_config,          // no configuration in the header is legal for this problem
    bad_launch,         // the launch geometry is out of range for this problem (grid too large)
    cuda_error,         // the launch failed: Choice::cuda_error holds the cudaError_t from cudaGetLastError()
};

inline const char* status_message(Status s) {
    switch (s) {
    case Status::ok: return "ok";
    case Status::null_pointer: return "a required pointer is null";
    case Status::bad_size: return "a size is zero or negative";
    case Status::bad_stride: return "a row stride is smaller than the row length or rows * stride overflows";
    case Status::bad_argument: return "a scalar argument is out of range";
    case Status::misaligned: return "a pointer is not aligned to its element size";
    case Status::unsupported_dtype: return "no configuration for this dtype was exported";
    case Status::no_config: return "no exported configuration is legal for this problem";
    case Status::bad_launch: return "the launch geometry is out of range for this problem";
    case Status::cuda_error: return "the kernel launch failed (see Choice::cuda_error)";
    }
    return "unknown status";
}

// Where the configuration came from, most specific first (design.md, "Device identity").
enum class Level : int {
    exact_device = 0,    // the device the entry was tuned on: chip, L2, memory and driver version all equal
    same_chip = 1,       // same product name, compute capability and SM count
    same_arch = 2,       // same compute capability
    default_config = 3,  // no tuned device matches: the configuration best for the most tuned problems of the dtype
    none = 4,            // nothing usable (see the dispatcher's status)
};

inline const char* level_name(Level l) {
    switch (l) {
    case Level::exact_device: return "exact device";
    case Level::same_chip: return "same chip";
    case Level::same_arch: return "same architecture";
    case Level::default_config: return "default";
    case Level::none: return "none";
    }
    return "?";
}

// The device a dispatcher runs on. name, cc and sm_count decide the chip and architecture levels; the exact level
// also needs the rest (zero means unknown, and an unknown field never matches). query_device_props() fills it all.
struct DeviceProps {
    char name[256] = {};          // cudaDeviceProp::name
    int cc_major = 0;             // cudaDeviceProp::major
    int cc_minor = 0;             // cudaDeviceProp::minor
    int sm_count = 0;             // cudaDeviceProp::multiProcessorCount
    long long l2_bytes = 0;       // cudaDeviceProp::l2CacheSize
    long long memory_bytes = 0;   // cudaDeviceProp::totalGlobalMem
    int memory_clock_khz = 0;     // cudaDevAttrMemoryClockRate
    int memory_bus_bits = 0;      // cudaDeviceProp::memoryBusWidth
    int driver_version = 0;       // cudaDriverGetVersion(): 13000 for 13.0
};

// The properties that the chip and architecture levels need.
inline DeviceProps make_device_props(const char* name, int cc_major, int cc_minor, int sm_count) {
    DeviceProps p;
    for (int i = 0; name != nullptr && name[i] != '\0' && i < 255; ++i) p.name[i] = name[i];
    p.cc_major = cc_major;
    p.cc_minor = cc_minor;
    p.sm_count = sm_count;
    return p;
}

// What the op does with a buffer (the op spec's role): inputs are read, outputs written, inouts both; scratch is the
// kernels' workspace, zero-filled by the caller before a shape's first call (the kernels reset their counters but
// leave partials where another shape's counters may lie: one scratch per shape).
enum class BufferRole : int { input = 0, output, inout, scratch };

// What a dispatcher picked, for logs and reports: every result says which fallback level it used.
struct Choice {
    Level level = Level::none;
    const char* device_key = "";  // the stored key of the tuned device whose table was used ("" at default)
    int entry = -1;               // the table entry (tuned problem) used; -1 for the default configuration
    int config = -1;              // the configuration (kernel instance) launched; -1 when none
    const char* config_key = "";  // "BLOCK=256,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1"
    const char* kernel = "";      // "rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>"
    bool exact_bucket = false;    // the problem is one that was tuned (not the nearest bucket)
    double tuned_p50_us = 0;      // the entry's p50 as measured by the tuner (cold L2); 0 without an entry
    int cuda_error = 0;           // the cudaError_t of a failed launch (Status::cuda_error)
};

namespace detail {

// One tuned device of a table: its identity, split into what DeviceProps can reproduce, and its entries.
struct DeviceRecord {
    const char* key;
    const char* name;
    int cc_major, cc_minor, sm_count;
    long long l2_bytes;
    long long memory_gib;   // whole GiB, rounded down (as in the device key)
    int memory_clock_mhz;   // rounded to the nearest MHz
    int memory_bus_bits;
    int driver_major, driver_minor;  // -1 when the store does not say
    int first_entry, entry_count;
};

struct Geometry {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared_bytes;
};

inline bool same_text(const char* a, const char* b) {
    while (*a != '\0' && *a == *b) {
        ++a;
        ++b;
    }
    return *a == *b;
}

inline bool device_matches(const DeviceRecord& d, const DeviceProps& p, Level level) {
    if (d.cc_major != p.cc_major || d.cc_minor != p.cc_minor) return false;
    if (level == Level::same_arch) return true;
    if (d.sm_count != p.sm_count || !same_text(d.name, p.name)) return false;
    if (level == Level::same_chip) return true;
    return level == Level::exact_device && p.driver_version > 0 && d.l2_bytes == p.l2_bytes &&
           d.memory_gib == p.memory_bytes / (1024LL * 1024 * 1024) &&
           d.memory_clock_mhz == (p.memory_clock_khz + 500) / 1000 && d.memory_bus_bits == p.memory_bus_bits &&
           d.driver_major == p.driver_version / 1000 && d.driver_minor == (p.driver_version % 1000) / 10;
}

// Sum over the axes of |a - b| between two shapes' log points (each axis's natural log): how far apart two shapes
// are, in ratios rather than differences.
inline double log_distance(const double* a, const double* b, int axes) {
    double d = 0;
    for (int i = 0; i < axes; ++i) d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    return d;
}

inline bool same_shape(const long long* a, const long long* b, int axes) {
    for (int i = 0; i < axes; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

// Helpers of the translated YAML expressions: doubles, with the search space's rules (tuner/space/expression.hpp).
// What the tuner reports as an error (division by zero, log2 of a value <= 0) is NaN here, and NaN propagates.
inline double ex_nan() { return std::numeric_limits<double>::quiet_NaN(); }
inline bool ex_integral(double v) { return std::fabs(v) < 9.0e15 && std::floor(v) == v; }
inline double ex_bool(bool b) { return b ? 1.0 : 0.0; }
// Integers divide as C++ divides them (truncating toward zero), as the search space does.
inline double ex_div(double a, double b) {
    if (b == 0 || std::isnan(a) || std::isnan(b)) return ex_nan();
    if (ex_integral(a) && ex_integral(b))
        return static_cast<double>(static_cast<long long>(a) / static_cast<long long>(b));
    return a / b;
}
// Real division: an op spec's f32 arguments ("1 / ROOT_D"), as the tuner evaluates them.
inline double ex_fdiv(double a, double b) { return b == 0 || std::isnan(a) || std::isnan(b) ? ex_nan() : a / b; }
// An op spec's {sqrt: ...} value.
inline double ex_sqrt(double a) { return a >= 0 ? std::sqrt(a) : ex_nan(); }
inline double ex_rem(double a, double b) { return b == 0 ? ex_nan() : std::fmod(a, b); }
inline double ex_ceil_div(double a, double b) {
    if (b == 0 || std::isnan(a) || std::isnan(b)) return ex_nan();
    if (ex_integral(a) && ex_integral(b)) {
        const long long x = static_cast<long long>(a), y = static_cast<long long>(b);
        long long q = x / y;
        if (x % y != 0 && ((x < 0) == (y < 0))) ++q;
        return static_cast<double>(q);
    }
    return std::ceil(a / b);
}
inline double ex_align_up(double a, double b) { return ex_ceil_div(a, b) * b; }
inline double ex_log2(double a) { return a > 0 ? std::log2(a) : ex_nan(); }
inline double ex_is_pow2(double a) {
    if (std::isnan(a)) return a;
    if (!ex_integral(a) || a < 1) return 0.0;
    const long long x = static_cast<long long>(a);
    return ex_bool((x & (x - 1)) == 0);
}
inline double ex_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? ex_nan() : (a < b ? a : b); }
inline double ex_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? ex_nan() : (a < b ? b : a); }
inline double ex_cmp(double a, double b, bool r) { return std::isnan(a) || std::isnan(b) ? ex_nan() : ex_bool(r); }
inline double ex_eq(double a, double b) { return ex_cmp(a, b, a == b); }
inline double ex_ne(double a, double b) { return ex_cmp(a, b, a != b); }
inline double ex_lt(double a, double b) { return ex_cmp(a, b, a < b); }
inline double ex_le(double a, double b) { return ex_cmp(a, b, a <= b); }
inline double ex_gt(double a, double b) { return ex_cmp(a, b, a > b); }
inline double ex_ge(double a, double b) { return ex_cmp(a, b, a >= b); }
inline double ex_and(double a, double b) { return ex_cmp(a, b, a != 0 && b != 0); }
inline double ex_or(double a, double b) { return ex_cmp(a, b, a != 0 || b != 0); }
inline double ex_not(double a) { return std::isnan(a) ? a : ex_bool(a == 0); }
inline double ex_select(double c, double a, double b) { return std::isnan(c) ? c : (c != 0 ? a : b); }
// A constraint holds when its value is a number other than zero.
inline bool ex_holds(double v) { return !std::isnan(v) && v != 0; }
// A launch dimension: an integer in [1, hi], else 0 (no launch).
inline unsigned ex_dim(double v, double hi) { return ex_integral(v) && v >= 1 && v <= hi ? static_cast<unsigned>(v) : 0u; }
inline bool ex_shared(double v, unsigned* out) {
    if (!ex_integral(v) || v < 0 || v > 4294967295.0) return false;
    *out = static_cast<unsigned>(v);
    return true;
}

inline bool aligned(const void* p, int bytes) {
    return bytes > 0 && reinterpret_cast<unsigned long long>(p) % static_cast<unsigned long long>(bytes) == 0;
}

}  // namespace detail
}  // namespace ktune_tuned
#endif  // KTUNE_TUNED_COMMON_V2

#if !defined(KTUNE_TUNED_HOST_ONLY) && !defined(KTUNE_TUNED_COMMON_CUDA_V3)
#define KTUNE_TUNED_COMMON_CUDA_V3
namespace ktune_tuned {

// Fills *out for CUDA device `device` (every field, so the exact level can match). Returns Status::cuda_error with
// the CUDA error in *cuda_error (when given) if a query fails.
inline Status query_device_props(int device, DeviceProps* out, int* cuda_error = nullptr) {
    if (out == nullptr) return Status::null_pointer;
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    int clock_khz = 0, driver = 0;
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
    if (e == cudaSuccess) e = cudaDriverGetVersion(&driver);
    if (e != cudaSuccess) {
        if (cuda_error != nullptr) *cuda_error = static_cast<int>(e);
        return Status::cuda_error;
    }
    *out = make_device_props(prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    out->l2_bytes = prop.l2CacheSize;
    out->memory_bytes = static_cast<long long>(prop.totalGlobalMem);
    out->memory_clock_khz = clock_khz;
    out->memory_bus_bits = prop.memoryBusWidth;
    out->driver_version = driver;
    return Status::ok;
}

namespace detail {

// A kernel whose compile-time cluster is larger than 8 blocks (non-portable) launches only with this attribute set,
// as the tuner's worker sets it on every kernel; on a GPU without clusters it fails harmlessly, and that error is
// cleared so that it does not surface as the launch's. Called once per kernel instance.
template <typename Kernel>
inline bool allow_large_clusters(Kernel* kernel) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
        (void)cudaGetLastError();
    return true;
}

inline std::atomic<bool>& programmatic_launch_flag() {
    static std::atomic<bool> on{true};
    return on;
}

// Whether a kernel declared kernel.programmatic_launch launches with the programmatic stream serialization attribute
// on this device (Hopper and later): it may then start while the kernel before it finishes.
inline bool programmatic_launch(const DeviceProps& device) {
    return device.cc_major >= 9 && programmatic_launch_flag().load(std::memory_order_relaxed);
}

}  // namespace detail

// Programmatic dependent launch of the kernels that allow it (on by default, Hopper and later): such a kernel waits
// in-kernel for the one before it, so it may start (and prefetch its weights) while that one finishes. Off: every
// launch is plainly stream-ordered (to measure the difference, or to rule it out). For all headers of this process.
inline void set_programmatic_launch(bool on) { detail::programmatic_launch_flag().store(on, std::memory_order_relaxed); }

}  // namespace ktune_tuned
#endif  // KTUNE_TUNED_COMMON_CUDA_V3
)ktune";
}

std::string_view tensor_map_helper_text() {
    return R"ktune(#if !defined(KTUNE_TUNED_HOST_ONLY) && !defined(KTUNE_TUNED_TENSOR_MAPS_V1)
#define KTUNE_TUNED_TENSOR_MAPS_V1
#include <cstring>
#include <cuda.h>
#include <cudaTypedefs.h>
namespace ktune_tuned {
namespace detail {

// A TMA descriptor (CUtensorMap, 128 bytes) as a kernel argument. A kernel declares it by value as a
// `const __grid_constant__` parameter of its own 128-byte type (or CUtensorMap): the argument converts to that type
// byte for byte, in a <<<>>> launch as in cudaLaunchKernelEx.
struct TensorMapArg {
    CUtensorMap map;
    template <typename T>
    operator T() const {
        static_assert(sizeof(T) == sizeof(CUtensorMap), "a tensor map parameter is the descriptor's 128 bytes");
        T out;
        std::memcpy(static_cast<void*>(&out), &map, sizeof(CUtensorMap));
        return out;
    }
};

// cuTensorMapEncodeTiled of the driver the runtime loaded, looked up once (null when it has none): the header's
// user links the runtime only, not libcuda.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 encoder = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        // The 12.0 ABI of the function, whatever the driver's version (cudaGetDriverEntryPoint is deprecated in 13).
        const cudaError_t e =
            cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
#else
        const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
        if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();  // not the error of a later launch
            fn = nullptr;
        }
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }();
    return encoder;
}

// Encodes the descriptor of a dense row-major view of `base`: `rank` extents, outermost first, over a buffer of
// `buffer_elements` elements of `elem_bytes` bytes; `box` (outermost first) the elements one copy moves; `swizzle` the
// shared-memory swizzle. Elements outside the extents read as zeros. Returns Status::bad_argument for extents TMA
// cannot take (integers in [1, 2^32], rows a multiple of 16 bytes, strides below 2^40 bytes) or a view larger than
// the buffer, Status::misaligned for a pointer not 16-byte aligned, Status::cuda_error with the driver's CUresult in
// *cuda_error when the driver has no encoder or refuses the descriptor.
inline Status encode_tensor_map(TensorMapArg* out, CUtensorMapDataType type, int elem_bytes, const void* base,
                                int rank, const double* extents, const unsigned* box, CUtensorMapSwizzle swizzle,
                                long long buffer_elements, int* cuda_error) {
    if (rank < 1 || rank > 5 || elem_bytes < 1) return Status::bad_argument;
    if (!aligned(base, 16)) return Status::misaligned;
    cuuint64_t dims[5], strides[4];
    cuuint32_t box_dims[5], element_strides[5];
    double elements = 1, stride = elem_bytes;
    for (int i = 0; i < rank; ++i) {  // the driver takes the innermost dimension first
        const int d = rank - 1 - i;
        if (!ex_integral(extents[d]) || extents[d] < 1 || extents[d] > 4294967296.0) return Status::bad_argument;
        dims[i] = static_cast<cuuint64_t>(extents[d]);
        box_dims[i] = box[d];
        element_strides[i] = 1;
        elements *= extents[d];
        stride *= extents[d];
        if (i + 1 < rank) {
            // The byte stride of the next dimension out: a multiple of 16 (the rows' pitch) and below 2^40.
            if (stride >= 1099511627776.0 || static_cast<long long>(stride) % 16 != 0) return Status::bad_argument;
            strides[i] = static_cast<cuuint64_t>(stride);
        }
    }
    if (buffer_elements < 0 || elements > static_cast<double>(buffer_elements)) return Status::bad_argument;
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) {
        *cuda_error = static_cast<int>(CUDA_ERROR_NOT_FOUND);
        return Status::cuda_error;
    }
    const CUresult r = encode(&out->map, type, static_cast<cuuint32_t>(rank), const_cast<void*>(base), dims, strides,
                              box_dims, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        *cuda_error = static_cast<int>(r);
        return Status::cuda_error;
    }
    return Status::ok;
}

// A dispatcher's return for a descriptor it could not encode: the driver's error goes to Choice::cuda_error.
inline Status tensor_map_status(Status s, int cuda_error, Choice* choice) {
    if (s == Status::cuda_error && choice != nullptr) choice->cuda_error = cuda_error;
    return s;
}

}  // namespace detail
}  // namespace ktune_tuned
#endif  // KTUNE_TUNED_TENSOR_MAPS_V1
)ktune";
}

}  // namespace ktune::export_detail
