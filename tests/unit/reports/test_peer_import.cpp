#include <gtest/gtest.h>

#include <tuple>

#include "ktune_test_config.hpp"
#include "reports/peer_import.hpp"
#include "results/store.hpp"
#include "tests/unit/reports/report_test_util.hpp"

namespace ktune::test {
namespace {

const std::string k_good = std::string(KTUNE_TEST_DATA) + "/reports/peers_h100_rmsnorm.json";
const std::string k_bad = std::string(KTUNE_TEST_DATA) + "/reports/peers_bad_field.json";

using PeerImport = TempDirTest;

TEST_F(PeerImport, AGoodFileImportsEveryResult) {
    Store store = Store::open(path("r.db"));
    const PeerImportResult r = import_peers(store, k_good);
    EXPECT_EQ(r.inserted, 4u);
    EXPECT_EQ(r.replaced, 0u);
    EXPECT_EQ(r.device_name, "NVIDIA H100 80GB HBM3");
    const auto peers = store.peers({});
    ASSERT_EQ(peers.size(), 4u);
    for (const PeerRecord& p : peers) {
        EXPECT_EQ(p.source, k_good);
        EXPECT_EQ(p.environment_json,
                  R"({"torch":"2.5.1+cu124","triton":"3.1.0","liger_kernel":"0.4.2","python":"3.11.9"})");
    }
}

TEST_F(PeerImport, ImportingTheSameFileAgainReplacesItsResults) {
    Store store = Store::open(path("r.db"));
    import_peers(store, k_good);
    const PeerImportResult again = import_peers(store, k_good);
    EXPECT_EQ(again.inserted, 0u);
    EXPECT_EQ(again.replaced, 4u);
    EXPECT_EQ(store.peers({}).size(), 4u);
}

TEST_F(PeerImport, PercentilesLeftOutAreComputedFromTheSamples) {
    Store store = Store::open(path("r.db"));
    import_peers(store, k_good);
    const auto liger = store.peers(PeerFilter{std::nullopt, std::nullopt, std::nullopt, "liger"});
    ASSERT_EQ(liger.size(), 1u);
    EXPECT_DOUBLE_EQ(liger[0].p50_us, 31.0);
    EXPECT_GT(liger[0].p99_us, 32.0);
    EXPECT_EQ(liger[0].n, 10);
    EXPECT_NEAR(liger[0].mean_us, 31.19, 1e-9);
}

TEST_F(PeerImport, PercentilesGivenWinOverTheSamples) {
    const auto peers = parse_peers(
        R"({"device": {"name": "G"}, "method": "m", "results": [{"op": "o", "variant": "v", "dtype": "fp32",
            "shape": {"N": 8}, "impl": "i", "p50_us": 5, "p95_us": 6, "p99_us": 7, "samples_us": [1, 2, 3]}]})",
        "f.json");
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_DOUBLE_EQ(peers[0].p50_us, 5);
    EXPECT_EQ(peers[0].n, 3);
}

TEST_F(PeerImport, AResultsOwnMethodOverridesTheFiles) {
    const auto peers =
        parse_peers(std::string(std::istreambuf_iterator<char>(std::ifstream(k_good).rdbuf()), {}), "f.json");
    ASSERT_EQ(peers.size(), 4u);
    EXPECT_EQ(peers[0].method, "cold_l2_events");
    EXPECT_EQ(peers[3].method, "cuda_graph");
}

TEST_F(PeerImport, ShapeAxesKeepTheOrderOfTheFile) {
    const auto peers = parse_peers(
        R"({"device": {"name": "G", "key": "k"}, "method": "m", "results": [{"op": "o", "variant": "v",
            "dtype": "bf16", "shape": {"M": 8, "H": 16}, "impl": "i", "p50_us": 5, "p95_us": 6, "p99_us": 7}]})",
        "f.json");
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0].problem.key(), "bf16:M=8,H=16");
    EXPECT_EQ(peers[0].device_key, "k");
}

TEST_F(PeerImport, AFileWithABadFieldIsRefusedNamingTheFileAndTheFieldAndWritesNothing) {
    Store store = Store::open(path("r.db"));
    const Error e = error_of([&] { import_peers(store, k_bad); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), k_bad + ": results[1].shape.H");
    EXPECT_EQ(e.message(), "expected a positive integer, got a string");
    EXPECT_TRUE(store.peers({}).empty());
}

TEST_F(PeerImport, AFileThatCannotBeReadIsBadInputNamingIt) {
    Store store = Store::open(path("r.db"));
    const Error e = error_of([&] { import_peers(store, path("missing.json")); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), path("missing.json"));
}

// A bad file, the field it points at, and what the message says.
struct BadFile {
    const char* name;
    const char* json;
    const char* where;
    const char* message;
};

class PeerImportBadFile : public ::testing::TestWithParam<BadFile> {};

// One good result, with a placeholder for a change.
std::string with_result(const std::string& fields) {
    return R"({"device": {"name": "G"}, "method": "cold", "results": [{"op": "rmsnorm", "variant": "fwd", )"
           R"("dtype": "bf16", "shape": {"M": 8, "H": 16}, "impl": "liger", )" +
           fields + "}]}";
}

TEST_P(PeerImportBadFile, IsRefusedWithTheJsonPathOfTheBadField) {
    const BadFile& b = GetParam();
    const Error e = error_of([&] { parse_peers(b.json, "peers.json"); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), b.where);
    EXPECT_EQ(e.message().substr(0, std::string(b.message).size()), b.message) << e.message();
}

