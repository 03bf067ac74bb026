// The offline pipeline behind `ptxgate check`: profile -> parse -> compile through the module
// cache (ptxas for resources) -> argument table -> check_launch -> `--grid max`. One library
// call for the CLI, bindings and tests.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/device_caps.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::commands {

/// A launch described as text, the way a command line gives it; every field is parsed here with
/// the library's one grammar for numbers (support::parse_count/parse_dims) and for argument
/// specs (commands/arg_spec).
struct OfflineLaunch {
  std::string input;                       ///< .pg path, or "-" for standard input
  std::string kernel;
  std::string signature;                   ///< a foreign module's parameter types ("f32[], u64"); empty: its own
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
  ir::FpMode fp_mode = ir::FpMode::contract;  ///< --fp-contract off / --fast-math (registers may differ)
  bool warnings_as_errors = false;         ///< -Werror: any warning (program or launch) blocks the launch
  /// --require-proof: an access not proven in bounds for this launch blocks it (PG3802 errors).
  bool require_memory_proof = false;
  bool list_unproven_accesses = false;     ///< -v: PG3802 notes for the accesses not proven
};

/// A kernel compiled for a device profile through the module cache (ptxas for its resources):
/// what check and occupancy start from.
struct ProfiledKernel {
  validation::DeviceCaps caps;
  contract::KernelInfo kernel;
  contract::KernelResources resources;
  diag::Location location;                 ///< the kernel's name in its source, for diagnostics
  module_cache::CacheOutcome cache_outcome = module_cache::CacheOutcome::compiled;
  diag::Diagnostics warnings;              ///< the program's and the cache's warnings (the verdict's first diagnostics too)
};

/// Loads the profile (NAME or PATH) and the program, finds the kernel (PG2006), compiles for
/// the profile's architecture through the cache and reads the kernel's ptxas resources (PG3303
/// when there are none or the architecture cannot be compiled for). A `.ptx` or `.cubin` input
/// is another compiler's module (commands/foreign_ptx: its own signature, restated by
/// `signature` when given; ptxas's resources or the cubin's).
[[nodiscard]] std::expected<ProfiledKernel, diag::Diagnostics> compile_for_profile(
    const std::string& input, const std::string& kernel, const std::string& profile,
    const module_cache::ModuleCacheOptions& cache, std::string_view signature = {},
    ir::FpMode fp_mode = ir::FpMode::contract);

/// A verdict and what it was computed from.
struct OfflineCheck {
  validation::DeviceCaps caps;
  contract::KernelInfo kernel;
  contract::KernelResources resources;
  contract::LaunchPlan plan;             ///< as checked (grid = the maximum under grid max)
  validation::Verdict verdict;
  bool grid_max = false;
  module_cache::CacheOutcome cache_outcome = module_cache::CacheOutcome::compiled;
  diag::Diagnostics warnings;              ///< the program's and the cache's warnings (the verdict's first diagnostics too)
};

/// Why no verdict was reached: the diagnostics, and whether the request itself was malformed
/// (a usage error: a flag's value, the argument order) rather than the program or profile.
struct OfflineStop {
  diag::Diagnostics diagnostics;
  bool usage = false;
};

[[nodiscard]] std::expected<OfflineCheck, OfflineStop> check_offline(const OfflineLaunch& launch);

/// The verdict as `check --format json` prints it: Verdict::to_json plus "schema_version".
[[nodiscard]] nlohmann::json check_json(const OfflineCheck& check, const std::string& kernel);
/// A check that stopped before its verdict, in the same shape: {"schema_version", "kernel",
/// "launchable": false, "status": "error"|"usage_error", "errors", "warnings", "diagnostics"}.
[[nodiscard]] nlohmann::json check_stop_json(const OfflineStop& stop, const std::string& kernel);
/// The text report: with `verbose` the device, resources and occupancy; `--grid max`'s answer;
/// then the verdict line.
[[nodiscard]] std::string check_text(const OfflineCheck& check, const std::string& kernel, bool verbose);

}  // namespace ptxgate::commands
