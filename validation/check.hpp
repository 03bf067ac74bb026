// The launch checks: given kernel, resources, plan and device, decide launchable or blocked.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/kernel_info.hpp"
#include "diagnostics/diagnostic.hpp"
#include "validation/device_caps.hpp"
#include "validation/launch_plan.hpp"

namespace ptxgate::validation {

/// Which resource bounds resident blocks per SM.
enum class OccupancyLimiter : uint8_t { none, threads, warps, blocks, registers, shared_memory };
std::string_view limiter_name(OccupancyLimiter l);

struct Occupancy {
  uint32_t active_blocks_per_sm = 0;
  OccupancyLimiter limiter = OccupancyLimiter::none;
  uint32_t by_threads = 0, by_blocks = 0, by_registers = 0, by_shared = 0;  ///< each factor's bound
};

/// Offline occupancy via the toolkit's cuda_occupancy.h.
Occupancy compute_occupancy(const DeviceCaps& caps, const KernelResources& res, uint32_t threads_per_block,
                            uint64_t dynamic_shared_bytes);

/// The outcome of validating one launch.
struct Verdict {
  bool launchable = false;               ///< false whenever any error diagnostic was produced
  diag::Diagnostics diagnostics;         ///< errors, warnings and notes, all independent problems
  std::array<uint64_t, 3> block{0, 0, 0};///< effective block (after @workgroup default)
  bool needs_shared_opt_in = false;      ///< static+dynamic above the default per-block limit
  uint64_t total_shared_bytes = 0;
  std::optional<Occupancy> occupancy;    ///< computed when geometry allows
  uint64_t max_cooperative_grid = 0;     ///< occupancy x SMs, when computed

  /// One machine-readable verdict line, e.g.
  /// `verdict: status=blocked errors=2 warnings=0 kernel=saxpy grid=... block=...`.
  std::string summary_line(const std::string& kernel_name, const LaunchPlan& plan) const;
  nlohmann::json to_json(const std::string& kernel_name, const LaunchPlan& plan) const;
};

/// Runs every check. `location` (optional) is where launch diagnostics point,
/// usually the kernel's declaration. `occupancy_override` lets the backend pass the
/// driver's answer for active blocks per SM instead of the offline computation.
Verdict check_launch(const codegen::KernelInfo& kernel, const KernelResources& resources, const LaunchPlan& plan,
                     const DeviceCaps& caps, const diag::Location& location = {},
                     std::optional<uint32_t> occupancy_override = std::nullopt);

}  // namespace ptxgate::validation
