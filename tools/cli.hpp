// Shared pieces of the ptxgate CLI: subcommand registration, exit codes, diagnostic output.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"

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
CLI::App* register_occupancy(CLI::App& app, Runner& runner);

/// Options every subcommand takes: --color, -Werror (as -W error) and -v.
struct CommonOptions {
  std::string color = "auto";
  std::vector<std::string> warning_options;  ///< -W VALUE; "error" makes warnings errors
  bool verbose = false;
  bool warnings_as_errors() const;
};
/// The one set of common options of this process (one subcommand runs).
CommonOptions& common_options();

/// Writes diagnostics to standard error in the chosen format (text coloured per --color).
/// Under -Werror warnings are rendered as errors, and the command then exits 1 (finish_output).
void print_diagnostics(const diag::Diagnostics& diags, diag::Format format);

/// Prints `warnings` (if any); true when -Werror made any of them an error, so the command
/// must stop before writing its product.
bool warnings_stop(const diag::Diagnostics& warnings, diag::Format format);

/// Writes a command's product to standard output (checked when the command ends).
void print_product(std::string_view bytes);

/// Adds `--fp-contract on|off` (off: the exact mode) and `--fast-math` (the fast mode), which
/// exclude each other; neither: the contract mode (docs/ir.md "Floating point").
void add_fp_options(CLI::App* cmd, ir::FpMode& mode);
/// `--checked`: compile in checked mode (codegen::CodegenOptions::checked).
void add_checked_option(CLI::App* cmd, bool& checked);

/// Adds `--format text|json|sarif` and the common options (--color, -Werror, -v) to a subcommand.
void add_common_options(CLI::App* cmd, std::string& format);

}  // namespace ptxgate::cli
