// Lexer and parser for the `.pg` text format, with error recovery and input limits.
#pragma once

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/ir/limits.hpp"

namespace ptxgate::ir {

struct ParseResult {
  Module module;             ///< everything that could be parsed (partial on errors)
  diag::Diagnostics diagnostics;
};

/// Parses a whole file. Never throws; any byte sequence yields a module and/or diagnostics.
ParseResult parse(const diag::SourceFile& file, const Limits& limits = {});

}  // namespace ptxgate::ir
