#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuner/jit/cache_entry.hpp"

namespace ktune {
namespace {

detail::CacheEntry sample_entry() {
    detail::CacheEntry e;
    e.key = std::string(64, 'a');
    e.arch = "sm_90";
    e.nvrtc_version = "13.0";
    e.source_path = "kernels/x/x.cuh";
    e.options = "-arch=sm_90 -I/path with space";
    e.log = "line one\n\t\"quoted\" \\ back\x01slash\nptxas info : Used 10 registers\n";
    e.compile_seconds = 0.25;
    CompiledKernel k;
    k.name_expression = "x<__nv_bfloat16, 256>";
    k.lowered_name = "_Z1xI13__nv_bfloat16Li256EEvv";
    k.info.registers = 10;
    k.info.spill_store_bytes = 1;
    k.info.spill_load_bytes = 2;
    k.info.stack_bytes = 3;
    k.info.static_shared_bytes = 1024;
    e.kernels = {k};
    return e;
}

TEST(CacheEntry, RoundTripsThroughJsonWithEscapedText) {
    const detail::CacheEntry e = sample_entry();
    const auto back = detail::entry_from_json(detail::entry_to_json(e));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->key, e.key);
    EXPECT_EQ(back->log, e.log);
    EXPECT_EQ(back->options, e.options);
    EXPECT_DOUBLE_EQ(back->compile_seconds, 0.25);
    ASSERT_EQ(back->kernels.size(), 1u);
    EXPECT_EQ(back->kernels[0].name_expression, e.kernels[0].name_expression);
    EXPECT_EQ(back->kernels[0].lowered_name, e.kernels[0].lowered_name);
    EXPECT_EQ(back->kernels[0].info.registers, 10);
    EXPECT_EQ(back->kernels[0].info.spill_store_bytes, 1);
    EXPECT_EQ(back->kernels[0].info.spill_load_bytes, 2);
    EXPECT_EQ(back->kernels[0].info.stack_bytes, 3);
    EXPECT_EQ(back->kernels[0].info.static_shared_bytes, 1024);
}

TEST(CacheEntry, TreatsATruncatedSidecarAsAMiss) {
    const std::string json = detail::entry_to_json(sample_entry());
    EXPECT_FALSE(detail::entry_from_json(json.substr(0, json.size() / 2)).has_value());
}

TEST(CacheEntry, TreatsASidecarOfAnotherFormatAsAMiss) {
    std::string json = detail::entry_to_json(sample_entry());
    json.replace(json.find(detail::k_cache_format), std::string(detail::k_cache_format).size(), "ktune-jit-cache-v0");
    EXPECT_FALSE(detail::entry_from_json(json).has_value());
}

TEST(CacheEntry, IsReadBackFromDiskWhenItsCubinIsAnElfFile) {
    test::TempDir dir;
    const detail::CacheEntry e = sample_entry();
    detail::write_cache_entry(dir.path(), e,
                              std::string("\x7f"
                                          "ELF rest of a cubin"));
    const auto back = detail::read_cache_entry(dir.path(), e.key);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->kernels.at(0).lowered_name, e.kernels[0].lowered_name);
}

TEST(CacheEntry, IsAMissWhenItsCubinIsMissing) {
    test::TempDir dir;
    const detail::CacheEntry e = sample_entry();
    detail::write_cache_entry(dir.path(), e,
                              std::string("\x7f"
                                          "ELF"));
    std::filesystem::remove(detail::cubin_path(dir.path(), e.key));
    EXPECT_FALSE(detail::read_cache_entry(dir.path(), e.key).has_value());
}

TEST(CacheEntry, IsAMissWhenItsCubinIsTruncated) {
    test::TempDir dir;
    const detail::CacheEntry e = sample_entry();
    detail::write_cache_entry(dir.path(), e,
                              std::string("\x7f"
                                          "ELF rest of a cubin"));
    std::filesystem::resize_file(detail::cubin_path(dir.path(), e.key), 8);
    EXPECT_FALSE(detail::read_cache_entry(dir.path(), e.key).has_value());
}

TEST(CacheEntry, IsAMissWhenItsCubinHasTheRecordedSizeButOtherBytes) {
    test::TempDir dir;
    const detail::CacheEntry e = sample_entry();
    detail::write_cache_entry(dir.path(), e,
                              std::string("\x7f"
                                          "ELF rest of a cubin"));
    std::ofstream(detail::cubin_path(dir.path(), e.key), std::ios::binary | std::ios::trunc) << std::string(
        "\x7f"
        "ELF rest of a cubix");
    EXPECT_FALSE(detail::read_cache_entry(dir.path(), e.key).has_value());
}

TEST(CacheEntry, RecordsTheCubinSizeAndHashInTheSidecar) {
    test::TempDir dir;
    const detail::CacheEntry e = sample_entry();
    detail::write_cache_entry(dir.path(), e,
                              std::string("\x7f"
                                          "ELF"));
    const auto back = detail::read_cache_entry(dir.path(), e.key);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->cubin_bytes, 4u);
    // SHA-256 of the four bytes 7f 45 4c 46.
    EXPECT_EQ(back->cubin_sha256, "3bdbb4fe8397cd2b842430b39ccff01a8663c751945ef5e9a09e267fb8b1d359");
}

TEST(CacheEntry, LeavesNoTemporaryFilesBehind) {
    test::TempDir dir;
    detail::write_cache_entry(dir.path(), sample_entry(),
                              std::string("\x7f"
                                          "ELF"));
    int files = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
        ++files;
        EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
    }
    EXPECT_EQ(files, 2);
}

TEST(CacheEntry, WriteThrowsStoreErrorWhenTheFolderIsMissing) {
    test::TempDir dir;
    try {
        detail::write_file_atomically(dir.path() / "no" / "such" / "file", "x");
        FAIL() << "expected Error(store)";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::store);
    }
}

}  // namespace
}  // namespace ktune
