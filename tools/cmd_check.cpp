// `ptxgate check FILE --kernel NAME ...`: validate a launch offline against a device profile.
// The pipeline is commands::check_offline; this file adapts options and prints.
#include <cstdio>

#include "cli.hpp"
#include "ptxgate/commands/offline_check.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::cli {
namespace {

struct CheckOptions {
  commands::OfflineLaunch launch;
  std::string format = "text";
  std::string stream = "explicit";
  std::string stream_policy = "allow-legacy";
};

// A check that ends before its verdict. Under --format json standard output still holds exactly
// one JSON document (no verdict, the diagnostics); under sarif one SARIF log; text goes to stderr.
int stop(const commands::OfflineStop& s, diag::Format format, const std::string& kernel) {
  const int code = s.usage ? kUsage : kDiagnostics;
  if (format == diag::Format::json) print_product(commands::check_stop_json(s, kernel).dump(2) + "\n");
  else if (format == diag::Format::sarif) print_product(diag::render_sarif(s.diagnostics));
  else print_diagnostics(s.diagnostics, format);
  return code;
}

int run_check(CheckOptions& opt) {
  auto format = *diag::format_from_name(opt.format);
  const bool verbose = common_options().verbose;
  opt.launch.null_stream = opt.stream == "null";
  opt.launch.require_explicit_stream = opt.stream_policy == "require-explicit";
  opt.launch.warnings_as_errors = common_options().warnings_as_errors();
  opt.launch.list_unproven_accesses = verbose;
  auto checked = commands::check_offline(opt.launch);
  if (!checked) return stop(checked.error(), format, opt.launch.kernel);
  const auto& verdict = checked->verdict;  // its diagnostics include the program's warnings
  if (format == diag::Format::json) {
    print_product(commands::check_json(*checked, opt.launch.kernel).dump(2) + "\n");
  } else if (format == diag::Format::sarif) {
    print_product(diag::render_sarif(verdict.diagnostics));
    std::fputs((verdict.summary_line(opt.launch.kernel, checked->plan) + "\n").c_str(), stderr);
  } else {
    print_product(commands::check_text(*checked, opt.launch.kernel, verbose));
    std::fflush(stdout);
    // Notes (e.g. the shared-memory opt-in) only with -v.
    diag::Diagnostics shown;
    for (const auto& d : verdict.diagnostics)
      if (verbose || d.severity != diag::Severity::note) shown.items().push_back(d);
    print_diagnostics(shown, format);
  }
  return verdict.launchable ? kSuccess : kDiagnostics;
}

}  // namespace

CLI::App* register_check(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand("check", "Check a launch offline against a device profile (no GPU needed)");
  cmd->add_option("file", opt->launch.input, "Input .pg file (or - for standard input), or .ptx / .cubin from nvcc, NVRTC or Triton")->required();
  cmd->add_option("--kernel", opt->launch.kernel, "Kernel to launch")->required();
  cmd->add_option("--signature", opt->launch.signature,
                  "Parameter types of a .ptx/.cubin kernel, in order: \"f32[], u64, f32\" (a cubin records only sizes)");
  cmd->add_option("--grid", opt->launch.grid, "Grid X[,Y[,Z]], or 'max': the largest cooperative grid that fits (implies --cooperative)")
      ->default_val("1");
  cmd->add_option("--block", opt->launch.block, "Block X[,Y[,Z]] (default: the kernel's @workgroup, else 256)");
  cmd->add_option("--shared-bytes", opt->launch.shared_bytes, "Dynamic shared memory per block, in bytes (decimal)")->default_val("0");
  cmd->add_flag("--cooperative", opt->launch.cooperative, "Launch cooperatively (cuLaunchCooperativeKernel)");
  cmd->add_option("--device-profile", opt->launch.profile,
                  "Device profile NAME (see `ptxgate devices --profiles`) or PATH to a profile JSON file")
      ->default_val(std::string(validation::kDefaultProfile));
  add_fp_options(cmd, opt->launch.fp_mode);
  add_common_options(cmd, opt->format);
  cmd->add_option("--arg", opt->launch.args,
                  "NAME=SPEC per argument, in signature order (enables the argument checks): the specs of "
                  "`ptxgate run` (random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, PATH.npy, a raw file, a literal), "
                  "null, buffer:BYTES or TYPE:VALUE");
  cmd->add_flag("--empty-args", opt->launch.empty_args, "Describe an empty argument table");
  cmd->add_flag("--require-proof", opt->launch.require_memory_proof,
                "Block the launch unless every access of the kernel is proven in bounds for it");
  cmd->add_option("--null-slot", opt->launch.null_slots, "Index of an argument slot whose pointer is null");
  cmd->add_option("--elements", opt->launch.elements, "NAME=COUNT: elements of buffer NAME the launch touches");
  cmd->add_option("--stream", opt->stream, "Stream of the launch: explicit or null (the legacy default stream)")
      ->check(CLI::IsMember({"explicit", "null"}));
  cmd->add_option("--stream-policy", opt->stream_policy, "Whether a null stream is allowed")
      ->check(CLI::IsMember({"allow-legacy", "require-explicit"}));
  cmd->footer("Exit status: 0 launchable, 1 blocked or the program has errors, 2 usage error.");
  runner = [opt] { return run_check(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
