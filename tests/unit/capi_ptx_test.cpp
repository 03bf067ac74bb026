// The C API over PTX from other compilers: read its entries offline, load one in a runtime (fake
// driver) and launch it through the guarded path with signature-derived checks.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/capi/ptxgate.h"
#include "runtime_fake_driver.hpp"
#include "capi_test_support.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "toolkit_test_support.hpp"

using ptxgate::runtime::testing::fake_state;
using Diags = ptxgate::testing::CapiDiagnostics;
using ptxgate::testing::ptx_fixture;

namespace {

ptxgate_arg pointer(uint64_t p, ptxgate_dtype type, uint64_t elements) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_POINTER;
  a.dtype = type;
  a.device = 0;
  a.pointer = p;
  a.elements = elements;
  return a;
}

ptxgate_arg scalar(ptxgate_dtype type, uint64_t bits) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_SCALAR;
  a.dtype = type;
  a.device = -1;
  a.bits = bits;
  return a;
}

}  // namespace

TEST_CASE("capi ptx: read_ptx gives each entry's derived signature as JSON") {
  const std::string ptx = ptx_fixture("nvcc_saxpy.ptx");
  ptxgate_module* m = nullptr;
  Diags d;
  REQUIRE_MESSAGE(ptxgate_read_ptx(ptx.data(), ptx.size(), "saxpy.ptx", &m, d.out()) == PTXGATE_OK, d.text());
  CHECK(std::string(ptxgate_module_target(m)) == "sm_80");
  CHECK(std::string(ptxgate_module_ptx(m)) == ptx);
  auto kernels = nlohmann::json::parse(ptxgate_module_kernels_json(m));
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["name"] == "_Z5saxpyifPKfPf");
  CHECK(kernels[0]["params"][0]["type"] == "u32");
  CHECK(kernels[0]["params"][2]["kind"] == "buffer");
  CHECK(kernels[0]["params"][2]["type"] == "void");
  CHECK(kernels[0]["resources"].is_null());
  ptxgate_module_free(m);

  const std::string not_ptx = "kernel k() {}";
  CHECK(ptxgate_read_ptx(not_ptx.data(), not_ptx.size(), "k.ptx", &m, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG1004");
  CHECK(m == nullptr);
}

TEST_CASE("capi ptx: an entry with a struct parameter is left out with a warning; the others stay") {
  const std::string ptx = ".version 8.0\n.target sm_80\n.entry s(.param .align 8 .b8 s_param_0[16]) { ret; }\n"
                          ".entry k(.param .u64 .ptr k_param_0) { ret; }\n";
  ptxgate_module* m = nullptr;
  Diags d;
  REQUIRE(ptxgate_read_ptx(ptx.data(), ptx.size(), "two.ptx", &m, d.out()) == PTXGATE_OK);
  CHECK(d.first_code() == "PG3007");
  ptxgate_diagnostic first;
  REQUIRE(ptxgate_diagnostics_get(d.list, 0, &first) == PTXGATE_OK);
  CHECK(first.severity == PTXGATE_SEVERITY_WARNING);
  auto kernels = nlohmann::json::parse(ptxgate_module_kernels_json(m));
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["name"] == "k");
  ptxgate_module_free(m);
}

