// compile_to_entry: toolchain::build as a cache entry; the key inputs of a compile, from the same toolkit.
#include <fmt/format.h>

#include "ptxgate/diagnostics/internal/json_checks.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/access_sites.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/toolchain/build.hpp"

namespace ptxgate::module_cache {

toolchain::Toolkit CompileRequest::toolkit() const {
  return toolchain::discover({.ptxas = ptxas, .libdevice = codegen.libdevice_path});
}

std::string codegen_options_text(const codegen::CodegenOptions& options) {
  // The pipeline is named (and versioned) at -O2/-O3, where ptxgate's own pipeline is the default.
  // The floating-point mode is named only when it is not the default, so that the keys of
  // default compiles keep their form.
  // The compile budget and checked mode likewise: a module refused under one budget never reads the
  // entry that a compile under a larger one published, and checked code is its own entry.
  std::string extra =
      options.fp_mode == ir::FpMode::contract ? "" : fmt::format(";fp={}", ir::fp_mode_name(options.fp_mode));
  if (options.instruction_budget != codegen::kDefaultInstructionBudget)
    extra += fmt::format(";budget={}", options.instruction_budget);
  if (options.checked) extra += ";checked=1";
  if (options.opt_level < 2) return fmt::format("opt_level={}{}", options.opt_level, extra);
  return fmt::format("opt_level={};pipeline={}{}", options.opt_level, options.llvm_pipeline ? "llvm" : "kernel-1",
                     extra);
}

CacheKeyInputs key_inputs_for(const ir::Module& verified, const CompileRequest& request,
                              const toolchain::Toolkit& toolkit) {
  CacheKeyInputs in;
  in.canonical_module_text = ir::print(verified);
  // The generated code prints each assert's file, line and condition as written, which the
  // canonical text does not hold: they are part of the key of a module with asserts.
  if (std::string sites = ir::assert_sites(verified); !sites.empty())
    in.canonical_module_text += "\n// assert sites\n" + sites;
  // The access facts kept with each kernel name their sites' lines and columns, which the
  // canonical text does not hold either.
  std::string access_sites;
  for (const ir::Kernel& k : verified.kernels)
    if (k.access_facts)
      for (const ir::AccessSite& s : k.access_facts->sites)
        access_sites += fmt::format("{}:{}:{}:{}\n", s.line, s.column, s.length, s.source_line);
  if (!access_sites.empty()) in.canonical_module_text += "\n// access sites\n" + access_sites;
  // Checked mode's site table names every access's position too (a site the facts leave out included).
  if (request.codegen.checked && verified.access_sites) {
    std::string checked_sites;
    for (const ir::SourceAccess& s : verified.access_sites->sites)
      checked_sites += fmt::format("{}:{}:{}:{}\n", s.line, s.column, s.length, s.source_line);
    in.canonical_module_text += "\n// checked sites\n" + checked_sites;
  }
  in.target_arch = request.codegen.target.name();
  in.codegen_options = codegen_options_text(request.codegen);
  in.ptxgate_version = ptxgate_version();
  in.llvm_version = codegen::llvm_version();
  // Exactly the file toolchain::build hands to codegen; when there is none, the reason (every
  // path searched) stands in, so that a libdevice appearing later changes the key.
  in.libdevice_hash = toolkit.libdevice ? libdevice_hash(*toolkit.libdevice)
                                        : "missing:" + toolkit.libdevice.error().items().front().message;
  // A cubin request never shares a key with a PTX-only one, nor one without ptxas with one with it:
  // a missing ptxas stands in as its reason, so the miss compiles and reports PG2005.
  if (request.produce_cubin)
    in.ptxas_version = toolkit.ptxas ? "ptxas:" + toolchain::ptxas_version(*toolkit.ptxas)
                                     : "missing:" + toolkit.ptxas.error().items().front().message;
  in.driver_version = request.driver_version;
  return in;
}

std::expected<CacheEntry, diag::Diagnostics> compile_to_entry(const ir::Module& verified,
                                                              const CompileRequest& request,
                                                              const toolchain::Toolkit& toolkit) {
  auto built = toolchain::build(verified, request.codegen, toolkit, request.produce_cubin);
  if (!built) return std::unexpected(std::move(built.error()));
  CacheEntry entry;
  entry.target_arch = built->target.name();
  entry.ptx_isa_version = built->ptx_isa_version;
  entry.ptx = std::move(built->ptx);
  entry.kernels = std::move(built->kernels);
  if (request.produce_cubin) {
    entry.cubin = std::move(built->cubin);
    for (const auto& [name, res] : built->resources) entry.resources[name] = resources_to_json(res);
    entry.resources["ptxas_log"] = std::move(built->ptxas_log);
  }
  return entry;
}

nlohmann::json resources_to_json(const contract::KernelResources& r) {
  return {{"registers_per_thread", r.registers_per_thread}, {"static_shared_bytes", r.static_shared_bytes},
          {"local_bytes", r.local_bytes},   {"max_threads_per_block", r.max_threads_per_block},
          {"barriers", r.barriers},         {"spill_store_bytes", r.spill_store_bytes},
          {"spill_load_bytes", r.spill_load_bytes}, {"constant_bytes", r.constant_bytes}};
}

std::optional<contract::KernelResources> kernel_resources(const CacheEntry& entry, std::string_view kernel) {
  auto it = entry.resources.find(std::string(kernel));
  if (it == entry.resources.end() || !it->is_object()) return std::nullopt;
  try {
    contract::KernelResources r;
    r.registers_per_thread = diag::json_integer<uint32_t>(it->at("registers_per_thread"));
    r.static_shared_bytes = diag::json_integer<uint64_t>(it->at("static_shared_bytes"));
    r.local_bytes = diag::json_integer<uint64_t>(it->at("local_bytes"));
    r.max_threads_per_block = diag::json_integer<uint32_t>(it->at("max_threads_per_block"));
    r.barriers = diag::json_integer_or(*it, "barriers", uint32_t{0});
    r.spill_store_bytes = diag::json_integer_or(*it, "spill_store_bytes", uint64_t{0});
    r.spill_load_bytes = diag::json_integer_or(*it, "spill_load_bytes", uint64_t{0});
    r.constant_bytes = diag::json_integer_or(*it, "constant_bytes", uint64_t{0});
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ptxgate::module_cache
