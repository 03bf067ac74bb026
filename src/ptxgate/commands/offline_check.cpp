// check_offline: the offline pipeline, through the module cache.
#include "ptxgate/commands/offline_check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/commands/arg_data.hpp"
#include "ptxgate/commands/arg_spec.hpp"
#include "ptxgate/commands/launch_flags.hpp"
#include "ptxgate/commands/reports.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/commands/foreign_ptx.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::commands {
namespace {

std::unexpected<OfflineStop> usage(std::string message, std::string fix) {
  OfflineStop s;
  s.usage = true;
  s.diagnostics.add(diag::Code::invalid_launch_option, std::move(message), {}, std::move(fix));
  return std::unexpected(std::move(s));
}

std::unexpected<OfflineStop> stop(diag::Diagnostics d) { return std::unexpected(OfflineStop{std::move(d), false}); }

// Describes the launch's argument table from --arg/--empty-args/--null-slot/--elements/--stream.
// Each SPEC is parsed by the library's one grammar (commands/arg_spec, shared with `run`), so a
// value `run` rejects is rejected here too (PG5002, collected in `spec_errors`). A usage problem
// (order, conflicting options) is the returned string.
std::expected<void, std::string> describe_arguments(const OfflineLaunch& opt, const contract::KernelInfo& info,
                                                    contract::LaunchPlan& plan, diag::Diagnostics& spec_errors) {
  plan.stream_is_null = opt.null_stream;
  plan.stream_policy = opt.require_explicit_stream ? contract::StreamPolicy::require_explicit
                                                   : contract::StreamPolicy::allow_legacy_default;
  if (opt.args.empty() && !opt.empty_args) {
    if (!opt.null_slots.empty() || !opt.elements.empty())
      return std::unexpected("--null-slot and --elements need the argument table (--arg ...)");
    return {};
  }
  if (opt.empty_args && !opt.args.empty()) return std::unexpected("--empty-args and --arg exclude each other");
  plan.arguments_known = true;
  for (size_t i = 0; i < opt.args.size(); ++i) {
    auto kv = split_assignment(opt.args[i], "--arg");
    if (!kv) {
      spec_errors.append(kv.error());
      continue;
    }
    const auto& [name, spec] = *kv;
    const contract::ParamInfo* param = i < info.params.size() ? &info.params[i] : nullptr;
    if (param != nullptr && name != param->name)
      return std::unexpected(fmt::format("--arg '{}' is argument {}, but parameter {} is '{}' (give --arg in signature order)",
                                         name, i, i, param->name));
    auto parsed = parse_arg_spec(spec, param, name);
    if (!parsed) {
      spec_errors.append(parsed.error());
      continue;
    }
    auto described = describe_argument(*parsed);
    // A .npy or raw file is read as `run` would read it (PG5001 located at the path when it
    // cannot be; PG5002 for a wrong dtype or size), so check knows the buffer's size too.
    if (parsed->kind == ArgSpec::Kind::npy_file || parsed->kind == ArgSpec::Kind::raw_file) {
      auto data = make_host_data(*parsed, spec, name);
      if (!data) {
        spec_errors.append(data.error());
        continue;
      }
      described.buffer_bytes = data->bytes.size();
    }
    plan.arguments.push_back(described);
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
                           [&](const contract::ParamInfo& p) { return p.name == name && p.is_buffer; });
    if (it == info.params.end())
      return std::unexpected(fmt::format("--elements: kernel '{}' has no buffer parameter '{}'", info.name, name));
    plan.required_elements.emplace_back(it->index, *count);
  }
  return {};
}

