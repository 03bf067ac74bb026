// `emit`'s products through the module cache: PTX, LLVM IR, kernel metadata, the cubin, its SASS
// and each kernel's resources. A module compiled once (by emit, check or run, for the same target
// and options) is not compiled again, and `ptxgate cache list` shows it.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::commands {

struct EmitRequest {
  codegen::CodegenOptions codegen;         ///< target, -O, pipeline; libdevice_path pins libdevice
  module_cache::ModuleCacheOptions cache;
};

struct Emitted {
  std::string ptx;
  module_cache::CacheOutcome cache_outcome = module_cache::CacheOutcome::compiled;
  diag::Diagnostics warnings;              ///< the cache's warnings (an unusable directory, a corrupt entry)
};

/// PTX of a verified module (no ptxas run) for ir::target_for_module of the requested target: from
/// the cache, else compiled and published.
[[nodiscard]] std::expected<Emitted, diag::Diagnostics> emit_ptx(const ir::Module& verified, const EmitRequest& request);

/// What `ptxgate emit --emit KIND` produces.
enum class EmitKind : uint8_t { ptx, llvm, meta, cubin, sass, resources };
/// "ptx", "llvm", "meta", "cubin", "sass", "resources".
[[nodiscard]] std::optional<EmitKind> emit_kind_from_name(std::string_view name);
[[nodiscard]] std::vector<std::string> emit_kind_names();

/// One emit of a .pg file.
struct EmitFileRequest {
  std::string input;                       ///< .pg path, or "-" for standard input
  EmitKind kind = EmitKind::ptx;
  EmitRequest compile;
  /// --format json: resources as JSON; ptx, llvm and sass as {"schema_version", "target", "emit",
  /// "text"} (meta is always JSON; a cubin is always its bytes).
  bool json = false;
};

/// The product: text, or the cubin's bytes (`binary`).
struct EmitProduct {
  std::string bytes;
  bool binary = false;
  diag::Diagnostics warnings;              ///< the program's and the cache's
};

/// Why an emit produced nothing: its diagnostics, after the warnings gathered before them.
struct EmitStop {
  diag::Diagnostics warnings;
  diag::Diagnostics diagnostics;
};

/// Loads and verifies `input`, then produces `kind` for ir::target_for_module of the requested
/// target (sm_90 becomes sm_90a when a kernel uses Hopper's operations): PTX and LLVM IR as text; meta as JSON
/// (emit_meta_json); cubin, sass and resources through ptxas (PG2005 without it), sass through
/// the toolkit's nvdisasm (PG5005 without it).
[[nodiscard]] std::expected<EmitProduct, EmitStop> emit_file(const EmitFileRequest& request);

/// Each kernel's ptxas resources, in module order.
using KernelResourceList = std::vector<std::pair<std::string, contract::KernelResources>>;
/// {"schema_version", "target", "kernels": [{"name", "registers", "spill_store_bytes",
/// "spill_load_bytes", "static_shared_bytes", "local_bytes", "constant_bytes", "barriers",
/// "max_threads_per_block"}]}
[[nodiscard]] nlohmann::json resources_json(std::string_view target, const KernelResourceList& kernels);
/// A table: one row per kernel.
[[nodiscard]] std::string resources_text(std::string_view target, const KernelResourceList& kernels);

}  // namespace ptxgate::commands
