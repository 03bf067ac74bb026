// The C API called as C callers call it: compile, offline check, and the runtime over a fake driver.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/capi/ptxgate.h"
#include "ptxgate/contract/checked.hpp"
#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/toolchain/toolkit.hpp"
#include "runtime_fake_driver.hpp"
#include "capi_test_support.hpp"

using ptxgate::runtime::testing::fake_state;
using Diags = ptxgate::testing::CapiDiagnostics;
using ptxgate::testing::buffer;
using ptxgate::testing::f32_bits;
using ptxgate::testing::pointer;
using ptxgate::testing::scalar;

namespace {

const char* const kSaxpy = R"(@workgroup(256)
kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
)";

ptxgate_compile_options ptx_only() {
  ptxgate_compile_options o;
  ptxgate_compile_options_init(&o);
  o.cubin = 0;
  o.disk_cache = 0;
  return o;
}

}  // namespace

TEST_CASE("capi: the library answers the header's API version") {
  CHECK(ptxgate_api_version() == PTXGATE_CAPI_VERSION);
  CHECK(std::string(ptxgate_library_version()).find('.') != std::string::npos);
}

TEST_CASE("capi: compile gives PTX and each kernel's signature as JSON") {
  auto o = ptx_only();
  o.target = "sm_80";
  ptxgate_module* m = nullptr;
  Diags d;
  REQUIRE_MESSAGE(ptxgate_compile(kSaxpy, std::strlen(kSaxpy), "saxpy.pg", &o, &m, d.out()) == PTXGATE_OK, d.text());
  CHECK(ptxgate_diagnostics_count(d.list) == 0);
  CHECK(std::string(ptxgate_module_ptx(m)).find(".entry saxpy") != std::string::npos);
  CHECK(std::string(ptxgate_module_ptx(m)).find(".target sm_80") != std::string::npos);
  CHECK(std::string(ptxgate_module_target(m)) == "sm_80");
  size_t cubin_size = 1;
  ptxgate_module_cubin(m, &cubin_size);
  CHECK(cubin_size == 0);
  auto kernels = nlohmann::json::parse(ptxgate_module_kernels_json(m));
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["name"] == "saxpy");
  REQUIRE(kernels[0]["params"].size() == 4);
  CHECK(kernels[0]["params"][0]["kind"] == "buffer");
  CHECK(kernels[0]["params"][0]["type"] == "f32");
  CHECK(kernels[0]["params"][0]["access"] == "inout");
  CHECK(kernels[0]["params"][3]["type"] == "u32");
  CHECK(kernels[0]["required_block"] == nlohmann::json::array({256, 1, 1}));
  CHECK(kernels[0]["resources"].is_null());
  ptxgate_module_free(m);
}

TEST_CASE("capi: compile applies the runtime's target policy: sm_90 becomes sm_90a for Hopper's operations") {
  const char* hopper = R"(@workgroup(128)
kernel k(out y: f32[]) {
  shared bars: u64[1];
  if (thread_id.x == 0) { mbarrier_init(bars, 0, 1); }
  barrier();
  y[thread_id.x] = 1.0;
}
)";
  auto o = ptx_only();  // the default target, sm_90
  ptxgate_module* m = nullptr;
  Diags d;
  REQUIRE_MESSAGE(ptxgate_compile(hopper, std::strlen(hopper), "h.pg", &o, &m, d.out()) == PTXGATE_OK, d.text());
  CHECK(std::string(ptxgate_module_target(m)) == "sm_90a");
  CHECK(std::string(ptxgate_module_ptx(m)).find(".target sm_90a") != std::string::npos);
  ptxgate_module_free(m);
  m = nullptr;
  // A module without Hopper operations keeps sm_90; another target still refuses them (PG1350 at the operation).
  REQUIRE(ptxgate_compile(kSaxpy, std::strlen(kSaxpy), "saxpy.pg", &o, &m, d.out()) == PTXGATE_OK);
  CHECK(std::string(ptxgate_module_target(m)) == "sm_90");
  ptxgate_module_free(m);
  m = nullptr;
  o.target = "sm_100";
  CHECK(ptxgate_compile(hopper, std::strlen(hopper), "h.pg", &o, &m, d.out()) == PTXGATE_ERROR);
  ptxgate_diagnostic first;
  REQUIRE(ptxgate_diagnostics_get(d.list, 0, &first) == PTXGATE_OK);
  CHECK(std::string(first.code) == "PG1350");
  CHECK(first.line == 4);
  // A name that is not a target is PG2001, as from the code generator.
  o.target = "compute_90";
  CHECK(ptxgate_compile(kSaxpy, std::strlen(kSaxpy), "saxpy.pg", &o, &m, d.out()) == PTXGATE_ERROR);
  REQUIRE(ptxgate_diagnostics_get(d.list, 0, &first) == PTXGATE_OK);
  CHECK(std::string(first.code) == "PG2001");
  CHECK(std::string(first.message).find("'compute_90'") != std::string::npos);
}

