// Unit tests for the compile budget (PG2010): checked after inlining and after optimisation, 0 lifts it.
#include <doctest/doctest.h>

#include <ctime>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/build.hpp"

using namespace ptxgate;

namespace {

ir::Module load(const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile("budget.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  return std::move(loaded->module);
}

codegen::CodegenOptions options_with_budget(uint64_t budget) {
  auto options = toolchain::with_toolkit({}, toolchain::discover());
  options.instruction_budget = budget;
  return options;
}

/// A kernel of `statements` chained math calls: each inlines a libdevice function.
std::string math_chain(int statements) {
  std::string text = "kernel k(out r: f32[], in a: f32[], n: u32) {\n  let i = global_id.x;\n  if (i < n) {\n"
                     "    let v0 = a[i];\n";
  for (int s = 1; s < statements; ++s)
    text += "    let v" + std::to_string(s) + " = sin(v" + std::to_string(s - 1) + ") * 0.5;\n";
  text += "    r[i] = v" + std::to_string(statements - 1) + ";\n  }\n}\n";
  return text;
}

/// Few instructions before optimisation, many after: a constant-trip loop that is fully unrolled.
const char* kUnrolled = R"(
kernel k(out r: f32[], in a: f32[], n: u32) {
  let i = global_id.x;
  var acc = 0.0;
  for k in 0..32 {
    acc = acc * a[i + k] + 1.0;
  }
  r[i] = acc;
}
)";

const diag::Diagnostic* only_budget_error(const std::expected<codegen::CompiledModule, diag::Diagnostics>& result) {
  if (result) return nullptr;
  INFO(diag::render_text(result.error()));
  if (result.error().size() != 1 || result.error().items()[0].code != diag::Code::compile_budget_exceeded) return nullptr;
  return &result.error().items()[0];
}

}  // namespace

TEST_CASE("compile budget: a module past it after inlining is PG2010 with the count, the limit and how to raise it") {
  auto module = load(math_chain(40));
  if (!toolchain::discover().libdevice) {
    MESSAGE("skipped: no libdevice (the math calls need it)");
    return;
  }
  auto refused = codegen::compile(module, options_with_budget(500));
  const diag::Diagnostic* d = only_budget_error(refused);
  REQUIRE(d != nullptr);
  CHECK(d->message.find("after inlining") != std::string::npos);
  CHECK(d->message.find("budget of 500") != std::string::npos);
  CHECK(d->message.find("in 'k'") != std::string::npos);
  CHECK(d->fix.find("--instruction-budget") != std::string::npos);

  auto unlimited = codegen::compile(module, options_with_budget(0));
  REQUIRE(unlimited);
  CHECK(unlimited->ptx.find(".entry k") != std::string::npos);
  CHECK(codegen::compile(module, options_with_budget(codegen::kDefaultInstructionBudget)).has_value());
}

TEST_CASE("compile budget: unrolling that grows a small kernel past the budget is caught after optimisation") {
  auto module = load(kUnrolled);
  auto unrolled = codegen::compile(module, options_with_budget(60));
  const diag::Diagnostic* d = only_budget_error(unrolled);
  REQUIRE(d != nullptr);
  CHECK(d->message.find("after optimisation") != std::string::npos);
  // LLVM's standard pipeline has no check between inlining and the loop passes: only after.
  auto options = options_with_budget(60);
  options.llvm_pipeline = true;
  auto standard = codegen::compile(module, options);
  d = only_budget_error(standard);
  REQUIRE(d != nullptr);
  CHECK(d->message.find("after optimisation") != std::string::npos);
  CHECK(codegen::compile(module, options_with_budget(1000)).has_value());
}

namespace {

/// CPU seconds this process has used (robust against a loaded machine, unlike wall time).
double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

/// `depth` nested complete unrolls of 1024 trips around one store.
std::string unroll_nest(int depth) {
  std::string text = "kernel k(inout y: f32[], n: u32) {\n";
  std::string index = "0";
  for (int d = 0; d < depth; ++d) {
    text += "for i" + std::to_string(d) + " in 0..1024 unroll {\n";
    index += " + i" + std::to_string(d);
  }
  text += "y[" + index + "] = 1.0;\n" + std::string(static_cast<size_t>(depth), '}') + "\n}\n";
  return text;
}

/// g0 calls g1 ... calls g(n-1): each function inlined into the one before.
std::string call_chain(int n) {
  std::string text;
  for (int i = 0; i + 1 < n; ++i)
    text += "fn g" + std::to_string(i) + "(x: u32) -> u32 { return g" + std::to_string(i + 1) + "(x) + 1; }\n";
  text += "fn g" + std::to_string(n - 1) + "(x: u32) -> u32 { return x; }\n";
  return text + "kernel k(inout y: u32[], n: u32) { y[0] = g0(n); }\n";
}

}  // namespace

