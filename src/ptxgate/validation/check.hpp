// The launch checks: given kernel, resources, plan and device, decide launchable or blocked.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/device_caps.hpp"
#include "ptxgate/validation/memory_safety.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::validation {

/// Which resource bounds resident blocks per SM.
enum class OccupancyLimiter : uint8_t { none, threads, warps, blocks, registers, shared_memory };
std::string_view limiter_name(OccupancyLimiter l);

struct Occupancy {
  uint32_t active_blocks_per_sm = 0;
  OccupancyLimiter limiter = OccupancyLimiter::none;
  uint32_t by_threads = 0, by_blocks = 0, by_registers = 0, by_shared = 0;  ///< each factor's bound
  uint32_t allocated_registers_per_block = 0;  ///< after per-warp rounding
  uint64_t allocated_shared_per_block = 0;     ///< static + dynamic + reserved, rounded to the unit
  bool computed = false;                       ///< false when cuda_occupancy.h rejected the input
};

/// Offline occupancy via the toolkit's cuda_occupancy.h. Factors that do not bound residency
/// (e.g. a kernel with no shared memory) report UINT32_MAX. The dynamic shared-memory opt-in
/// is modelled as set to its maximum, as the backend does.
Occupancy compute_occupancy(const DeviceCaps& caps, const contract::KernelResources& res, uint32_t threads_per_block,
                            uint64_t dynamic_shared_bytes);

/// Occupancy at one block size.
struct BlockSizeOccupancy {
  uint32_t block_threads = 0;
  /// check_launch's verdict on a launch of one block of this size (grid 1, the table's dynamic
  /// shared memory): only a launchable size can be suggested.
  bool launchable = false;
  Occupancy occupancy;
  uint32_t active_warps_per_sm = 0;      ///< active blocks x warps per block
  double occupancy_percent = 0;          ///< active warps / the SM's warp slots, in percent
};

/// Occupancy over block sizes and the block size cuOccupancyMaxPotentialBlockSize suggests.
struct OccupancyTable {
  uint32_t block_limit = 0;              ///< min(device, function) max threads per block
  /// The block sizes the kernel allows (allowed_block_sizes), each with its occupancy and verdict.
  std::vector<BlockSizeOccupancy> rows;
  /// cuda_occupancy.h's search (cudaOccMaxPotentialOccupancyBlockSize) over the launchable rows: the
  /// largest block size with the most active threads per SM; 0 when none lets a block be resident.
  uint32_t suggested_block = 0;
  uint64_t min_grid_for_full_occupancy = 0;  ///< active blocks at the suggestion x SMs
};

/// The block sizes (threads per block) a launch of `kernel` may use up to `limit`: its required
/// block alone (@workgroup, a foreign .reqntid), else each multiple of its block granule and of the
/// warp size, and `limit` itself when it keeps the granule. One rule for `occupancy` and `check`.
std::vector<uint32_t> allowed_block_sizes(const contract::KernelInfo& kernel, uint32_t limit, uint32_t warp_size);

/// Occupancy and check_launch's verdict at every allowed block size, with `dynamic_shared_bytes`
/// per block; the suggestion is the launchable size cuda_occupancy.h's search picks.
OccupancyTable occupancy_table(const contract::KernelInfo& kernel, const DeviceCaps& caps, const contract::KernelResources& res,
                               uint64_t dynamic_shared_bytes);

/// The outcome of validating one launch.
struct Verdict {
  bool launchable = false;               ///< false whenever any error diagnostic was produced
  diag::Diagnostics diagnostics;         ///< errors, warnings and notes, all independent problems
  std::array<uint64_t, 3> block{0, 0, 0};///< effective block (effective_block: @workgroup or kDefaultBlock)
  bool needs_shared_opt_in = false;      ///< static+dynamic above the default per-block limit
  uint64_t total_shared_bytes = 0;
  std::optional<Occupancy> occupancy;    ///< computed when geometry allows
  uint64_t max_cooperative_grid = 0;     ///< occupancy x SMs, when computed
  /// The memory-safety part: each access of the kernel proven, out of bounds or not provable for
  /// this launch (absent when an earlier error blocked the launch, or for another compiler's kernel).
  std::optional<MemoryVerdict> memory;
  std::shared_ptr<const ir::AccessFacts> memory_facts;  ///< the facts `memory` refers to

  /// One machine-readable verdict line, e.g.
  /// `verdict: status=blocked errors=2 warnings=0 kernel=saxpy grid=... block=...`.
  std::string summary_line(const std::string& kernel_name, const contract::LaunchPlan& plan) const;
  nlohmann::json to_json(const std::string& kernel_name, const contract::LaunchPlan& plan) const;
};

/// PG3011 for argument `index` of `kernel`, a buffer whose base `address` is not a multiple of
/// the alignment its vector accesses need (ParamInfo::alignment). The launch check reports it
/// where the plan knows the address; the backend checks every launch's actual slots with it.
void report_misaligned_buffer(diag::Diagnostics& out, const contract::KernelInfo& kernel, size_t index,
                              uint64_t address, const diag::Location& location);

