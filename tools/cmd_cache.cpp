// `ptxgate cache` (being implemented).
#include "tools/cli.hpp"

namespace ptxgate::cli {

CLI::App* register_cache(CLI::App& app, Runner& runner) {
  auto* cmd = app.add_subcommand("cache", "cache (being implemented)");
  runner = [] { return kUsage; };
  return cmd;
}

}  // namespace ptxgate::cli
