// The offline pipeline behind `ptxgate check`: profile -> parse -> compile through the module
// cache (ptxas for resources) -> argument table -> check_launch -> `--grid max`. One library
// call for the CLI, bindings and tests.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "ptxgate/codegen/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/device_caps.hpp"
#include "ptxgate/validation/launch_plan.hpp"

namespace ptxgate::pipeline {

/// A launch described as text, the way a command line gives it; every field is parsed here with
/// the library's one grammar for numbers (support::parse_count/parse_dims) and for argument
/// specs (validation/arg_spec).
struct OfflineLaunch {
  std::string input;                       ///< .pg path, or "-" for standard input
  std::string kernel;
  std::string grid = "1";                  ///< X[,Y[,Z]], or "max": the largest cooperative grid
  std::string block;                       ///< X[,Y[,Z]]; empty: the kernel's @workgroup
  std::string shared_bytes = "0";          ///< dynamic shared memory per block
  bool cooperative = false;
  std::string profile;                     ///< device profile NAME or PATH
  /// The argument table, optional: NAME=SPEC in signature order, or an empty table.
  std::vector<std::string> args;
  bool empty_args = false;
  std::vector<uint32_t> null_slots;        ///< slots whose pointer is null
  std::vector<std::string> elements;       ///< NAME=COUNT: elements of buffer NAME the launch touches
  bool null_stream = false;
  bool require_explicit_stream = false;
  module_cache::ModuleCacheOptions cache;  ///< where compiled modules are looked up and published
};

/// A verdict and what it was computed from.
struct OfflineCheck {
  validation::DeviceCaps caps;
  codegen::KernelInfo kernel;
  validation::KernelResources resources;
  validation::LaunchPlan plan;             ///< as checked (grid = the maximum under grid max)
  validation::Verdict verdict;
  bool grid_max = false;
  module_cache::CacheOutcome cache_outcome = module_cache::CacheOutcome::compiled;
  diag::Diagnostics warnings;              ///< the program's and the cache's warnings
};

/// Why no verdict was reached: the diagnostics, and whether the request itself was malformed
/// (a usage error: a flag's value, the argument order) rather than the program or profile.
struct OfflineStop {
  diag::Diagnostics diagnostics;
  bool usage = false;
};

[[nodiscard]] std::expected<OfflineCheck, OfflineStop> check_offline(const OfflineLaunch& launch);

}  // namespace ptxgate::pipeline
