// What each command reports, as text and as JSON: one documented JSON shape per command, each
// an object carrying "schema_version" (docs/json.md). The CLI prints these; bindings and tests
// use the same shapes.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/runtime/device.hpp"
#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::commands {

/// The version of every JSON shape below; raised when a field changes meaning or disappears
/// (adding a field keeps it).
inline constexpr int kJsonSchemaVersion = 1;

/// "1.5 KiB", "3 B", "2.0 MiB".
std::string human_bytes(uint64_t n);

// --- cache stats | list | clear --------------------------------------------------------------
/// {"schema_version", "directory", "exists", "enabled", "entries", "bytes"}
nlohmann::json cache_stats_json(const module_cache::DiskStats& stats);
std::string cache_stats_text(const module_cache::DiskStats& stats);
/// {"schema_version", "directory", "entries": [{"key", "target_arch", "kernels", "bytes",
/// "created_unix_seconds", "has_cubin"}]}
nlohmann::json cache_list_json(const std::filesystem::path& directory,
                               const std::vector<module_cache::EntrySummary>& entries);
/// One line per entry (key, architecture, size, age against `now_unix_seconds`, kernels), then a count.
std::string cache_list_text(const std::filesystem::path& directory,
                            const std::vector<module_cache::EntrySummary>& entries, int64_t now_unix_seconds);
/// {"schema_version", "directory", "removed"}
nlohmann::json cache_clear_json(const std::filesystem::path& directory, size_t removed);

// --- devices -------------------------------------------------------------------------------
/// The live GPUs, or why there are none. The JSON has one shape with or without a driver:
/// {"schema_version", "driver_available", "devices": [{"ordinal", "total_memory_bytes",
/// "driver_version", "profile": DeviceCaps}], "peer_access": [[bool]] (row i: device i can access
/// device j's memory; empty without a driver), "diagnostics": [...]}; the text form ends with the
/// peer-access matrix.
struct DeviceListing {
  bool driver_available = false;             ///< false: no driver or no device (see diagnostics)
  std::vector<runtime::LiveDevice> devices;
  runtime::PeerMatrix peers;                 ///< cuDeviceCanAccessPeer of every ordered pair of `devices`
  diag::Diagnostics diagnostics;
};
DeviceListing list_devices();
nlohmann::json devices_json(const DeviceListing& listing);
std::string devices_text(const DeviceListing& listing);
/// {"schema_version", "default", "profiles": [{"name", "profile": DeviceCaps}]}
nlohmann::json profiles_json(const std::vector<validation::ProfileEntry>& profiles);

/// A command that stopped before its product, as one document (for the commands whose JSON
/// document carries their diagnostics, docs/json.md): {schema_version, status: error|usage_error,
/// errors, warnings, diagnostics}.
nlohmann::json stop_json(const diag::Diagnostics& diagnostics, bool usage);
std::string profiles_text(const std::vector<validation::ProfileEntry>& profiles);

}  // namespace ptxgate::commands