TEST_CASE("capi: compile with a cubin reports ptxas's resources") {
  auto toolkit = ptxgate::toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message);
    return;
  }
  auto o = ptx_only();
  o.cubin = 1;
  ptxgate_module* m = nullptr;
  Diags d;
  REQUIRE_MESSAGE(ptxgate_compile(kSaxpy, std::strlen(kSaxpy), nullptr, &o, &m, d.out()) == PTXGATE_OK, d.text());
  size_t size = 0;
  const void* cubin = ptxgate_module_cubin(m, &size);
  REQUIRE(size > 4);
  CHECK(std::memcmp(cubin, "\x7f" "ELF", 4) == 0);
  auto kernels = nlohmann::json::parse(ptxgate_module_kernels_json(m));
  CHECK(kernels[0]["resources"]["registers_per_thread"].get<int>() > 0);
  ptxgate_module_free(m);
}

TEST_CASE("capi: a program error is data: code, severity, location, fix, and every rendering") {
  const char* bad = "kernel k(inout y: f32[]) {\n  y[0] = missing;\n}\n";
  auto o = ptx_only();
  ptxgate_module* m = reinterpret_cast<ptxgate_module*>(0x1);
  Diags d;
  CHECK(ptxgate_compile(bad, std::strlen(bad), "bad.pg", &o, &m, d.out()) == PTXGATE_ERROR);
  CHECK(m == nullptr);
  REQUIRE(ptxgate_diagnostics_count(d.list) >= 1);
  ptxgate_diagnostic first;
  REQUIRE(ptxgate_diagnostics_get(d.list, 0, &first) == PTXGATE_OK);
  CHECK(std::string(first.code) == "PG1101");
  CHECK(first.severity == PTXGATE_SEVERITY_ERROR);
  CHECK(std::string(first.file) == "bad.pg");
  CHECK(first.line == 2);
  CHECK(first.column == 10);
  CHECK(std::string(first.message).find("missing") != std::string::npos);
  CHECK(ptxgate_diagnostics_get(d.list, 99, &first) == PTXGATE_USAGE);
  CHECK(std::string(ptxgate_diagnostics_render(d.list, "text")).find("bad.pg:2:10: error[PG1101]") != std::string::npos);
  auto json = nlohmann::json::parse(ptxgate_diagnostics_render(d.list, "json"));
  CHECK(json[0]["code"] == "PG1101");
  CHECK(nlohmann::json::parse(ptxgate_diagnostics_render(d.list, "sarif"))["version"] == "2.1.0");
  CHECK(ptxgate_diagnostics_render(d.list, "yaml") == nullptr);
  // A caller that does not want the diagnostics passes NULL.
  CHECK(ptxgate_compile(bad, std::strlen(bad), "bad.pg", &o, &m, nullptr) == PTXGATE_ERROR);
}

