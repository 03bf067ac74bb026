// `ptxgate run FILE --kernel K --arg NAME=SPEC ...`: compile through the cache, validate, launch, read back.
// The pipeline is commands::run_kernel; this file adapts options and prints.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ptxgate/commands/run.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct RunOptions {
  commands::RunRequest request;
  std::string format = "text";
};

int run_command(RunOptions& opt) {
  const auto format = *diag::format_from_name(opt.format);
  const bool json = format == diag::Format::json;
  auto result = commands::run_kernel(opt.request);
  if (!result) {
    // Under --format json one document with every diagnostic inside; else diagnostics on stderr.
    const auto& s = result.error();
    if (json) print_product(commands::run_stop_json(s, opt.request.kernel).dump(2) + "\n");
    else if (!s.warnings.empty()) print_diagnostics(s.warnings, format);
    if (!json) print_diagnostics(s.diagnostics, format);
    return s.no_driver ? kNoDriver : s.usage ? kUsage : kDiagnostics;
  }
  const bool stopped = !result->violations.empty();  // --checked: accesses stopped, results read back
  if (json) {
    print_product(commands::run_json(*result).dump(2) + "\n");
    return stopped ? kDiagnostics : kSuccess;
  }
  if (warnings_stop(result->warnings, format)) return kDiagnostics;
  const auto& c = result->config;
  const auto& b = result->block;
  std::fputs(fmt::format("ran {}: grid=({},{},{}) block=({},{},{}) shared={}{}\n", result->kernel, c.grid[0], c.grid[1],
                         c.grid[2], b[0], b[1], b[2], c.dynamic_shared_bytes, c.cooperative ? " cooperative" : "")
                 .c_str(),
             stderr);
  if (const auto& t = result->timing)
    print_product(fmt::format("time: median {:.3f} us over {} runs (min {:.3f} us, max {:.3f} us), after 1 warm-up\n",
                              t->median_us, t->runs, t->min_us, t->max_us));
  for (const auto& p : result->printed)
    print_product(fmt::format("{}[0:{}] ={}{}\n", p.name, p.elements.size(), p.elements.empty() ? "" : " ",
                              fmt::join(p.elements, " ")));
  if (stopped) {
    print_diagnostics(result->violations, format);
    return kDiagnostics;
  }
  return kSuccess;
}

}  // namespace

CLI::App* register_run(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<RunOptions>();
  auto& r = opt->request;
  auto* cmd = app.add_subcommand("run", "Compile, validate and launch a kernel on the GPU, then read results back");
  cmd->add_option("file", r.input, "Input .pg file, or - for standard input")->required();
  cmd->add_option("--kernel", r.kernel, "Kernel to launch")->required();
  cmd->add_option("--grid", r.grid,
                  "Grid X[,Y[,Z]]; default: enough blocks to cover the largest buffer; 'max': the largest "
                  "cooperative grid that fits");
  cmd->add_option("--block", r.block, "Block X[,Y[,Z]]; default: the kernel's @workgroup, else 256");
  cmd->add_option("--shared-bytes", r.shared_bytes, "Dynamic shared memory per block in bytes");
  cmd->add_flag("--cooperative", r.cooperative, "Launch cooperatively (implied for @cooperative kernels)");
  cmd->add_option("--arg", r.args,
                  "NAME=SPEC per parameter. Buffers: random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, PATH.npy, "
                  "or a raw file. Scalars: a literal of the parameter's type");
  cmd->add_option("--out", r.outs, "NAME=PATH.npy: write a buffer after the launch");
  cmd->add_option("--print", r.prints, "NAME[:K]: print the first K (default 10) elements of a buffer");
  cmd->add_option("--time", r.time_runs, "Time N more launches with device events and print the median");
  cmd->add_option("--device", r.device, "CUDA device ordinal")->default_val(0);
  add_fp_options(cmd, r.fp_mode);
  add_checked_option(cmd, r.checked);
  add_common_options(cmd, opt->format);
  runner = [opt] { return run_command(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
