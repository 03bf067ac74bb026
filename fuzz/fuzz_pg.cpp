// Fuzz target: any bytes as a .pg file -> parse -> verify -> print -> codegen (LLVM IR; in checked
// mode for inputs of odd length, whose KernelInfo must round-trip through its JSON).
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate;
  diag::SourceFile file("fuzz.pg", std::string(reinterpret_cast<const char*>(data), size));
  auto loaded = ir::load_module(file);
  if (!loaded) {
    (void)diag::render_text(loaded.error());
    return 0;
  }
  // A verified module must print to text that parses and verifies again.
  std::string printed = ir::print(loaded->module);
  diag::SourceFile again("printed.pg", printed);
  auto reloaded = ir::load_module(again);
  if (!reloaded) __builtin_trap();
  if (ir::print(reloaded->module) != printed) __builtin_trap();
  codegen::CodegenOptions options;
  options.opt_level = 1;
  options.checked = (size & 1) != 0;
  if (options.checked)
    for (const auto& info : codegen::describe(loaded->module, true)) {
      auto back = contract::kernel_info_from_json(contract::to_json(info));
      if (!back || !back->checked || back->checked->sites.size() != info.checked->sites.size()) __builtin_trap();
    }
  auto llvm_ir = codegen::emit_llvm_ir(loaded->module, options);
  if (!llvm_ir) {
    // Code generation of a verified module only fails on an internal error.
    for (const auto& d : llvm_ir.error())
      if (d.code == diag::Code::internal_error) __builtin_trap();
  }
  return 0;
}
