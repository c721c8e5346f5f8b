// What users expect of a command-line tool, beyond one command per case (tests/data/cli/cases.yaml): output that fits
// a terminal, JSON that parses, a report that says what it leaves out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "ktune_test_config.hpp"
#include "tests/unit/cli/cli_runner.hpp"

namespace ktune::cli_test {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

TEST(List, FitsIn120ColumnsWithEachColumnAligned) {
    Sandbox box("list_width");
    const RunResult r = run_ktune(box, {"list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_GT(lines.size(), 2u);
    for (const std::string& line : lines) EXPECT_LE(line.size(), 120u) << line;
    const std::size_t op_column = lines.front().find("  op ") + 2;
    const std::size_t description_column = lines.front().find("description");
    for (const std::string& line : lines) {
        if (line.starts_with(" ")) {  // a wrapped description
            EXPECT_EQ(line.find_first_not_of(' '), description_column) << line;
        } else if (line.starts_with("rmsnorm_bwd ")) {
            EXPECT_EQ(line.substr(op_column, 8), "rmsnorm ") << line;
            // A space of alternative kernels names them ahead of the op's summary (which wraps, at 30 columns or more,
            // after it where long space names leave the description little room).
            EXPECT_EQ(line.substr(description_column, 30), "[3 kernels: rows, node, whole]") << line;
        }
    }
}

TEST(List, AsJsonParsesWhenASpaceHoldsBytesThatAreNotUtf8) {
    Sandbox box("list_utf8");
    const RunResult r = run_ktune(box, {"--root", std::string(KTUNE_TEST_DATA) + "/cli/root", "list", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 3u);
    EXPECT_EQ(j[1]["space"], "invalid_utf8");
    EXPECT_THAT(j[2]["error"].get<std::string>(), HasSubstr("'12\xEF\xBF\xBD"
                                                            "8' is not an integer"));
}

TEST(JsonErrors, ParseAsAnObjectWithCategoryMessageAndWhere) {
    Sandbox box("json_error");
    const RunResult r = run_ktune(box, {"best", "nosuchop", "--all-devices", "--json"});
    EXPECT_EQ(r.exit_code, 2);
    const nlohmann::json j = nlohmann::json::parse(r.err);
    EXPECT_EQ(j["error"]["category"], "bad_input");
    EXPECT_EQ(j["error"]["where"], "OP");
    EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("no search space named 'nosuchop'"));
}

TEST(Space, ShowsEveryKernelOfAFileOfAlternativesEvenOneWithNoValidConfigurationAtItsProblems) {
    Sandbox box("space_alternatives");
    const RunResult r = run_ktune(box, {"space", "decode_attention"});  // simt: pruned wherever the tensor cores run
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* kernel : {"kernel simt,", "kernel mma,", "kernel mma_l2,", "kernel mma_cluster,"})
        EXPECT_THAT(r.out, HasSubstr(kernel));
    EXPECT_THAT(r.out, HasSubstr("valid configurations each (0 in all)"));
}

TEST(Space, SaysWhichSmCountTheExampleGridsOfAPersistentKernelAssume) {
    Sandbox box("space_sms");
    const RunResult r = run_ktune(box, {"space", "gemm_act_none"});  // wgmma_tma: TPB 0 launches min(tiles, SMS)
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("(grids for SMS = 132; tuning takes the GPU's own count)"));
}

TEST(Report, ShowsImportedPeersThatHaveNoKtuneResults) {
    Sandbox box("report_peers");
    const std::string peers = std::string(KTUNE_TEST_DATA) + "/reports/peers_h100_rmsnorm.json";
    ASSERT_EQ(run_ktune(box, {"import-peers", peers}).exit_code, 0);
    const RunResult r = run_ktune(box, {"report"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("# ktune report"));
    EXPECT_THAT(r.out, HasSubstr("## Peers without ktune results"));
    EXPECT_THAT(r.out, HasSubstr("| rmsnorm fwd | NVIDIA H100 80GB HBM3 |"));
    const RunResult j = run_ktune(box, {"report", "--format", "json"});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(nlohmann::json::parse(j.out)["unmatched_peers"].size(), 4u);
}

}  // namespace
}  // namespace ktune::cli_test
