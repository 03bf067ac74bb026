// Code generation: verified IR -> LLVM IR -> (O3) -> NVPTX -> PTX text, plus KernelInfo.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::codegen {

/// CodegenOptions::instruction_budget's default: far above every example and benchmark kernel
/// (the largest, sgemm, has about 900 instructions after optimisation), and above a generated kernel
/// of 2000 math statements (about 253000 estimated before optimising, 90000 after; 4 s of compiling
/// on a slow 2-core machine, where nvcc needs 9 s for 500), so that it refuses runaway inlining and
/// unrolling, not straight-line code that nvcc compiles in the same time.
inline constexpr uint64_t kDefaultInstructionBudget = 500000;

struct CodegenOptions {
  ir::Target target = ir::Target(90);  ///< one of ir::supported_targets(); ir::target_for_module picks it
  unsigned opt_level = 3;          ///< 0..3
  /// At -O2/-O3: LLVM's standard per-module pipeline instead of ptxgate's kernel pipeline
  /// (src/ptxgate/codegen/nvptx.hpp kKernelPipeline); for comparisons.
  bool llvm_pipeline = false;
  /// Floating-point mode of kernels without an @fp attribute (ir::FpMode): contract (the
  /// default, like nvcc), exact (-ffp-contract=off) or fast (--use_fast_math).
  ir::FpMode fp_mode = ir::FpMode::contract;
  /// The libdevice.10.bc linked when the module calls math functions; empty: none (then such a
  /// module is PG2002). toolchain::build fills it from toolchain::discover.
  std::string libdevice_path;
  /// The most LLVM instructions one kernel may have after inlining (libdevice and device
  /// functions) and again after optimisation (unrolling); more is PG2010 before the expensive
  /// passes run, instead of minutes of optimisation and instruction selection. Compile time is
  /// about linear in this count (docs/benchmarks.md "Compile time and kernel size"). 0: no limit.
  uint64_t instruction_budget = kDefaultInstructionBudget;
  /// Checked mode (docs/ir.md "Memory safety"): every access not proven in bounds for every
  /// launch is guarded; a violating access touches no memory (a load gives 0, a store or atomic
  /// is skipped) and the launch's record names the first one (KernelInfo::checked, the hidden
  /// parameters of src/ptxgate/contract/checked.hpp). Part of the module-cache key.
  bool checked = false;
};

struct CompiledModule {
  ir::Target target;
  std::string ptx;                 ///< its `.version` and `.target`: toolchain::read_ptx_header
  std::vector<contract::KernelInfo> kernels;
};

/// The NVPTX processor LLVM generates code for when compiling for `target` (the target itself,
/// except Blackwell's: sm_90, the newest LLVM 19 knows without architecture-specific features).
ir::Target llvm_target_for(ir::Target target);

/// LLVM IR text of the module after optimisation (what --emit llvm prints).
[[nodiscard]] std::expected<std::string, diag::Diagnostics> emit_llvm_ir(const ir::Module& verified, const CodegenOptions& options);

/// Compiles every kernel of a verified module into one PTX module. PG2001 for a target that is not
/// supported; PG1331 / PG1350 (ir::check_target) when a kernel needs another target.
[[nodiscard]] std::expected<CompiledModule, diag::Diagnostics> compile(const ir::Module& verified, const CodegenOptions& options);

/// KernelInfo of each kernel, derived from the verified IR alone (no LLVM); with `checked`, as
/// compiled in checked mode (KernelInfo::checked: the sites each kernel reaches and which are guarded).
std::vector<contract::KernelInfo> describe(const ir::Module& verified, bool checked = false);

/// The LLVM version ptxgate was built with, e.g. "19.1.7".
std::string llvm_version();

}  // namespace ptxgate::codegen
