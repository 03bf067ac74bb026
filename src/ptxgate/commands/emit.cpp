// emit_file: each of emit's products, through the module cache.
#include "ptxgate/commands/emit.hpp"

#include <fmt/format.h>

#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/commands/reports.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/toolchain/disassemble.hpp"
#include "ptxgate/validation/check.hpp"

namespace ptxgate::commands {
namespace {

constexpr std::pair<EmitKind, std::string_view> kKinds[] = {
    {EmitKind::ptx, "ptx"},     {EmitKind::llvm, "llvm"}, {EmitKind::meta, "meta"},
    {EmitKind::cubin, "cubin"}, {EmitKind::sass, "sass"}, {EmitKind::resources, "resources"}};

// The module through the cache with ptxas: its cubin and each kernel's resources.
std::expected<module_cache::CacheResult, diag::Diagnostics> assembled(const ir::Module& module, const EmitRequest& request) {
  module_cache::ModuleCache cache(request.cache);
  module_cache::CompileRequest compile;
  compile.codegen = request.codegen;
  compile.produce_cubin = true;
  return cache.compile(module, compile);
}

std::expected<std::string, diag::Diagnostics> product(const ir::Module& module, const diag::SourceFile& source,
                                                      const EmitFileRequest& request, diag::Diagnostics& warnings) {
  const auto& cg = request.compile.codegen;
  switch (request.kind) {
    case EmitKind::meta: {
      nlohmann::json kernels = nlohmann::json::array();
      for (const auto& k : codegen::describe(module, cg.checked)) kernels.push_back(contract::to_meta_json(k));
      return nlohmann::json{{"schema_version", kJsonSchemaVersion}, {"target", cg.target.name()}, {"kernels", kernels}}.dump(2) +
             "\n";
    }
    case EmitKind::llvm: {
      toolchain::ToolkitOverrides overrides;
      overrides.libdevice = cg.libdevice_path;
      return toolchain::emit_llvm_ir(module, cg, toolchain::discover(overrides));
    }
    case EmitKind::ptx: {
      auto emitted = emit_ptx(module, request.compile);
      if (!emitted) return std::unexpected(emitted.error());
      warnings.append(emitted->warnings);
      return std::move(emitted->ptx);
    }
    case EmitKind::cubin:
    case EmitKind::sass:
    case EmitKind::resources: break;
  }
  auto compiled = assembled(module, request.compile);
  if (!compiled) return std::unexpected(compiled.error());
  warnings.append(compiled->warnings);
  const auto& entry = *compiled->entry;
  if (request.kind == EmitKind::cubin) return entry.cubin;
  if (request.kind == EmitKind::sass) return toolchain::disassemble(entry.cubin, entry.target_arch);
  KernelResourceList kernels;
  for (const auto& k : entry.kernels) {
    kernels.emplace_back(k.name, module_cache::kernel_resources(entry, k.name).value_or(contract::KernelResources{}));
    diag::Location where;
    where.file = source.path();
    if (const ir::Kernel* kernel = module.find_kernel(k.name))
      where = diag::locate(source, kernel->name_range.offset, kernel->name_range.length);
    validation::report_local_memory(warnings, k.name, kernels.back().second, where);
  }
  return request.json ? resources_json(entry.target_arch, kernels).dump(2) + "\n"
                      : resources_text(entry.target_arch, kernels);
}

}  // namespace

std::expected<Emitted, diag::Diagnostics> emit_ptx(const ir::Module& verified, const EmitRequest& request) {
  module_cache::ModuleCache cache(request.cache);
  module_cache::CompileRequest compile;
  compile.codegen = request.codegen;
  compile.codegen.target = ir::target_for_module(verified, request.codegen.target);
  compile.produce_cubin = false;
  auto result = cache.compile(verified, compile);
  if (!result) return std::unexpected(std::move(result.error()));
  Emitted out;
  out.ptx = result->entry->ptx;
  out.cache_outcome = result->outcome;
  out.warnings = std::move(result->warnings);
  return out;
}

std::optional<EmitKind> emit_kind_from_name(std::string_view name) {
  for (auto [kind, n] : kKinds)
    if (n == name) return kind;
  return std::nullopt;
}

std::vector<std::string> emit_kind_names() {
  std::vector<std::string> names;
  for (auto [kind, n] : kKinds) names.emplace_back(n);
  return names;
}

std::expected<EmitProduct, EmitStop> emit_file(const EmitFileRequest& request) {
  auto loaded = ir::load_file(request.input);
  if (!loaded) return std::unexpected(EmitStop{{}, loaded.error()});
  EmitProduct out;
  out.warnings = loaded->warnings;
  // The target policy of the runtime, `check` and the C API: sm_90 becomes sm_90a for Hopper's operations.
  EmitFileRequest chosen = request;
  chosen.compile.codegen.target = ir::target_for_module(loaded->module, request.compile.codegen.target);
  auto bytes = product(loaded->module, loaded->source, chosen, out.warnings);
  if (!bytes) return std::unexpected(EmitStop{std::move(out.warnings), bytes.error()});
  out.bytes = std::move(*bytes);
  // Text products under --format json: one document holding the text, like meta and resources.
  if (request.json && (request.kind == EmitKind::ptx || request.kind == EmitKind::llvm || request.kind == EmitKind::sass)) {
    std::string_view kind = request.kind == EmitKind::ptx ? "ptx" : request.kind == EmitKind::llvm ? "llvm" : "sass";
    out.bytes = nlohmann::json{{"schema_version", kJsonSchemaVersion},
                               {"target", chosen.compile.codegen.target.name()},
                               {"emit", kind},
                               {"text", std::move(out.bytes)}}
                    .dump(2) +
                "\n";
  }
  out.binary = request.kind == EmitKind::cubin;
  return out;
}

nlohmann::json resources_json(std::string_view target, const KernelResourceList& kernels) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [name, r] : kernels)
    arr.push_back({{"name", name},
                   {"registers", r.registers_per_thread},
                   {"spill_store_bytes", r.spill_store_bytes},
                   {"spill_load_bytes", r.spill_load_bytes},
                   {"static_shared_bytes", r.static_shared_bytes},
                   {"local_bytes", r.local_bytes},
                   {"constant_bytes", r.constant_bytes},
                   {"barriers", r.barriers},
                   {"max_threads_per_block", r.max_threads_per_block}});
  return {{"schema_version", kJsonSchemaVersion}, {"target", target}, {"kernels", arr}};
}

std::string resources_text(std::string_view target, const KernelResourceList& kernels) {
  std::string out = fmt::format("{:<24} {:>9} {:>13} {:>13} {:>13} {:>11} {:>8} {:>11}\n", "KERNEL", "REGISTERS",
                                "SPILL STORES", "SPILL LOADS", "SHARED BYTES", "LOCAL BYTES", "BARRIERS", "MAX THREADS");
  for (const auto& [name, r] : kernels)
    out += fmt::format("{:<24} {:>9} {:>13} {:>13} {:>13} {:>11} {:>8} {:>11}\n", name, r.registers_per_thread,
                       r.spill_store_bytes, r.spill_load_bytes, r.static_shared_bytes, r.local_bytes, r.barriers,
                       r.max_threads_per_block);
  out += fmt::format("({}; bytes per block for shared, per thread for local and spills)\n", target);
  return out;
}

}  // namespace ptxgate::commands
