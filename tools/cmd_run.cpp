// `ptxgate run` (being implemented).
#include "tools/cli.hpp"

namespace ptxgate::cli {

CLI::App* register_run(CLI::App& app, Runner& runner) {
  auto* cmd = app.add_subcommand("run", "run (being implemented)");
  runner = [] { return kUsage; };
  return cmd;
}

}  // namespace ptxgate::cli