TEST_CASE("capi: null handles and pointers are PG5002 usage errors, never a crash") {
  Diags d;
  CHECK(ptxgate_compile(kSaxpy, 10, nullptr, nullptr, nullptr, d.out()) == PTXGATE_USAGE);
  CHECK(d.codes() == std::vector<std::string>{"PG5002"});
  ptxgate_module* m = nullptr;
  CHECK(ptxgate_compile(nullptr, 10, nullptr, nullptr, &m, d.out()) == PTXGATE_USAGE);
  CHECK(d.has("PG5002"));
  CHECK(ptxgate_compile_file(nullptr, nullptr, &m, d.out()) == PTXGATE_USAGE);
  CHECK(d.has("PG5002"));
  ptxgate_verdict* v = nullptr;
  CHECK(ptxgate_check(nullptr, &v, d.out()) == PTXGATE_USAGE);
  CHECK(d.has("PG5002"));
  ptxgate_launch_config config{};
  CHECK(ptxgate_kernel_launch(nullptr, &config, nullptr, 0, nullptr, d.out()) == PTXGATE_USAGE);
  CHECK(d.has("PG5002"));
  CHECK(ptxgate_buffer_upload(nullptr, nullptr, 0, d.out()) == PTXGATE_USAGE);
  CHECK(d.has("PG5002"));
  CHECK(ptxgate_diagnostics_count(nullptr) == 0);
  CHECK(ptxgate_module_ptx(nullptr) == nullptr);
  ptxgate_module_free(nullptr);
  ptxgate_verdict_free(nullptr);
  ptxgate_runtime_free(nullptr);
  ptxgate_kernel_free(nullptr);
  ptxgate_buffer_free(nullptr);
  ptxgate_stream_free(nullptr);
  auto o = ptx_only();
  o.opt_level = 7;
  CHECK(ptxgate_compile(kSaxpy, std::strlen(kSaxpy), nullptr, &o, &m, d.out()) == PTXGATE_USAGE);
  CHECK(d.codes() == std::vector<std::string>{"PG5002"});
}

TEST_CASE("capi: check gives the offline verdict through commands::check_offline") {
  auto toolkit = ptxgate::toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message);
    return;
  }
  auto cache = ptxgate::support::TempDir::create_in_tmp("ptxgate-capi-");
  REQUIRE(cache);
  const std::string cache_dir = cache->path().string();
  ptxgate_check_request r{};
  r.input = PTXGATE_SOURCE_DIR "/examples/saxpy.pg";
  r.kernel = "saxpy";
  r.grid = "100";
  r.block = "512";
  r.profile = "h100-sxm";
  r.cache_dir = cache_dir.c_str();
  ptxgate_verdict* v = nullptr;
  Diags d;
  REQUIRE_MESSAGE(ptxgate_check(&r, &v, d.out()) == PTXGATE_OK, d.text());
  CHECK(ptxgate_verdict_launchable(v) == 0);
  ptxgate_diagnostics* verdict_diags = ptxgate_verdict_diagnostics(v);
  std::vector<std::string> codes;
  for (size_t i = 0; i < ptxgate_diagnostics_count(verdict_diags); ++i) {
    ptxgate_diagnostic one;
    REQUIRE(ptxgate_diagnostics_get(verdict_diags, i, &one) == PTXGATE_OK);
    codes.emplace_back(one.code);
  }
  CHECK(std::find(codes.begin(), codes.end(), "PG3105") != codes.end());
  CHECK(std::string(ptxgate_verdict_summary(v)).starts_with("verdict: status=blocked"));
  auto json = nlohmann::json::parse(ptxgate_verdict_json(v));
  CHECK(json["launchable"] == false);
  ptxgate_verdict_free(v);

  // The argument table and elements use check's one grammar.
  const char* args[] = {"y=buffer:400", "x=buffer:4000", "a=2.0", "n=1000"};
  const char* elements[] = {"y=1000"};
  r.block = nullptr;
  r.args = args;
  r.arg_count = 4;
  r.elements = elements;
  r.element_count = 1;
  REQUIRE(ptxgate_check(&r, &v, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_verdict_launchable(v) == 0);
  CHECK(std::string(ptxgate_diagnostics_render(ptxgate_verdict_diagnostics(v), "text")).find("PG3008") != std::string::npos);
  ptxgate_verdict_free(v);

  // A malformed option is a usage stop without a verdict.
  r.grid = "ten";
  v = reinterpret_cast<ptxgate_verdict*>(0x1);
  CHECK(ptxgate_check(&r, &v, d.out()) == PTXGATE_USAGE);
  CHECK(v == nullptr);
  CHECK(d.codes() == std::vector<std::string>{"PG5004"});
}

