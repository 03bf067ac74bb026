// Unit tests for running ptxas from the module cache: cubin production and its failure diagnostics.
#include <doctest/doctest.h>

#include <unistd.h>

#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "module_cache_test_support.hpp"

using namespace ptxgate::module_cache;
using namespace ptxgate::module_cache::testing;
using ptxgate::diag::Code;

namespace {

const char* kStorePtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry store_tid(
	.param .u64 store_tid_param_0
)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [store_tid_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	st.global.u32 [%rd2], %r1;
	ret;
}
)";

bool have_ptxas() {
  if (::access(PTXGATE_PTXAS, X_OK) == 0) return true;
  MESSAGE("skipped: no ptxas at " << PTXGATE_PTXAS);
  return false;
}

}  // namespace

TEST_CASE("ptxas cache step: valid PTX gives an ELF cubin and a resource report") {
  if (!have_ptxas()) return;
  std::string log;
  auto cubin = run_ptxas(kStorePtx, "sm_90", PTXGATE_PTXAS, log);
  REQUIRE(cubin.has_value());
  CHECK(cubin->substr(0, 4) == "\x7f" "ELF");
  CHECK(log.find("store_tid") != std::string::npos);
  CHECK(log.find("registers") != std::string::npos);
}

TEST_CASE("ptxas cache step: rejected PTX is PG2004 with ptxas's message") {
  if (!have_ptxas()) return;
  std::string broken = kStorePtx;
  broken.replace(broken.find("mov.u32"), 7, "mov.bogus");
  std::string log;
  auto cubin = run_ptxas(broken, "sm_90", PTXGATE_PTXAS, log);
  REQUIRE_FALSE(cubin.has_value());
  REQUIRE(cubin.error().size() == 1);
  CHECK(cubin.error().items()[0].code == Code::ptxas_failure);
  CHECK(cubin.error().items()[0].message.find("sm_90") != std::string::npos);
  CHECK(cubin.error().items()[0].message.find("bogus") != std::string::npos);
}

TEST_CASE("ptxas cache step: a missing ptxas is PG2005 naming the path") {
  std::string log;
  auto cubin = run_ptxas(kStorePtx, "sm_90", "/nonexistent/cuda/bin/ptxas", log);
  REQUIRE_FALSE(cubin.has_value());
  CHECK(cubin.error().items()[0].code == Code::ptxas_missing);
  CHECK(cubin.error().items()[0].message.find("/nonexistent/cuda/bin/ptxas") != std::string::npos);
  CHECK_FALSE(cubin.error().items()[0].fix.empty());
}

TEST_CASE("ptxas cache step: compile_to_entry fills PTX, cubin, kernels and parsed resources") {
  if (!have_ptxas()) return;
  ptxgate::diag::SourceFile file("saxpy.pg", R"(@workgroup(256)
kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
)");
  auto loaded = ptxgate::ir::load_module(file);
  REQUIRE(loaded.has_value());
  CompileRequest request;
  request.codegen.target = "sm_90";
  request.ptxas = PTXGATE_PTXAS;
  auto entry = compile_to_entry(loaded->module, request);
  REQUIRE(entry.has_value());
  CHECK(entry->target_arch == "sm_90");
  CHECK(entry->ptx.find(".target sm_90") != std::string::npos);
  CHECK(entry->cubin.substr(0, 4) == "\x7f" "ELF");
  REQUIRE(entry->kernels.size() == 1);
  CHECK(entry->kernels[0].name == "saxpy");
  auto res = kernel_resources(*entry, "saxpy");
  REQUIRE(res.has_value());
  CHECK(res->registers_per_thread > 0);
  CHECK(res->max_threads_per_block == 256);
  CHECK_FALSE(kernel_resources(*entry, "missing").has_value());

  request.produce_cubin = false;
  auto ptx_only = compile_to_entry(loaded->module, request);
  REQUIRE(ptx_only.has_value());
  CHECK(ptx_only->cubin.empty());
  CHECK(ptx_only->ptx == entry->ptx);
  CHECK_FALSE(kernel_resources(*ptx_only, "saxpy").has_value());
  CHECK(derive_key(key_inputs_for(loaded->module, request)) !=
        derive_key(key_inputs_for(loaded->module, CompileRequest{request.codegen, true, PTXGATE_PTXAS, ""})));
}

TEST_CASE("ptxas cache step: kernel_resources round-trips resources_to_json") {
  ptxgate::validation::KernelResources r;
  r.registers_per_thread = 37;
  r.static_shared_bytes = 4096;
  r.local_bytes = 16;
  r.max_threads_per_block = 512;
  r.barriers = 1;
  CacheEntry entry;
  entry.resources["k"] = resources_to_json(r);
  entry.resources["broken"] = {{"registers_per_thread", "many"}};
  auto back = kernel_resources(entry, "k");
  REQUIRE(back.has_value());
  CHECK(back->registers_per_thread == 37);
  CHECK(back->static_shared_bytes == 4096);
  CHECK(back->local_bytes == 16);
  CHECK(back->max_threads_per_block == 512);
  CHECK(back->barriers == 1);
  CHECK_FALSE(kernel_resources(entry, "broken").has_value());
}
