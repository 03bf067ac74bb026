// `ptxgate check` (being implemented).
#include "tools/cli.hpp"

namespace ptxgate::cli {

CLI::App* register_check(CLI::App& app, Runner& runner) {
  auto* cmd = app.add_subcommand("check", "check (being implemented)");
  runner = [] { return kUsage; };
  return cmd;
}

}  // namespace ptxgate::cli
