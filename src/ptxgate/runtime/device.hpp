// Live device capabilities from cuDeviceGetAttribute, in the same DeviceCaps the profiles fill.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/device_caps.hpp"

namespace ptxgate::runtime {

/// One GPU as the driver reports it.
struct LiveDevice {
  int ordinal = 0;
  validation::DeviceCaps caps;   ///< every field filled from the driver
  uint64_t total_memory_bytes = 0;
  int driver_version = 0;        ///< cuDriverGetVersion, e.g. 13000
};

/// Queries every DeviceCaps field of device `ordinal` through `api`.
[[nodiscard]] std::expected<LiveDevice, diag::Diagnostics> query_device(const DriverApi& api, int ordinal);

/// Every GPU of this machine, through the process-wide driver. PG4001 without a
/// driver, PG4004 when it reports no device. `to_json(caps)` of each is a valid profile.
[[nodiscard]] std::expected<std::vector<LiveDevice>, diag::Diagnostics> list_live_devices();

}  // namespace ptxgate::runtime
