// Unit tests for the compile budget (PG2010): checked after inlining and after optimisation, 0 lifts it.
#include <doctest/doctest.h>

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
