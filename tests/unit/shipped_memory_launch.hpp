// A shipped kernel's documented launch (bench/shipped_launches.hpp) as the memory verdict's input,
// shared by the memory-safety unit tests.
#pragma once

#include <optional>

#include "ptxgate/ir/ast.hpp"
#include "ptxgate/validation/memory_safety.hpp"
#include "shipped_launches.hpp"

namespace ptxgate::testing {

/// `l`'s grid, block, dynamic shared bytes, and each of `k`'s parameters by name: a buffer's bytes or
/// a scalar's bits (absent where `l` does not name it).
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
