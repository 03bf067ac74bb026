// `emit`'s PTX through the module cache: a module compiled once (by emit, check or run, for the
// same target and options) is not compiled again, and `ptxgate cache list` shows it.
#pragma once

#include <expected>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/module_cache/module_cache.hpp"

namespace ptxgate::pipeline {

struct EmitRequest {
  codegen::CodegenOptions codegen;         ///< target, -O, pipeline; libdevice_path pins libdevice
  module_cache::ModuleCacheOptions cache;
};

struct Emitted {
  std::string ptx;
  module_cache::CacheOutcome cache_outcome = module_cache::CacheOutcome::compiled;
  diag::Diagnostics warnings;              ///< the cache's warnings (an unusable directory, a corrupt entry)
};

/// PTX of a verified module (no ptxas run): from the cache, else compiled and published.
[[nodiscard]] std::expected<Emitted, diag::Diagnostics> emit_ptx(const ir::Module& verified, const EmitRequest& request);

}  // namespace ptxgate::pipeline
