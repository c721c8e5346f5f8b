// export_header(): what the generated header holds, what it refuses, and the golden file the host-only tests include.
#include <cstdlib>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

using ExportHeader = ExportTest;

RenderedHeader render_golden(const std::string& db) {
    Store store = Store::open(db);
    fill_golden_store(store);
    return render_header(store, SearchSpace::load_file(rmsnorm_space_path()), golden_options());
}

TEST_F(ExportHeader, MatchesTheGoldenFileThatTheHostTestsInclude) {
    const std::string text = render_golden(db_path()).text;
    if (std::getenv("KTUNE_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(golden_header_path(), std::ios::binary) << text;
        GTEST_SKIP() << "wrote " << golden_header_path();
    }
    const std::string golden = read_text(golden_header_path());
    // On a difference, name the first line that differs rather than printing both files.
    std::size_t line = 1, i = 0;
    while (i < text.size() && i < golden.size() && text[i] == golden[i]) line += text[i++] == '\n' ? 1 : 0;
    const auto line_at = [](const std::string& s, std::size_t pos) {
        const std::size_t start = s.rfind('\n', pos == 0 ? 0 : pos - 1);
        const std::size_t from = start == std::string::npos ? 0 : start + 1;
        return s.substr(from, s.find('\n', from) - from);
    };
    EXPECT_TRUE(text == golden) << "line " << line << "\n  generated: " << line_at(text, i)
                                << "\n  golden:    " << line_at(golden, i)
                                << "\ncheck the change, then rerun with KTUNE_UPDATE_GOLDEN=1 to accept it";
}

TEST_F(ExportHeader, WritesOneHeaderNamedAfterTheOpAndVariant) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    const ExportResult r = export_header(store, golden_options((dir() / "out").string()));
    EXPECT_EQ(r.file_name, "ktune_tuned_rmsnorm_fwd.hpp");
    EXPECT_EQ(r.header_path, (dir() / "out" / "ktune_tuned_rmsnorm_fwd.hpp").string());
    EXPECT_EQ(r.function, "ktune_tuned::rmsnorm_fwd");
    EXPECT_TRUE(std::filesystem::exists(r.header_path));
    EXPECT_FALSE(std::filesystem::exists(r.header_path + ".tmp"));
}

TEST_F(ExportHeader, ListsEveryTunedProblemOfEveryDeviceAsAnEntry) {
    const RenderedHeader h = render_golden(db_path());
    EXPECT_EQ(h.result.entries, 12u);
    EXPECT_EQ(h.result.device_keys, (std::vector<std::string>{h100_sxm().key, h100_pcie().key}));
    EXPECT_NE(h.text.find("\"bf16:M=4096,H=8192\""), std::string::npos);
    EXPECT_NE(h.text.find("{Dtype::bf16, {4096, 8192, 8192}"), std::string::npos);  // S defaults to H
    EXPECT_NE(h.text.find("\"fp32:M=16,H=4096\""), std::string::npos);
}

TEST_F(ExportHeader, InstantiatesEachDistinctConfigurationOncePerDtype) {
    const RenderedHeader h = render_golden(db_path());
    EXPECT_EQ(h.result.configs, 6u);  // bf16: small, medium, large, wide, pcie; fp32: one
    EXPECT_NE(h.text.find("auto* kernel = &::rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>;"), std::string::npos);
    EXPECT_NE(h.text.find("auto* kernel = &::rmsnorm_fwd<float, 256, 4, 4, 1>;"), std::string::npos);
    std::size_t count = 0;
    for (std::size_t p = h.text.find("&::rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>"); p != std::string::npos;
         p = h.text.find("&::rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1>", p + 1))
        ++count;
    EXPECT_EQ(count, 1u);
}

TEST_F(ExportHeader, TranslatesTheYamlGridExpressionIntoTheHeader) {
    const RenderedHeader h = render_golden(db_path());
    EXPECT_NE(h.text.find("g->grid[0] = detail::ex_dim(detail::ex_ceil_div((static_cast<double>(shape[0])), 1.0), "
                          "2147483647.0);"),
              std::string::npos);
}

TEST_F(ExportHeader, IncludesTheKernelTemplateFromTheRepositoryRoot) {
    EXPECT_NE(render_golden(db_path()).text.find("#include \"kernels/rmsnorm/rmsnorm_fwd.cuh\""), std::string::npos);
}

TEST_F(ExportHeader, KeepsOnlyTheDevicesTheFilterNames) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    ExportOptions o = golden_options();
    o.devices = {"PCIe"};
    const RenderedHeader h = render_header(store, SearchSpace::load_file(rmsnorm_space_path()), o);
    EXPECT_EQ(h.result.device_keys, std::vector<std::string>{h100_pcie().key});
    EXPECT_EQ(h.result.entries, 2u);
}