/// PG3503 (a warning) when `resources` show per-thread local memory (a stack frame: local
/// arrays indexed at run time, or register spills), with the kernel's name and the bytes; nothing
/// otherwise. `emit --resources`, `check` and `occupancy` report it.
void report_local_memory(diag::Diagnostics& out, const std::string& kernel, const contract::KernelResources& resources,
                         const diag::Location& location);

/// Registers the hardware charges one block: registers/thread x warp size rounded up to the
/// allocation unit, times the block's warps rounded up to kSmSubPartitions (cuda_occupancy.h).
uint64_t registers_charged_per_block(const DeviceCaps& caps, uint32_t registers_per_thread,
                                     uint64_t threads_per_block);

/// The block of a kernel without @workgroup launched without a block size, by `check` and by
/// `run` / Kernel::launch alike.
inline constexpr std::array<uint64_t, 3> kDefaultBlock{256, 1, 1};

/// Whether the plan names its block: any dimension nonzero, or `block_given` set.
bool block_given(const contract::LaunchPlan& plan);

/// The block a launch runs with: the plan's when given, else the kernel's @workgroup, else
/// kDefaultBlock. The one place this default is decided.
std::array<uint64_t, 3> effective_block(const contract::KernelInfo& kernel, const contract::LaunchPlan& plan);

/// Where check_launch gets a launch's occupancy beyond its offline model: a non-owning reference
/// to a callable `std::optional<Occupancy>(uint64_t threads, uint64_t dynamic_shared_bytes)` (the
/// backend's: compute_occupancy's factors with the driver's active blocks per SM, remembered by
/// block size and dynamic shared bytes, which a new grid changes neither of). check_launch asks it
/// at most once, and only for a launch whose geometry, shared memory and registers already pass its
/// own checks, so the provider never re-checks them; nullopt (no answer) leaves the offline
/// model's. Empty: offline only.
class OccupancyProvider {
 public:
  OccupancyProvider() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, OccupancyProvider> && std::is_invocable_v<F&, uint64_t, uint64_t>)
  OccupancyProvider(F& f)  // NOLINT(google-explicit-constructor): a reference, like std::function_ref
      : object_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, uint64_t threads, uint64_t dynamic_shared) {
          return std::optional<Occupancy>((*static_cast<F*>(o))(threads, dynamic_shared));
        }) {}
  explicit operator bool() const { return call_ != nullptr; }
  std::optional<Occupancy> operator()(uint64_t threads, uint64_t dynamic_shared) const {
    return call_(object_, threads, dynamic_shared);
  }

 private:
  void* object_ = nullptr;
  std::optional<Occupancy> (*call_)(void*, uint64_t, uint64_t) = nullptr;
};

/// What check_launch keeps of a launchable launch for check_new_grid: the parts of its verdict that a
/// launch of the same plan with another grid shares (every check but those of the grid and the memory
/// verdict reads no grid), and the memory verdict's launch values, whose grid check_new_grid replaces.
struct GridBase {
  bool launchable = false;                 ///< a launchable verdict filled it (false: not usable)
  std::array<uint64_t, 3> block{0, 0, 0};  ///< the effective block
  bool needs_shared_opt_in = false;        ///< as the verdict's
  /// A cooperative launch on a device that has them: its grid is compared with max_cooperative_grid.
  bool cooperative_residency = false;
  Occupancy occupancy;
  uint64_t max_cooperative_grid = 0;
  MemoryReportOptions memory_options;
  MemoryLaunch memory;  ///< names: views of the kernel's parameter names
};

/// Runs every check, in named parts reported in this order: arguments (PG30xx), geometry
/// (PG31xx), shared memory (PG32xx), registers (PG33xx), cooperative mode and residency
/// (PG34xx), memory safety of the accesses (PG38xx, src/ptxgate/validation/memory_safety.hpp), warnings (PG35xx). `location` (optional) is where launch diagnostics point,
/// usually the kernel's declaration. `occupancy` answers the occupancy in place of the offline
/// model when it has an answer. `report_warnings = false` skips formatting warnings and
/// notes of a launchable verdict (the verdict is the same); a blocked verdict always carries
/// them, so a blocked launch is validated once.
Verdict check_launch(const contract::KernelInfo& kernel, const contract::KernelResources& resources,
                     const contract::LaunchPlan& plan, const DeviceCaps& caps, const diag::Location& location = {},
                     OccupancyProvider occupancy = {}, bool report_warnings = true, GridBase* base = nullptr);

/// Whether the launch `base` was kept from (check_launch's `base`, a launchable verdict of a plan P)
/// is launchable with `grid` in place of P's grid: true exactly when check_launch of P with that
/// grid would be launchable. Only what reads the grid is checked again (the grid's dimensions and
/// block count, the kernel's cluster shape, a cooperative grid's residency, the memory verdict, with
/// the kernel's remembered bounds); false also when `base` is not usable. A caller that gets false
/// validates with check_launch, which reports the launch whole. `base.memory` is updated in place.
bool check_new_grid(const contract::KernelInfo& kernel, const DeviceCaps& caps, GridBase& base,
                    const std::array<uint64_t, 3>& grid, const diag::Location& location = {});

}  // namespace ptxgate::validation
