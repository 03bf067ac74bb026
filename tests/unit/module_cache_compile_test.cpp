// Unit tests for compiling into cache entries: the toolkit behind the key, compile_to_entry, stored resources.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "module_cache_test_support.hpp"
#include "scoped_env.hpp"

using namespace ptxgate::module_cache;
using namespace ptxgate::module_cache::testing;
using ptxgate::testing::ScopedEnv;
using ptxgate::diag::Code;

namespace {

bool have_ptxas() {
  if (::access(PTXGATE_PTXAS, X_OK) == 0) return true;
  MESSAGE("skipped: no ptxas at " << PTXGATE_PTXAS);
  return false;
}

ptxgate::ir::Module math_module() {
  auto loaded = ptxgate::ir::load_module(ptxgate::diag::SourceFile("math.pg", R"(@workgroup(64)
kernel waves(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = sin(y[i]) + exp(y[i]); }
}
)"));
  REQUIRE(loaded.has_value());
  return std::move(loaded->module);
}

/// `<root>/nvvm/libdevice/libdevice.10.bc` holding `bytes`.
void make_libdevice(const std::filesystem::path& root, const std::string& bytes) {
  auto dir = root / "nvvm" / "libdevice";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "libdevice.10.bc", std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("cache key: hashes the libdevice the compile links, also when $CUDA_HOME has no nvvm/") {
  // Before toolchain::discover, the key looked only in $CUDA_HOME and hashed a "missing:" marker
  // while codegen fell back to the build-time toolkit's libdevice and linked that.
  const auto as_found = ptxgate::toolchain::discover();
  if (!as_found.libdevice) {
    MESSAGE("skipped: " << as_found.libdevice.error().items()[0].message);
    return;
  }
  auto empty_root = scratch_dir();
  ScopedEnv no_override("PTXGATE_LIBDEVICE", nullptr);
  ScopedEnv cuda_home("CUDA_HOME", empty_root.path().c_str());
  CompileRequest request;
  request.produce_cubin = false;
  const auto toolkit = request.toolkit();
  REQUIRE(toolkit.libdevice.has_value());
  const auto module = math_module();
  const auto inputs = key_inputs_for(module, request, toolkit);
  CHECK_FALSE(inputs.libdevice_hash.starts_with("missing:"));
  auto built = ptxgate::toolchain::build(module, request.codegen, toolkit, /*assemble_cubin=*/false);
  REQUIRE_MESSAGE(built.has_value(), (built ? "" : ptxgate::diag::render_text(built.error())));
  CHECK(built->libdevice_path == *toolkit.libdevice);
  CHECK(inputs.libdevice_hash == libdevice_hash(built->libdevice_path));
}

TEST_CASE("cache key: a different libdevice in the toolkit gives a different key") {
  auto roots = scratch_dir();
  make_libdevice(roots.path() / "a", "BC\xc0\xde libdevice of toolkit a");
  make_libdevice(roots.path() / "b", "BC\xc0\xde libdevice of toolkit b");
  ScopedEnv no_override("PTXGATE_LIBDEVICE", nullptr);
  const auto module = math_module();
  CompileRequest request;
  request.produce_cubin = false;
  auto key_with_root = [&](const std::filesystem::path& root) {
    ScopedEnv cuda_home("CUDA_HOME", root.c_str());
    auto toolkit = request.toolkit();
    REQUIRE(toolkit.libdevice.has_value());
    CHECK(*toolkit.libdevice == (root / "nvvm/libdevice/libdevice.10.bc").string());
    return derive_key(key_inputs_for(module, request, toolkit));
  };
  CHECK(key_with_root(roots.path() / "a") != key_with_root(roots.path() / "b"));
  // A pinned libdevice wins over $CUDA_HOME, and is what the key hashes.
  ScopedEnv cuda_home("CUDA_HOME", (roots.path() / "a").c_str());
  request.codegen.libdevice_path = (roots.path() / "b/nvvm/libdevice/libdevice.10.bc").string();
  CHECK(derive_key(key_inputs_for(module, request, request.toolkit())) == key_with_root(roots.path() / "b"));
}

TEST_CASE("module cache: compile() derives the key from the toolkit it compiles with") {
  const auto module = math_module();
  ModuleCache cache({.memory_capacity = 4, .use_disk = false});
  CompileRequest request;
  request.produce_cubin = false;
  auto first = cache.compile(module, request);
  if (!first) {
    MESSAGE("skipped: " << ptxgate::diag::render_text(first.error()));
    return;
  }
  CHECK(first->outcome == CacheOutcome::compiled);
  CHECK(first->key == derive_key(key_inputs_for(module, request, request.toolkit())));
  auto again = cache.compile(module, request);
  REQUIRE(again.has_value());
  CHECK(again->outcome == CacheOutcome::memory_hit);
  CHECK(again->key == first->key);
}

TEST_CASE("compile_to_entry fills PTX, cubin, kernels and parsed resources") {
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
  auto entry = compile_to_entry(loaded->module, request, request.toolkit());
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
  auto ptx_only = compile_to_entry(loaded->module, request, request.toolkit());
  REQUIRE(ptx_only.has_value());
  CHECK(ptx_only->cubin.empty());
  CHECK(ptx_only->ptx == entry->ptx);
  CHECK_FALSE(kernel_resources(*ptx_only, "saxpy").has_value());
  const CompileRequest with_cubin{request.codegen, true, PTXGATE_PTXAS, ""};
  CHECK(derive_key(key_inputs_for(loaded->module, request, request.toolkit())) !=
        derive_key(key_inputs_for(loaded->module, with_cubin, with_cubin.toolkit())));
}

TEST_CASE("compile_to_entry: kernel_resources round-trips resources_to_json") {
  ptxgate::contract::KernelResources r;
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

TEST_CASE("module cache: the compile budget is part of the key; a module refused under a small one stays refused") {
  // Before, a compile under a large budget published the entry that a later compile under a
  // small budget read back: the same module accepted or refused depending on what ran before.
  ptxgate::diag::SourceFile file("unrolled.pg", R"(
kernel k(inout y: f32[], n: u32) {
  for i in 0..64 unroll { y[i] = y[i] * 2.0; }
}
)");
  auto loaded = ptxgate::ir::load_module(file);
  REQUIRE(loaded.has_value());
  ModuleCache cache({.memory_capacity = 4, .use_disk = false});
  CompileRequest large;
  large.produce_cubin = false;
  CompileRequest small = large;
  small.codegen.instruction_budget = 100;
  CHECK(codegen_options_text(large.codegen) == "opt_level=3;pipeline=kernel-1");  // the default keeps its form
  CHECK(codegen_options_text(small.codegen) == "opt_level=3;pipeline=kernel-1;budget=100");
  auto accepted = cache.compile(loaded->module, large);
  REQUIRE(accepted.has_value());
  auto refused = cache.compile(loaded->module, small);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().items()[0].code == ptxgate::diag::Code::compile_budget_exceeded);
}
