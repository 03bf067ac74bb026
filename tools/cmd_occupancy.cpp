// `ptxgate occupancy FILE --kernel K [--device-profile P] [--shared-bytes N]`: occupancy over
// block sizes and the suggested block size, offline. The computation is commands::occupancy_offline.
#include "ptxgate/commands/occupancy.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct OccupancyOptions {
  commands::OccupancyRequest request;
  std::string format = "text";
};

int run_occupancy(const OccupancyOptions& opt) {
  const auto format = *diag::format_from_name(opt.format);
  auto report = commands::occupancy_offline(opt.request);
  if (!report) {
    if (!report.error().diagnostics.empty()) print_diagnostics(report.error().diagnostics, format);
    return report.error().usage ? kUsage : kDiagnostics;
  }
  if (warnings_stop(report->compiled.warnings, format)) return kDiagnostics;
  print_product(format == diag::Format::json ? commands::occupancy_json(*report).dump(2) + "\n"
                                             : commands::occupancy_text(*report, common_options().verbose));
  return kSuccess;
}

}  // namespace

CLI::App* register_occupancy(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<OccupancyOptions>();
  auto& r = opt->request;
  auto* cmd = app.add_subcommand(
      "occupancy", "Occupancy of a kernel over block sizes, and the block size the driver would suggest (offline)");
  cmd->add_option("file", r.input, "Input .pg file (or - for standard input), or .ptx / .cubin from nvcc, NVRTC or Triton")->required();
  cmd->add_option("--kernel", r.kernel, "Kernel to analyse")->required();
  cmd->add_option("--device-profile", r.profile,
                  "Device profile NAME (see `ptxgate devices --profiles`) or PATH to a profile JSON file")
      ->default_val(std::string(validation::kDefaultProfile));
  cmd->add_option("--shared-bytes", r.shared_bytes, "Dynamic shared memory per block, in bytes (decimal)")
      ->default_val("0");
  add_fp_options(cmd, opt->request.fp_mode);
  add_common_options(cmd, opt->format);
  cmd->footer("Exit status: 0 a table, 1 the program has errors or no block size is resident, 2 usage error.");
  runner = [opt] { return run_occupancy(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
