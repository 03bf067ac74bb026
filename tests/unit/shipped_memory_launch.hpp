// A shipped kernel (bench/shipped_launches.hpp) checked from the source tree, and its documented
// launch as the memory verdict's input, shared by the memory-safety unit tests.
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "ptxgate/ir/ast.hpp"
#include "ptxgate/validation/memory_safety.hpp"
#include "ir_check_support.hpp"
#include "shipped_launches.hpp"

namespace ptxgate::testing {

/// The text of a file of the source tree (PTXGATE_SOURCE_DIR), by its relative path.
inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `l`'s kernel, its module checked into `checked` (which owns it) without errors, with access facts.
inline const ir::Kernel& shipped_kernel(const shipped::Launch& l, Checked& checked) {
  checked = check_module(l.file, source_file(l.file));
  REQUIRE_MESSAGE(!checked.diags.has_errors(), l.file, ": ", diag::render_text(checked.diags));
  const ir::Kernel* k = checked.module.find_kernel(l.kernel);
  REQUIRE_MESSAGE(k, l.kernel);
  REQUIRE(k->access_facts);
  return *k;
}

/// `l`'s grid, block, dynamic shared bytes, and each of `k`'s parameters by name: a buffer's bytes or
/// a scalar's bits (absent where `l` does not name it). Its names are views of `k`'s: `k` outlives it.
inline validation::MemoryLaunch memory_launch_of(const ir::Kernel& k, const shipped::Launch& l) {
  validation::MemoryLaunch launch;
  launch.grid = l.grid;
  launch.block = l.block;
  launch.dynamic_shared_bytes = l.dynamic_shared;
  launch.scalar_bits.assign(k.params.size(), std::nullopt);
  launch.buffer_bytes.assign(k.params.size(), std::nullopt);
  for (size_t i = 0; i < k.params.size(); ++i) {
    launch.names.push_back(k.params[i].name);
    for (const auto& [name, value] : l.arguments)
      if (name == k.params[i].name) (k.params[i].is_buffer ? launch.buffer_bytes[i] : launch.scalar_bits[i]) = value;
  }
  return launch;
}

}  // namespace ptxgate::testing
