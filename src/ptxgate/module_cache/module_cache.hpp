// The module cache: in-process LRU + on-disk tier + one compilation per key, and compile_to_entry.
#pragma once

#include <atomic>
#include <cstddef>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/module_cache/lru_cache.hpp"
#include "ptxgate/toolchain/toolkit.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::module_cache {

/// Where get_or_compile found its entry.
enum class CacheOutcome : uint8_t {
  memory_hit,  ///< in this process's LRU
  disk_hit,    ///< loaded and verified from the disk tier
  compiled,    ///< this call ran the compile function
  joined,      ///< another thread was looking up / compiling the same key; its result was shared
};
std::string_view outcome_name(CacheOutcome outcome);

/// A successful get_or_compile.
struct CacheResult {
  std::shared_ptr<const CacheEntry> entry;
  CacheKey key;
  CacheOutcome outcome = CacheOutcome::compiled;
  diag::Diagnostics warnings;  ///< PG41xx warnings met on the way (corrupt entry, unusable dir)
};

/// Counters of one ModuleCache, for stats, tests and benchmarks.
struct CacheCounters {
  uint64_t memory_hits = 0, disk_hits = 0, compiles = 0, joined = 0, compile_failures = 0;
};

/// How a module is compiled into an entry.
struct CompileRequest {
  codegen::CodegenOptions codegen;   ///< target, opt level; libdevice_path pins libdevice (else discovered)
  bool produce_cubin = true;         ///< run ptxas for a cubin (needs the toolkit); false for offline emit
  std::string ptxas;                 ///< pins ptxas (else discovered)
  std::string driver_version;        ///< copied into the key inputs; empty offline

  /// toolchain::discover with the paths this request pins: the one toolkit its key and its
  /// compile both use.
  toolchain::Toolkit toolkit() const;
};

/// Produces the entry for a key on a miss; errors are returned to every waiter and not cached.
using CompileFn = std::function<std::expected<CacheEntry, diag::Diagnostics>()>;

struct ModuleCacheOptions {
  size_t memory_capacity = 64;          ///< entries kept in the in-process LRU
  bool use_disk = true;                 ///< false: memory only
  std::filesystem::path directory;      ///< empty: DiskCache::default_directory()
};

/// In-process LRU of entries by key, over the disk tier, with one compilation per
/// key however many threads ask at once. Thread-safe; nothing throws.
class ModuleCache {
 public:
  explicit ModuleCache(ModuleCacheOptions options = {});

  /// The entry for `key`: from memory, else from disk (verified, for `target_arch`),
  /// else from `compile` (then published to disk). Concurrent callers with the same
  /// key share one lookup/compile. `inputs_summary` goes into the disk manifest.
  [[nodiscard]] std::expected<CacheResult, diag::Diagnostics> get_or_compile(const CacheKey& key, const std::string& target_arch,
                                                               const CompileFn& compile,
                                                               const nlohmann::json& inputs_summary = {});

  /// Compiles `verified` through the cache: discovers the toolkit once, derives the key from
  /// it (key_inputs_for) and, on a miss, compiles with the same toolkit (compile_to_entry).
  [[nodiscard]] std::expected<CacheResult, diag::Diagnostics> compile(const ir::Module& verified,
                                                                      const CompileRequest& request);

  /// Warnings from opening the disk directory (PG4102), reported once by the first get_or_compile too.
  const diag::Diagnostics& open_warnings() const { return open_warnings_; }
  CacheCounters counters() const;
  DiskCache& disk() { return disk_; }
  LruCache<CacheKey, std::shared_ptr<const CacheEntry>>& memory() { return memory_; }

 private:
  using Shared = std::expected<std::pair<std::shared_ptr<const CacheEntry>, CacheOutcome>, diag::Diagnostics>;
  struct Flight {
    Shared result;
    diag::Diagnostics warnings;
  };
  Flight fill(const CacheKey& key, const std::string& target_arch, const CompileFn& compile,
              const nlohmann::json& inputs_summary);

  diag::Diagnostics open_warnings_;
  std::atomic<bool> open_warnings_reported_{false};
  DiskCache disk_;
  LruCache<CacheKey, std::shared_ptr<const CacheEntry>> memory_;
  SingleFlight<CacheKey, Flight> flights_;
  mutable std::mutex counters_mutex_;
  CacheCounters counters_;
};

/// A stable text of the codegen options for the key (target excluded: it has its own field).
std::string codegen_options_text(const codegen::CodegenOptions& options);

/// The key inputs for compiling `verified` with `request` and `toolkit`: canonical text
/// (ir::print), versions, the hash of the toolkit's libdevice (the file the compile links),
/// and the ptxas version when a cubin is produced.
CacheKeyInputs key_inputs_for(const ir::Module& verified, const CompileRequest& request,
                              const toolchain::Toolkit& toolkit);

/// toolchain::build with `toolkit` (ptxas when request.produce_cubin), as an entry: its
/// resources go into `resources` (one object per kernel, see kernel_resources) with the raw
/// report under "ptxas_log". Errors are toolchain::build's (PG2002, PG2004, PG2005, codegen's).
[[nodiscard]] std::expected<CacheEntry, diag::Diagnostics> compile_to_entry(const ir::Module& verified,
                                                                            const CompileRequest& request,
                                                                            const toolchain::Toolkit& toolkit);

/// KernelResources as stored in CacheEntry::resources.
nlohmann::json resources_to_json(const contract::KernelResources& resources);

/// The ptxas resources of `kernel` stored in an entry; nullopt when the entry has none
/// (no cubin was produced) or the stored object is malformed.
std::optional<contract::KernelResources> kernel_resources(const CacheEntry& entry, std::string_view kernel);

}  // namespace ptxgate::module_cache
