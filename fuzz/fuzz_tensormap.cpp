// Fuzz target: tensor-map descriptions as `ptxgate tensormap` takes them, one "flag=value" per line
// (type, dims, strides, box, element-strides, interleave, swizzle, l2-promotion, oob-fill, im2col,
// lower-corner, upper-corner, channels, pixels, offset, buffer-bytes), parsed and checked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ptxgate/commands/tensor_map_check.hpp"
#include "ptxgate/validation/tensor_map.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptxgate::validation;
  using ptxgate::commands::parse_tensor_map;
  using ptxgate::commands::TensorMapText;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  TensorMapText t;
  while (!input.empty()) {
    auto nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view{} : input.substr(nl + 1);
    auto eq = line.find('=');
    std::string_view key = line.substr(0, eq);
    std::string value(eq == std::string_view::npos ? std::string_view{} : line.substr(eq + 1));
    if (key == "type") t.type = value;
    else if (key == "dims") t.dims = value;
    else if (key == "strides") t.strides = value;
    else if (key == "box") t.box = value;
    else if (key == "element-strides") t.element_strides = value;
    else if (key == "interleave") t.interleave = value;
    else if (key == "swizzle") t.swizzle = value;
    else if (key == "l2-promotion") t.l2_promotion = value;
    else if (key == "oob-fill") t.oob_fill = value;
    else if (key == "im2col") t.im2col = true;
    else if (key == "lower-corner") t.lower_corner = value;
    else if (key == "upper-corner") t.upper_corner = value;
    else if (key == "channels") t.channels = value;
    else if (key == "pixels") t.pixels = value;
    else if (key == "offset") t.offset = value;
    else if (key == "buffer-bytes") t.buffer_bytes = value;
  }
  // No input may reach an internal error (PG9000): a diagnostic of that code is a finding.
  auto no_internal_error = [](const ptxgate::diag::Diagnostics& d) {
    for (const auto& item : d)
      if (item.code == ptxgate::diag::Code::internal_error) __builtin_trap();
  };
  auto desc = parse_tensor_map(t);
  if (!desc) {
    no_internal_error(desc.error());
    return 0;
  }
  DeviceCaps hopper;
  hopper.cc_major = 9;
  no_internal_error(check_tensor_map(*desc, &hopper));
  no_internal_error(check_tensor_map(*desc, nullptr));
  (void)describe(*desc);
  (void)tensor_extent_bytes(*desc);
  return 0;
}
