// DeviceCaps: everything a launch check needs to know about a device, from a profile or the driver.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/target.hpp"

namespace ptxgate::validation {

struct DeviceCaps {
  std::string profile;              ///< profile name ("h100-sxm"); empty for a live device
  std::string name;                 ///< "NVIDIA H100 80GB HBM3" or the profile's name
  int cc_major = 0, cc_minor = 0;   ///< compute capability
  uint32_t sm_count = 0;
  uint32_t warp_size = 32;
  uint32_t max_threads_per_block = 0;
  std::array<uint32_t, 3> max_block_dim{0, 0, 0};
  std::array<uint32_t, 3> max_grid_dim{0, 0, 0};
  uint32_t max_threads_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_warps_per_sm() const { return warp_size ? max_threads_per_sm / warp_size : 0; }
  uint32_t registers_per_block = 0;
  uint32_t registers_per_sm = 0;
  uint32_t max_registers_per_thread = 255;
  uint32_t register_allocation_unit = 256;    ///< registers allocated per warp in units of this
  uint32_t shared_per_block = 0;              ///< default limit (48 KiB)
  uint32_t shared_per_block_optin = 0;        ///< with the opt-in attribute
  uint32_t shared_per_sm = 0;
  uint32_t reserved_shared_per_block = 0;     ///< driver-reserved per block (1 KiB on sm_80+)
  uint32_t shared_allocation_unit = 128;
  bool cooperative_launch = false;

  /// The device's architecture, sm_(10 * cc_major + cc_minor) (never an `a` target: that is a
  /// code-generation choice, ir::target_for_module).
  ir::Target target() const { return ir::Target::of_device(cc_major, cc_minor); }
  /// target()'s name: "sm_90".
  std::string arch() const { return target().name(); }
};

/// The per-block register limit as the hardware checks it: registers are allocated per warp
/// (regs x warp size rounded up to `register_allocation_unit`) and warps are counted in
/// multiples of this many SM sub-partitions (cuda_occupancy.h, 4 on sm_70 and later).
inline constexpr uint32_t kSmSubPartitions = 4;

/// Serialises caps as a device-profile JSON object (the format of profiles/*.json).
nlohmann::json to_json(const DeviceCaps& caps);
/// Parses a device profile; every field is required. `origin` names the file in messages.
[[nodiscard]] std::expected<DeviceCaps, diag::Diagnostics> caps_from_json(const nlohmann::json& j, std::string_view origin);

}  // namespace ptxgate::validation
