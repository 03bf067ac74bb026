// Unit tests for dynamic shared arrays (`shared NAME: T[];`): verifier rules, KernelInfo,
// printing, the builder API and the PTX declaration.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/builder.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/ir/verifier.hpp"

using namespace ptxgate;

namespace {

diag::Diagnostics verify_text(const std::string& text, ir::Module* out = nullptr) {
  diag::SourceFile file("d.pg", text);
  auto parsed = ir::parse(file);
  if (parsed.diagnostics.has_errors()) return std::move(parsed.diagnostics);
  auto d = ir::verify(parsed.module, &file);
  if (out) *out = std::move(parsed.module);
  return d;
}

bool has(const diag::Diagnostics& d, diag::Code c) {
  return std::any_of(d.begin(), d.end(), [&](const diag::Diagnostic& x) { return x.code == c; });
}

}  // namespace

TEST_CASE("dynamic shared: declared, typed, excluded from the static total, recorded in KernelInfo") {
  ir::Module m;
  auto d = verify_text(
      "kernel k(inout y: f32[]) { shared s: f32[4]; shared dyn: i64[]; dyn[thread_id.x] = i64(y[0]); "
      "let old = atomic_add(dyn, 0, 1); s[0] = f32(dyn[1]); }",
      &m);
  INFO(diag::render_text(d));
  REQUIRE(d.empty());
  CHECK(m.kernels[0].static_shared_bytes == 16);
  CHECK(m.kernels[0].dynamic_shared_element_bytes == 8);
  auto info = codegen::describe(m);
  CHECK(info.at(0).dynamic_shared_element_bytes == 8);
  auto json = contract::to_json(info[0]);
  CHECK(json.at("dynamic_shared_element_bytes") == 8);
  CHECK(contract::kernel_info_from_json(json)->dynamic_shared_element_bytes == 8);
  json.erase("dynamic_shared_element_bytes");
  CHECK(contract::kernel_info_from_json(json)->dynamic_shared_element_bytes == 0);
  ir::Module plain;
  REQUIRE(verify_text("kernel k(inout y: f32[]) { shared s: f32[4]; }", &plain).empty());
  CHECK(plain.kernels[0].dynamic_shared_element_bytes == 0);
}

TEST_CASE("dynamic shared: rules") {
  CHECK(has(verify_text("kernel k() { shared a: f32[]; shared b: f32[]; }"), diag::Code::invalid_dynamic_shared));
  CHECK(has(verify_text("kernel k() { if (true) { shared a: f32[]; } }"), diag::Code::shared_outside_kernel_scope));
  CHECK(has(verify_text("kernel k() { shared a: bool[]; }"), diag::Code::invalid_element_type));
  CHECK(has(verify_text("kernel k(inout y: f32[]) { shared a: f32[]; y[0] = a; }"), diag::Code::buffer_as_value));
  auto two = verify_text("kernel k() {\n  shared a: f32[];\n  shared b: u32[];\n}");
  REQUIRE(two.size() == 1);
  CHECK(two.items()[0].location.line == 3);
  CHECK(two.items()[0].message.find("'a'") != std::string::npos);
  CHECK_FALSE(two.items()[0].fix.empty());
}

TEST_CASE("dynamic shared: printing, builder and PTX") {
  const std::string text = "kernel k(inout y: f32[]) {\n  shared tile: f32[];\n  tile[thread_id.x] = y[0];\n}\n";
  diag::SourceFile file("d.pg", text);
  auto parsed = ir::parse(file);
  REQUIRE(parsed.diagnostics.empty());
  CHECK(ir::print(parsed.module) == text);

  ir::ModuleBuilder mb;
  auto& k = mb.kernel("k");
  k.buffer("y", ir::Access::inout, ir::Type::f32);
  k.shared_dynamic("tile", ir::Type::f32);
  k.assign(k.index("tile", k.thread_id()), k.index("y", 0));
  ir::Module m = mb.take();
  REQUIRE(ir::verify(m, nullptr).empty());
  CHECK(ir::print(m) == text);

  auto compiled = codegen::compile(m, {});
  REQUIRE(compiled.has_value());
  CHECK(compiled->ptx.find(".extern .shared .align 16 .b8 k_tile[];") != std::string::npos);
  CHECK(compiled->ptx.find("st.shared.f32") != std::string::npos);
}
