// `ptxgate cache stats|list|clear [--cache-dir DIR] [--json]`: inspect or empty the on-disk module cache.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptxgate/module_cache/disk_cache.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct CacheOptions {
  std::string directory;
  bool json = false;
  std::string format = "text";
};

std::string human_bytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < 1024 * 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
  return fmt::format("{:.1f} MiB", n / (1024.0 * 1024.0));
}

std::string human_age(int64_t created) {
  if (created <= 0) return "?";
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t s = std::max<int64_t>(0, now - created);
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

/// Opens the cache directory without creating or writing anything: these commands only inspect or empty it.
module_cache::DiskCache open_cache(const CacheOptions& opt, diag::Diagnostics& warnings) {
  return module_cache::DiskCache::open_existing(opt.directory, warnings);
}

int finish(const diag::Diagnostics& warnings, const CacheOptions& opt) {
  if (!warnings.empty()) print_diagnostics(warnings, *diag::format_from_name(opt.format));
  return warnings.has_errors() ? kDiagnostics : kSuccess;
}

int run_stats(const CacheOptions& opt) {
  diag::Diagnostics warnings;
  auto cache = open_cache(opt, warnings);
  auto s = cache.stats();
  if (opt.json) {
    nlohmann::json j = {{"directory", s.directory.string()}, {"exists", s.exists}, {"enabled", s.enabled},
                        {"entries", s.entries}, {"bytes", s.bytes}};
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(fmt::format("directory: {}\nusable:    {}\nentries:   {}\nbytes:     {} ({})\n", s.directory.string(),
                           !s.exists ? "not created yet" : s.enabled ? "yes" : "no", s.entries, s.bytes, human_bytes(s.bytes))
                   .c_str(),
               stdout);
  }
  return finish(warnings, opt);
}

int run_list(const CacheOptions& opt) {
  diag::Diagnostics warnings;
  auto cache = open_cache(opt, warnings);
  auto entries = cache.list();
  if (opt.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : entries)
      arr.push_back({{"key", e.key}, {"target_arch", e.target_arch}, {"kernels", e.kernel_names},
                     {"bytes", e.bytes}, {"created_unix_seconds", e.created_unix_seconds}, {"has_cubin", e.has_cubin}});
    std::fputs((arr.dump(2) + "\n").c_str(), stdout);
  } else {
    std::string out = fmt::format("{:<32}  {:<9}  {:>10}  {:>5}  {}\n", "KEY", "ARCH", "SIZE", "AGE", "KERNELS");
    for (const auto& e : entries) {
      std::string kernels;
      for (const auto& k : e.kernel_names) kernels += (kernels.empty() ? "" : ",") + k;
      out += fmt::format("{:<32}  {:<9}  {:>10}  {:>5}  {}{}\n", e.key, e.target_arch, human_bytes(e.bytes),
                         human_age(e.created_unix_seconds), kernels, e.has_cubin ? "" : " (no cubin)");
    }
    out += fmt::format("{} entries in {}\n", entries.size(), cache.directory().string());
    std::fputs(out.c_str(), stdout);
  }
  return finish(warnings, opt);
}

int run_clear(const CacheOptions& opt) {
  diag::Diagnostics warnings;
  auto cache = open_cache(opt, warnings);
  size_t removed = cache.clear(warnings);
  if (opt.json) {
    std::fputs((nlohmann::json{{"directory", cache.directory().string()}, {"removed", removed}}.dump(2) + "\n").c_str(),
               stdout);
  } else {
    std::fputs(fmt::format("removed {} entries from {}\n", removed, cache.directory().string()).c_str(), stdout);
  }
  return finish(warnings, opt);
}

}  // namespace

CLI::App* register_cache(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<CacheOptions>();
  auto* cmd = app.add_subcommand("cache", "Inspect or empty the on-disk module cache");
  cmd->require_subcommand(1);
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("--cache-dir", opt->directory,
                    "Cache directory (default: $PTXGATE_CACHE_DIR, $XDG_CACHE_HOME/ptxgate or ~/.cache/ptxgate)");
    sub->add_flag("--json", opt->json, "Print JSON instead of text");
    add_format_option(sub, opt->format);
  };
  auto* stats = cmd->add_subcommand("stats", "Entry count, total bytes and directory");
  auto* list = cmd->add_subcommand("list", "One line per entry: key, architecture, size, age, kernels");
  auto* clear = cmd->add_subcommand("clear", "Remove every cache entry (nothing else in the directory)");
  for (auto* sub : {stats, list, clear}) add_common(sub);
  runner = [opt, stats, list, clear] {
    if (stats->parsed()) return run_stats(*opt);
    if (list->parsed()) return run_list(*opt);
    if (clear->parsed()) return run_clear(*opt);
    return static_cast<int>(kUsage);
  };
  return cmd;
}

}  // namespace ptxgate::cli
