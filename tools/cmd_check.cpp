// `ptxgate check FILE --kernel NAME ...`: validate a launch offline against a device profile.
#include <algorithm>
#include <cstdio>
#include <expected>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "cli.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/validation/arg_spec.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "ptxgate/toolchain/build.hpp"

namespace ptxgate::cli {
namespace {

struct CheckOptions {
  std::string input;
  std::string kernel;
  std::string grid = "1";
  std::string block;
  std::string shared_bytes = "0";
  bool cooperative = false;
  std::string profile{validation::kDefaultProfile};
  std::string format = "text";
  bool verbose = false;
  // The argument table of the launch being described (optional; enables the argument checks).
  std::vector<std::string> args;          ///< NAME=SPEC in signature order
  bool empty_args = false;                ///< an empty argument table
  std::vector<uint32_t> null_slots;       ///< slots whose pointer in the table is null
  std::vector<std::string> elements;      ///< NAME=COUNT: elements the launch touches in a buffer
  std::string stream = "explicit";        ///< explicit | null
  std::string stream_policy = "allow-legacy";
};

// Describes the launch's argument table from --arg/--empty-args/--null-slot/--elements/--stream.
// Each SPEC is parsed by the library's one grammar (validation/arg_spec, shared with `run`), so a
// value `run` rejects is rejected here too (PG5002, collected in `spec_errors`). A usage problem
// (order, conflicting options) is the returned string.
std::expected<void, std::string> describe_arguments(const CheckOptions& opt, const codegen::KernelInfo& info,
                                                    validation::LaunchPlan& plan, diag::Diagnostics& spec_errors) {
  plan.stream_is_null = opt.stream == "null";
  plan.stream_policy = opt.stream_policy == "require-explicit" ? validation::StreamPolicy::require_explicit
                                                               : validation::StreamPolicy::allow_legacy_default;
  if (opt.args.empty() && !opt.empty_args) {
    if (!opt.null_slots.empty() || !opt.elements.empty())
      return std::unexpected("--null-slot and --elements need the argument table (--arg ...)");
    return {};
  }
  if (opt.empty_args && !opt.args.empty()) return std::unexpected("--empty-args and --arg exclude each other");
  plan.arguments_known = true;
  for (size_t i = 0; i < opt.args.size(); ++i) {
    auto kv = validation::split_assignment(opt.args[i], "--arg");
    if (!kv) {
      spec_errors.append(kv.error());
      continue;
    }
    const auto& [name, spec] = *kv;
    const codegen::ParamInfo* param = i < info.params.size() ? &info.params[i] : nullptr;
    if (param != nullptr && name != param->name)
      return std::unexpected(fmt::format("--arg '{}' is argument {}, but parameter {} is '{}' (give --arg in signature order)",
                                         name, i, i, param->name));
    auto parsed = validation::parse_arg_spec(spec, param, name);
    if (!parsed) {
      spec_errors.append(parsed.error());
      continue;
    }
    plan.arguments.push_back(validation::describe_argument(*parsed));
  }
  for (uint32_t slot : opt.null_slots) {
    if (slot >= plan.arguments.size())
      return std::unexpected(fmt::format("--null-slot {} is past the {} arguments given", slot, plan.arguments.size()));
    plan.arguments[slot].slot_is_null = true;
  }
  for (const auto& e : opt.elements) {
    size_t eq = e.find('=');
    std::string name = e.substr(0, eq);
    auto count = eq == std::string::npos ? std::unexpected(std::string("no '='")) : support::parse_count(e.substr(eq + 1));
    if (!count) return std::unexpected(fmt::format("--elements '{}' is not NAME=COUNT: {}", e, count.error()));
    auto it = std::find_if(info.params.begin(), info.params.end(),
                           [&](const codegen::ParamInfo& p) { return p.name == name && p.is_buffer; });
    if (it == info.params.end())
      return std::unexpected(fmt::format("--elements: kernel '{}' has no buffer parameter '{}'", info.name, name));
    plan.required_elements.emplace_back(it->index, *count);
  }
  return {};
}

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

int usage_error(std::string message, std::string fix, diag::Format format, std::string_view kernel) {
  diag::Diagnostics d;
  d.add(diag::Code::invalid_launch_option, std::move(message), {}, std::move(fix));
  return stop(d, format, kernel, kUsage);
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
  auto grid = grid_max ? std::array<uint64_t, 3>{1, 1, 1} : support::parse_dims(opt.grid);
  if (!grid)
    return usage_error(fmt::format("invalid --grid: {}", grid.error()),
                       "write --grid X[,Y[,Z]] (decimal counts) or --grid max", format, opt.kernel);
  std::array<uint64_t, 3> block{0, 0, 0};
  if (!opt.block.empty()) {
    auto b = support::parse_dims(opt.block);
    if (!b)
      return usage_error(fmt::format("invalid --block: {}", b.error()),
                         "write --block X[,Y[,Z]] (decimal counts)", format, opt.kernel);
    block = *b;
  }
  auto shared_bytes = support::parse_count(opt.shared_bytes);
  if (!shared_bytes)
    return usage_error(fmt::format("invalid --shared-bytes '{}': {}", opt.shared_bytes, shared_bytes.error()),
                       "write --shared-bytes N (a decimal byte count)", format, opt.kernel);

  auto caps = validation::load_profile(opt.profile);
  if (!caps) {
    return stop(caps.error(), format, opt.kernel, kDiagnostics);
  }
  auto loaded = ir::load_file(opt.input);
  if (!loaded) {
    return stop(loaded.error(), format, opt.kernel, kDiagnostics);
  }
  const ir::Kernel* kernel = loaded->module.find_kernel(opt.kernel);
  if (!kernel) {
    std::string names;
    for (const auto& k : loaded->module.kernels) names += (names.empty() ? "" : ", ") + k.name;
    return usage_error(fmt::format("no kernel named '{}' in '{}'; kernels: {}", opt.kernel, opt.input,
                                   names.empty() ? "(none)" : names),
                       "pass --kernel with one of the kernel names", format, opt.kernel);
  }
  diag::Location location = diag::locate(loaded->source, kernel->name_range.offset, kernel->name_range.length);

  const auto& targets = codegen::supported_targets();
  std::string arch = caps->arch();
  if (std::find(targets.begin(), targets.end(), arch) == targets.end()) {
    diag::Diagnostics d;
    d.add(diag::Code::resource_query_failed,
          fmt::format("device profile '{}' is {}, which ptxgate cannot compile for", caps->profile, arch), location,
          "use a profile of a supported architecture (`ptxgate devices --profiles`)");
    return stop(d, format, opt.kernel, kDiagnostics);
  }
  codegen::CodegenOptions cg;
  cg.target = arch;
  auto built = toolchain::build(loaded->module, cg, toolchain::discover(), /*assemble_cubin=*/true);
  if (!built) {
    return stop(built.error(), format, opt.kernel, kDiagnostics);
  }
  auto res_it = built->resources.find(opt.kernel);
  auto info_it = std::find_if(built->kernels.begin(), built->kernels.end(),
                              [&](const codegen::KernelInfo& k) { return k.name == opt.kernel; });
  if (res_it == built->resources.end() || info_it == built->kernels.end()) {
    diag::Diagnostics d;
    d.add(diag::Code::resource_query_failed,
          fmt::format("ptxas -arch={} reported no resources for kernel '{}'", arch, opt.kernel), location,
          "check that ptxas (CUDA_HOME or PTXGATE_PTXAS) is the CUDA Toolkit's and supports the target");
    return stop(d, format, opt.kernel, kDiagnostics);
  }

  validation::LaunchPlan plan;
  plan.grid = *grid;
  plan.block = block;
  plan.block_given = !opt.block.empty();
  plan.dynamic_shared_bytes = *shared_bytes;
  plan.cooperative = opt.cooperative || grid_max;
  diag::Diagnostics spec_errors;
  if (auto described = describe_arguments(opt, *info_it, plan, spec_errors); !described)
    return usage_error(described.error(), "see `ptxgate check --help` for --arg, --elements, --null-slot and --stream",
                       format, opt.kernel);
  if (!spec_errors.empty()) {
    return stop(spec_errors, format, opt.kernel, kDiagnostics);
  }
  auto verdict = validation::check_launch(*info_it, res_it->second, plan, *caps, location);
  if (grid_max && verdict.max_cooperative_grid > 0) {
    plan.grid = {verdict.max_cooperative_grid, 1, 1};
    verdict = validation::check_launch(*info_it, res_it->second, plan, *caps, location);
  }

  if (!loaded->warnings.empty()) print_diagnostics(loaded->warnings, format);
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
  cmd->add_option("--block", opt->block, "Block X[,Y[,Z]] (default: the kernel's @workgroup, else 256)");
  cmd->add_option("--shared-bytes", opt->shared_bytes, "Dynamic shared memory per block, in bytes (decimal)")->default_val("0");
  cmd->add_flag("--cooperative", opt->cooperative, "Launch cooperatively (cuLaunchCooperativeKernel)");
  cmd->add_option("--device-profile", opt->profile,
                  "Device profile NAME (see `ptxgate devices --profiles`) or PATH to a profile JSON file")
      ->default_val(std::string(validation::kDefaultProfile));
  add_format_option(cmd, opt->format);
  cmd->add_option("--arg", opt->args,
                  "NAME=SPEC per argument, in signature order (enables the argument checks): the specs of "
                  "`ptxgate run` (random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, PATH.npy, a raw file, a literal), "
                  "null, buffer:BYTES or TYPE:VALUE");
  cmd->add_flag("--empty-args", opt->empty_args, "Describe an empty argument table");
  cmd->add_option("--null-slot", opt->null_slots, "Index of an argument slot whose pointer is null");
  cmd->add_option("--elements", opt->elements, "NAME=COUNT: elements of buffer NAME the launch touches");
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
