#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/unit/check/synthetic.hpp"
#include "tuner/check/baseline.hpp"

namespace ktune {
namespace {

using namespace test;

Baseline sample_baseline() {
    Rng rng(1);
    Baseline b = empty_baseline();
    b.method.sessions = 3;
    b.cases.push_back(make_case(rng, "rmsnorm", 4096, 50.0, 0.02, 30, 3));
    b.cases.push_back(make_case(rng, "softmax", 1, 3.2, 0.03, 40));
    b.cases[1].variant = "";
    b.cases[1].kernel = "registers";  // an alternative of a space of several kernels
    b.cases[1].problem.dtype = Dtype::fp32;
    b.cases[1].bytes = 0;
    // Values as the file stores them (1 ns), so the round trip is exact.
    for (auto& c : b.cases) {
        for (auto& x : c.samples_us) x = std::round(x * 1000) / 1000;
        c.refresh_stats();
    }
    return b;
}

std::string expect_bad_input(const std::string& text) {
    try {
        parse_baseline(text, "results/baselines/h100.json");
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        return e.what();
    }
    ADD_FAILURE() << "expected Error(bad_input)";
    return {};
}

// A valid file with `field` of the first case replaced by `value` (JSON text).
std::string with_case_field(const std::string& field, const std::string& value) {
    std::string text = format_baseline(sample_baseline());
    const std::string key = "\"" + field + "\": ";
    const auto at = text.find(key, text.find("\"cases\""));
    EXPECT_NE(at, std::string::npos);
    const auto start = at + key.size();
    auto end = start;
    int depth = 0;
    for (; end < text.size(); ++end) {
        const char ch = text[end];
        if (ch == '"') {  // skip strings: keys like "BLOCK=256,VEC=8" hold commas
            end = text.find('"', end + 1);
            continue;
        }
        if (ch == '[' || ch == '{') ++depth;
        if (ch == ']' || ch == '}') {
            if (depth == 0) break;
            --depth;
        }
        if (ch == ',' && depth == 0) break;
    }
    return text.substr(0, start) + value + text.substr(end);
}

TEST(BaselineFile, ReadsBackWhatItWrote) {
    const Baseline b = sample_baseline();
    const Baseline r = parse_baseline(format_baseline(b), "mem.json");
    EXPECT_EQ(r.format_version, k_baseline_format_version);
    EXPECT_EQ(r.device.key, b.device.key);
    EXPECT_EQ(r.device.name, b.device.name);
    EXPECT_EQ(r.device.arch, "sm_90");
    EXPECT_EQ(r.created_at, b.created_at);
    EXPECT_EQ(r.git_revision, "abc1234");
    EXPECT_EQ(r.method.sessions, 3);
    EXPECT_EQ(r.method.cold_l2, true);
    EXPECT_EQ(r.method.clean_flush, true);
    EXPECT_EQ(r.path, "mem.json");
    ASSERT_EQ(r.cases.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(r.cases[i].op, b.cases[i].op);
        EXPECT_EQ(r.cases[i].variant, b.cases[i].variant);
        EXPECT_EQ(r.cases[i].problem, b.cases[i].problem);
        EXPECT_EQ(r.cases[i].kernel, b.cases[i].kernel);
        EXPECT_EQ(r.cases[i].config_key, b.cases[i].config_key);
        EXPECT_EQ(r.cases[i].source_hash, b.cases[i].source_hash);
        EXPECT_EQ(r.cases[i].bytes, b.cases[i].bytes);
        EXPECT_EQ(r.cases[i].samples_us, b.cases[i].samples_us);
        EXPECT_DOUBLE_EQ(r.cases[i].stats.p50, b.cases[i].stats.p50);
    }
    EXPECT_EQ(format_baseline(r), format_baseline(b));  // stable text: re-saving changes nothing
}

TEST(BaselineFile, CarriesTheCalibrationOfItsGpuWhenMeasuredAndReadsOlderFilesWithout) {
    Baseline b = sample_baseline();
    EXPECT_EQ(format_baseline(b).find("copy_gbps"), std::string::npos);  // never measured: not written
    b.device.copy_gbps = 2995.7;
    b.device.launch_floor_us = 3.232;
    b.device.launch_floor_cupti_us = 1.216;
    b.device.host = "gpu-7";
    b.device.gpu_uuid = "GPU-68984df6-e9c3-e51e-9e15-10a8b53dbb51";
    const Baseline r = parse_baseline(format_baseline(b), "mem.json");
    EXPECT_EQ(r.device.gpu_uuid, b.device.gpu_uuid);
    EXPECT_DOUBLE_EQ(r.device.copy_gbps, 2995.7);
    EXPECT_DOUBLE_EQ(r.device.launch_floor_us, 3.232);
    EXPECT_DOUBLE_EQ(r.device.launch_floor_cupti_us, 1.216);
    EXPECT_EQ(r.device.host, "gpu-7");
    EXPECT_EQ(format_baseline(r), format_baseline(b));
}

TEST(BaselineFile, NamesTheTimerOfACaseTimedByKernelDurationAndRefusesAnUnknownOne) {
    Baseline b = sample_baseline();
    b.cases[0].timer = "kernel";
    const std::string text = format_baseline(b);
    EXPECT_EQ(parse_baseline(text, "mem.json").cases[0].timer, "kernel");
    EXPECT_EQ(parse_baseline(text, "mem.json").cases[1].timer, "events");  // not written, the default
    std::string bad = text;
    bad.replace(bad.find("\"timer\": \"kernel\""), 17, "\"timer\": \"graph\"");
    try {
        parse_baseline(bad, "mem.json");
        FAIL() << "expected a refusal";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("timer"), std::string::npos) << e.what();
    }
}

TEST(BaselineFile, NamesTheKernelOnlyOfACaseFromASpaceOfSeveral) {
    const std::string text = format_baseline(sample_baseline());
    const auto first = text.find("\"kernel\": \"registers\"");
    ASSERT_NE(first, std::string::npos);
    EXPECT_EQ(text.find("\"kernel\"", first + 1), std::string::npos);  // the rmsnorm case has none
    EXPECT_GT(first, text.find("\"softmax\""));
}

TEST(BaselineFile, IsWrittenInAFixedOrderWithShortArraysOnOneLine) {
    const std::string text = format_baseline(sample_baseline());
    EXPECT_EQ(text.rfind("{\n  \"format_version\": 1,\n  \"device\": {\n", 0), 0u) << text.substr(0, 80);
    EXPECT_NE(text.find("\"shape\": [[\"M\", 4096], [\"H\", 8192]]"), std::string::npos);
    EXPECT_LT(text.find("\"op\""), text.find("\"problem\""));
    EXPECT_LT(text.find("\"p50_us\""), text.find("\"samples_us\""));
    // 130 samples wrap on a few lines, not one line each.
    std::size_t lines = 0;
    for (char ch : text) lines += ch == '\n';
    EXPECT_LT(lines, 80u);
    for (std::size_t at = 0, next; (next = text.find('\n', at)) != std::string::npos; at = next + 1)
        EXPECT_LE(next - at, 112u) << text.substr(at, next - at);
}

TEST(BaselineFile, SaysWhatTheSamplesMeanForReaders) {
    const Baseline b = sample_baseline();
    const std::string text = format_baseline(b);
    EXPECT_NE(text.find("\"n\": 90"), std::string::npos);
    EXPECT_NE(text.find("\"key\": \"bf16:M=4096,H=8192\""), std::string::npos);
    EXPECT_GT(b.cases[0].gbps(), 0);
    EXPECT_NE(text.find("\"gbps\": "), std::string::npos);
}

TEST(BaselineFile, WrittenBeforeTheCleanFlushIsCheckedWithTheDirtyOne) {
    std::string text = format_baseline(sample_baseline());
    const auto at = text.find("\"clean_flush\": true");
    ASSERT_NE(at, std::string::npos) << text;
    text.erase(at, text.find('\n', at) - at + 1);  // the line, with its comma: cold_l2's line ends with one
    EXPECT_FALSE(parse_baseline(text, "old.json").method.clean_flush);
}

TEST(BaselineFile, FromANewerKtuneIsRefused) {
    std::string text = format_baseline(sample_baseline());
    text.replace(text.find("\"format_version\": 1"), 19, "\"format_version\": 2");
    const std::string what = expect_bad_input(text);
    EXPECT_NE(what.find("results/baselines/h100.json: format_version"), std::string::npos) << what;
    EXPECT_NE(what.find("newer ktune"), std::string::npos) << what;
}

TEST(BaselineFile, ErrorsNameTheFileAndTheField) {
    EXPECT_NE(expect_bad_input(with_case_field("samples_us", "[50.1, \"x\"]"))
                  .find("results/baselines/h100.json: cases[0].samples_us[1]: expected a number"),
              std::string::npos);
    EXPECT_NE(expect_bad_input(with_case_field("samples_us", "[50.1, -2]")).find("cases[0].samples_us[1]"),
              std::string::npos);
    EXPECT_NE(expect_bad_input(with_case_field("samples_us", "[]")).find("cases[0].samples_us: is empty"),
              std::string::npos);
    EXPECT_NE(expect_bad_input(with_case_field("dtype", "\"int4\"")).find("cases[0].problem.dtype: unknown dtype"),
              std::string::npos);
    EXPECT_NE(expect_bad_input(with_case_field("key", "\"bf16:M=1\"")).find("cases[0].problem.key"), std::string::npos);
    EXPECT_NE(expect_bad_input(with_case_field("config", "7")).find("cases[0].config: expected a string"),
              std::string::npos);
    EXPECT_NE(expect_bad_input(with_case_field("shape", "[[\"M\"]]")).find("cases[0].problem.shape[0]"),
              std::string::npos);
}

TEST(BaselineFile, WithAMissingFieldNamesIt) {
    std::string text = format_baseline(sample_baseline());
    const auto at = text.find("\"config\": ");
    text.erase(at, text.find('\n', at) - at + 1);
    EXPECT_NE(expect_bad_input(text).find("cases[0].config: missing"), std::string::npos);
}

TEST(BaselineFile, ThatIsNotJsonIsBadInput) {
    EXPECT_NE(expect_bad_input("{\"format_version\": 1,").find("not valid JSON"), std::string::npos);
}

TEST(BaselineFile, WithACaseTwiceIsBadInput) {
    auto doc = nlohmann::json::parse(format_baseline(sample_baseline()));
    doc["cases"].push_back(doc["cases"][0]);
    EXPECT_NE(expect_bad_input(doc.dump()).find("cases[2]: rmsnorm/fwd bf16:M=4096,H=8192 appears twice"),
              std::string::npos);
    Baseline b = sample_baseline();
    b.cases[1] = b.cases[0];
    EXPECT_THROW(format_baseline(b), Error);
}

TEST(BaselineFile, WithoutSamplesIsNotWritten) {
    Baseline b = sample_baseline();
    b.cases[0].samples_us.clear();
    EXPECT_THROW(format_baseline(b), Error);
}

TEST(BaselineFile, IsSavedIntoNewFoldersAndLoadedBack) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ktune_check_test_" + std::to_string(::getpid()));
    const std::string path = (dir / "results" / "baselines" / "h100.json").string();
    save_baseline(sample_baseline(), path);
    const Baseline r = load_baseline(path);
    EXPECT_EQ(r.path, path);
    EXPECT_EQ(r.cases.size(), 2u);
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    fs::remove_all(dir);
}

TEST(BaselineFile, ThatDoesNotExistIsBadInputNamingThePath) {
    try {
        load_baseline("/nonexistent/h100.json");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::bad_input);
        EXPECT_EQ(e.where(), "/nonexistent/h100.json");
    }
}

TEST(BaselineFile, NameIsDerivedFromTheDeviceNameAndArch) {
    EXPECT_EQ(baseline_file_name({.key = "k", .name = "NVIDIA H100 80GB HBM3", .arch = "sm_90"}),
              "nvidia-h100-80gb-hbm3-sm_90.json");
    EXPECT_EQ(baseline_file_name({.key = "GPU|x"}), "gpu-x.json");
}

TEST(BaselineCase, IdNamesOpVariantAndProblem) {
    const Baseline b = sample_baseline();
    EXPECT_EQ(b.cases[0].id(), "rmsnorm/fwd bf16:M=4096,H=8192");
    EXPECT_EQ(b.cases[1].id(), "softmax fp32:M=1,H=8192");
}

}  // namespace
}  // namespace ktune
