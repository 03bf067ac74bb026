// The pipeline behind `ptxgate run`: bind `--arg` specs to a kernel's signature, then (with a
// driver) materialise host data, compile through the module cache, validate, launch, time and
// read buffers back. One library call for the CLI, bindings and tests.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/commands/arg_spec.hpp"
#include "ptxgate/commands/npy.hpp"

namespace ptxgate::commands {

/// A run described as text, the way a command line gives it; every field is parsed with the
/// library's one grammar for numbers (support::parse_count/parse_dims) and argument specs.
struct RunRequest {
  std::string input;                   ///< .pg path, or "-" for standard input
  std::string kernel;
  std::string grid;                    ///< X[,Y[,Z]]; empty: cover the largest buffer; "max": largest cooperative grid
  std::string block;                   ///< X[,Y[,Z]]; empty: @workgroup, else the library's default
  std::string shared_bytes = "0";
  bool cooperative = false;
  std::vector<std::string> args;       ///< NAME=SPEC, one per parameter (any order)
  std::vector<std::string> outs;       ///< NAME=PATH.npy: buffers written after the launch
  std::vector<std::string> prints;     ///< NAME[:K]: the first K (default 10) elements of a buffer
  std::string time_runs = "0";         ///< launches timed with device events after the first
  int device = 0;
  ir::FpMode fp_mode = ir::FpMode::contract;  ///< --fp-contract off / --fast-math
  /// --checked: checked mode (runtime::RuntimeOptions::checked): an access out of bounds is
  /// stopped and reported (PG3804), and the run goes on.
  bool checked = false;
  module_cache::ModuleCacheOptions cache;
};

/// One parameter: its parsed spec and, for a buffer with data, host data and its device copy.
struct BoundParam {
  contract::ParamInfo param;
  ArgSpec spec;
  std::string text;                    ///< the spec as written
  std::optional<HostArray> host;
  runtime::DeviceBuffer device;
};

/// A request bound to its kernel and checked, before any driver call or host allocation.
struct PreparedRun {
  ir::Module module;
  contract::KernelInfo kernel;
  std::vector<BoundParam> params;                          ///< in signature order
  std::vector<std::pair<size_t, std::string>> outs;        ///< parameter index, .npy path
  std::vector<std::pair<size_t, size_t>> prints;           ///< parameter index, element count
  runtime::LaunchConfig config;                            ///< grid set when given
  std::array<uint64_t, 3> block{1, 1, 1};                  ///< the effective block
  bool grid_given = false, grid_max = false;
  unsigned time_runs = 0;
  int device = 0;
  module_cache::ModuleCacheOptions cache;
  diag::Diagnostics warnings;                              ///< the program's
};

/// The first elements of a buffer read back after the launch.
struct PrintedBuffer {
  std::string name;
  std::vector<std::string> elements;   ///< formatted ("1.5", "-3")
};

/// Event timing of `runs` launches after the first.
struct RunTiming {
  unsigned runs = 0;
  double median_us = 0, min_us = 0, max_us = 0;
};

/// What a finished run did.
struct RunResult {
  std::string kernel;
  runtime::LaunchConfig config;                            ///< as launched (grid and cooperative resolved)
  std::array<uint64_t, 3> block{1, 1, 1};                  ///< the effective block
  std::optional<RunTiming> timing;
  std::vector<PrintedBuffer> printed;
  std::vector<std::string> written;                        ///< .npy files written, in --out order
  diag::Diagnostics warnings;                              ///< the program's and the compile's
  /// --checked: what checked mode stopped (PG3804 errors); the run went on and read its results back.
  diag::Diagnostics violations;
};

/// Why a run stopped: its diagnostics (after any warnings gathered before), and whether the
/// request itself was malformed (a flag's value) or no driver/device was found.
struct RunStop {
  diag::Diagnostics warnings;
  diag::Diagnostics diagnostics;
  bool usage = false;
  bool no_driver = false;
};

/// Parses and binds the request: program, kernel (PG2006 listing the module's kernels), every
/// --arg/--out/--print (PG5002) and flag (PG5004), all reported together. No driver call.
[[nodiscard]] std::expected<PreparedRun, RunStop> prepare_run(const RunRequest& request);

/// Materialises host data (files read, random data made), chooses the default grid (enough
/// blocks of the effective block for the largest buffer), compiles and loads through `runtime`,
/// answers `--grid max`, uploads, launches (validated), synchronises, times and reads back. With a
/// runtime in checked mode, the accesses the launch stopped (PG3804) go to RunResult::violations.
[[nodiscard]] std::expected<RunResult, RunStop> execute_run(PreparedRun& prepared, runtime::Runtime& runtime);

/// `run --format json`: {"schema_version", "kernel", "status": "ran", "grid", "block",
/// "dynamic_shared_bytes", "cooperative", "timing": {"runs", "median_us", "min_us", "max_us"} or
/// null, "printed": [{"name", "elements"}], "written": [paths], "diagnostics": [warnings, then
/// checked mode's PG3804 errors]}.
[[nodiscard]] nlohmann::json run_json(const RunResult& result);
/// A run that stopped, in the same shape: "status" is "error", "usage_error" or "no_driver";
/// nothing ran, so grid, block and timing are null.
[[nodiscard]] nlohmann::json run_stop_json(const RunStop& stop, const std::string& kernel);

/// prepare_run, then a Runtime on the request's device (PG4001/PG4004 set no_driver), then execute_run.
[[nodiscard]] std::expected<RunResult, RunStop> run_kernel(const RunRequest& request);

}  // namespace ptxgate::commands
