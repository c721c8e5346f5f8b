#pragma once
// Kernel Tuner's T4 result format (JSON, schema 1.0.0; "FAIR Sharing of Data in Autotuning Research",
// doi 10.1145/3629527.3651429): one entry per evaluated configuration with its parameter values, its times
// (compilation, framework, search algorithm, validation, the benchmark's runtimes) and what it measured, or why it is
// invalid. Read from .json or gzip'd .json.gz (zlib); written the same way. ktune reads brute-forced T4 files to replay
// search strategies (tuner/replay/) and writes its own results as T4 for other tuners' tools.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"
#include "results/store.hpp"

namespace ktune {

struct T4Result {
    // Integral values as they are; any other value (a float, a string, a boolean) as its position among the
    // parameter's distinct values in T4File::labels.
    NamedValues config;
    std::string invalidity = "correct";  // "correct", "compile", "runtime", "correctness", "constraints", ...
    std::optional<double> time_ms;       // the "time" objective; none when the configuration is invalid
    double compile_ms = 0, framework_ms = 0, search_ms = 0, validation_ms = 0;
    std::vector<double> runtimes_ms;
    std::string timestamp;

    bool valid() const { return invalidity == "correct" && time_ms.has_value(); }
    // What evaluating it cost: every recorded time, the benchmark's runtimes included.
    double total_ms() const;
};

struct T4File {
    std::string schema_version = "1.0.0";
    std::vector<std::string> parameters;                     // in the order of the first result
    std::map<std::string, std::vector<std::string>> labels;  // parameter -> JSON text of each value, by position
    std::vector<T4Result> results;                           // times in milliseconds whatever the file's unit
};

// Throws Error(bad_input) naming `where` (or the path) when the text is not T4 JSON.
T4File parse_t4(std::string_view json_text, const std::string& where);
T4File read_t4(const std::string& path);
std::string t4_json(const T4File& f);
void write_t4(const T4File& f, const std::string& path);  // gzip'd when the path ends in .gz

// ktune's results as T4: one entry per stored result (its configuration, the rank time as "time", the compile time,
// the timing samples as runtimes); invalidity "compile" for a compile error, "correctness" for a wrong result,
// "runtime" for a launch error or a timeout.
T4File t4_from_results(const std::vector<ResultRecord>& records);

}  // namespace ktune