TEST_CASE("compile budget: nested complete unrolls are refused before optimisation, their copies multiplied") {
  // Before, 1024 x 1024 copies were built (2 GB, minutes) and 1024^3 ran out of memory.
  const double start = cpu_seconds();
  for (int depth : {2, 3}) {
    CAPTURE(depth);
    auto refused = codegen::compile(load(unroll_nest(depth)), options_with_budget(codegen::kDefaultInstructionBudget));
    const diag::Diagnostic* d = only_budget_error(refused);
    REQUIRE(d != nullptr);
    CHECK(d->message.find("would have about") != std::string::npos);
    CHECK(d->message.find("estimated before optimising") != std::string::npos);
  }
  CHECK(cpu_seconds() - start < 10.0);
  // One level of 1024 copies is within the budget, and an unroll(N) counts N copies.
  CHECK(codegen::compile(load(unroll_nest(1)), options_with_budget(codegen::kDefaultInstructionBudget)));
  auto partial = codegen::compile(
      load("kernel k(inout y: f32[], n: u32) {\nfor i in 0..n unroll(1024) { for j in 0..1024 unroll { y[i + j] = 1.0; } }\n}\n"),
      options_with_budget(codegen::kDefaultInstructionBudget));
  REQUIRE(only_budget_error(partial) != nullptr);
  CHECK(only_budget_error(partial)->message.find("would have about") != std::string::npos);
}

TEST_CASE("compile budget: a wgmma loop forced to unroll 100000 times is refused at once") {
  // A loop that indexes a wgmma accumulator is unrolled completely whatever its size (codegen).
  auto module = load(R"(
@workgroup(128)
kernel k(out c: f32[], m: tensor_map, n: u32) {
  shared tiles: bf16[8192];
  var acc: f32[64];
  wgmma_fence();
  wgmma_bf16(acc, wgmma_desc(tiles, 0), wgmma_desc(tiles, 0), false);
  wgmma_commit();
  wgmma_wait(0);
  for j in 0..100000 { c[j] = acc[j % 64]; }
}
)");
  auto options = options_with_budget(codegen::kDefaultInstructionBudget);
  options.target = "sm_90a";
  const double start = cpu_seconds();
  auto refused = codegen::compile(module, options);
  const diag::Diagnostic* d = only_budget_error(refused);
  REQUIRE(d != nullptr);
  CHECK(d->message.find("would have about") != std::string::npos);
  CHECK(cpu_seconds() - start < 10.0);
}

TEST_CASE("compile budget: 20000 math calls are refused before the inliner copies libdevice into each") {
  if (!toolchain::discover().libdevice) {
    MESSAGE("skipped: no libdevice (the math calls need it)");
    return;
  }
  const double start = cpu_seconds();
  auto refused = codegen::compile(load(math_chain(20000)), options_with_budget(codegen::kDefaultInstructionBudget));
  const diag::Diagnostic* d = only_budget_error(refused);
  REQUIRE(d != nullptr);
  CHECK(d->message.find("would have about") != std::string::npos);
  CHECK(cpu_seconds() - start < 10.0);
}

TEST_CASE("compile budget: a chain of 10000 calls is refused for its inlining work; a short chain compiles") {
  // Inlined bottom-up, each of the 10000 functions is built with the rest of the chain in it:
  // 5e7 copies (a minute), though the kernel ends up small.
  const double start = cpu_seconds();
  auto refused = codegen::compile(load(call_chain(10000)), options_with_budget(codegen::kDefaultInstructionBudget));
  const diag::Diagnostic* d = only_budget_error(refused);
  REQUIRE(d != nullptr);
  CHECK(d->message.find("inlining the module's functions would copy about") != std::string::npos);
  CHECK(cpu_seconds() - start < 10.0);
  auto short_chain = codegen::compile(load(call_chain(100)), options_with_budget(codegen::kDefaultInstructionBudget));
  REQUIRE(short_chain);
  CHECK(short_chain->ptx.find("call") == std::string::npos);  // every call inlined
}
