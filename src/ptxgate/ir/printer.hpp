// Printer: canonical `.pg` text of a module; print(parse(print(m))) == print(m).
#pragma once

#include <string>

#include "ptxgate/ir/ast.hpp"

namespace ptxgate::ir {

std::string print(const Module& module);
/// One expression in canonical form (as `print` writes it inside a module).
std::string print(const Expr& expression);

/// One line per assert(...) of the module, "path:line: condition as written", in kernel and
/// statement order; empty when there is none. The generated code prints these on a failed
/// assert, so they belong to a compiled module's cache key beside the canonical text.
std::string assert_sites(const Module& module);

}  // namespace ptxgate::ir
