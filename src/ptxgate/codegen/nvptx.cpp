// NVPTX target set-up, a pool of reusable target machines, the optimisation pipelines and PTX emission.
#include "ptxgate/codegen/internal/nvptx.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <ranges>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Pass.h>
#include <llvm/PassInfo.h>
#include <llvm/PassRegistry.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/codegen/internal/libdevice.hpp"

namespace ptxgate::codegen {
namespace {

void initialize_nvptx_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

// -O3 keeps the code generator at Default: at Aggressive, NVPTX runs GVN a second time
// over IR that the O3 pipeline has just GVN-ed (about 12% of a compile), and uses the
// cheaper EarlyCSE otherwise. The PTX of the examples is the same either way.
llvm::CodeGenOptLevel codegen_level(unsigned opt_level) {
  switch (opt_level) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    default: return llvm::CodeGenOptLevel::Default;
  }
}

/// NVPTX reads its pointer-width option ("nvptx-short-ptr", a process-wide LLVM option) when a
/// target machine is constructed: machines of both widths are made one at a time, with the option
/// set for each under this lock. LLVM in this library serves only ptxgate.
std::unique_ptr<llvm::TargetMachine> create_machine(const llvm::Target& nvptx, const std::string& triple,
                                                    std::string_view cpu, unsigned opt_level, bool short_pointers) {
  static std::mutex creating;
  std::lock_guard lock(creating);
  auto& options = llvm::cl::getRegisteredOptions();
  auto it = options.find("nvptx-short-ptr");
  if (it == options.end()) {
    if (short_pointers) return nullptr;
  } else {
    static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(short_pointers);
  }
  llvm::TargetOptions target_options;
  return std::unique_ptr<llvm::TargetMachine>(nvptx.createTargetMachine(
      triple, std::string(cpu), "", target_options, std::nullopt, std::nullopt, codegen_level(opt_level)));
}

/// Idle target machines by "target/opt/pointer width". Never destroyed: LLVM's own statics may be
/// gone by the time static destructors would run.
struct MachinePool {
  std::mutex mutex;
  std::map<std::string, std::vector<std::unique_ptr<llvm::TargetMachine>>, std::less<>> idle;
};

MachinePool& pool() {
  static MachinePool* instance = new MachinePool;
  return *instance;
}

diag::Diagnostics backend_failure(std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::llvm_backend_failure, std::move(message), {},
        "report this as a ptxgate bug together with the input module");
  return d;
}

}  // namespace

TargetMachineLease::~TargetMachineLease() {
  if (!machine_) return;
  auto& p = pool();
  std::lock_guard lock(p.mutex);
  p.idle[key_].push_back(std::move(machine_));
}

std::expected<TargetMachineLease, diag::Diagnostics> lease_target_machine(ir::Target target,
                                                                         unsigned opt_level, bool short_pointers) {
  if (!ir::is_supported(target)) return std::unexpected(ir::unsupported_target(target.name()));
  opt_level = std::min(opt_level, 3u);
  std::string key = fmt::format("{}/O{}/{}", target.name(), opt_level, short_pointers ? "p32" : "p64");
  {
    auto& p = pool();
    std::lock_guard lock(p.mutex);
    auto it = p.idle.find(key);
    if (it != p.idle.end() && !it->second.empty()) {
      auto machine = std::move(it->second.back());
      it->second.pop_back();
      return TargetMachineLease(std::move(key), std::move(machine));
    }
  }
  initialize_nvptx_once();
  std::string error;
  const std::string triple(kNvptxTriple);
  const llvm::Target* nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!nvptx) return std::unexpected(backend_failure("the NVPTX target is not available: " + error));
  auto machine = create_machine(*nvptx, triple, llvm_target_for(target).name(), opt_level, short_pointers);
  if (!machine) return std::unexpected(backend_failure("LLVM could not create a target machine for " + target.name()));
  return TargetMachineLease(std::move(key), std::move(machine));
}

