// Every built-in op declared as data (op_spec) against its C++ description (kernels/registry.cpp): the same buffers,
// arguments, bytes and flops on every problem of every search space that declares it and on probe shapes around
// them (odd sizes, optional axes away from their defaults), and the same shapes refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/op.hpp"
#include "ktune_test_config.hpp"
#include "tuner/space/search_space.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

// A DeclaredOp refuses buffers above 2^44 elements (far beyond any GPU) that a C++ op sized without complaint.
constexpr std::int64_t declared_buffer_limit = std::int64_t{1} << 44;

struct Pair {
    std::string space;  // the file that declares the op
    SearchSpace declared_space;
    const OpDescription* cpp;
};

std::vector<Pair> declared_ops_with_a_cpp_twin() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(KTUNE_SOURCE_ROOT) / "search_spaces"))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<Pair> out;
    for (const fs::path& f : files) {
        SearchSpace s = SearchSpace::load_file(f.string());
        if (s.declared_op() == nullptr) continue;
        for (const OpDescription* op : all_ops())
            if (op->name() == s.op() && op->variant() == s.variant())
                out.push_back(Pair{f.filename().string(), std::move(s), op});
    }
    return out;
}

const std::vector<Pair>& pairs() {
    static const std::vector<Pair> p = declared_ops_with_a_cpp_twin();
    return p;
}

// What one method gives: a value, or the message of its refusal.
template <typename T>
struct Outcome {
    std::optional<T> value;
    std::string refusal;
};

template <typename T>
Outcome<T> outcome(const std::function<T()>& f) {
    try {
        return {f(), ""};
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input) << e.message();
        return {std::nullopt, e.message()};
    }
}

std::string describe(const BufferSpec& b) {
    return fmt::format("{} {} x{} {} [{}, {}]", b.name, elem_name(b.type), b.elements, buffer_role_name(b.role), b.lo,
                       b.hi);
}

std::string describe(const KernelArg& a) {
    switch (a.kind) {
        case KernelArg::Kind::buffer:
            return a.buffer;
        case KernelArg::Kind::f32:
            return fmt::format("f32 {}", a.real);
        default:
            return fmt::format("{} {}", arg_kind_name(a.kind), a.integer);
    }
}

template <typename T>
std::vector<std::string> describe_all(const std::vector<T>& v) {
    std::vector<std::string> out;
    for (const T& x : v) out.push_back(describe(x));
    return out;
}

struct Tally {
    int accepted = 0, refused = 0;
};

// Both descriptions of the op at `p`: every method gives the same value, or both refuse. Returns whether the C++ op
// took the problem.
bool expect_same(const OpDescription& cpp, const OpDescription& declared, const Problem& p, const std::string& space) {
    SCOPED_TRACE(fmt::format("{} {}/{} at {}", space, cpp.name(), cpp.variant(), p.key()));
    const auto cb = outcome<std::vector<BufferSpec>>([&] { return cpp.buffers(p); });
    const auto db = outcome<std::vector<BufferSpec>>([&] { return declared.buffers(p); });
    const bool beyond_limit = cb.value && std::any_of(cb.value->begin(), cb.value->end(), [](const BufferSpec& b) {
                                  return b.elements > declared_buffer_limit;
                              });
    if (beyond_limit) {
        EXPECT_FALSE(db.value) << "a buffer beyond 2^44 elements was accepted";
    } else {
        EXPECT_EQ(cb.value.has_value(), db.value.has_value()) << "C++: " << cb.refusal << "; declared: " << db.refusal;
        if (cb.value && db.value) {
            EXPECT_EQ(describe_all(*cb.value), describe_all(*db.value));
        }
    }
    const auto ca = outcome<std::vector<KernelArg>>([&] { return cpp.arguments(p); });
    const auto da = outcome<std::vector<KernelArg>>([&] { return declared.arguments(p); });
    EXPECT_EQ(ca.value.has_value(), da.value.has_value()) << "C++: " << ca.refusal << "; declared: " << da.refusal;
    if (ca.value && da.value) {
        EXPECT_EQ(describe_all(*ca.value), describe_all(*da.value));
        for (std::size_t i = 0; i < std::min(ca.value->size(), da.value->size()); ++i)  // exactly, not as printed
            EXPECT_EQ((*ca.value)[i].real, (*da.value)[i].real) << "argument " << i;
    }
    for (auto method : {&OpDescription::bytes_moved, &OpDescription::flops}) {
        const auto c = outcome<double>([&] { return (cpp.*method)(p); });
        const auto d = outcome<double>([&] { return (declared.*method)(p); });
        EXPECT_EQ(c.value.has_value(), d.value.has_value()) << "C++: " << c.refusal << "; declared: " << d.refusal;
        if (c.value && d.value) {
            EXPECT_DOUBLE_EQ(*c.value, *d.value);
        }
    }
    return cb.value.has_value();
}

