// Test support for the front end: parse and verify a module's text, then ask which codes came out.
#pragma once

#include <algorithm>
#include <string>

#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/verifier.hpp"

namespace ptxgate::testing {

/// A parsed and verified module with its diagnostics (the parser's alone when it failed).
struct Checked {
  ir::Module module;
  diag::Diagnostics diags;
  bool has(diag::Code code) const {
    return std::any_of(diags.begin(), diags.end(), [&](const diag::Diagnostic& d) { return d.code == code; });
  }
  size_t count(diag::Code code) const {
    return static_cast<size_t>(
        std::count_if(diags.begin(), diags.end(), [&](const diag::Diagnostic& d) { return d.code == code; }));
  }
  /// The message of the first diagnostic with `code`, or "".
  std::string message(diag::Code code) const {
    for (const auto& d : diags)
      if (d.code == code) return d.message;
    return {};
  }
};

inline Checked check_module(const std::string& path, const std::string& text, const ir::Limits& limits = {}) {
  diag::SourceFile file(path, text);
  ir::ParseResult parsed = ir::parse(file, limits);
  Checked c;
  if (parsed.diagnostics.has_errors()) {
    c.diags = std::move(parsed.diagnostics);
    return c;
  }
  c.module = std::move(parsed.module);
  c.diags = ir::verify(c.module, &file, limits);
  return c;
}

}  // namespace ptxgate::testing