// The passes of LLVM's O3 per-module pipeline that change the code of ptxgate kernels, in O3's
// order. A kernel module is one or more kernels plus, when math functions are used, internal
// libdevice functions: there is nothing for the interprocedural, coroutine, OpenMP, vectoriser
// and whole-module passes of O3 to do but cost time (a saxpy compile spent a third of its time
// building and running them). libdevice is inlined first (its bitcode is already optimised) and
// the unused rest dropped. Then SSA construction, combining, loop canonicalisation with
// LICM, full unrolling of constant-trip loops (a matmul tile's inner loop), the late unroller
// (partial, and full for loops the first one found too large before SROA), GVN and InstCombine
// after it (so that an unrolled iteration's condition is seen to repeat one its guard already
// decided: axpy_half's tail loop, tenth round), and alignment inference (which lets the NVPTX
// load/store vectoriser merge shared-memory loads into ld.shared.v4). On every example and benchmark kernel the
// ptxas output (registers, size) is the same as with O3 at about two thirds of the instructions
// executed by the compiler (docs/benchmarks.md). Loops whose trip count is known only at run time
// are not unrolled here (no-runtime): ptxas unrolls loops itself, and a runtime-unrolled loop (a
// four-way body and a remainder) only gave it more PTX to compile: ptxas executed 39% more
// instructions on BFS's unrolled edge loop for a larger cubin with more registers and the same run
// time (docs/benchmarks.md "Compile speed (issue 29)", ninth round).
const char* const kLibdevicePrepareStage =
    "loop-mssa(loop-rotate<header-duplication;no-prepare-for-lto>),nvvm-reflect,simplifycfg<keep-loops>,"
    "sroa<modify-cfg>,early-cse<>,instcombine<max-iterations=1;no-verify-fixpoint>";
const char* const kKernelInlineStage = "function(nvvm-reflect,nvvm-intr-range),cgscc(inline),globaldce";
const char* const kKernelFunctionStage =
    "function("
    "simplifycfg<keep-loops>,sroa<modify-cfg>,early-cse<>,instcombine<max-iterations=1;no-verify-fixpoint>,"
    "reassociate,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>),"
    "loop(indvars,loop-deletion,loop-unroll-full),"
    "sroa<modify-cfg>,loop-unroll<O3;no-runtime>,gvn<>,instcombine<max-iterations=1;no-verify-fixpoint>,"
    "infer-alignment,loop-mssa(licm<allowspeculation>),adce,simplifycfg)";

namespace {

/// The compute capability the machine generates code for (90 for sm_90a; 0 if its CPU is no sm_ name).
unsigned target_sm(const llvm::TargetMachine& machine) {
  const auto target = ir::Target::parse(std::string_view(machine.getTargetCPU()));
  return target ? target->sm() : 0;
}

}  // namespace

bool optimize_module(llvm::Module& module, llvm::TargetMachine& machine, unsigned opt_level, bool llvm_pipeline,
                     const std::function<bool()>& after_inlining, std::string& error) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  if (opt_level >= 2 && !llvm_pipeline) {
    // Each libdevice function prepared once in its own small body before it is inlined at every call
    // (docs/benchmarks.md "Compile speed (issue 29)"). Its loops (the trigonometric reductions) rotated:
    // rotated inside a long kernel, each loop's MemorySSA update computes a dominance frontier over the
    // rest of the kernel, quadratic in its length; already rotated, the kernel stage leaves them. Then
    // NVVMReflect, which folds the __nvvm_reflect branches (FTZ, the architecture) but leaves the
    // untaken side as unreachable blocks and the taken side as a chain of single-edge blocks, then
    // SimplifyCFG to drop those and SROA, EarlyCSE and InstCombine to fold what the reflected constants
    // leave: otherwise every call site clones and costs it all again, and the kernel stage simplifies
    // it in one long function. The PTX of the generated kernels is byte-identical; of the examples,
    // math's instructions are ordered differently, with the same ptxas registers and size.
    {
      llvm::FunctionPassManager prepare;
      if (auto err = builder.parsePassPipeline(prepare, kLibdevicePrepareStage)) {
        error = llvm::toString(std::move(err));
        return false;
      }
      for (llvm::Function& f : module)
        if (!f.isDeclaration() && is_libdevice_function(f))
          prepare.run(f, functions);
    }
    // The kernel pipeline in its two stages, with the caller's check between them.
    for (const char* stage : {kKernelInlineStage, kKernelFunctionStage}) {
      llvm::ModulePassManager pipeline;
      if (auto err = builder.parsePassPipeline(pipeline, stage)) {
        error = llvm::toString(std::move(err));
        return false;
      }
      pipeline.run(module, modules);
      if (stage == kKernelInlineStage && !after_inlining()) return true;
    }
    fuse_wgmma_chains(module);
    pack_half_pairs(module, target_sm(machine));
    return true;
  }
  llvm::OptimizationLevel level = llvm::OptimizationLevel::O3;
  switch (opt_level) {
    case 0: level = llvm::OptimizationLevel::O0; break;
    case 1: level = llvm::OptimizationLevel::O1; break;
    case 2: level = llvm::OptimizationLevel::O2; break;
    default: break;
  }
  llvm::ModulePassManager pipeline =
      opt_level == 0 ? builder.buildO0DefaultPipeline(level) : builder.buildPerModuleDefaultPipeline(level);
  pipeline.run(module, modules);
  fuse_wgmma_chains(module);
  if (opt_level > 0) pack_half_pairs(module, target_sm(machine));
  return true;
}