// The launch's plan and argument table for the loaded kernel, then the checks (and `--grid max`).
std::expected<OfflineCheck, OfflineStop> check_described(const OfflineLaunch& opt, OfflineCheck out,
                                                         const std::array<uint64_t, 3>& grid,
                                                         const std::array<uint64_t, 3>& block, uint64_t shared_bytes,
                                                         const diag::Location& location) {
  out.plan.grid = grid;
  out.plan.block = block;
  out.plan.block_given = !opt.block.empty();
  out.plan.dynamic_shared_bytes = shared_bytes;
  out.plan.cooperative = opt.cooperative || out.grid_max;
  out.plan.require_memory_proof = opt.require_memory_proof;
  out.plan.list_unproven_accesses = opt.list_unproven_accesses;
  diag::Diagnostics spec_errors;
  if (auto described = describe_arguments(opt, out.kernel, out.plan, spec_errors); !described)
    return usage(described.error(), "see `ptxgate check --help` for --arg, --elements, --null-slot and --stream");
  if (!spec_errors.empty()) return stop(std::move(spec_errors));
  out.verdict = validation::check_launch(out.kernel, out.resources, out.plan, out.caps, location);
  if (out.grid_max && out.verdict.max_cooperative_grid > 0) {
    out.plan.grid = {out.verdict.max_cooperative_grid, 1, 1};
    out.verdict = validation::check_launch(out.kernel, out.resources, out.plan, out.caps, location);
  }
  // One verdict: the program's warnings (PG3503 local memory, the verifier's) belong to it, so its
  // counts, its JSON and SARIF documents and its text carry them.
  auto& items = out.verdict.diagnostics.items();
  items.insert(items.begin(), out.warnings.items().begin(), out.warnings.items().end());
  if (opt.warnings_as_errors &&
      diag::promote_warnings(out.warnings) + diag::promote_warnings(out.verdict.diagnostics) > 0)
    out.verdict.launchable = false;
  return out;
}

}  // namespace

std::expected<ProfiledKernel, diag::Diagnostics> compile_for_profile(const std::string& input, const std::string& kernel_name,
                                                                    const std::string& profile,
                                                                    const module_cache::ModuleCacheOptions& cache_options,
                                                                    std::string_view signature, ir::FpMode fp_mode) {
  ProfiledKernel out;
  auto caps = validation::load_profile(profile);
  if (!caps) return std::unexpected(caps.error());
  out.caps = *caps;
  // PTX or a cubin from another compiler: its own signature, and ptxas's resources or the
  // cubin's (commands/foreign_ptx).
  if (is_foreign_module_path(input)) {
    auto foreign = load_foreign_kernel(input, kernel_name, caps->arch(), signature);
    if (!foreign) return std::unexpected(std::move(foreign.error()));
    out.kernel = std::move(foreign->info);
    out.resources = foreign->resources;
    out.location = foreign->location;
    validation::report_local_memory(out.warnings, kernel_name, out.resources, out.location);
    return out;
  }
  auto loaded = ir::load_file(input);
  if (!loaded) return std::unexpected(loaded.error());
  out.warnings.append(loaded->warnings);
  auto kernel = ir::require_kernel(loaded->module, kernel_name);
  if (!kernel) return std::unexpected(kernel.error());
  out.location = diag::locate(loaded->source, (*kernel)->name_range.offset, (*kernel)->name_range.length);
  const auto& location = out.location;

  // The device's own target (ir::target_for_device) or none: the resources must be ptxas's for it.
  const ir::DeviceTarget device = ir::target_for_device(caps->target());
  if (!device.exact) {
    diag::Diagnostics d;
    d.add(diag::Code::resource_query_failed,
          fmt::format("device profile '{}' is {}, which ptxgate cannot compile for", caps->profile, caps->arch()),
          location,
          "use a profile of a supported architecture (`ptxgate devices --profiles`)");
    return std::unexpected(std::move(d));
  }
  // Through the module cache: a module compiled once (by check, emit or run) is not compiled again,
  // and `ptxgate cache list` shows it.
  module_cache::ModuleCache cache(cache_options);
  module_cache::CompileRequest request;
  request.codegen.target = ir::target_for_module(loaded->module, device.target);
  request.codegen.fp_mode = fp_mode;
  request.produce_cubin = true;
  auto compiled = cache.compile(loaded->module, request);
  if (!compiled) return std::unexpected(compiled.error());
  out.warnings.append(compiled->warnings);
  out.cache_outcome = compiled->outcome;
  const auto& entry = *compiled->entry;
  auto info_it = std::find_if(entry.kernels.begin(), entry.kernels.end(),
                              [&](const contract::KernelInfo& k) { return k.name == kernel_name; });
  auto resources = module_cache::kernel_resources(entry, kernel_name);
  if (!resources || info_it == entry.kernels.end()) {
    diag::Diagnostics d;
    d.add(diag::Code::resource_query_failed,
          fmt::format("ptxas -arch={} reported no resources for kernel '{}'", entry.target_arch, kernel_name), location,
          "check that ptxas (CUDA_HOME or PTXGATE_PTXAS) is the CUDA Toolkit's and supports the target");
    return std::unexpected(std::move(d));
  }
  out.kernel = *info_it;
  out.resources = *resources;
  validation::report_local_memory(out.warnings, kernel_name, out.resources, location);
  return out;
}

