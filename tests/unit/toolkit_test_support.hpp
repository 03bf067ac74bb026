// The CUDA Toolkit for tests that run ptxas: present on every machine that runs the suite, but a
// test that needs it says why it skipped where it is not.
#pragma once

#include <doctest/doctest.h>

#include <optional>

#include "ptxgate/toolchain/toolkit.hpp"

namespace ptxgate::testing {

/// The toolkit when it has ptxas; a message and nullopt otherwise.
inline std::optional<toolchain::Toolkit> toolkit_with_ptxas() {
  auto toolkit = toolchain::discover();
  if (toolkit.ptxas) return toolkit;
  MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message);
  return std::nullopt;
}

}  // namespace ptxgate::testing
