// The text and JSON forms of each command's result (docs/json.md).
#include "ptxgate/commands/reports.hpp"

#include <algorithm>

#include <fmt/format.h>


namespace ptxgate::commands {
namespace {

std::string human_age(int64_t created, int64_t now) {
  if (created <= 0) return "?";
  int64_t s = std::max<int64_t>(0, now - created);
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

std::string cc(const validation::DeviceCaps& caps) { return fmt::format("{}.{}", caps.cc_major, caps.cc_minor); }

}  // namespace

std::string human_bytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < 1024 * 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
  return fmt::format("{:.1f} MiB", n / (1024.0 * 1024.0));
}

nlohmann::json cache_stats_json(const module_cache::DiskStats& s) {
  return {{"schema_version", kJsonSchemaVersion}, {"directory", s.directory.string()}, {"exists", s.exists},
          {"enabled", s.enabled}, {"entries", s.entries}, {"bytes", s.bytes}};
}

std::string cache_stats_text(const module_cache::DiskStats& s) {
  return fmt::format("directory: {}\nusable:    {}\nentries:   {}\nbytes:     {} ({})\n", s.directory.string(),
                     !s.exists ? "not created yet" : s.enabled ? "yes" : "no", s.entries, s.bytes, human_bytes(s.bytes));
}

nlohmann::json cache_list_json(const std::filesystem::path& directory,
                               const std::vector<module_cache::EntrySummary>& entries) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& e : entries)
    arr.push_back({{"key", e.key}, {"target_arch", e.target_arch}, {"kernels", e.kernel_names}, {"bytes", e.bytes},
                   {"created_unix_seconds", e.created_unix_seconds}, {"has_cubin", e.has_cubin}});
  return {{"schema_version", kJsonSchemaVersion}, {"directory", directory.string()}, {"entries", arr}};
}

std::string cache_list_text(const std::filesystem::path& directory,
                            const std::vector<module_cache::EntrySummary>& entries, int64_t now) {
  std::string out = fmt::format("{:<32}  {:<9}  {:>10}  {:>5}  {}\n", "KEY", "ARCH", "SIZE", "AGE", "KERNELS");
  for (const auto& e : entries) {
    std::string kernels;
    for (const auto& k : e.kernel_names) kernels += (kernels.empty() ? "" : ",") + k;
    out += fmt::format("{:<32}  {:<9}  {:>10}  {:>5}  {}{}\n", e.key, e.target_arch, human_bytes(e.bytes),
                       human_age(e.created_unix_seconds, now), kernels, e.has_cubin ? "" : " (no cubin)");
  }
  out += fmt::format("{} entries in {}\n", entries.size(), directory.string());
  return out;
}

nlohmann::json cache_clear_json(const std::filesystem::path& directory, size_t removed) {
  return {{"schema_version", kJsonSchemaVersion}, {"directory", directory.string()}, {"removed", removed}};
}

DeviceListing list_devices() {
  DeviceListing listing;
  auto devices = runtime::list_live_devices();
  if (!devices) {
    listing.diagnostics = devices.error();
    return listing;
  }
  listing.driver_available = true;
  listing.devices = std::move(*devices);
  if (auto peers = runtime::live_peer_matrix(listing.devices))
    listing.peers = std::move(*peers);
  else
    listing.diagnostics.append(peers.error());
  return listing;
}

nlohmann::json devices_json(const DeviceListing& listing) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : listing.devices)
    arr.push_back({{"ordinal", d.ordinal}, {"total_memory_bytes", d.total_memory_bytes},
                   {"driver_version", d.driver_version}, {"profile", validation::to_json(d.caps)}});
  nlohmann::json peers = nlohmann::json::array();
  for (size_t i = 0; i < listing.peers.size(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (size_t j = 0; j < listing.peers.size(); ++j) row.push_back(listing.peers.can_access(i, j));
    peers.push_back(std::move(row));
  }
  return {{"schema_version", kJsonSchemaVersion}, {"driver_available", listing.driver_available},
          {"devices", arr}, {"peer_access", peers}, {"diagnostics", diag::to_json(listing.diagnostics)}};
}

std::string devices_text(const DeviceListing& listing) {
  std::string out = fmt::format("{:<8} {:<28} {:<6} {:>4}\n", "ORDINAL", "DEVICE", "CC", "SMS");
  for (const auto& d : listing.devices)
    out += fmt::format("{:<8} {:<28} {:<6} {:>4}\n", d.ordinal, d.caps.name, cc(d.caps), d.caps.sm_count);
  if (listing.peers.size() != 0) {
    out += '\n';
    out += runtime::format_peer_matrix(listing.peers);
  }
  return out;
}

nlohmann::json profiles_json(const std::vector<validation::ProfileEntry>& profiles) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : profiles) arr.push_back({{"name", p.name}, {"profile", validation::to_json(p.caps)}});
  return {{"schema_version", kJsonSchemaVersion}, {"default", std::string(validation::kDefaultProfile)}, {"profiles", arr}};
}

nlohmann::json stop_json(const diag::Diagnostics& diagnostics, bool usage) {
  return {{"schema_version", kJsonSchemaVersion},
          {"status", usage ? "usage_error" : "error"},
          {"errors", diagnostics.error_count()},
          {"warnings", diagnostics.warning_count()},
          {"diagnostics", diag::to_json(diagnostics)}};
}

std::string profiles_text(const std::vector<validation::ProfileEntry>& profiles) {
  std::string out = fmt::format("{:<12} {:<28} {:<6} {:>4}\n", "PROFILE", "DEVICE", "CC", "SMS");
  for (const auto& p : profiles)
    out += fmt::format("{:<12} {:<28} {:<6} {:>4}{}\n", p.name, p.caps.name, cc(p.caps), p.caps.sm_count,
                       p.name == validation::kDefaultProfile ? "  (default)" : "");
  return out;
}

}  // namespace ptxgate::commands
