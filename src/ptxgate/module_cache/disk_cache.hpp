// The on-disk tier: one directory per key, published atomically, verified by checksums on read.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/cache_key.hpp"

namespace ptxgate::module_cache {

/// What one key caches: the PTX, optionally a cubin, and what launches need to know.
struct CacheEntry {
  std::string target_arch;                    ///< "sm_90"; must equal the requested target
  unsigned ptx_isa_version = 0;               ///< from the PTX `.version` line
  std::string ptx;                            ///< PTX text, `.target` equal to target_arch
  std::string cubin;                          ///< ptxas output for target_arch; may be empty
  std::vector<contract::KernelInfo> kernels;   ///< one per kernel, in module order
  /// Per-kernel resource usage from ptxas, opaque to the cache: an object keyed by
  /// kernel name (contract::KernelResources as JSON) and/or "ptxas_log" (raw `ptxas -v`).
  nlohmann::json resources = nlohmann::json::object();
};

/// One published entry, as `ptxgate cache list` shows it.
struct EntrySummary {
  std::string key;
  std::string target_arch;
  std::vector<std::string> kernel_names;
  uint64_t bytes = 0;                         ///< all files of the entry
  int64_t created_unix_seconds = 0;
  bool has_cubin = false;
};

/// Totals of the disk tier.
struct DiskStats {
  std::filesystem::path directory;
  bool exists = false;                        ///< false: not created yet (an empty cache)
  /// Opened by open(): the tier works (false: unusable, memory-only). Opened by
  /// open_existing(): the directory exists and a compile could store entries in it.
  bool enabled = false;
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

/// The on-disk tier. Layout: `<dir>/v1/<key>/` holding `module.ptx`, `module.cubin`,
/// `kernels.json`, `resources.json` and `manifest.json`. An entry is written into a
/// temporary directory beside it, manifest last, then renamed into place in one
/// rename(2): a reader sees a complete entry or none. The manifest records the key,
/// the target, a summary of the key inputs, and the size and XXH3-128 of every
/// payload; a read verifies all of them. A mismatch is a warning (PG4101 corrupt,
/// PG4103 foreign key or target), the entry is removed and the lookup is a miss.
/// An unusable directory (missing and not creatable, read-only, full, removed while
/// running) gives one PG4102 warning, after which this object works as a no-op.
/// Every member is safe to call from many threads and processes at once; nothing
/// throws.
class DiskCache {
 public:
  /// $PTXGATE_CACHE_DIR, else $XDG_CACHE_HOME/ptxgate, else $HOME/.cache/ptxgate;
  /// empty when none of these is set.
  static std::filesystem::path default_directory();

  /// Opens (creating if needed) `directory`, or default_directory() when empty.
  /// Never fails: an unusable directory gives a disabled cache and a PG4102 in `warnings`.
  static DiskCache open(const std::filesystem::path& directory, diag::Diagnostics& warnings);

  /// Opens `directory` (or default_directory()) to inspect or empty it, as `ptxgate cache
  /// stats|list|clear` do: creates and writes nothing (no directory, no write probe); lookup and
  /// publish do nothing on it. A directory that does not exist is an empty cache, not an error;
  /// one that cannot be opened, or whose `v1` is a link or not a directory, gives PG4102.
  static DiskCache open_existing(const std::filesystem::path& directory, diag::Diagnostics& warnings);

  /// A cache that never stores anything (memory-only operation).
  static DiskCache disabled();

  DiskCache(DiskCache&& other) noexcept;
  DiskCache& operator=(DiskCache&&) = delete;

  /// The verified entry for `key` built for `target_arch`, or nullopt (miss, corrupt or foreign).
  std::optional<CacheEntry> lookup(const CacheKey& key, const std::string& target_arch, diag::Diagnostics& warnings);

  /// Publishes `entry` under `key` atomically. `inputs_summary` (CacheKeyInputs::summary())
  /// is recorded in the manifest for `cache list`. When another process published the
  /// same key first, its complete entry is kept. Failure disables the tier (PG4102 once).
  void publish(const CacheKey& key, const CacheEntry& entry, const nlohmann::json& inputs_summary,
               diag::Diagnostics& warnings);

  /// Every published entry (manifest only; payloads are not verified here).
  std::vector<EntrySummary> list() const;
  DiskStats stats() const;
  /// Removes every entry and every stale temporary directory of this cache; nothing
  /// else in the directory is touched. Returns the number of entries removed.
  size_t clear(diag::Diagnostics& warnings);

  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  const std::filesystem::path& directory() const { return directory_; }

 private:
  explicit DiskCache(std::filesystem::path directory, bool enabled, bool inspect_only = false);
  std::filesystem::path entries_dir() const;
  void disable(diag::Diagnostics& warnings, const std::string& what, int error_number);

  std::filesystem::path directory_;
  std::atomic<bool> enabled_{false};
  std::atomic<bool> warned_unusable_{false};
  bool inspect_only_ = false;                 ///< opened by open_existing()
};

}  // namespace ptxgate::module_cache