namespace {

/// A pass of NVPTX's code-generation pipeline that ptxgate leaves out at -O2/-O3: the `ordinal`th
/// pass (from 1) registered as `argument` that the target adds.
struct PrunedPass {
  std::string_view argument;
  unsigned ordinal;
};

// Measured on every example and benchmark kernel (docs/benchmarks.md "Compile speed (issue 29)", fourth
// round): without these passes ptxas produces byte-identical cubins, and sgemm's text -> PTX executes
// about 5% fewer instructions. After ptxgate's kernel pipeline (SROA twice, EarlyCSE, GVN, InstCombine)
// NVPTX's own SROA runs find no alloca left to split, constant hoisting and early tail duplication
// change nothing, the EarlyCSE after NaryReassociate finds nothing new, and the EarlyCSE after loop
// strength reduction changes only the order of instructions that ptxas schedules itself.
constexpr PrunedPass kPrunedPasses[] = {
    {"sroa", 1}, {"early-cse", 2}, {"consthoist", 1}, {"early-cse", 3}, {"sroa", 2}, {"early-tailduplication", 1},
};

/// The legacy pass manager that receives NVPTX's code-generation pipeline, leaving out kPrunedPasses
/// and, when `without_machine_sinking`, machine sinking.
class PruningPassManager final : public llvm::legacy::PassManager {
 public:
  PruningPassManager(bool prune, bool without_machine_sinking)
      : prune_(prune), without_machine_sinking_(without_machine_sinking) {}

  void add(llvm::Pass* pass) override {
    const llvm::PassInfo* info = llvm::PassRegistry::getPassRegistry()->getPassInfo(pass->getPassID());
    const std::string argument = info ? info->getPassArgument().str() : std::string(pass->getPassName());
    const unsigned ordinal = ++seen_[argument];
    if (prune_ && omitted(argument, ordinal)) {
      delete pass;
      return;
    }
    llvm::legacy::PassManager::add(pass);
  }

 private:
  bool omitted(std::string_view argument, unsigned ordinal) const {
    if (without_machine_sinking_ && argument == "machine-sink") return true;
    return std::ranges::any_of(kPrunedPasses,
                               [&](const PrunedPass& p) { return p.argument == argument && p.ordinal == ordinal; });
  }

  bool prune_;
  bool without_machine_sinking_;
  std::map<std::string, unsigned, std::less<>> seen_;
};

/// Whether a function of `module` has more than kMachineSinkBlockLimit blocks.
bool has_huge_function(const llvm::Module& module) {
  return std::ranges::any_of(module, [](const llvm::Function& f) { return f.size() > kMachineSinkBlockLimit; });
}

}  // namespace

std::expected<std::string, diag::Diagnostics> emit_ptx_text(llvm::Module& module, llvm::TargetMachine& machine) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  // Only the code generator's Default level (-O2/-O3) was measured; -O0/-O1 keep LLVM's pipeline.
  const bool prune = machine.getOptLevel() == llvm::CodeGenOptLevel::Default;
  PruningPassManager passes(prune, prune && has_huge_function(module));
  if (machine.addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return std::unexpected(backend_failure("the NVPTX target cannot emit assembly for this module"));
  passes.run(module);
  return std::string(buffer.str());
}

}  // namespace ptxgate::codegen
