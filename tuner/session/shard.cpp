#include "tuner/session/shard.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {
namespace {

// A whole decimal number, nothing before or after it.
std::optional<long long> whole_number(std::string_view text) {
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return v;
}

// Large enough for any job array; small enough that index arithmetic never overflows an int.
constexpr long long kMaxShards = 1'000'000;

Shard checked(long long index, long long count, const std::string& where, std::string_view as_given) {
    if (count < 1 || count > kMaxShards)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("'{}': the number of shards must be 1 to {}", as_given, kMaxShards), where);
    if (index < 0 || index >= count)
        throw Error(ErrorCategory::bad_input,
                    fmt::format("'{}': the shard index must be 0 to {} (shards count from 0)", as_given, count - 1),
                    where);
    return Shard{int(index), int(count)};
}

}  // namespace

std::string Shard::text() const { return fmt::format("{}/{}", index, count); }

bool Shard::takes_config(std::size_t problem_index, std::size_t config_index) const {
    return (problem_index + config_index) % std::size_t(count) == std::size_t(index);
}

bool Shard::takes_problem(std::size_t problem_index) const {
    return problem_index % std::size_t(count) == std::size_t(index);
}

Shard parse_shard(std::string_view text, const std::string& where) {
    const std::size_t slash = text.find('/');
    const auto index = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(0, slash));
    const auto count = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(slash + 1));
    if (!index || !count)
        throw Error(ErrorCategory::bad_input, fmt::format("'{}' is not INDEX/COUNT (write e.g. 0/4)", text), where);
    return checked(*index, *count, where, text);
}

std::optional<Shard> shard_from_environment(const GetEnv& getenv) {
    auto number = [&](const char* name, bool required) -> std::optional<long long> {
        const char* v = getenv(name);
        if (!v) {
            if (required) throw Error(ErrorCategory::bad_input, "is not set, but the job array's index is", name);
            return std::nullopt;
        }
        const auto n = whole_number(v);
        if (!n) throw Error(ErrorCategory::bad_input, fmt::format("'{}' is not a whole number", v), name);
        return n;
    };
    if (getenv("SLURM_ARRAY_TASK_ID")) {
        const long long id = *number("SLURM_ARRAY_TASK_ID", true);
        const long long first = number("SLURM_ARRAY_TASK_MIN", false).value_or(0);
        const long long count = *number("SLURM_ARRAY_TASK_COUNT", true);
        // A stepped array (--array=0-15:4) has ids that are not consecutive: its index would not be a shard.
        if (const auto step = number("SLURM_ARRAY_TASK_STEP", false); step && *step != 1)
            throw Error(ErrorCategory::bad_input,
                        fmt::format("is {}: a job array used as shards needs consecutive task ids (--array=0-{})",
                                    *step, count - 1),
                        "SLURM_ARRAY_TASK_STEP");
        return checked(id - first, count, "SLURM_ARRAY_TASK_ID",
                       fmt::format("task {} of {} from {}", id, count, first));
    }
    if (getenv("JOB_COMPLETION_INDEX")) {
        const long long index = *number("JOB_COMPLETION_INDEX", true);
        const long long count = *number("KTUNE_SHARD_COUNT", true);
        return checked(index, count, "JOB_COMPLETION_INDEX", fmt::format("index {} of {}", index, count));
    }
    return std::nullopt;
}

}  // namespace ktune