// Probe values for one axis: zero and negative, small and odd sizes, powers of two and their neighbours, the int
// range's edge. (Beyond it a C++ op could pass an int out of range, linear_int4's G = 2^31, whose argument the
// declared op refuses.)
const std::vector<std::int64_t> probe_values = {-1,    0,     1,     2,       3,       5,         7,    17,
                                                63,    64,    65,    127,     129,     1000,      4095, 4097,
                                                65535, 65536, 65537, 1 << 20, 1 << 30, 2147483647};

Problem with_axis(Problem p, const std::string& axis, std::int64_t value) {
    for (auto& [name, v] : p.shape)
        if (name == axis) {
            v = value;
            return p;
        }
    p.shape.emplace_back(axis, value);
    return p;
}

Problem without_axis(Problem p, const std::string& axis) {
    std::erase_if(p.shape, [&](const auto& a) { return a.first == axis; });
    return p;
}

TEST(DeclaredOps, EveryBuiltInOpIsDeclaredByTheSpacesThatTuneIt) {
    std::set<std::string> declared;
    for (const Pair& p : pairs()) declared.insert(std::string(p.cpp->name()) + "/" + std::string(p.cpp->variant()));
    std::set<std::string> all;
    for (const OpDescription* op : all_ops()) all.insert(std::string(op->name()) + "/" + std::string(op->variant()));
    EXPECT_EQ(declared, all);
    EXPECT_EQ(all.size(), 21u);
}

TEST(DeclaredOps, TheDeclarationAgreesWithTheCppOpOnEveryProblemOfItsSpaces) {
    for (const Pair& p : pairs())
        for (const Problem& problem : p.declared_space.problems())
            EXPECT_TRUE(expect_same(*p.cpp, *p.declared_space.declared_op(), problem, p.space))
                << "the C++ op refused a problem of its own space";
}

TEST(DeclaredOps, TheDeclarationAgreesWithTheCppOpOnProbeShapes) {
    for (const Pair& p : pairs()) {
        const DeclaredOp& op = *p.declared_space.declared_op();
        Tally tally;
        auto probe = [&](const Problem& problem) {
            (expect_same(*p.cpp, op, problem, p.space) ? tally.accepted : tally.refused)++;
        };
        for (const Problem& base : {p.declared_space.problems().front(), p.declared_space.problems().back()}) {
            // Every axis, required or optional, at every probe value, the others as in the problem.
            for (const OpAxis& axis : op.axes())
                for (std::int64_t v : probe_values) probe(with_axis(base, axis.name, v));
            // Optional axes just below, at and above their defaults (a row stride S < H, S = H, S = H + 1, ...).
            const Problem resolved = op.resolved(base);
            for (const OpAxis& axis : op.axes())
                if (axis.default_value) {
                    const std::int64_t d = *lookup(resolved.shape, axis.name);
                    for (std::int64_t v : {d - 1, d, d + 1, d + 8, 2 * d, d / 2}) probe(with_axis(base, axis.name, v));
                }
            // Two axes at odd sizes at once.
            for (std::size_t i = 0; i + 1 < op.axes().size(); ++i)
                for (std::int64_t v : {3, 7, 129})
                    probe(with_axis(with_axis(base, op.axes()[i].name, v), op.axes()[i + 1].name, v + 2));
            for (Dtype d : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) probe(Problem{d, base.shape});
        }
        EXPECT_GT(tally.accepted, 20) << p.space;
        EXPECT_GT(tally.refused, 0) << p.space;
    }
}

