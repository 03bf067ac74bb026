// Fuzz target: any bytes as a device-profile file -> parse_profile (the path load_profile takes),
// then the offline occupancy and a cooperative check against each profile that parses.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate;
  auto caps = validation::parse_profile(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!caps) {
    if (caps.error().empty()) __builtin_trap();
    return 0;
  }
  // A profile that parses must round-trip through its JSON form.
  auto again = validation::caps_from_json(validation::to_json(*caps), "again.json");
  if (!again) __builtin_trap();
  // Residency fails closed: a cooperative launch is launchable only with a computed occupancy
  // whose capacity covers the grid.
  contract::KernelInfo k;
  k.name = "k";
  k.required_block = {caps->warp_size, 1, 1};
  contract::KernelResources res;
  res.registers_per_thread = 32;
  res.static_shared_bytes = 4096;
  contract::LaunchPlan plan;
  plan.cooperative = true;
  plan.grid = {uint64_t{caps->sm_count} * 3, 1, 1};
  auto v = validation::check_launch(k, res, plan, *caps);
  if (v.launchable && (!v.occupancy || !v.occupancy->computed || v.max_cooperative_grid < plan.grid[0]))
    __builtin_trap();
  return 0;
}
