// The code generator's entry points: lower, link libdevice if needed, optimise, then PTX or LLVM IR text.
#include "ptxgate/codegen/codegen.hpp"

#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "ptxgate/codegen/internal/budget.hpp"
#include "ptxgate/codegen/internal/libdevice.hpp"
#include "ptxgate/codegen/internal/lower.hpp"
#include "ptxgate/codegen/internal/nvptx.hpp"
#include "ptxgate/contract/checked.hpp"
#include "ptxgate/ir/access_sites.hpp"

namespace llvm {
/// The NVPTX backend's per-Module annotation cache (lib/Target/NVPTX/NVPTXUtilities.h, not
/// an installed header). Entries are keyed by Module address, so each must be erased before
/// its module dies, or a later module at the same address would read stale launch bounds.
void clearAnnotationCache(const Module* module);
}  // namespace llvm

namespace ptxgate::codegen {
namespace {

/// Collects LLVM's error diagnostics instead of letting the default handler exit the process.
struct CollectingDiagnosticHandler : llvm::DiagnosticHandler {
  explicit CollectingDiagnosticHandler(std::vector<std::string>* sink) : errors(sink) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (info.getSeverity() == llvm::DS_Error) {
      std::string text;
      llvm::raw_string_ostream stream(text);
      llvm::DiagnosticPrinterRawOStream printer(stream);
      info.print(printer);
      errors->push_back(std::move(text));
    }
    return true;
  }
  std::vector<std::string>* errors;
};

diag::Diagnostics single(diag::Code code, std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// One compile's LLVM state: its own context (so compiles run in parallel), the leased
/// target machine, and the optimised module.
struct Compilation {
  llvm::LLVMContext context;
  std::vector<std::string> llvm_errors;
  std::unique_ptr<llvm::Module> module;
  /// Built with 32-bit pointers, stopped before optimising: the module will need 64-bit ones
  /// (predicts_64bit_pointers), so the optimisation is not spent on a build that would be thrown away.
  bool stopped_for_64bit = false;

  ~Compilation() {
    if (module) llvm::clearAnnotationCache(module.get());
  }

  std::expected<void, diag::Diagnostics> llvm_failed(std::string_view stage) const {
    if (llvm_errors.empty()) return {};
    return std::unexpected(single(diag::Code::llvm_backend_failure,
                                  fmt::format("LLVM reported an error during {}: {}", stage, llvm_errors.front()),
                                  "report this as a ptxgate bug together with the input module"));
  }
};

/// Checked mode passes a length per buffer parameter in the launch's fixed table.
std::expected<void, diag::Diagnostics> check_checked_limits(const ir::Module& verified, bool checked) {
  if (!checked) return {};
  diag::Diagnostics d;
  for (size_t ki = 0; ki < verified.kernels.size(); ++ki) {
    const auto& k = verified.kernels[ki];
    size_t buffers = 0;
    // The diagnostic points at the first buffer parameter past the limit.
    diag::Location where;
    where.file = verified.path;
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (!k.params[i].is_buffer) continue;
      if (++buffers == contract::kMaxCheckedBuffers + 1 && verified.access_sites &&
          ki < verified.access_sites->parameters.size() && i < verified.access_sites->parameters[ki].size())
        where = verified.access_sites->parameters[ki][i];
    }
    if (buffers > contract::kMaxCheckedBuffers)
      d.add(diag::Code::too_many_parameters,
            fmt::format("kernel '{}' has {} buffer parameters; checked mode passes each one's length with the launch "
                        "(limit checked_buffer_parameters = {})",
                        k.name, buffers, contract::kMaxCheckedBuffers),
            where, "compile this kernel without --checked, or pass fewer buffers (one buffer can hold several arrays)");
  }
  if (d.has_errors()) return std::unexpected(std::move(d));
  return {};
}

/// Whether `e` or an expression inside it calls cp_async4/8/16.
bool calls_cp_async(const ir::Expr& e) {
  if (e.kind == ir::ExprKind::call && e.intrinsic && ir::is_async_copy(*e.intrinsic)) return true;
  return std::ranges::any_of(e.operands, [](const ir::ExprPtr& o) { return o && calls_cp_async(*o); });
}

/// Whether a statement of `body` (or one nested in it) calls cp_async4/8/16.
bool calls_cp_async(const std::vector<ir::StmtPtr>& body) {
  return std::ranges::any_of(body, [](const ir::StmtPtr& s) {
    for (const ir::ExprPtr* e : {&s->target, &s->value, &s->lo, &s->hi, &s->step})
      if (*e && calls_cp_async(**e)) return true;
    return calls_cp_async(s->body) || calls_cp_async(s->else_body);
  });
}

/// Whether a kernel or device function of the verified module calls cp.async: such a module is built
/// with 64-bit pointers from the start (needs_64bit_pointers), without lowering it at 32 bits first.
bool calls_cp_async(const ir::Module& m) {
  return std::ranges::any_of(m.kernels, [](const ir::Kernel& k) { return calls_cp_async(k.body); }) ||
         std::ranges::any_of(m.functions, [](const ir::Function& f) { return calls_cp_async(f.body); });
}

/// Whether a linked, not yet optimised module is certain to need 64-bit pointers (needs_64bit_pointers
/// after optimisation): it calls cp.async, or it holds one of libdevice's functions that keep a stack
/// frame whatever they are inlined into (libdevice is optimised bitcode: an alloca left in it is an
/// array indexed at run time, the Payne-Hanek reduction of sinf, cosf, tanf, sincosf and of the
/// double-precision trigonometry, the Bessel functions' tables).
bool predicts_64bit_pointers(const llvm::Module& module) {
  for (const llvm::Function& f : module) {
    if (f.isDeclaration()) {
      if (f.getName().starts_with("llvm.nvvm.cp.async.") && !f.use_empty()) return true;
      continue;
    }
    if (!is_libdevice_function(f)) continue;
    for (const llvm::Instruction& i : f.getEntryBlock())
      if (llvm::isa<llvm::AllocaInst>(i)) return true;
  }
  return false;
}

/// Lowers, verifies, links libdevice where used, internalises and optimises. With `stop_if_64bit`,
/// a module that predicts_64bit_pointers is left unoptimised with c.stopped_for_64bit set.
std::expected<void, diag::Diagnostics> build_optimised_module(Compilation& c, const ir::Module& verified,
                                                              const CodegenOptions& options,
                                                              llvm::TargetMachine& machine, bool stop_if_64bit) {
  if (auto met = ir::check_target(verified, options.target); !met) return met;
  if (auto limits = check_checked_limits(verified, options.checked); !limits) return limits;
  c.context.setDiagnosticHandler(std::make_unique<CollectingDiagnosticHandler>(&c.llvm_errors));
  auto lowered = lower_module(verified, c.context, machine.createDataLayout(), options.fp_mode, options.checked,
                              /*unroll_register_tiles=*/options.opt_level >= 2);
  if (!lowered) return std::unexpected(std::move(lowered.error()));
  c.module = std::move(*lowered);

  std::string broken;
  llvm::raw_string_ostream broken_stream(broken);
  if (llvm::verifyModule(*c.module, &broken_stream))
    return std::unexpected(single(diag::Code::internal_error, "generated LLVM IR is invalid: " + broken,
                                  "report this as a ptxgate bug together with the input module"));

  if (calls_libdevice(*c.module)) {
    if (auto linked = link_libdevice(*c.module, options.libdevice_path); !linked) return linked;
  }
  if (stop_if_64bit && predicts_64bit_pointers(*c.module)) {
    c.stopped_for_64bit = true;
    return {};
  }
  internalize_non_kernels(*c.module);
  // Inlining and complete unrolling can multiply the module many times over: refuse before they run.
  if (options.opt_level >= 1)
    if (auto estimated = check_estimated_budget(*c.module, options.instruction_budget); !estimated) return estimated;
  std::expected<void, diag::Diagnostics> budget;
  auto within_budget = [&] {
    budget = check_instruction_budget(*c.module, options.instruction_budget, "after inlining");
    return budget.has_value();
  };
  if (std::string error;
      !optimize_module(*c.module, machine, options.opt_level, options.llvm_pipeline, within_budget, error))
    return std::unexpected(single(diag::Code::llvm_backend_failure, "cannot build the optimisation pipeline: " + error,
                                  "report this as a ptxgate bug"));
  if (!budget) return budget;
  if (auto failed = c.llvm_failed("optimisation"); !failed) return failed;
  return check_instruction_budget(*c.module, options.instruction_budget, "after optimisation");
}

/// Whether the optimised module needs 64-bit pointers: a stack frame is left (see build_for_target), or
/// it calls cp.async, whose source-size forms LLVM 19's NVPTX selects only for 64-bit shared addresses
/// ("Cannot select: intrinsic llvm.nvvm.cp.async...s" with 32-bit ones).
bool needs_64bit_pointers(const llvm::Module& module) {
  for (const llvm::Function& f : module) {
    if (f.isDeclaration()) {
      if (f.getName().starts_with("llvm.nvvm.cp.async.")) return true;
      continue;
    }
    for (const llvm::BasicBlock& block : f)
      for (const llvm::Instruction& i : block)
        if (llvm::isa<llvm::AllocaInst>(i)) return true;
  }
  return false;
}

/// The optimised module and the machine that will emit it.
struct Optimised {
  std::unique_ptr<Compilation> compilation;
  TargetMachineLease lease;
};

/// Builds the optimised module with 32-bit pointers to shared, local and constant memory, as nvcc
/// does: a shared address is one register and `base + constant` folds into the instruction (the
/// SGEMM benchmark: 0.75 -> 0.80 of cuBLAS on an H100, docs/benchmarks.md). When local memory is
/// left after optimisation (a local array indexed at run time, libdevice's sinf slow path), it is
/// built again with 64-bit pointers: LLVM 19 addresses a 32-bit stack frame through a generic
/// pointer (cvta.to.local), and then ptxas no longer promotes it to registers (and cp.async needs
/// 64-bit shared addresses, see needs_64bit_pointers). Below -O2 nothing is
/// promoted anyway, so those compiles use 64-bit pointers directly, as does a module that calls
/// cp.async (calls_cp_async, decided on the verified module). A module certain to keep a frame
/// (predicts_64bit_pointers: libdevice's trigonometry, cp.async) stops the 32-bit build before its
/// optimisation, the expensive part (a generated kernel of math calls compiled in about two thirds of
/// the time, docs/benchmarks.md).
std::expected<Optimised, diag::Diagnostics> build_for_target(const ir::Module& verified, const CodegenOptions& options) {
  auto build = [&](bool short_pointers) -> std::expected<Optimised, diag::Diagnostics> {
    auto lease = lease_target_machine(options.target, options.opt_level, short_pointers);
    if (!lease) return std::unexpected(std::move(lease.error()));
    auto c = std::make_unique<Compilation>();
    if (auto built = build_optimised_module(*c, verified, options, lease->machine(), short_pointers); !built)
      return std::unexpected(std::move(built.error()));
    return Optimised{std::move(c), std::move(*lease)};
  };
  if (options.opt_level >= 2 && !calls_cp_async(verified)) {
    auto short_build = build(true);
    if (!short_build) return short_build;
    if (!short_build->compilation->stopped_for_64bit && !needs_64bit_pointers(*short_build->compilation->module))
      return short_build;
  }
  return build(false);
}

template <class T, class F>
std::expected<T, diag::Diagnostics> guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return std::unexpected(single(diag::Code::internal_error, "out of memory during code generation",
                                  "compile a smaller module or free memory"));
  } catch (const std::exception& e) {
    return std::unexpected(single(diag::Code::internal_error,
                                  fmt::format("unexpected failure during code generation: {}", e.what()),
                                  "report this as a ptxgate bug together with the input module"));
  }
}

}  // namespace