// A shape the declared op refuses in every method.
void expect_declared_refuses(const Pair& p, const Problem& problem, const std::string& what) {
    SCOPED_TRACE(fmt::format("{} {}: {}", p.space, what, problem.key()));
    const DeclaredOp& declared = *p.declared_space.declared_op();
    EXPECT_THROW(declared.buffers(problem), Error);
    EXPECT_THROW(declared.arguments(problem), Error);
    EXPECT_THROW(declared.bytes_moved(problem), Error);
}

bool cpp_refuses(const Pair& p, const Problem& problem) {
    try {
        p.cpp->buffers(problem);
        return false;
    } catch (const Error&) {
        return true;
    }
}

// A shape both refuse, in every method.
void expect_both_refuse(const Pair& p, const Problem& problem, const std::string& what) {
    SCOPED_TRACE(fmt::format("{} {}: {}", p.space, what, problem.key()));
    const OpDescription& declared = *p.declared_space.declared_op();
    for (const OpDescription* op : {p.cpp, static_cast<const OpDescription*>(&declared)}) {
        EXPECT_THROW(op->buffers(problem), Error);
        EXPECT_THROW(op->arguments(problem), Error);
        EXPECT_THROW(op->bytes_moved(problem), Error);
    }
}

TEST(DeclaredOps, BothRefuseAZeroSizeOnEveryRequiredAxis) {
    for (const Pair& p : pairs())
        for (const OpAxis& axis : p.declared_space.declared_op()->axes())
            if (!axis.default_value)
                expect_both_refuse(p, with_axis(p.declared_space.problems().front(), axis.name, 0), axis.name + "=0");
}

// 2^62 on any axis: the declared op refuses it. So does the C++ op, but where its 64-bit arithmetic wraps (rope's
// (HQ + HK) * R / 2 and HQ * D at HQ or HK = 2^62, glu's 2 * I at I = 2^62) it took the shape.
TEST(DeclaredOps, BothRefuseAHugeValueOnEveryRequiredAxis) {
    int both = 0;
    for (const Pair& p : pairs())
        for (const OpAxis& axis : p.declared_space.declared_op()->axes()) {
            if (axis.default_value) continue;
            for (std::int64_t huge : {std::int64_t{1} << 40, std::int64_t{1} << 62}) {
                const Problem problem = with_axis(p.declared_space.problems().front(), axis.name, huge);
                if (cpp_refuses(p, problem)) {
                    expect_both_refuse(p, problem, axis.name + " huge");
                    ++both;
                } else if (huge == std::int64_t{1} << 62) {
                    expect_declared_refuses(p, problem, axis.name + "=2^62");
                }
            }
        }
    EXPECT_GT(both, 80);
}

TEST(DeclaredOps, BothRefuseAProblemMissingARequiredAxis) {
    for (const Pair& p : pairs())
        for (const OpAxis& axis : p.declared_space.declared_op()->axes())
            if (!axis.default_value)
                expect_both_refuse(p, without_axis(p.declared_space.problems().front(), axis.name),
                                   "without " + axis.name);
}

TEST(DeclaredOps, BothRefuseAnAxisTheOpDoesNotHave) {
    for (const Pair& p : pairs())
        expect_both_refuse(p, with_axis(p.declared_space.problems().front(), "Q", 4), "unknown axis Q");
}

TEST(DeclaredOps, BothRefuseARowStrideShorterThanTheRow) {
    int checked = 0;
    for (const Pair& p : pairs()) {
        const DeclaredOp& op = *p.declared_space.declared_op();
        for (const char* stride : {"S", "SO", "SQ", "SK"})
            if (op.has_axis(stride)) {
                const Problem base = p.declared_space.problems().front();
                const std::int64_t row = *lookup(op.resolved(base).shape, stride);
                expect_both_refuse(p, with_axis(base, stride, row - 1), std::string(stride) + " below the row");
                ++checked;
            }
    }
    EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace ktune
