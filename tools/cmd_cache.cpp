// `ptxgate cache stats|list|clear [--cache-dir DIR] [--format json]`: inspect or empty the on-disk module cache.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/commands/reports.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct CacheOptions {
  std::string directory;
  bool json = false;
  std::string format = "text";
};

int run_cache(const CacheOptions& opt, const CLI::App* stats, const CLI::App* list) {
  const bool json = opt.json || opt.format == "json";
  diag::Diagnostics warnings;
  // Opened without creating or writing anything: these commands only inspect or empty it.
  auto cache = module_cache::DiskCache::open_existing(opt.directory, warnings);
  if (stats->parsed()) {
    auto s = cache.stats();
    print_product(json ? commands::cache_stats_json(s).dump(2) + "\n" : commands::cache_stats_text(s));
  } else if (list->parsed()) {
    auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    auto entries = cache.list();
    print_product(json ? commands::cache_list_json(cache.directory(), entries).dump(2) + "\n"
                       : commands::cache_list_text(cache.directory(), entries, now.count()));
  } else {
    size_t removed = cache.clear(warnings);
    print_product(json ? commands::cache_clear_json(cache.directory(), removed).dump(2) + "\n"
                       : fmt::format("removed {} entries from {}\n", removed, cache.directory().string()));
  }
  if (!warnings.empty()) print_diagnostics(warnings, json ? diag::Format::json : *diag::format_from_name(opt.format));
  return warnings.has_errors() ? kDiagnostics : kSuccess;
}

}  // namespace

CLI::App* register_cache(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<CacheOptions>();
  auto* cmd = app.add_subcommand("cache", "Inspect or empty the on-disk module cache");
  cmd->require_subcommand(1);
  auto* stats = cmd->add_subcommand("stats", "Entry count, total bytes and directory");
  auto* list = cmd->add_subcommand("list", "One line per entry: key, architecture, size, age, kernels");
  auto* clear = cmd->add_subcommand("clear", "Remove every cache entry (nothing else in the directory)");
  for (auto* sub : {stats, list, clear}) {
    sub->add_option("--cache-dir", opt->directory,
                    "Cache directory (default: $PTXGATE_CACHE_DIR, $XDG_CACHE_HOME/ptxgate or ~/.cache/ptxgate)");
    sub->add_flag("--json", opt->json, "Print JSON (the same as --format json)");
    add_common_options(sub, opt->format);
  }
  runner = [opt, stats, list] { return run_cache(*opt, stats, list); };
  return cmd;
}

}  // namespace ptxgate::cli
