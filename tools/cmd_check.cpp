// `ptxgate check FILE --kernel NAME ...`: validate a launch offline against a device profile.
// The pipeline is pipeline::check_offline; this file adapts options and prints.
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "ptxgate/pipeline/offline_check.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::cli {
namespace {

struct CheckOptions {
  pipeline::OfflineLaunch launch;
  std::string format = "text";
  bool verbose = false;
  std::string stream = "explicit";
  std::string stream_policy = "allow-legacy";
};

// A check that ends before its verdict. Under --format json standard output still holds exactly
// one JSON document (no verdict, the diagnostics); under sarif one SARIF log; text goes to stderr.
int stop(const diag::Diagnostics& d, diag::Format format, std::string_view kernel, int code) {
  switch (format) {
    case diag::Format::json: {
      nlohmann::json j{{"kernel", kernel},
                       {"launchable", false},
                       {"status", code == kUsage ? "usage_error" : "error"},
                       {"errors", d.error_count()},
                       {"warnings", d.warning_count()},
                       {"diagnostics", nlohmann::json::parse(diag::render_json(d))}};
      std::fputs((j.dump(2) + "\n").c_str(), stdout);
      break;
    }
    case diag::Format::sarif: std::fputs(diag::render_sarif(d).c_str(), stdout); break;
    case diag::Format::text: print_diagnostics(d, format); break;
  }
  return code;
}


// Prints diagnostics in text mode, hiding notes unless --verbose.
void print_launch_diagnostics(const diag::Diagnostics& diags, bool verbose) {
  if (verbose) {
    print_diagnostics(diags, diag::Format::text);
    return;
  }
  diag::Diagnostics shown;
  for (const auto& d : diags)
    if (d.severity != diag::Severity::note) shown.items().push_back(d);
  print_diagnostics(shown, diag::Format::text);
}

int run_check(CheckOptions& opt) {
  auto format = *diag::format_from_name(opt.format);
  opt.launch.null_stream = opt.stream == "null";
  opt.launch.require_explicit_stream = opt.stream_policy == "require-explicit";
  auto checked = pipeline::check_offline(opt.launch);
  if (!checked)
    return stop(checked.error().diagnostics, format, opt.launch.kernel, checked.error().usage ? kUsage : kDiagnostics);
  const auto& [caps, info, resources, plan, verdict, grid_max, outcome, warnings] = *checked;
  const std::string arch = caps.arch();
  if (!warnings.empty()) print_diagnostics(warnings, format);
  switch (format) {
    case diag::Format::json:
      std::fputs((verdict.to_json(opt.launch.kernel, plan).dump(2) + "\n").c_str(), stdout);
      break;
    case diag::Format::sarif:
      std::fputs(diag::render_sarif(verdict.diagnostics).c_str(), stdout);
      std::fputs((verdict.summary_line(opt.launch.kernel, plan) + "\n").c_str(), stderr);
      break;
    case diag::Format::text: {
      std::string out;
      if (opt.verbose) {
        const auto& r = resources;
        out += fmt::format("device: {} ({}, {}, {} SMs)\n", caps.profile, caps.name, arch, caps.sm_count);
        out += fmt::format("resources: {} registers/thread, {} bytes static shared, {} bytes local, max {} threads/block\n",
                           r.registers_per_thread, r.static_shared_bytes, r.local_bytes, r.max_threads_per_block);
        if (verdict.occupancy)
          out += fmt::format("occupancy: {} blocks/SM, limited by {} (threads {}, registers {}, shared {}, blocks {})\n",
                             verdict.occupancy->active_blocks_per_sm, validation::limiter_name(verdict.occupancy->limiter),
                             verdict.occupancy->by_threads, verdict.occupancy->by_registers,
                             verdict.occupancy->by_shared, verdict.occupancy->by_blocks);
      }
      if (grid_max)
        out += verdict.occupancy
                   ? fmt::format("max cooperative grid: {} blocks ({} blocks/SM x {} SMs, limited by {})\n",
                                 verdict.max_cooperative_grid, verdict.occupancy->active_blocks_per_sm, caps.sm_count,
                                 validation::limiter_name(verdict.occupancy->limiter))
                   : std::string("max cooperative grid: none (the block does not fit)\n");
      out += verdict.summary_line(opt.launch.kernel, plan) + "\n";
      std::fputs(out.c_str(), stdout);
      std::fflush(stdout);
      print_launch_diagnostics(verdict.diagnostics, opt.verbose);
      break;
    }
  }
  return verdict.launchable ? kSuccess : kDiagnostics;
}

}  // namespace

CLI::App* register_check(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand("check", "Check a launch offline against a device profile (no GPU needed)");
  cmd->add_option("file", opt->launch.input, "Input .pg file (or - for standard input), or .ptx from nvcc, NVRTC or Triton")->required();
  cmd->add_option("--kernel", opt->launch.kernel, "Kernel to launch")->required();
  cmd->add_option("--grid", opt->launch.grid, "Grid X[,Y[,Z]], or 'max': the largest cooperative grid that fits (implies --cooperative)")
      ->default_val("1");
  cmd->add_option("--block", opt->launch.block, "Block X[,Y[,Z]] (default: the kernel's @workgroup, else 256)");
  cmd->add_option("--shared-bytes", opt->launch.shared_bytes, "Dynamic shared memory per block, in bytes (decimal)")->default_val("0");
  cmd->add_flag("--cooperative", opt->launch.cooperative, "Launch cooperatively (cuLaunchCooperativeKernel)");
  cmd->add_option("--device-profile", opt->launch.profile,
                  "Device profile NAME (see `ptxgate devices --profiles`) or PATH to a profile JSON file")
      ->default_val(std::string(validation::kDefaultProfile));
  add_format_option(cmd, opt->format);
  cmd->add_option("--arg", opt->launch.args,
                  "NAME=SPEC per argument, in signature order (enables the argument checks): the specs of "
                  "`ptxgate run` (random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, PATH.npy, a raw file, a literal), "
                  "null, buffer:BYTES or TYPE:VALUE");
  cmd->add_flag("--empty-args", opt->launch.empty_args, "Describe an empty argument table");
  cmd->add_option("--null-slot", opt->launch.null_slots, "Index of an argument slot whose pointer is null");
  cmd->add_option("--elements", opt->launch.elements, "NAME=COUNT: elements of buffer NAME the launch touches");
  cmd->add_option("--stream", opt->stream, "Stream of the launch: explicit or null (the legacy default stream)")
      ->check(CLI::IsMember({"explicit", "null"}));
  cmd->add_option("--stream-policy", opt->stream_policy, "Whether a null stream is allowed")
      ->check(CLI::IsMember({"allow-legacy", "require-explicit"}));
  cmd->add_flag("--verbose", opt->verbose, "Also print resources, occupancy and notes (e.g. the shared-memory opt-in)");
  cmd->footer("Exit status: 0 launchable, 1 blocked or the program has errors, 2 usage error.");
  runner = [opt] { return run_check(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
