// export_header() for an op declared as data: the dispatcher derived from its op spec (signature, checks, kernel
// call) and, for a space of alternative kernels, a table that says which kernel each bucket launches.
#include <optional>

#include "tests/unit/export/export_test_util.hpp"

namespace ktune::test {
namespace {

using ExportDeclared = ExportTest;

RenderedHeader render_user(const std::string& db) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db);
    fill_user_store(store, kernels);
    return render_header(store, pointers(kernels), user_options());
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(ExportDeclared, TakesTypedPointersByRoleThenEveryAxisOfTheOp) {
    const std::string text = render_user(db_path()).text;
    EXPECT_TRUE(has(text,
                    "inline Status bias_gelu_fwd(const DeviceProps& device, Dtype dtype, void* y, const void* x, "
                    "const float* bias, long long R, long long C, long long S, cudaStream_t stream = nullptr,"))
        << text;
    EXPECT_TRUE(has(text,
                    "inline Choice bias_gelu_fwd_select(const DeviceProps& device, Dtype dtype, long long R, "
                    "long long C, long long S) {"));
}

TEST_F(ExportDeclared, ValidatesPointersSizesTheOpSpecsChecksAndAlignmentAndReturnsAStatus) {
    const std::string text = render_user(db_path()).text;
    EXPECT_TRUE(has(text, "    if (y == nullptr || x == nullptr || bias == nullptr) return Status::null_pointer;"));
    EXPECT_TRUE(has(text, "    if (R < 1 || C < 1 || S < 1) return Status::bad_size;"));
    EXPECT_TRUE(has(text, "    if (failed_check(ktune_shape, elem_bytes) != nullptr) return Status::bad_size;"));
    EXPECT_TRUE(has(text,
                    "    if (!detail::aligned(y, elem_bytes) || !detail::aligned(x, elem_bytes) || "
                    "!detail::aligned(bias, 4)) return Status::misaligned;"));
    // The checks in order, over the shape array (R, C, S), with their messages escaped.
    EXPECT_TRUE(has(text,
                    "    if (!detail::ex_holds(detail::ex_eq(detail::ex_rem((static_cast<double>(shape[1])), 2.0), "
                    "0.0))) return \"C must be \\\"even\\\": the kernels read pairs\";"))
        << text;
    EXPECT_TRUE(has(text,
                    "    if (!detail::ex_holds(detail::ex_ge((static_cast<double>(shape[2])), "
                    "(static_cast<double>(shape[1]))))) return \"the row stride S is smaller than C\";"));
    EXPECT_FALSE(has(text, "throw"));
}

TEST_F(ExportDeclared, BuildsTheKernelCallFromTheOpSpecsArgumentList) {
    const std::string text = render_user(db_path()).text;
    EXPECT_TRUE(has(text, "    const double ktune_arg3 = (static_cast<double>(R));"));
    EXPECT_TRUE(has(text, "    const double ktune_arg6 = 0.5;"));
    EXPECT_TRUE(has(text,
                    "kernel<<<grid, block, g.shared_bytes, stream>>>(static_cast<__half*>(y), "
                    "static_cast<const __half*>(x), bias, static_cast<int>(ktune_arg3), "
                    "static_cast<int>(ktune_arg4), static_cast<long long>(ktune_arg5), "
                    "static_cast<float>(ktune_arg6));"));
}

TEST_F(ExportDeclared, RecordsWhichAlternativeKernelEachConfigurationLaunches) {
    const RenderedHeader h = render_user(db_path());
    EXPECT_EQ(h.result.configs, 3u);  // fp32 flat; fp16 flat and rows
    EXPECT_TRUE(
        has(h.text, "inline constexpr const char* alternative_names[alternative_count] = {\"flat\", \"rows\"};"));
    EXPECT_TRUE(
        has(h.text, "    /* 0 */ {Dtype::fp32, 0, {2, 128}, \"VEC=2,BLOCK=128\", \"bias_gelu_flat<float, 128, 2>\"},"))
        << h.text;
    EXPECT_TRUE(has(
        h.text, "    /* 1 */ {Dtype::fp16, 0, {2, 128}, \"VEC=2,BLOCK=128\", \"bias_gelu_flat<__half, 128, 2>\"},"));
    EXPECT_TRUE(
        has(h.text, "    /* 2 */ {Dtype::fp16, 1, {2, 2}, \"VEC=2,WARPS=2\", \"bias_gelu_rows<__half, 2, 2>\"},"));
}

TEST_F(ExportDeclared, GivesEachBucketTheKernelThatWonIt) {
    const std::string text = render_user(db_path()).text;
    // fp16 R=1, C=1024: rows won (1.5 us against 2.0); R=64, C=4096: flat (3.0 against 4.0). S defaults to C.
    EXPECT_TRUE(has(text, "{Dtype::fp16, {1, 1024, 1024}, {0.0, 6.931471805599453, 0.0}, 2, 1.5, \"fp16:R=1,C=1024\"}"))
        << text;
    EXPECT_TRUE(has(text,
                    "{Dtype::fp16, {64, 4096, 4096}, {4.1588830833596715, 8.317766166719343, 0.0}, 1, 3.0, "
                    "\"fp16:R=64,C=4096\"}"));
}

TEST_F(ExportDeclared, IncludesEveryAlternativesSourceAndTranslatesEachOnesLaunch) {
    const std::string text = render_user(db_path()).text;
    EXPECT_TRUE(
        has(text, "#include \"kernels/user/bias_gelu_flat.cuh\"\n#include \"kernels/user/bias_gelu_rows.cuh\"\n"));
    // flat: ceil_div(R * C, BLOCK * VEC); rows: R blocks of WARPS * 32 threads.
    EXPECT_TRUE(has(text,
                    "g->grid[0] = detail::ex_dim(detail::ex_ceil_div(((static_cast<double>(shape[0])) * "
                    "(static_cast<double>(shape[1]))), (128.0 * 2.0)), 2147483647.0);"));
    EXPECT_TRUE(has(text, "g->block[0] = detail::ex_dim((2.0 * 32.0), 1024.0);"));
    // rows' own constraint reads the shape: legal() checks it for its configuration only.
    EXPECT_TRUE(has(text,
                    "    case 2: return detail::ex_holds(detail::ex_le(((2.0 * 32.0) * 2.0), "
                    "(static_cast<double>(shape[1]))));"));
}

TEST_F(ExportDeclared, WritesTheHeaderOfAUsersSpaceOutsideTheRepository) {
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(user_space_path());
    Store store = Store::open(db_path());
    fill_user_store(store, kernels);
    const ExportResult r = export_header(store, user_options((dir() / "out").string()));
    EXPECT_EQ(r.file_name, "ktune_tuned_bias_gelu_fwd.hpp");
    EXPECT_EQ(r.function, "ktune_tuned::bias_gelu_fwd");
    EXPECT_EQ(r.entries, 3u);
}

TEST_F(ExportDeclared, RefusesABufferNamedLikeAPartOfTheDispatcher) {
    std::string yaml = read_text(user_space_path());
    const std::size_t p = yaml.find("    bias: {type: f32");
    ASSERT_NE(p, std::string::npos);
    yaml.replace(p, 8, "    stream");
    const std::size_t q = yaml.find("[y, x, bias,");
    ASSERT_NE(q, std::string::npos);
    yaml.replace(q, 12, "[y, x, stream,");
    const std::string path = (dir() / "bias_gelu.yaml").string();
    std::ofstream(path) << yaml;
    const std::vector<SearchSpace> kernels = SearchSpace::load_alternatives(path);
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    store.record(kernel_result(h100_sxm(), kernels[0], Problem{Dtype::fp16, {{"R", 1}, {"C", 1024}}},
                               Config{{{"VEC", 2}, {"BLOCK", 128}}}, 2.0));
    ExportOptions o = user_options();
    o.space_path = path;
    const Error e = error_of([&] { render_header(store, pointers(kernels), o); });
    EXPECT_EQ(e.category(), ErrorCategory::bad_input);
    EXPECT_NE(std::string(e.what()).find("buffer 'stream'"), std::string::npos) << e.what();
}

// examples/user_op's op copied to the test folder with `edit` applied to its YAML; its kernels beside it.
std::vector<SearchSpace> user_op_copy(const std::filesystem::path& dir, const std::function<void(std::string&)>& edit) {
    const std::filesystem::path from = source_root() + "/examples/user_op";
    for (const auto& e : std::filesystem::directory_iterator(from))
        if (e.path().extension() == ".cuh") std::filesystem::copy_file(e.path(), dir / e.path().filename());
    std::string yaml = read_text((from / "bias_gelu.yaml").string());
    edit(yaml);
    std::ofstream((dir / "bias_gelu.yaml").string()) << yaml;
    return SearchSpace::load_alternatives((dir / "bias_gelu.yaml").string());
}

ExportOptions user_op_options(const std::filesystem::path& dir) {
    ExportOptions o = user_options();
    o.space_path = (dir / "bias_gelu.yaml").string();
    o.root = dir.string();
    return o;
}

TEST_F(ExportDeclared, NamesAChoiceInTheKernelAndNumbersItInTheExpressionsThatReadIt) {
    // A shape-dependent constraint that reads the choice: legal() holds it for the configuration's LOAD.
    const std::vector<SearchSpace> kernels = user_op_copy(dir(), [](std::string& yaml) {
        const std::size_t p = yaml.find("prune:\n      - \"BLOCK * VEC <= N\"");
        ASSERT_NE(p, std::string::npos);
        yaml.insert(p, "constraints:\n      - \"LOAD == cached || M >= 2\"\n    ");
    });
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    const Config rows = kernels[1].parse_config("VEC=8,FAST=true,LOAD=streaming,BLOCK=64,ROWS=2", "test");
    store.record(kernel_result(h100_sxm(), kernels[1], Problem{Dtype::fp16, {{"M", 16}, {"N", 4096}}}, rows, 2.0));
    const std::string text = render_header(store, pointers(kernels), user_op_options(dir())).text;
    EXPECT_TRUE(has(text, "\"bias_gelu_rows<__half, 64, 8, 2, true, bias_gelu::Load::streaming>\"")) << text;
    EXPECT_TRUE(has(text, "&::bias_gelu_rows<__half, 64, 8, 2, true, bias_gelu::Load::streaming>;"));
    EXPECT_TRUE(has(text, "\"VEC=8,FAST=true,LOAD=streaming,BLOCK=64,ROWS=2\""));
    // cached is choice 0, streaming 1, in the order the file names them.
    EXPECT_TRUE(has(text,
                    "    case 0: return detail::ex_holds(detail::ex_or(detail::ex_eq(1.0, 0.0), "
                    "detail::ex_ge((static_cast<double>(shape[0])), 2.0)));"))
        << text;
}

TEST_F(ExportDeclared, ComputesTheOpSpecsNamedValuesInOrderBeforeTheArgumentsThatReadThem) {
    const DecodeAttentionKernels kernels;
    Store store = Store::open(db_path());
    fill_decode_attention_store(store, kernels);
    const std::string text = render_header(store, kernels.pointers(), decode_attention_options()).text;
    // GROUP = HQ / HK, ..., ROOT_D = sqrt(D): each reads the axes and the values before it.
    EXPECT_TRUE(
        has(text, "    out[0] = detail::ex_div((static_cast<double>(shape[2])), (static_cast<double>(shape[3])));"))
        << text;
    EXPECT_TRUE(has(text, "    out[5] = detail::ex_sqrt((static_cast<double>(shape[4])));"));
    EXPECT_TRUE(has(text, "    if (!let_values(ktune_shape, elem_bytes, ktune_lets)) return Status::bad_size;"));
    // The scale 1 / ROOT_D divides as reals do; MAX_SPLITS is the seventh value's slot.
    EXPECT_TRUE(has(text, "    const double ktune_arg11 = detail::ex_fdiv(1.0, (ktune_lets[5]));"));
    EXPECT_TRUE(has(text, "    const double ktune_arg12 = (ktune_lets[3]);"));
    // The scratch buffer's size for the caller, and the note that it starts zeroed.
    EXPECT_TRUE(has(text,
                    "inline constexpr const char* buffer_names[buffer_count] = {\"out\", \"q\", \"k\", "
                    "\"v\", \"seq_lens\", \"scratch\"};"));
    EXPECT_TRUE(has(text, "    case 5: v = (lets[4]); break;"));
    EXPECT_TRUE(has(text, "keep one scratch per shape"));
}

TEST_F(ExportDeclared, IncludesTheHeaderOnlyPackingOfAQuantizedLinear) {
    const SearchSpace space = SearchSpace::load_file(source_root() + "/search_spaces/linear_int4.yaml");
    Store store = Store::open(db_path());
    store.upsert_device(h100_sxm());
    const Problem p{Dtype::bf16, {{"M", 1}, {"N", 4096}, {"K", 4096}, {"G", 128}}};
    std::optional<Config> first;
    space.for_each_config([&](const Config& c) {
        if (space.is_valid(c, p)) first = c;
        return !first;
    });
    ASSERT_TRUE(first);
    store.record(kernel_result(h100_sxm(), space, p, *first, 3.0));
    ExportOptions o = user_options();
    o.op = "linear_int4";
    o.space_path = space.file();
    o.root = source_root();
    const std::string text = render_header(store, space, o).text;
    EXPECT_TRUE(has(text, "#include \"kernels/quant_linear/quant_linear_packing.hpp\"\n")) << text;
    EXPECT_TRUE(has(text, "ktune::quant_linear_packing::pack_int4() and pack_int4_params()"));
}

}  // namespace
}  // namespace ktune::test
