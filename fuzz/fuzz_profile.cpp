// Fuzz target: any bytes as a device-profile JSON file -> caps_from_json.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ptxgate/validation/device_caps.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate;
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto caps = validation::caps_from_json(j, "fuzz.json");
  if (caps) {
    // A profile that parses must round-trip through its JSON form.
    auto again = validation::caps_from_json(validation::to_json(*caps), "again.json");
    if (!again) __builtin_trap();
  } else if (caps.error().empty()) {
    __builtin_trap();
  }
  return 0;
}