ir::Target llvm_target_for(ir::Target target) { return target.sm() > 90 ? ir::Target(90) : target; }

std::vector<contract::KernelInfo> describe(const ir::Module& m, bool checked) {
  std::vector<contract::KernelInfo> out;
  const std::vector<bool> guards = checked ? ir::sites_needing_guards(m) : std::vector<bool>{};
  for (size_t index = 0; index < m.kernels.size(); ++index) {
    const ir::Kernel& k = m.kernels[index];
    contract::KernelInfo info;
    info.name = k.name;
    for (uint32_t i = 0; i < k.params.size(); ++i) {
      const auto& p = k.params[i];
      info.params.push_back({p.name, i, p.is_buffer, p.access, p.type, p.is_buffer ? 8u : ir::byte_size(p.type)});
      if (i < k.vector_alignment.size()) info.params.back().alignment = k.vector_alignment[i];
    }
    info.required_block = k.workgroup;
    info.static_shared_bytes = k.static_shared_bytes;
    info.cooperative = k.cooperative;
    info.uses_grid_sync = k.uses_grid_sync;
    info.block_granule = k.block_granule;
    info.dynamic_shared_element_bytes = k.dynamic_shared_element_bytes;
    info.hidden_grid_barrier_param = k.uses_grid_sync;
    contract::attach_access_facts(info, k.access_facts);
    if (checked && m.access_sites) {
      auto sites = std::make_shared<contract::CheckedInfo>();
      for (uint32_t id : ir::sites_of_kernel(m, index))
        sites->sites.push_back({id, id >= guards.size() || guards[id], m.access_sites->sites[id]});
      info.checked = std::move(sites);
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::expected<std::string, diag::Diagnostics> emit_llvm_ir(const ir::Module& verified, const CodegenOptions& options) {
  return guarded<std::string>([&]() -> std::expected<std::string, diag::Diagnostics> {
    auto built = build_for_target(verified, options);
    if (!built) return std::unexpected(std::move(built.error()));
    std::string text;
    llvm::raw_string_ostream stream(text);
    built->compilation->module->print(stream, nullptr);
    return text;
  });
}

std::expected<CompiledModule, diag::Diagnostics> compile(const ir::Module& verified, const CodegenOptions& options) {
  return guarded<CompiledModule>([&]() -> std::expected<CompiledModule, diag::Diagnostics> {
    auto built = build_for_target(verified, options);
    if (!built) return std::unexpected(std::move(built.error()));
    Compilation& c = *built->compilation;
    auto ptx = emit_ptx_text(*c.module, built->lease.machine());
    if (!ptx) return std::unexpected(std::move(ptx.error()));
    if (auto failed = c.llvm_failed("PTX emission"); !failed) return std::unexpected(std::move(failed.error()));
    CompiledModule out;
    out.target = options.target;
    out.ptx = std::move(*ptx);
    out.kernels = describe(verified, options.checked);
    return out;
  });
}

}  // namespace ptxgate::codegen
