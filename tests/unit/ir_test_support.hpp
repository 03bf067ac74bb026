// Helpers of the language tests: verify a text, expect exactly one diagnostic, compile to PTX or LLVM IR.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/verifier.hpp"

namespace ptxgate::ir_test {

/// Parses and verifies `text`; the parser's diagnostics when it fails, else the verifier's.
inline diag::Diagnostics verify_text(const std::string& text, ir::Module* out = nullptr,
                                     const ir::Limits& limits = {}) {
  diag::SourceFile file("t.pg", text);
  auto parsed = ir::parse(file, limits);
  if (parsed.diagnostics.has_errors()) return std::move(parsed.diagnostics);
  auto d = ir::verify(parsed.module, &file, limits);
  if (out) *out = std::move(parsed.module);
  return d;
}

inline bool has(const diag::Diagnostics& d, diag::Code c) {
  return std::any_of(d.begin(), d.end(), [&](const diag::Diagnostic& x) { return x.code == c; });
}

/// `text` gives exactly one diagnostic, of code `c`, with a location and a fix.
inline void check_only(const std::string& text, diag::Code c, const ir::Limits& limits = {}) {
  auto d = verify_text(text, nullptr, limits);
  INFO(text);
  INFO(diag::render_text(d));
  REQUIRE(d.size() == 1);
  CHECK(d.items()[0].code == c);
  CHECK(d.items()[0].location.line > 0);
  CHECK_FALSE(d.items()[0].fix.empty());
}

/// The PTX of `text` for `target` ("sm_90a"; the code generator's default target when empty).
inline std::string ptx_of(const std::string& text, const std::string& target = "") {
  auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  codegen::CodegenOptions options;
  if (!target.empty()) options.target = *ir::Target::parse(target);
  auto compiled = codegen::compile(loaded->module, options);
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  return compiled->ptx;
}

inline std::string llvm_ir_of(const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile("t.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  auto llvm_ir = codegen::emit_llvm_ir(loaded->module, {});
  if (!llvm_ir) FAIL(diag::render_text(llvm_ir.error()));
  return *llvm_ir;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace ptxgate::ir_test