TEST_F(ExportHeader, RefusesADeviceFilterThatMatchesNoTunedDevice) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    ExportOptions o = golden_options();
    o.devices = {"A100"};
    const Error e = error_of([&] { render_header(store, SearchSpace::load_file(rmsnorm_space_path()), o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_EQ(e.where(), "--devices");
}

TEST_F(ExportHeader, RefusesAStoreWithoutResultsForTheOpAndWritesNothing) {
    Store store = Store::open(db_path());
    ExportOptions o = golden_options((dir() / "out").string());
    const Error e = error_of([&] { export_header(store, o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(std::string(e.what()).find("no tuned results for rmsnorm/fwd"), std::string::npos) << e.what();
    EXPECT_FALSE(std::filesystem::exists(dir() / "out" / "ktune_tuned_rmsnorm_fwd.hpp"));
}

TEST_F(ExportHeader, ExportsAnOpWithoutAHandWrittenBindingFromItsOpSpecAndRefusesItWithoutResults) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    ExportOptions o = golden_options();
    o.op = "layernorm";
    o.variant = "fwd";
    o.space_path = source_root() + "/search_spaces/layernorm.yaml";
    const Error e = error_of([&] { render_header(store, SearchSpace::load_file(o.space_path), o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(std::string(e.what()).find("no tuned results for layernorm/fwd"), std::string::npos) << e.what();
}

TEST_F(ExportHeader, RefusesASpaceWithoutAnOpSpecToDeriveTheDispatcherFrom) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    const SearchSpace space = SearchSpace::load_file(std::string(KTUNE_TEST_DATA) + "/spaces/good/tunables.yaml");
    ExportOptions o = golden_options();
    o.op.clear();
    const Error e = error_of([&] { render_header(store, space, o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(e.message().find("no op spec"), std::string::npos) << e.what();
}

TEST_F(ExportHeader, MatchesTheDecodeAttentionGoldenFile) {
    const DecodeAttentionKernels kernels;
    Store store = Store::open(db_path());
    fill_decode_attention_store(store, kernels);
    const std::string text = render_header(store, kernels.pointers(), decode_attention_options()).text;
    if (std::getenv("KTUNE_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(decode_attention_golden_path(), std::ios::binary) << text;
        GTEST_SKIP() << "wrote " << decode_attention_golden_path();
    }
    EXPECT_TRUE(text == read_text(decode_attention_golden_path()))
        << "the header differs from " << decode_attention_golden_path()
        << ": check the change, then rerun with KTUNE_UPDATE_GOLDEN=1 to accept it";
}

TEST_F(ExportHeader, RefusesAStoredConfigurationWithOtherParametersThanTheSpace) {
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    store.record(tuned(h100_sxm(), Dtype::bf16, 16, 4096, "BLOCK=256,VEC=8", 2.0));
    const Error e =
        error_of([&] { render_header(store, SearchSpace::load_file(rmsnorm_space_path()), golden_options()); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(std::string(e.what()).find("BLOCK=256,VEC=8"), std::string::npos) << e.what();
}

TEST_F(ExportHeader, LeavesOutADeviceWithoutADeviceRecordAndSaysSo) {
    Store store = Store::open(db_path());
    fill_golden_store(store);
    ResultRecord r = tuned(h100_sxm(), Dtype::bf16, 16, 4096, k_medium, 2.0);
    r.device_key = "unknown-device";
    store.record(r);
    const RenderedHeader h = render_header(store, SearchSpace::load_file(rmsnorm_space_path()), golden_options());
    EXPECT_EQ(h.result.device_keys.size(), 2u);
    ASSERT_EQ(h.result.warnings.size(), 1u);
    EXPECT_NE(h.result.warnings[0].find("unknown-device"), std::string::npos);
}

TEST_F(ExportHeader, PicksTheConfigurationBestForMostProblemsAsTheDtypeDefault) {
    // bf16 wins over both devices: medium 5 times, pcie 2, small 1, large 1, wide 1. Configurations are ordered by
    // dtype, then parameter values: fp32 first (index 0), then bf16 128/8/4/1, 256/4/8/2, 256/8/2/1 (index 3).
    EXPECT_NE(render_golden(db_path()).text.find("inline constexpr int default_config[3] = {0, -1, 3};"),
              std::string::npos);
}

TEST_F(ExportHeader, FindsTheSearchSpaceOfAVariantUnderTheRoot) {
    EXPECT_EQ(std::filesystem::path(find_space_file(source_root(), "rmsnorm", "fwd_gemma")).filename(),
              "rmsnorm_gemma.yaml");
    EXPECT_EQ(error_of([] { find_space_file(source_root(), "rmsnorm", "nope"); }).category(), ErrorCategory::bad_input);
}

TEST_F(ExportHeader, ExportsTheGemmaVariantWithItsOwnDispatcherName) {
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    store.record(tuned(h100_sxm(), Dtype::bf16, 16, 2048, k_medium, 2.0, "fwd_gemma"));
    ExportOptions o = golden_options();
    o.variant = "fwd_gemma";
    o.space_path = source_root() + "/search_spaces/rmsnorm_gemma.yaml";
    const RenderedHeader h = render_header(store, SearchSpace::load_file(o.space_path), o);
    EXPECT_EQ(h.result.function, "ktune_tuned::rmsnorm_fwd_gemma");
    EXPECT_NE(h.text.find("&::rmsnorm_fwd<__nv_bfloat16, 256, 8, 2, 1, 1>;"), std::string::npos);
}

}  // namespace
}  // namespace ktune::test
