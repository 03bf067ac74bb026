// `ptxgate check FILE --kernel NAME ...`: validate a launch offline against a device profile.
#include <algorithm>
#include <charconv>
#include <cstdio>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "ir/frontend.hpp"
#include "tools/cli.hpp"
#include "validation/check.hpp"
#include "validation/profiles.hpp"
#include "validation/ptxas_resources.hpp"

namespace ptxgate::cli {
namespace {

struct CheckOptions {
  std::string input;
  std::string kernel;
  std::string grid = "1";
  std::string block;
  uint64_t shared_bytes = 0;
  bool cooperative = false;
  std::string profile{validation::kDefaultProfile};
  std::string format = "text";
  bool verbose = false;
};

// "X[,Y[,Z]]" with every component a positive or zero integer; missing axes are 1.
std::optional<std::array<uint64_t, 3>> parse_dims(std::string_view text) {
  std::array<uint64_t, 3> out{1, 1, 1};
  size_t axis = 0;
  while (true) {
    if (axis == 3) return std::nullopt;
    auto comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), out[axis]);
    if (ec != std::errc() || ptr != part.data() + part.size() || part.empty()) return std::nullopt;
    ++axis;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

int usage_error(std::string message, std::string fix, diag::Format format) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_launch_option, std::move(message), {}, std::move(fix));
  print_diagnostics(d, format);
  return kUsage;
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

int run_check(const CheckOptions& opt) {
  auto format = *diag::format_from_name(opt.format);
  bool grid_max = opt.grid == "max";
  auto grid = grid_max ? std::optional<std::array<uint64_t, 3>>{{1, 1, 1}} : parse_dims(opt.grid);
  if (!grid)
    return usage_error(fmt::format("invalid --grid '{}'", opt.grid), "write --grid X[,Y[,Z]] or --grid max", format);
  std::array<uint64_t, 3> block{0, 0, 0};
  if (!opt.block.empty()) {
    auto b = parse_dims(opt.block);
    if (!b) return usage_error(fmt::format("invalid --block '{}'", opt.block), "write --block X[,Y[,Z]]", format);
    block = *b;
  }

  auto caps = validation::load_profile(opt.profile);
  if (!caps) {
    print_diagnostics(caps.error(), format);
    return kDiagnostics;
  }
  auto source = ir::read_source(opt.input);
  if (!source) {
    print_diagnostics(source.error(), format);
    return kDiagnostics;
  }
  auto loaded = ir::load_module(*source);
  if (!loaded) {
    print_diagnostics(loaded.error(), format);
    return kDiagnostics;
  }
  const ir::Kernel* kernel = loaded->module.find_kernel(opt.kernel);
  if (!kernel) {
    std::string names;
    for (const auto& k : loaded->module.kernels) names += (names.empty() ? "" : ", ") + k.name;
    return usage_error(fmt::format("no kernel named '{}' in '{}'; kernels: {}", opt.kernel, opt.input,
                                   names.empty() ? "(none)" : names),
                       "pass --kernel with one of the kernel names", format);
  }
  diag::Location location = diag::locate(*source, kernel->name_range.offset, kernel->name_range.length);

  const auto& targets = codegen::supported_targets();
  std::string arch = caps->arch();
  if (std::find(targets.begin(), targets.end(), arch) == targets.end()) {
    diag::Diagnostics d;
    d.add(diag::Code::resource_query_failed,
          fmt::format("device profile '{}' is {}, which ptxgate cannot compile for", caps->profile, arch), location,
          "use a profile of a supported architecture (`ptxgate devices --profiles`)");
    print_diagnostics(d, format);
    return kDiagnostics;
  }
  codegen::CodegenOptions cg;
  cg.target = arch;
  auto compiled = codegen::compile(loaded->module, cg);
  if (!compiled) {
    print_diagnostics(compiled.error(), format);
    return kDiagnostics;
  }
  auto resources = validation::query_ptxas_resources(compiled->ptx, arch);
  if (!resources) {
    print_diagnostics(resources.error(), format);
    return kDiagnostics;
  }
  auto res_it = resources->find(opt.kernel);
  auto info_it = std::find_if(compiled->kernels.begin(), compiled->kernels.end(),
                              [&](const codegen::KernelInfo& k) { return k.name == opt.kernel; });
  if (res_it == resources->end() || info_it == compiled->kernels.end()) {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error, fmt::format("kernel '{}' is missing from the compiled module", opt.kernel),
          location, "report this as a ptxgate bug");
    print_diagnostics(d, format);
    return kDiagnostics;
  }

  validation::LaunchPlan plan;
  plan.grid = *grid;
  plan.block = block;
  plan.dynamic_shared_bytes = opt.shared_bytes;
  plan.cooperative = opt.cooperative || grid_max;
  auto verdict = validation::check_launch(*info_it, res_it->second, plan, *caps, location);
  if (grid_max && verdict.max_cooperative_grid > 0) {
    plan.grid = {verdict.max_cooperative_grid, 1, 1};
    verdict = validation::check_launch(*info_it, res_it->second, plan, *caps, location);
  }

  if (!loaded->warnings.empty()) print_diagnostics(loaded->warnings, format == diag::Format::text ? format : diag::Format::text);
  switch (format) {
    case diag::Format::json:
      std::fputs((verdict.to_json(opt.kernel, plan).dump(2) + "\n").c_str(), stdout);
      break;
    case diag::Format::sarif:
      std::fputs(diag::render_sarif(verdict.diagnostics).c_str(), stdout);
      std::fputs((verdict.summary_line(opt.kernel, plan) + "\n").c_str(), stderr);
      break;
    case diag::Format::text: {
      std::string out;
      if (opt.verbose) {
        const auto& r = res_it->second;
        out += fmt::format("device: {} ({}, {}, {} SMs)\n", caps->profile, caps->name, arch, caps->sm_count);
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
                                 verdict.max_cooperative_grid, verdict.occupancy->active_blocks_per_sm, caps->sm_count,
                                 validation::limiter_name(verdict.occupancy->limiter))
                   : std::string("max cooperative grid: none (the block does not fit)\n");
      out += verdict.summary_line(opt.kernel, plan) + "\n";
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
  cmd->add_option("file", opt->input, "Input .pg file, or - for standard input")->required();
  cmd->add_option("--kernel", opt->kernel, "Kernel to launch")->required();
  cmd->add_option("--grid", opt->grid, "Grid X[,Y[,Z]], or 'max': the largest cooperative grid that fits (implies --cooperative)")
      ->default_val("1");
  cmd->add_option("--block", opt->block, "Block X[,Y[,Z]] (default: the kernel's @workgroup)");
  cmd->add_option("--shared-bytes", opt->shared_bytes, "Dynamic shared memory per block, in bytes")->default_val(0);
  cmd->add_flag("--cooperative", opt->cooperative, "Launch cooperatively (cuLaunchCooperativeKernel)");
  cmd->add_option("--device-profile", opt->profile,
                  "Device profile NAME (see `ptxgate devices --profiles`) or PATH to a profile JSON file")
      ->default_val(std::string(validation::kDefaultProfile));
  add_format_option(cmd, opt->format);
  cmd->add_flag("--verbose", opt->verbose, "Also print resources, occupancy and notes (e.g. the shared-memory opt-in)");
  cmd->footer("Exit status: 0 launchable, 1 blocked or the program has errors, 2 usage error.");
  runner = [opt] { return run_check(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
