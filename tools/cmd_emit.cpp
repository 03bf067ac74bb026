// `ptxgate emit FILE|- [--target T] [--emit ptx|llvm|meta|cubin|sass|resources] [-O N] [-o OUT]`.
// The products are commands::emit_file's; this file adapts options and writes.
#include <cstdio>
#include <unistd.h>

#include "ptxgate/commands/emit.hpp"
#include "ptxgate/support/files.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct EmitOptions {
  commands::EmitFileRequest request;
  std::string target = "sm_90";
  std::string emit = "ptx";
  std::string output;
  std::string format = "text";
};

// The product goes to standard output (checked when the command ends) or, with -o, through
// support::write_file_atomically: a regular file is replaced by a renamed temporary (a failed
// write never leaves a truncated file), a device or FIFO written in place, a link followed. The
// input file is never the output, and a cubin is never written to a terminal.
int run_emit(EmitOptions& opt) {
  const auto format = *diag::format_from_name(opt.format);
  opt.request.kind = *commands::emit_kind_from_name(opt.emit);
  opt.request.compile.codegen.target = *ir::Target::parse(opt.target);  // one of the names --target checks
  opt.request.json = format == diag::Format::json;
  const bool to_stdout = opt.output.empty() || opt.output == "-";
  if (opt.request.kind == commands::EmitKind::cubin && to_stdout && ::isatty(STDOUT_FILENO)) {
    diag::Diagnostics d;
    d.add(diag::Code::binary_to_terminal, "refusing to write a cubin (binary) to a terminal", {},
          "write it to a file with -o FILE, or redirect standard output");
    print_diagnostics(d, format);
    return kUsage;
  }
  // Before compiling: `emit k.pg -o k.pg` would replace the source with its PTX.
  if (auto same = support::refuse_output_onto_input(to_stdout ? "" : opt.output, opt.request.input); !same) {
    print_diagnostics(same.error(), format);
    return kDiagnostics;
  }
  auto product = commands::emit_file(opt.request);
  if (!product) {
    if (!product.error().warnings.empty()) print_diagnostics(product.error().warnings, format);
    print_diagnostics(product.error().diagnostics, format);
    return kDiagnostics;
  }
  if (warnings_stop(product->warnings, format)) return kDiagnostics;  // -Werror: no product
  if (to_stdout) {
    print_product(product->bytes);
    return kSuccess;
  }
  if (auto ok = support::write_file_atomically(opt.output, product->bytes); !ok) {
    print_diagnostics(ok.error(), format);
    return kDiagnostics;
  }
  return kSuccess;
}

}  // namespace

CLI::App* register_emit(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<EmitOptions>();
  auto& cg = opt->request.compile.codegen;
  auto* cmd = app.add_subcommand("emit", "Compile a .pg file to PTX, LLVM IR, kernel metadata, a cubin, SASS or resources");
  cmd->add_option("file", opt->request.input, "Input .pg file, or - for standard input")->required();
  cmd->add_option("--target", opt->target,
                  "Target architecture (sm_75 .. sm_90a, sm_100, sm_120); sm_90 becomes sm_90a for a module whose "
                  "kernels use Hopper's mbarrier, TMA or wgmma operations")
      ->default_val("sm_90")
      ->check(CLI::IsMember(ir::supported_target_names()));
  cmd->add_option("--emit", opt->emit,
                  "What to print: ptx, llvm, meta (JSON KernelInfo), cubin (binary; -o or a pipe), sass (nvdisasm), "
                  "resources (ptxas: registers, spills, shared, local, barriers per kernel; JSON with --format json)")
      ->default_val("ptx")
      ->check(CLI::IsMember(commands::emit_kind_names()));
  cmd->add_option("-O,--opt-level", cg.opt_level, "Optimisation level before NVPTX (0..3; 2 and 3 use ptxgate's kernel pipeline)")
      ->default_val(3)
      ->check(CLI::Range(0, 3));
  cmd->add_flag("--llvm-pipeline", cg.llvm_pipeline,
                "At -O2/-O3, run LLVM's standard per-module pipeline instead of ptxgate's kernel pipeline");
  cmd->add_option("--instruction-budget", cg.instruction_budget,
                  "Most LLVM instructions a module may have after inlining and after optimisation (PG2010 beyond; 0: no limit)")
      ->default_val(codegen::kDefaultInstructionBudget);
  add_fp_options(cmd, cg.fp_mode);
  add_checked_option(cmd, cg.checked);
  cmd->add_option("--libdevice", cg.libdevice_path,
                  "libdevice.10.bc to link math functions from (default: $PTXGATE_LIBDEVICE, $CUDA_HOME, the toolkit)");
  cmd->add_option("-o,--output", opt->output, "Output file (default: standard output)");
  add_common_options(cmd, opt->format);
  runner = [opt] { return run_emit(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
