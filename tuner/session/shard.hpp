#pragma once
// A shard: the part of a tuning one process takes when several hosts split it (`ktune tune --shard i/N`, or the index
// a scheduler gives a job array's task). Which configurations fall in which shard depends only on the space, the
// selected problems and the filters, so N processes given 0/N .. N-1/N cover the work exactly once, and their merged
// databases (`ktune db merge`) hold what one process would have.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ktune {

struct Shard {
    int index = 0;  // 0 .. count - 1
    int count = 1;
    bool whole() const { return count == 1; }
    std::string text() const;  // "2/4"

    // Whether configuration `config_index` of problem `problem_index` (in the order the space enumerates them) is this
    // shard's: round robin, offset per problem, so every shard gets a share of every problem.
    bool takes_config(std::size_t problem_index, std::size_t config_index) const;
    // Whether a problem tuned by a search (not exhaustively: its configurations depend on each other's results) is
    // this shard's, whole.
    bool takes_problem(std::size_t problem_index) const;
};

// Parses "i/N" (0 <= i < N). Throws Error(bad_input) naming `where` and saying what is wrong.
Shard parse_shard(std::string_view text, const std::string& where);

// The shard a scheduler gives this process, when it runs as one task of an array:
// - Slurm job array: SLURM_ARRAY_TASK_ID, minus SLURM_ARRAY_TASK_MIN (0 when unset), of SLURM_ARRAY_TASK_COUNT;
// - Kubernetes Indexed Job: JOB_COMPLETION_INDEX of KTUNE_SHARD_COUNT (Kubernetes does not pass the completions
//   count to the pod: the manifest sets it, examples/cluster/ktune-tune-job.yaml).
// None outside an array. Throws Error(bad_input) naming the variable when one is malformed or they disagree.
using GetEnv = std::function<const char*(const char*)>;
std::optional<Shard> shard_from_environment(const GetEnv& getenv);

}  // namespace ktune
