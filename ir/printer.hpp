// Printer: canonical `.pg` text of a module; print(parse(print(m))) == print(m).
#pragma once

#include <string>

#include "ptxgate/ir/ast.hpp"

namespace ptxgate::ir {

std::string print(const Module& module);

}  // namespace ptxgate::ir