std::expected<OfflineCheck, OfflineStop> check_offline(const OfflineLaunch& opt) {
  OfflineCheck out;
  auto geometry = parse_launch_flags(opt.grid, opt.block, opt.shared_bytes);
  if (!geometry) return std::unexpected(OfflineStop{std::move(geometry.error()), true});
  out.grid_max = geometry->grid_max;

  if (!opt.signature.empty() && !is_foreign_module_path(opt.input))
    return usage("--signature applies to .ptx and .cubin input; a .pg kernel's signature is in its source",
                 "leave out --signature");
  auto profiled = compile_for_profile(opt.input, opt.kernel, opt.profile, opt.cache, opt.signature, opt.fp_mode);
  if (!profiled) return stop(profiled.error());
  out.caps = profiled->caps;
  out.kernel = profiled->kernel;
  out.resources = profiled->resources;
  out.cache_outcome = profiled->cache_outcome;
  out.warnings = std::move(profiled->warnings);
  return check_described(opt, std::move(out), geometry->grid.value_or(std::array<uint64_t, 3>{1, 1, 1}),
                         geometry->block.value_or(std::array<uint64_t, 3>{0, 0, 0}), geometry->shared_bytes,
                         profiled->location);
}

nlohmann::json check_json(const OfflineCheck& check, const std::string& kernel) {
  auto j = check.verdict.to_json(kernel, check.plan);
  j["schema_version"] = kJsonSchemaVersion;
  return j;
}

nlohmann::json check_stop_json(const OfflineStop& stop, const std::string& kernel) {
  auto j = stop_json(stop.diagnostics, stop.usage);
  j["kernel"] = kernel;
  j["launchable"] = false;
  return j;
}

std::string check_text(const OfflineCheck& check, const std::string& kernel, bool verbose) {
  const auto& [caps, info, r, plan, verdict, grid_max, outcome, warnings] = check;
  const auto& occupancy = verdict.occupancy;
  std::string out;
  if (verbose) {
    out += fmt::format("device: {} ({}, {}, {} SMs)\n", caps.profile, caps.name, caps.arch(), caps.sm_count);
    out += fmt::format("resources: {} registers/thread, {} bytes static shared, {} bytes local, max {} threads/block\n",
                       r.registers_per_thread, r.static_shared_bytes, r.local_bytes, r.max_threads_per_block);
    if (occupancy)
      out += fmt::format("occupancy: {} blocks/SM, limited by {} (threads {}, registers {}, shared {}, blocks {})\n",
                         occupancy->active_blocks_per_sm, validation::limiter_name(occupancy->limiter),
                         occupancy->by_threads, occupancy->by_registers, occupancy->by_shared, occupancy->by_blocks);
  }
  if (grid_max)
    out += occupancy ? fmt::format("max cooperative grid: {} blocks ({} blocks/SM x {} SMs, limited by {})\n",
                                   verdict.max_cooperative_grid, occupancy->active_blocks_per_sm, caps.sm_count,
                                   validation::limiter_name(occupancy->limiter))
                     : std::string("max cooperative grid: none (the block does not fit)\n");
  return out + verdict.summary_line(kernel, plan) + "\n";
}

}  // namespace ptxgate::commands
