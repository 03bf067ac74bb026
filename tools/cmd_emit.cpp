// `ptxgate emit` (being implemented).
#include "tools/cli.hpp"

namespace ptxgate::cli {

CLI::App* register_emit(CLI::App& app, Runner& runner) {
  auto* cmd = app.add_subcommand("emit", "emit (being implemented)");
  runner = [] { return kUsage; };
  return cmd;
}

}  // namespace ptxgate::cli
