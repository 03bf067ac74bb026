// The ptxgate command line: emit PTX, check a launch, run a kernel, list devices, manage the cache.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/commands/offline_check.hpp"
#include "ptxgate/commands/reports.hpp"
#include "ptxgate/commands/run.hpp"
#include "ptxgate/support/signal_cleanup.hpp"
#include "ptxgate/support/suggest.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "ptxgate/toolchain/toolkit.hpp"
#include "cli.hpp"

namespace ptxgate::cli {

bool CommonOptions::warnings_as_errors() const {
  return std::find(warning_options.begin(), warning_options.end(), "error") != warning_options.end();
}

CommonOptions& common_options() {
  static CommonOptions options;
  return options;
}

namespace {
bool g_warning_became_error = false;  // -Werror turned a printed warning into an error
}  // namespace

void print_diagnostics(const diag::Diagnostics& diags, diag::Format format) {
  // Standard output carries only a command's product; diagnostics go to standard error in the
  // format asked.
  const diag::Diagnostics* shown = &diags;
  diag::Diagnostics promoted;
  if (common_options().warnings_as_errors() && diags.warning_count() > 0) {
    promoted = diags;
    g_warning_became_error |= diag::promote_warnings(promoted) > 0;
    shown = &promoted;
  }
  const auto mode = diag::color_mode_from_name(common_options().color).value_or(diag::ColorMode::automatic);
  const bool color = diag::use_color(mode, ::isatty(STDERR_FILENO) == 1, std::getenv("NO_COLOR"), std::getenv("TERM"));
  std::fputs(format == diag::Format::text ? diag::render_text(*shown, true, {.color = color}).c_str()
                                          : diag::render(*shown, format).c_str(),
             stderr);
}

bool warnings_stop(const diag::Diagnostics& warnings, diag::Format format) {
  if (warnings.empty()) return false;
  print_diagnostics(warnings, format);
  return common_options().warnings_as_errors() && warnings.warning_count() > 0;
}

void print_product(std::string_view bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); }

