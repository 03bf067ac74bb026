// `ptxgate emit FILE|- [--target T] [--emit ptx|llvm|meta] [-O N] [--libdevice PATH] [-o OUT]`: IR text to PTX.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/pipeline/emit.hpp"
#include "ptxgate/support/files.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct EmitOptions {
  std::string input;
  std::string target = "sm_90";
  std::string emit = "ptx";
  std::string output;
  std::string format = "text";
  unsigned opt_level = 3;
  bool llvm_pipeline = false;
  std::string libdevice;
};

// The product goes to standard output (checked when the command ends) or, with -o, to a
// temporary file renamed over the path, so a failed write never leaves a truncated file.
int write_output(const std::string& text, const std::string& path, diag::Format format) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kSuccess;
  }
  if (auto ok = support::write_file_atomically(path, text); !ok) {
    print_diagnostics(ok.error(), format);
    return kDiagnostics;
  }
  return kSuccess;
}

int run_emit(const EmitOptions& opt) {
  auto format = *diag::format_from_name(opt.format);
  auto loaded = ir::load_file(opt.input);
  if (!loaded) {
    print_diagnostics(loaded.error(), format);
    return kDiagnostics;
  }
  if (!loaded->warnings.empty()) print_diagnostics(loaded->warnings, format);

  codegen::CodegenOptions cg;
  cg.target = opt.target;
  cg.opt_level = opt.opt_level;
  cg.llvm_pipeline = opt.llvm_pipeline;
  auto toolkit = toolchain::discover({.libdevice = opt.libdevice});
  std::string text;
  if (opt.emit == "meta") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& k : codegen::describe(loaded->module)) arr.push_back(codegen::to_json(k));
    text = nlohmann::json{{"target", opt.target}, {"kernels", arr}}.dump(2) + "\n";
  } else if (opt.emit == "llvm") {
    auto ir = toolchain::emit_llvm_ir(loaded->module, cg, toolkit);
    if (!ir) {
      print_diagnostics(ir.error(), format);
      return kDiagnostics;
    }
    text = std::move(*ir);
  } else {
    cg.libdevice_path = opt.libdevice;
    auto compiled = pipeline::emit_ptx(loaded->module, {.codegen = cg});
    if (!compiled) {
      print_diagnostics(compiled.error(), format);
      return kDiagnostics;
    }
    if (!compiled->warnings.empty()) print_diagnostics(compiled->warnings, format);
    text = std::move(compiled->ptx);
  }
  return write_output(text, opt.output, format);
}

}  // namespace

CLI::App* register_emit(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<EmitOptions>();
  auto* cmd = app.add_subcommand("emit", "Compile a .pg file to PTX, LLVM IR or kernel metadata");
  cmd->add_option("file", opt->input, "Input .pg file, or - for standard input")->required();
  cmd->add_option("--target", opt->target, "Target architecture (sm_75 .. sm_90a, sm_100, sm_120)")
      ->default_val("sm_90")
      ->check(CLI::IsMember(codegen::supported_targets()));
  cmd->add_option("--emit", opt->emit, "What to print: ptx, llvm or meta (JSON KernelInfo)")
      ->default_val("ptx")
      ->check(CLI::IsMember({"ptx", "llvm", "meta"}));
  cmd->add_option("-O,--opt-level", opt->opt_level,
                  "Optimisation level before NVPTX (0..3; 2 and 3 use ptxgate's kernel pipeline)")
      ->default_val(3)
      ->check(CLI::Range(0, 3));
  cmd->add_flag("--llvm-pipeline", opt->llvm_pipeline,
                "At -O2/-O3, run LLVM's standard per-module pipeline instead of ptxgate's kernel pipeline");
  cmd->add_option("--libdevice", opt->libdevice,
                  "libdevice.10.bc to link math functions from (default: $PTXGATE_LIBDEVICE, $CUDA_HOME, the toolkit)");
  cmd->add_option("-o,--output", opt->output, "Output file (default: standard output)");
  add_format_option(cmd, opt->format);
  runner = [opt] { return run_emit(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
