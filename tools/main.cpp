// The ptxgate command line: emit PTX, check a launch, run a kernel, list devices, manage the cache.
#include <cstdio>
#include <exception>
#include <iostream>

#include <fmt/format.h>

#include "ptxgate/codegen/codegen.hpp"
#include "cli.hpp"

namespace ptxgate::cli {

void print_diagnostics(const diag::Diagnostics& diags, diag::Format format) {
  if (format == diag::Format::text) {
    std::fputs(diag::render_text(diags).c_str(), stderr);
  } else {
    std::fputs(diag::render(diags, format).c_str(), stdout);
  }
}

void add_format_option(CLI::App* cmd, std::string& format) {
  cmd->add_option("--format", format, "Diagnostic format")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->default_val("text");
}

/// An exception that escaped a subcommand is a bug in ptxgate, never the user's fault:
/// PG9000 on stderr with a request to report it, and exit status 1.
int report_internal_error(const char* what) noexcept {
  try {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error, fmt::format("internal error: {}", what), {},
          "please report this bug with the command line and the input file");
    std::fputs(diag::render_text(d).c_str(), stderr);
  } catch (...) {
    std::fputs("error[PG9000]: internal error; please report this bug\n", stderr);
  }
  return kDiagnostics;
}

}  // namespace ptxgate::cli

int main(int argc, char** argv) {
  using namespace ptxgate::cli;
  CLI::App app{"ptxgate: compile ptxgate IR to PTX and validate CUDA launches before the driver sees them"};
  app.set_version_flag("--version", std::string("ptxgate ") + PTXGATE_VERSION + " (LLVM " +
                                        ptxgate::codegen::llvm_version() + ")");
  app.require_subcommand(1);
  Runner emit, check, devices, run, cache, tensormap;
  std::pair<CLI::App*, Runner*> commands[] = {
      {register_emit(app, emit), &emit},       {register_check(app, check), &check},
      {register_devices(app, devices), &devices}, {register_run(app, run), &run},
      {register_cache(app, cache), &cache},    {register_tensormap(app, tensormap), &tensormap}};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kSuccess : kUsage;
  }
  try {
    for (auto [cmd, runner] : commands)
      if (cmd->parsed() && *runner) return (*runner)();
  } catch (const std::exception& e) {
    return report_internal_error(e.what());
  } catch (...) {
    return report_internal_error("unknown exception");
  }
  return kUsage;
}
