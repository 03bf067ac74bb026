// `ptxgate devices` (being implemented).
#include "tools/cli.hpp"

namespace ptxgate::cli {

CLI::App* register_devices(CLI::App& app, Runner& runner) {
  auto* cmd = app.add_subcommand("devices", "devices (being implemented)");
  runner = [] { return kUsage; };
  return cmd;
}

}  // namespace ptxgate::cli
