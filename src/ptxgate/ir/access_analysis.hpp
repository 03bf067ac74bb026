// The access analysis: every memory access of a verified kernel as symbolic expressions of its launch.
#pragma once

#include <cstddef>
#include <memory>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::ir {

/// Bounds on the analysis of one kernel, so that hostile input costs little: past them the facts
/// are marked incomplete (AccessFacts::complete) and the rest of the kernel is not analysed.
struct AccessAnalysisLimits {
  size_t max_nodes = 200000;
  size_t max_sites = 20000;
  /// Device functions are followed into this deep; a call below it counts as unmodelled.
  unsigned max_call_depth = 16;
};

/// Walks a verified kernel (and the device functions it calls, inlined) once and records, per
/// access to a buffer, shared or local array: the index as a node of launch values (threads, blocks,
/// scalar parameters, loop variables), the condition under which it runs (enclosing ifs, early
/// returns and breaks, && and ||, assert), and its loops. Values the analysis does not follow
/// (loads, shuffles, floats, variables a loop changes irregularly) become opaque leaves. `file`
/// gives source positions (null for builder modules: no positions).
std::shared_ptr<const AccessFacts> analyze_accesses(const Kernel& kernel, const diag::SourceFile* file,
                                                    const AccessAnalysisLimits& limits = {});

}  // namespace ptxgate::ir