TEST_CASE("capi: the runtime over a fake driver binds, validates and launches; foreign streams are borrowed") {
  ptxgate::testing::FakeCapiRuntime fake;
  ptxgate_runtime* rt = fake.rt;
  Diags d;
  CHECK(std::string(ptxgate_runtime_target(rt)) == "sm_90");
  CHECK(ptxgate_runtime_device(rt) == 0);
  ptxgate_kernel* k = nullptr;
  REQUIRE_MESSAGE(ptxgate_runtime_compile(rt, kSaxpy, std::strlen(kSaxpy), "saxpy.pg", "saxpy", &k, d.out()) == PTXGATE_OK,
                  d.text());
  auto info = nlohmann::json::parse(ptxgate_kernel_json(k));
  CHECK(info["params"].size() == 4);
  CHECK(info["resources"]["registers_per_thread"].is_number());

  ptxgate_buffer *y = nullptr, *x = nullptr;
  REQUIRE(ptxgate_buffer_allocate(rt, 4000, &y, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_buffer_allocate(rt, 4000, &x, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_buffer_size(y) == 4000);
  std::vector<float> host(1000, 1.0f);
  CHECK(ptxgate_buffer_upload(y, host.data(), 4000, d.out()) == PTXGATE_OK);
  CHECK(fake_state().count("cuMemcpyHtoD") == 1);
  CHECK(ptxgate_buffer_upload(y, host.data(), 4004, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3008"));
  CHECK(ptxgate_buffer_download(y, host.data(), 4000, d.out()) == PTXGATE_OK);

  ptxgate_launch_config config{};
  config.grid[0] = 4;
  config.grid[1] = config.grid[2] = 1;
  fake_state().param_sizes = {8, 8, 4, 4};
  const uint64_t raw = ptxgate_buffer_device_pointer(x);
  ptxgate_arg args[] = {buffer(y, PTXGATE_DTYPE_F32, 1000), pointer(raw, PTXGATE_DTYPE_F32, 1000, 0),
                        scalar(PTXGATE_DTYPE_F32, f32_bits(2.0f)), scalar(PTXGATE_DTYPE_I64, 1000)};
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, args, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().launches == 1);
  CHECK(fake_state().last_block[0] == 256);  // the kernel's @workgroup
  CHECK(fake_state().last_params[0] == ptxgate_buffer_device_pointer(y));
  CHECK(fake_state().last_params[1] == raw);
  CHECK(fake_state().last_params[2] == f32_bits(2.0f));
  CHECK(fake_state().last_params[3] == 1000);  // an i64 that fits converts to the u32 parameter

  SUBCASE("a foreign stream is launched on and never destroyed") {
    ptxgate_stream* s = nullptr;
    REQUIRE(ptxgate_stream_wrap(rt, 0x7700, &s, d.out()) == PTXGATE_OK);
    CHECK(ptxgate_stream_handle(s) == 0x7700);
    REQUIRE(ptxgate_kernel_launch(k, &config, args, 4, s, d.out()) == PTXGATE_OK);
    CHECK(fake_state().last_stream == reinterpret_cast<CUstream>(0x7700));
    CHECK(ptxgate_stream_synchronize(s, d.out()) == PTXGATE_OK);
    ptxgate_stream_free(s);
    CHECK(fake_state().count("cuStreamDestroy") == 0);
    // A wrapped 0 is the legacy default stream (PyTorch's default stream).
    REQUIRE(ptxgate_stream_wrap(rt, 0, &s, d.out()) == PTXGATE_OK);
    REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, args, 4, s, d.out()) == PTXGATE_OK, d.text());
    CHECK(fake_state().last_stream == nullptr);
    const size_t context_syncs = fake_state().count("cuCtxSynchronize");
    CHECK(ptxgate_stream_synchronize(s, d.out()) == PTXGATE_OK);
    CHECK(fake_state().count("cuCtxSynchronize") == context_syncs + 1);
    ptxgate_stream_free(s);
    ptxgate_stream* own = nullptr;
    REQUIRE(ptxgate_stream_create(rt, &own, d.out()) == PTXGATE_OK);
    ptxgate_stream_free(own);
    CHECK(fake_state().count("cuStreamDestroy") == 1);
  }
  SUBCASE("the caller's element type, device and element count are checked before the driver") {
    const int before = fake_state().launches;
    ptxgate_arg wrong_type[] = {args[0], pointer(raw, PTXGATE_DTYPE_F64, 500, 0), args[2], args[3]};
    CHECK(ptxgate_kernel_launch(k, &config, wrong_type, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.codes() == std::vector<std::string>{"PG3010"});  // as Kernel::launch says it in C++
    CHECK(d.text().find("an array of f64 elements for a buffer of f32") != std::string::npos);
    ptxgate_arg wrong_device[] = {args[0], pointer(raw, PTXGATE_DTYPE_F32, 1000, 1), args[2], args[3]};
    CHECK(ptxgate_kernel_launch(k, &config, wrong_device, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.codes() == std::vector<std::string>{"PG4008"});
    ptxgate_arg too_many[] = {buffer(y, PTXGATE_DTYPE_F32, 1001), args[1], args[2], args[3]};
    CHECK(ptxgate_kernel_launch(k, &config, too_many, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.codes() == std::vector<std::string>{"PG3008"});
    ptxgate_arg bad_kind[] = {args[0], args[1], args[2], args[3]};
    bad_kind[2].kind = 9;
    CHECK(ptxgate_kernel_launch(k, &config, bad_kind, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.codes() == std::vector<std::string>{"PG5002"});
    CHECK(fake_state().launches == before);
  }
  SUBCASE("the backend's own checks run on C arguments: a double for an f32 scalar, a block past @workgroup") {
    const int before = fake_state().launches;
    ptxgate_arg wide[] = {args[0], args[1], scalar(PTXGATE_DTYPE_F64, 0x4000000000000000ull), args[3]};
    CHECK(ptxgate_kernel_launch(k, &config, wide, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.has("PG3007"));
    ptxgate_launch_config big = config;
    big.block[0] = 512;
    big.block[1] = big.block[2] = 1;
    CHECK(ptxgate_kernel_check(k, &big, args, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.has("PG3105"));
    CHECK(ptxgate_kernel_launch(k, &big, args, 3, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.has("PG3005"));
    CHECK(ptxgate_kernel_check(k, &config, args, 4, nullptr, d.out()) == PTXGATE_OK);
    CHECK(fake_state().launches == before);
  }

  ptxgate_buffer_free(y);
  ptxgate_buffer_free(x);
  ptxgate_kernel_free(k);
  CHECK(ptxgate_runtime_synchronize(rt, d.out()) == PTXGATE_OK);
}

TEST_CASE("capi: the scalars a kernel's memory-safety proof uses are read by value; require_memory_proof") {
  Diags d;
  {
    ptxgate::testing::FakeCapiRuntime fake;
    ptxgate_kernel* k = nullptr;
    REQUIRE(ptxgate_runtime_compile(fake.rt, kSaxpy, std::strlen(kSaxpy), "saxpy.pg", "saxpy", &k, d.out()) == PTXGATE_OK);
    ptxgate_buffer *y = nullptr, *x = nullptr;
    REQUIRE(ptxgate_buffer_allocate(fake.rt, 4000, &y, d.out()) == PTXGATE_OK);
    REQUIRE(ptxgate_buffer_allocate(fake.rt, 4000, &x, d.out()) == PTXGATE_OK);
    ptxgate_launch_config config{};
    config.grid[0] = 4;  // 1024 threads over 1000 floats: in bounds for n = 1000 only
    config.grid[1] = config.grid[2] = 1;
    ptxgate_arg in_bounds[] = {buffer(y), buffer(x), scalar(PTXGATE_DTYPE_F32, f32_bits(2.0f)),
                               scalar(PTXGATE_DTYPE_U32, 1000)};
    ptxgate_arg past[] = {buffer(y), buffer(x), scalar(PTXGATE_DTYPE_F32, f32_bits(2.0f)),
                          scalar(PTXGATE_DTYPE_U32, 1024)};
    REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, in_bounds, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
    const int launches = fake_state().launches;
    CHECK(ptxgate_kernel_launch(k, &config, past, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.has("PG3801"));
    CHECK(ptxgate_kernel_check(k, &config, past, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.has("PG3801"));
    CHECK(fake_state().launches == launches);
    ptxgate_buffer_free(y);
    ptxgate_buffer_free(x);
    ptxgate_kernel_free(k);
  }
  {
    ptxgate::testing::FakeCapiRuntime strict(/*require_memory_proof=*/true);
    const char* gather = "kernel gather(out y: f32[], in idx: u32[], in x: f32[], n: u32) {\n"
                         "  let i = global_id.x;\n  if (i < n) { y[i] = x[idx[i]]; }\n}\n";
    ptxgate_kernel* k = nullptr;
    REQUIRE(ptxgate_runtime_compile(strict.rt, gather, std::strlen(gather), "gather.pg", "gather", &k, d.out()) ==
            PTXGATE_OK);
    ptxgate_buffer *y = nullptr, *idx = nullptr, *x = nullptr;
    for (ptxgate_buffer** b : {&y, &idx, &x}) REQUIRE(ptxgate_buffer_allocate(strict.rt, 256, b, d.out()) == PTXGATE_OK);
    ptxgate_launch_config config{};
    config.grid[0] = config.grid[1] = config.grid[2] = 1;
    config.block[0] = 64;
    config.block[1] = config.block[2] = 1;
    ptxgate_arg args[] = {buffer(y), buffer(idx), buffer(x), scalar(PTXGATE_DTYPE_U32, 64)};
    CHECK(ptxgate_kernel_launch(k, &config, args, 4, nullptr, d.out()) == PTXGATE_ERROR);
    CHECK(d.has("PG3802"));
    CHECK(fake_state().launches == 0);
    for (ptxgate_buffer* b : {y, idx, x}) ptxgate_buffer_free(b);
    ptxgate_kernel_free(k);
  }
}

TEST_CASE("capi: a checked runtime passes the buffers' lengths and a record, and reports a violation as PG3804") {
  ptxgate::testing::FakeCapiRuntime fake(/*require_memory_proof=*/false, /*checked=*/true);
  Diags d;
  // x[idx[i]] depends on the data: not provable, so the launch goes ahead and its guard decides.
  const char* gather = "@workgroup(256)\nkernel gather(out y: f32[], in idx: u32[], in x: f32[], n: u32) {\n"
                       "  let i = global_id.x;\n  if (i < n) { y[i] = x[idx[i]]; }\n}\n";
  ptxgate_kernel* k = nullptr;
  REQUIRE_MESSAGE(ptxgate_runtime_compile(fake.rt, gather, std::strlen(gather), "gather.pg", "gather", &k, d.out()) ==
                      PTXGATE_OK,
                  d.text());
  auto info = nlohmann::json::parse(ptxgate_kernel_json(k));
  REQUIRE(info.contains("checked"));
  ptxgate_buffer *y = nullptr, *idx = nullptr, *x = nullptr;
  REQUIRE(ptxgate_buffer_allocate(fake.rt, 4000, &y, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_buffer_allocate(fake.rt, 4000, &idx, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_buffer_allocate(fake.rt, 2000, &x, d.out()) == PTXGATE_OK);
  ptxgate_launch_config config{};
  config.grid[0] = 4;
  config.grid[1] = config.grid[2] = 1;
  fake_state().model_memory = true;
  fake_state().param_sizes = {8, 8, 8, 4, 8, 8, 8, 8};
  ptxgate_arg args[] = {buffer(y), buffer(idx), buffer(x), scalar(PTXGATE_DTYPE_U32, 1000)};
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, args, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
  REQUIRE(fake_state().last_params.size() == 8);
  CHECK(fake_state().last_params[4] == 4000);  // y's length in bytes
  CHECK(fake_state().last_params[5] == 4000);  // idx's
  CHECK(fake_state().last_params[6] == 2000);  // x's
  const uint64_t record = fake_state().last_params[7];
  REQUIRE(record != 0);
  // What the kernel would write for thread 244 of block 1 reading x[700] (x holds 500 floats).
  uint32_t site = UINT32_MAX;
  for (const auto& s : info["checked"]["sites"])
    if (s["operation"] == "x[idx[i]]") site = s["id"].get<uint32_t>();
  REQUIRE(site != UINT32_MAX);
  ptxgate::contract::CheckedRecord r;
  r.count = 1;
  r.site = site;
  r.reason = static_cast<uint32_t>(ptxgate::contract::Violation::out_of_bounds);
  r.thread = {244, 0, 0};
  r.block = {1, 0, 0};
  r.value = 700;
  r.limit = 2000;
  const auto bytes = r.encode();
  fake_state().write_memory(record, bytes.data(), bytes.size());
  CHECK(ptxgate_runtime_synchronize(fake.rt, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3804"));
  CHECK_MESSAGE(d.text().find("x[idx[i]] would read buffer 'x' out of bounds: thread (244, 0, 0) of block (1, 0, 0)") !=
                    std::string::npos,
                d.text());
  // Reported once; the runtime goes on.
  Diags again;
  CHECK(ptxgate_runtime_synchronize(fake.rt, again.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_kernel_launch(k, &config, args, 4, nullptr, again.out()) == PTXGATE_OK);
  for (ptxgate_buffer* b : {y, idx, x}) ptxgate_buffer_free(b);
  ptxgate_kernel_free(k);
}

TEST_CASE("capi: without a driver the runtime is PG4001 as data") {
  ptxgate::runtime::testing::reset_fake_state();
  static ptxgate::runtime::DriverApi api = ptxgate::runtime::testing::make_fake_driver();
  fake_state().fail["cuDevicePrimaryCtxRetain"] = CUDA_ERROR_INVALID_VALUE;
  ptxgate::runtime::install_driver_for_testing(&api);
  ptxgate_runtime* rt = reinterpret_cast<ptxgate_runtime*>(0x1);
  Diags d;
  CHECK(ptxgate_runtime_create(nullptr, &rt, d.out()) == PTXGATE_ERROR);
  CHECK(rt == nullptr);
  CHECK(ptxgate_diagnostics_count(d.list) >= 1);
  ptxgate::runtime::install_driver_for_testing(nullptr);
  ptxgate::runtime::testing::reset_fake_state();
}
