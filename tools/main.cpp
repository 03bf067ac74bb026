// The ptxgate command line: emit PTX, check a launch, run a kernel, list devices, manage the cache.
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "ptxgate/codegen/codegen.hpp"
#include "cli.hpp"

namespace ptxgate::cli {

void print_diagnostics(const diag::Diagnostics& diags, diag::Format format) {
  // Standard output carries only a command's product; diagnostics go to standard error in the
  // format asked.
  std::fputs(format == diag::Format::text ? diag::render_text(diags).c_str() : diag::render(diags, format).c_str(),
             stderr);
}

int finish_output(int code) {
  // Every byte a command wrote to standard output must have arrived (a full disk, a closed pipe).
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  diag::Diagnostics d;
  d.add(diag::Code::cannot_write_file, "cannot write to standard output", {},
        "check that the output file's disk has space and the pipe's reader is still running");
  std::fputs(diag::render_text(d).c_str(), stderr);
  return code == kSuccess ? kDiagnostics : code;
}

std::optional<diag::Format> format_in_arguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view value;
    if (a == "--format" && i + 1 < argc) value = argv[i + 1];
    else if (a.starts_with("--format=")) value = a.substr(9);
    else continue;
    if (auto f = diag::format_from_name(value); f && *f != diag::Format::text) return f;
  }
  return std::nullopt;
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
    // A usage error honours --format json|sarif when the command line asked for one.
    if (auto format = format_in_arguments(argc, argv); format && e.get_exit_code() != 0) {
      ptxgate::diag::Diagnostics d;
      d.add(ptxgate::diag::Code::invalid_launch_option, e.what(), {}, "see `ptxgate --help` and the command's --help");
      print_diagnostics(d, *format);
      return kUsage;
    }
    int code = app.exit(e);
    return finish_output(code == 0 ? kSuccess : kUsage);
  }
  try {
    for (auto [cmd, runner] : commands)
      if (cmd->parsed() && *runner) return finish_output((*runner)());
  } catch (const std::exception& e) {
    return report_internal_error(e.what());
  } catch (...) {
    return report_internal_error("unknown exception");
  }
  return kUsage;
}
