// emit_ptx: PTX through the module cache.
#include "ptxgate/pipeline/emit.hpp"

namespace ptxgate::pipeline {

std::expected<Emitted, diag::Diagnostics> emit_ptx(const ir::Module& verified, const EmitRequest& request) {
  module_cache::ModuleCache cache(request.cache);
  module_cache::CompileRequest compile;
  compile.codegen = request.codegen;
  compile.produce_cubin = false;
  auto result = cache.compile(verified, compile);
  if (!result) return std::unexpected(std::move(result.error()));
  Emitted out;
  out.ptx = result->entry->ptx;
  out.cache_outcome = result->outcome;
  out.warnings = std::move(result->warnings);
  return out;
}

}  // namespace ptxgate::pipeline