TEST_CASE("capi ptx: foreign kernels load in the runtime and launch through the same checks (fake driver)") {
  ptxgate::testing::FakeCapiRuntime fake;
  ptxgate_runtime* rt = fake.rt;
  Diags d;

  const std::string saxpy = ptx_fixture("nvcc_saxpy.ptx");
  ptxgate_kernel* k = nullptr;
  REQUIRE_MESSAGE(ptxgate_runtime_load_ptx(rt, saxpy.data(), saxpy.size(), "saxpy.ptx", "_Z5saxpyifPKfPf", &k, d.out()) ==
                      PTXGATE_OK,
                  d.text());
  ptxgate_launch_config config{};
  config.grid[0] = config.grid[1] = config.grid[2] = 1;
  float two = 2.0f;
  uint32_t two_bits;
  std::memcpy(&two_bits, &two, 4);
  fake_state().param_sizes = {4, 4, 8, 8};
  // Pointers of unknown element type take an array of any dtype.
  ptxgate_arg args[] = {scalar(PTXGATE_DTYPE_I64, 1000), scalar(PTXGATE_DTYPE_F32, two_bits),
                        pointer(0x9000, PTXGATE_DTYPE_F32, 1000), pointer(0xA000, PTXGATE_DTYPE_F64, 1000)};
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, args, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().launches == 1);
  CHECK(fake_state().last_params[0] == 1000);
  CHECK(fake_state().last_params[1] == two_bits);
  CHECK(fake_state().last_params[2] == 0x9000);
  CHECK(fake_state().last_params[3] == 0xA000);
  CHECK(fake_state().last_block[0] == 256);  // no .reqntid: the library's default block

  // The derived signature is enforced: a scalar where PTX has a pointer, a missing argument.
  ptxgate_arg swapped[] = {args[0], args[1], scalar(PTXGATE_DTYPE_U64, 0x9000), args[3]};
  CHECK(ptxgate_kernel_launch(k, &config, swapped, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG3006");
  CHECK(ptxgate_kernel_launch(k, &config, args, 3, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG3005");
  ptxgate_arg null_pointer[] = {args[0], args[1], pointer(0, PTXGATE_DTYPE_F32, 0), args[3]};
  CHECK(ptxgate_kernel_launch(k, &config, null_pointer, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG3009");
  CHECK(fake_state().launches == 1);
  ptxgate_kernel_free(k);

  // Triton's .reqntid fixes the block: the default is 128, another block is PG3105.
  const std::string triton = ptx_fixture("triton_add.ptx");
  REQUIRE_MESSAGE(ptxgate_runtime_load_ptx(rt, triton.data(), triton.size(), "add.ptx", "add_kernel", &k, d.out()) ==
                      PTXGATE_OK,
                  d.text());
  auto info = nlohmann::json::parse(ptxgate_kernel_json(k));
  CHECK(info["required_block"] == nlohmann::json::array({128, 1, 1}));
  fake_state().param_sizes = {8, 8, 8, 4, 8};
  ptxgate_arg add_args[] = {pointer(0x9000, PTXGATE_DTYPE_F32, 1024), pointer(0x9000, PTXGATE_DTYPE_F32, 1024),
                            pointer(0x9000, PTXGATE_DTYPE_F32, 1024), scalar(PTXGATE_DTYPE_I64, 1024),
                            pointer(0xB000, PTXGATE_DTYPE_UNKNOWN, 0)};
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, add_args, 5, nullptr, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().last_block[0] == 128);
  ptxgate_launch_config wide = config;
  wide.block[0] = 256;
  wide.block[1] = wide.block[2] = 1;
  CHECK(ptxgate_kernel_launch(k, &wide, add_args, 5, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG3105");
  ptxgate_kernel_free(k);

  // A missing entry and PTX for a newer architecture than the device.
  CHECK(ptxgate_runtime_load_ptx(rt, triton.data(), triton.size(), "add.ptx", "sub_kernel", &k, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG2006");
  const std::string newer = ".version 8.7\n.target sm_100a\n.entry k() { ret; }\n";
  CHECK(ptxgate_runtime_load_ptx(rt, newer.data(), newer.size(), "new.ptx", "k", &k, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG2001");
}

TEST_CASE("capi ptx: a cubin reads with its own resources and loads with a signature (fake driver, sm_90)") {
  auto toolkit = ptxgate::testing::toolkit_with_ptxas();
  if (!toolkit) return;
  auto assembled = ptxgate::toolchain::assemble(ptx_fixture("nvcc_saxpy.ptx"), "sm_90", *toolkit);
  REQUIRE(assembled);
  const std::string& cubin = assembled->cubin;
  ptxgate_module* m = nullptr;
  Diags d;
  REQUIRE_MESSAGE(ptxgate_read_ptx(cubin.data(), cubin.size(), "saxpy.cubin", &m, d.out()) == PTXGATE_OK, d.text());
  CHECK(std::string(ptxgate_module_target(m)) == "sm_90");
  auto kernels = nlohmann::json::parse(ptxgate_module_kernels_json(m));
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["params"][0]["name"] == "param0");
  CHECK(kernels[0]["params"][0]["type"] == "u32");
  CHECK(kernels[0]["params"][3]["kind"] == "buffer");
  CHECK(kernels[0]["resources"]["registers_per_thread"] ==
        assembled->resources.at("_Z5saxpyifPKfPf").registers_per_thread);
  ptxgate_module_free(m);

  ptxgate::testing::FakeCapiRuntime fake;
  ptxgate_runtime* rt = fake.rt;
  ptxgate_kernel* k = nullptr;
  REQUIRE_MESSAGE(ptxgate_runtime_load_module(rt, cubin.data(), cubin.size(), "saxpy.cubin", "_Z5saxpyifPKfPf",
                                              "i32, f32, f32[], f32[]", &k, d.out()) == PTXGATE_OK,
                  d.text());
  CHECK(fake_state().cubin_loads == 1);  // the cubin itself, not a JIT of PTX
  CHECK(fake_state().ptx_loads == 0);
  ptxgate_launch_config config{};
  config.grid[0] = config.grid[1] = config.grid[2] = 1;
  fake_state().param_sizes = {4, 4, 8, 8};
  ptxgate_arg args[] = {scalar(PTXGATE_DTYPE_I32, 1000), scalar(PTXGATE_DTYPE_F32, 0x40000000),
                        pointer(0x9000, PTXGATE_DTYPE_F32, 1000), pointer(0xA000, PTXGATE_DTYPE_F32, 1000)};
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &config, args, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().launches == 1);
  // The signature's element types are enforced: an array of f64 for an f32 buffer.
  ptxgate_arg wrong[] = {args[0], args[1], args[2], pointer(0xA000, PTXGATE_DTYPE_F64, 1000)};
  CHECK(ptxgate_kernel_launch(k, &config, wrong, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG3010");  // the element-type mismatch, as the C++ binder says it
  ptxgate_kernel_free(k);

  // A signature of the wrong size, and a cubin for an architecture the device cannot run.
  CHECK(ptxgate_runtime_load_module(rt, cubin.data(), cubin.size(), "saxpy.cubin", "_Z5saxpyifPKfPf",
                                    "i32, f64, f32[], f32[]", &k, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG3007");
  auto for_80 = ptxgate::toolchain::assemble(ptx_fixture("nvcc_saxpy.ptx"), "sm_80", *toolkit);
  REQUIRE(for_80);
  CHECK(ptxgate_runtime_load_module(rt, for_80->cubin.data(), for_80->cubin.size(), "saxpy80.cubin", "_Z5saxpyifPKfPf",
                                    nullptr, &k, d.out()) == PTXGATE_ERROR);
  CHECK(d.first_code() == "PG2001");
  CHECK(k == nullptr);
}
