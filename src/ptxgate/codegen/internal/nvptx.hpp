// The NVPTX side of code generation: target set-up, pooled target machines, O3, PTX emission.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/target.hpp"

namespace ptxgate::codegen {

/// The LLVM triple of every module ptxgate generates.
inline constexpr std::string_view kNvptxTriple = "nvptx64-nvidia-cuda";

/// Exclusive use of one NVPTX TargetMachine for (target, opt level); returned to a
/// process-wide pool on destruction, so machines are created once and reused by
/// every later compile, and no two threads ever share one at the same time.
class TargetMachineLease {
 public:
  TargetMachineLease(TargetMachineLease&&) noexcept = default;
  TargetMachineLease& operator=(TargetMachineLease&&) = delete;
  ~TargetMachineLease();

  llvm::TargetMachine& machine() const { return *machine_; }

 private:
  friend std::expected<TargetMachineLease, diag::Diagnostics> lease_target_machine(ir::Target, unsigned,
                                                                                  bool);
  TargetMachineLease(std::string key, std::unique_ptr<llvm::TargetMachine> machine)
      : key_(std::move(key)), machine_(std::move(machine)) {}
  std::string key_;
  std::unique_ptr<llvm::TargetMachine> machine_;
};

/// Initialises the NVPTX target (once per process) and leases a machine for `target` at
/// `opt_level` 0..3. PG2001 (ir::unsupported_target) for a target ptxgate does not compile for. With
/// `short_pointers`, pointers to shared, local and constant memory are 32-bit (the data layout's
/// p3/p4/p5), as in nvcc's PTX; otherwise every pointer is 64-bit.
[[nodiscard]] std::expected<TargetMachineLease, diag::Diagnostics> lease_target_machine(ir::Target target, unsigned opt_level,
                                                                                      bool short_pointers);

/// ptxgate's optimisation pipeline for kernels at -O2/-O3, in LLVM's textual pass-pipeline
/// syntax (docs/ir.md "Optimisation" explains the choice of passes), in two stages: NVVM reflect
/// and inlining (libdevice and device functions), then the per-function passes.
extern const char* const kKernelInlineStage;
extern const char* const kKernelFunctionStage;

/// Optimises `module`: at -O0/-O1, and at -O2/-O3 when `llvm_pipeline` is set, LLVM's
/// default per-module pipeline with the NVPTX callbacks (NVVMReflect, intrinsic ranges)
/// registered by the target machine; otherwise the kernel pipeline, calling `after_inlining`
/// between its stages and stopping there when it returns false. Returns false (with the
/// reason in `error`) only if a pipeline cannot be built.
bool optimize_module(llvm::Module& module, llvm::TargetMachine& machine, unsigned opt_level, bool llvm_pipeline,
                     const std::function<bool()>& after_inlining, std::string& error);

/// Joins each run of wgmma statements that carry one accumulator from one to the next in a block, with
/// only computation between them, into one inline-PTX statement (the same instructions in the same
/// order; the operands they compute are computed before it): the code generator then handles one
/// statement of 2N operands per run instead of one per wgmma, each with N tied operands to coalesce
/// (src/ptxgate/codegen/wgmma_fusion.cpp; docs/benchmarks.md "Compile speed (issue 29)").
void fuse_wgmma_chains(llvm::Module& module);

/// Replaces each pair of f32 values rounded to bf16 (or f16) and packed into a two-element vector
/// (`insertelement` of two `fptrunc`s) by one `llvm.nvvm.ff2bf16x2.rn` (`ff2f16x2.rn`): one
/// `cvt.rn.bf16x2.f32` where NVPTX emits two conversions and a `mov.b32`, as nvcc's
/// `__floats2bfloat162_rn` does; the same rounding (to nearest even). Only for `sm` >= 80, which has the
/// instruction. Returns the number of pairs replaced (src/ptxgate/codegen/half_pack.cpp).
size_t pack_half_pairs(llvm::Module& module, unsigned sm);

/// Functions of more blocks than this are generated without machine sinking: its store search
/// (hasStoreBetween) walks every block reachable from a load's block, so its cost grows with the square
/// of a long kernel's length (docs/benchmarks.md "Compile speed (issue 29)"); the largest example or
/// benchmark kernel has 339 blocks.
inline constexpr size_t kMachineSinkBlockLimit = 1000;

/// Lowers `module` to PTX text with a codegen pipeline built for this module alone:
/// NVPTXAsmPrinter keeps per-Function state (demoted shared variables) that would go
/// stale if one pipeline were reused for another module. At -O2/-O3 (the code generator's Default
/// level) the pipeline leaves out passes that change no example's or benchmark kernel's machine code
/// (their cubins are byte-identical), and machine sinking in a module with a function of more than
/// kMachineSinkBlockLimit blocks. PG2003 when LLVM cannot build it.
[[nodiscard]] std::expected<std::string, diag::Diagnostics> emit_ptx_text(llvm::Module& module, llvm::TargetMachine& machine);

}  // namespace ptxgate::codegen