int finish_output(int code) {
  // Every byte a command wrote to standard output must have arrived (a full disk, a closed pipe).
  if (code == kSuccess && g_warning_became_error) code = kDiagnostics;
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

void add_fp_options(CLI::App* cmd, ir::FpMode& mode) {
  auto* contract = cmd->add_option_function<std::string>(
                          "--fp-contract",
                          [&mode](const std::string& v) { mode = v == "off" ? ir::FpMode::exact : ir::FpMode::contract; },
                          "on (default): f32/f64 a * b + c may become one fma, like nvcc; off: every operation "
                          "rounds on its own (kernels' @fp attributes win)")
                       ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag_callback("--fast-math", [&mode] { mode = ir::FpMode::fast; },
                         "Approximate f32 division, sqrt and transcendentals, f32 denormals flushed to zero "
                         "(nvcc's --use_fast_math; kernels' @fp attributes win)")
      ->excludes(contract);
}

void add_checked_option(CLI::App* cmd, bool& checked) {
  cmd->add_flag("--checked", checked,
                "Checked mode: guard every access not proven in bounds for every launch; one out of bounds (or a "
                "misaligned TMA tile) touches no memory, the kernel goes on, and the launch reports it (PG3804) "
                "with its source line, thread, block, index and length");
}

void add_common_options(CLI::App* cmd, std::string& format) {
  auto& common = common_options();
  cmd->add_option("--format", format, "Output format: text, json (one document per command, with schema_version) or sarif")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->default_val("text");
  cmd->add_option("--color", common.color, "Colour diagnostics: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->default_val("auto");
  cmd->add_option("-W", common.warning_options, "-Werror: treat warnings as errors (exit status 1)")
      ->check(CLI::IsMember({"error"}))
      ->allow_extra_args(false);
  cmd->add_flag("-v,--verbose", common.verbose, "Say more: resources, occupancy, notes, where the compile came from");
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

/// `--version`: ptxgate and the commit it was configured from, then the LLVM it links and the
/// CUDA Toolkit files a compile would use now (found as every command finds them).
std::string version_text() {
  std::string out = fmt::format("ptxgate {} (commit {})\nLLVM {}\n", PTXGATE_VERSION, PTXGATE_COMMIT,
                                ptxgate::codegen::llvm_version());
  const auto toolkit = toolchain::discover();
  if (toolkit.ptxas) {
    const std::string release = toolchain::ptxas_version(*toolkit.ptxas);
    out += fmt::format("ptxas {} ({})\n", *toolkit.ptxas, release.empty() ? "version unknown" : release);
  } else {
    out += fmt::format("ptxas: not found ({})\n", toolkit.ptxas.error().items().front().message);
  }
  if (toolkit.libdevice) out += fmt::format("libdevice {}\n", *toolkit.libdevice);
  else out += fmt::format("libdevice: not found ({})\n", toolkit.libdevice.error().items().front().message);
  out.pop_back();  // CLI11 adds the final newline
  return out;
}

/// The fix of a usage error: "did you mean" for a misspelt subcommand (argv[1]) or long flag,
/// else where the command's options are listed.
std::string usage_fix(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  const CLI::App* sub = nullptr;
  for (const auto* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(s->get_name());
    if (argc >= 2 && s->get_name() == std::string_view(argv[1])) sub = s;
  }
  if (sub == nullptr) {
    const std::string first = argc >= 2 ? argv[1] : "";
    if (!first.empty() && !first.starts_with("-"))
      if (auto near = support::closest_match(first, names))
        return fmt::format("did you mean '{}'? (`ptxgate help` lists the commands)", *near);
    return "name a command: `ptxgate help` lists them";
  }
  std::vector<std::string> flags;
  for (const auto* opt : sub->get_options())
    for (const auto& l : opt->get_lnames()) flags.push_back("--" + l);
  std::string fix;
  for (int i = 2; i < argc; ++i) {
    std::string word = argv[i];
    if (!word.starts_with("--")) continue;
    word = word.substr(0, word.find('='));
    if (std::find(flags.begin(), flags.end(), word) != flags.end()) continue;
    if (auto near = support::closest_match(word, flags))
      fix += fmt::format("{}did you mean '{}' for '{}'?", fix.empty() ? "" : " ", *near, word);
  }
  return fix + fmt::format("{}`ptxgate help {}` lists its options", fix.empty() ? "" : " (", sub->get_name()) +
         (fix.empty() ? "" : ")");
}

/// A usage error the option parser found: PG5004 in the format asked. Under --format json the
/// commands whose document carries their diagnostics (check, run, devices, tensormap) print one
/// document on standard output; the others print the record on standard error.
int report_usage_error(const std::string& what, std::string fix, int argc, char** argv) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_launch_option, what, {}, std::move(fix));
  const auto format = format_in_arguments(argc, argv).value_or(diag::Format::text);
  const std::string_view command = argc >= 2 ? std::string_view(argv[1]) : std::string_view{};
  std::string kernel;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--kernel") kernel = argv[i + 1];
  if (format == diag::Format::json && (command == "check" || command == "run" || command == "devices" ||
                                       command == "tensormap")) {
    nlohmann::json doc = command == "check" ? commands::check_stop_json({d, true}, kernel)
                         : command == "run" ? commands::run_stop_json({{}, d, true, false}, kernel)
                                            : commands::stop_json(d, true);
    print_product(doc.dump(2) + "\n");
  } else if (format == diag::Format::sarif && command == "check") {
    print_product(diag::render_sarif(d));
  } else {
    print_diagnostics(d, format);
  }
  return finish_output(kUsage);
}

/// `ptxgate help [SUB]`: the help of one subcommand (or of ptxgate).
CLI::App* register_help(CLI::App& app, Runner& runner) {
  auto topic = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("help", "Show the help of ptxgate or of one command: ptxgate help check");
  cmd->add_option("command", *topic, "A command name");
  runner = [&app, topic] {
    if (topic->empty()) {
      // app.help() would show the help of the selected subcommand, `help` itself.
      std::fputs(app.get_formatter()->make_help(&app, "ptxgate", CLI::AppFormatMode::Normal).c_str(), stdout);
      return static_cast<int>(kSuccess);
    }
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == *topic) {
        std::fputs(sub->help("ptxgate").c_str(), stdout);
        return static_cast<int>(kSuccess);
      }
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    auto near = support::closest_match(*topic, names);
    std::fputs(fmt::format("ptxgate help: no command named '{}'{}\n", *topic,
                           near ? fmt::format("; did you mean '{}'?", *near) : std::string())
                   .c_str(),
               stderr);
    return static_cast<int>(kUsage);
  };
  return cmd;
}

}  // namespace ptxgate::cli

int main(int argc, char** argv) {
  using namespace ptxgate::cli;
  // Ctrl-C or a kill during `check`/`run`/`emit --emit cubin` stops ptxas and removes its
  // temporary directories before the process dies of the signal.
  ptxgate::support::install_signal_cleanup();
  CLI::App app{"ptxgate: compile ptxgate IR to PTX and validate CUDA launches before the driver sees them"};
  app.set_version_flag("--version", std::function<std::string()>(version_text),
                       "Print ptxgate's version and commit, and the LLVM, ptxas and libdevice it uses");
  app.require_subcommand(1);
  Runner emit, check, occupancy, devices, run, cache, tensormap, help;
  std::pair<CLI::App*, Runner*> commands[] = {
      {register_emit(app, emit), &emit},       {register_check(app, check), &check},
      {register_occupancy(app, occupancy), &occupancy},
      {register_devices(app, devices), &devices}, {register_run(app, run), &run},
      {register_cache(app, cache), &cache},    {register_tensormap(app, tensormap), &tensormap},
      {register_help(app, help), &help}};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return finish_output(app.exit(e) == 0 ? kSuccess : kUsage);  // --help, --version
    // A usage error is a PG5004 record with a fix, in the format the command line asked for.
    return report_usage_error(e.what(), usage_fix(app, argc, argv), argc, argv);
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
