// The verifier: name resolution, typing of every expression, and the kernel rules.
#pragma once

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/ir/limits.hpp"

namespace ptxgate::ir {

/// Resolves names (fills Expr::symbol, Stmt::symbol, Kernel::symbols), gives every
/// expression its concrete type (untyped literals take their context's type), and fills
/// Kernel::workgroup/cooperative/uses_grid_sync/static_shared_bytes. `file` (may be null
/// for builder modules) is used for diagnostic locations. A module is valid for codegen
/// only when the returned diagnostics have no errors.
diag::Diagnostics verify(Module& module, const diag::SourceFile* file, const Limits& limits = {});

}  // namespace ptxgate::ir
