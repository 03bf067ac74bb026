// Shared pieces of the ptxgate CLI: subcommand registration, exit codes, diagnostic output.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::cli {

/// Exit statuses of every subcommand.
enum ExitCode : int { kSuccess = 0, kDiagnostics = 1, kUsage = 2, kNoDriver = 3 };

/// A subcommand's body, run after parsing succeeded.
using Runner = std::function<int()>;

/// Each subcommand file defines one of these; main() calls them all.
CLI::App* register_emit(CLI::App& app, Runner& runner);
CLI::App* register_check(CLI::App& app, Runner& runner);
CLI::App* register_devices(CLI::App& app, Runner& runner);
CLI::App* register_run(CLI::App& app, Runner& runner);
CLI::App* register_cache(CLI::App& app, Runner& runner);
CLI::App* register_tensormap(CLI::App& app, Runner& runner);

/// Writes diagnostics to stderr (text) or stdout (json/sarif) in the chosen format.
void print_diagnostics(const diag::Diagnostics& diags, diag::Format format);

/// Adds `--format text|json|sarif` to a subcommand.
void add_format_option(CLI::App* cmd, std::string& format);

}  // namespace ptxgate::cli