const std::string k_percentiles = R"("p50_us": 5, "p95_us": 6, "p99_us": 7)";
const std::string k_not_json = R"({"device": {"name": "G"},)";
const std::string k_no_device = R"({"results": []})";
const std::string k_empty_name = R"({"device": {"name": ""}, "method": "m", "results": []})";
const std::string k_results_object = R"({"device": {"name": "G"}, "method": "m", "results": {}})";
const std::string k_version_2 = R"({"format_version": 2, "device": {"name": "G"}, "method": "m", "results": []})";
const std::string k_top_typo = R"({"device": {"name": "G"}, "methods": "m", "results": []})";
const std::string k_unknown_key = with_result(R"("p50": 5, "p95_us": 6, "p99_us": 7)");
const std::string k_bad_dtype = with_result(k_percentiles).replace(with_result(k_percentiles).find("bf16"), 4, "int4");
const std::string k_shape_string =
    with_result(k_percentiles).replace(with_result(k_percentiles).find("16}"), 2, "\"16\"");
const std::string k_empty_shape =
    with_result(k_percentiles).replace(with_result(k_percentiles).find("{\"M\": 8, \"H\": 16}"), 17, "{}");
const std::string k_negative_p50 = with_result(R"("p50_us": -5, "p95_us": 6, "p99_us": 7)");
const std::string k_p50_string = with_result(R"("p50_us": "5", "p95_us": 6, "p99_us": 7)");
const std::string k_p99_below_p95 = with_result(R"("p50_us": 5, "p95_us": 6, "p99_us": 5.5)");
const std::string k_no_p50 = with_result(R"("p95_us": 6, "p99_us": 7)");
const std::string k_bad_sample = with_result(R"("samples_us": [1.0, 2.0, null])");
const std::string k_bad_impl =
    with_result(k_percentiles).replace(with_result(k_percentiles).find("liger"), 5, "li ger");
const std::string k_bad_n = with_result(k_percentiles + R"(, "n": 2.5)");
const std::string k_no_method = R"({"device": {"name": "G"}, "results": [{"op": "o", "variant": "v", "dtype": "bf16",
    "shape": {"M": 8}, "impl": "i", "p50_us": 5, "p95_us": 6, "p99_us": 7}]})";
const std::string k_duplicate = R"({"device": {"name": "G"}, "method": "m", "results": [
    {"op": "o", "variant": "v", "dtype": "bf16", "shape": {"M": 8}, "impl": "i", "p50_us": 5, "p95_us": 6, "p99_us": 7},
    {"op": "o", "variant": "v", "dtype": "bf16", "shape": {"M": 8}, "impl": "i", "p50_us": 4, "p95_us": 6, "p99_us": 7}
    ]})";

INSTANTIATE_TEST_SUITE_P(
    Cases, PeerImportBadFile,
    ::testing::Values(
        BadFile{"NotJson", k_not_json.c_str(), "peers.json", "not valid JSON: parse error at line 1, column 26"},
        BadFile{"NoDevice", k_no_device.c_str(), "peers.json", "missing required key \"device\""},
        BadFile{"EmptyDeviceName", k_empty_name.c_str(), "peers.json: device.name", "must not be empty"},
        BadFile{"ResultsNotAnArray", k_results_object.c_str(), "peers.json: results",
                "expected an array, got an object"},
        BadFile{"NewerFormat", k_version_2.c_str(), "peers.json: format_version",
                "this ktune reads format_version 1, got 2"},
        BadFile{"TopLevelTypo", k_top_typo.c_str(), "peers.json",
                "unknown key \"methods\" (allowed: device, results, format_version, method, environment)"},
        BadFile{"ResultKeyTypo", k_unknown_key.c_str(), "peers.json: results[0]", "unknown key \"p50\" (allowed: "},
        BadFile{"UnknownDtype", k_bad_dtype.c_str(), "peers.json: results[0].dtype", "unknown dtype \"int4\""},
        BadFile{"AxisSizeAsString", k_shape_string.c_str(), "peers.json: results[0].shape.H",
                "expected a positive integer, got a string"},
        BadFile{"EmptyShape", k_empty_shape.c_str(), "peers.json: results[0].shape",
                "expected an object of axis sizes"},
        BadFile{"NegativeP50", k_negative_p50.c_str(), "peers.json: results[0].p50_us",
                "expected a positive number, got -5"},
        BadFile{"P50AsString", k_p50_string.c_str(), "peers.json: results[0].p50_us",
                "expected a positive number, got a string"},
        BadFile{"P99BelowP95", k_p99_below_p95.c_str(), "peers.json: results[0].p99_us",
                "p99_us (5.5) is smaller than p95_us (6)"},
        BadFile{"NoP50NorSamples", k_no_p50.c_str(), "peers.json: results[0]",
                "missing \"p50_us\" (required unless \"samples_us\" is given)"},
        BadFile{"NullSample", k_bad_sample.c_str(), "peers.json: results[0].samples_us[2]",
                "expected a positive number, got null"},
        BadFile{"ImplWithASpace", k_bad_impl.c_str(), "peers.json: results[0].impl",
                "\"li ger\" may hold only letters, digits and _ - . +"},
        BadFile{"FractionalN", k_bad_n.c_str(), "peers.json: results[0].n", "expected a positive integer, got 2.5"},
        BadFile{"NoMethodAnywhere", k_no_method.c_str(), "peers.json: results[0]",
                "missing \"method\": give one for the whole file or for this result"},
        BadFile{"DuplicateResult", k_duplicate.c_str(), "peers.json: results[1]",
                "repeats results[0] (same op, variant, dtype, shape, impl and method)"}),
    [](const ::testing::TestParamInfo<BadFile>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ktune::test
