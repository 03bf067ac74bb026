// `ptxgate tensormap`: the command's grammar (a tensor-map description written as flags), the
// check of the parsed description against a device profile, and its text and JSON reports.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include <nlohmann/json.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/tensor_map.hpp"

namespace ptxgate::commands {

/// A tensor map written as text, one field per CLI flag (`ptxgate tensormap`); empty means "not
/// given". Lists are comma-separated, innermost dimension first; strides default to the dense
/// layout (each row packed against the previous one).
struct TensorMapText {
  bool im2col = false;
  std::string type, dims, strides, box, element_strides;
  std::string interleave = "none", swizzle = "none", l2_promotion = "none", oob_fill = "none";
  std::string lower_corner, upper_corner, channels, pixels;
  std::string offset = "0";   ///< bytes from the 256-byte aligned start of the allocation
  std::string buffer_bytes;   ///< bytes of the allocation, when known
};

/// Parses every field with the one number grammar (support/numbers); each bad field is PG5004
/// naming the flag (`--box`) and what is wrong. The rules of check_tensor_map are not applied.
[[nodiscard]] std::expected<validation::TensorMapDesc, diag::Diagnostics> parse_tensor_map(const TensorMapText& text);

/// The outcome of one tensor-map check.
struct TensorMapReport {
  bool usage = false;            ///< the description itself is malformed (a flag's value)
  bool valid = false;            ///< parsed, profile loaded, no error
  std::string profile, arch;     ///< the profile checked against, when it loaded
  std::string description;       ///< validation::describe, when it parsed
  uint64_t extent_bytes = 0;
  diag::Diagnostics diagnostics;
};

/// parse_tensor_map, load_profile(profile), validation::check_tensor_map.
[[nodiscard]] TensorMapReport check_tensor_map_text(const TensorMapText& text, const std::string& profile);

/// {"schema_version", "valid", "profile", "arch", "description", "extent_bytes", "diagnostics"}
[[nodiscard]] nlohmann::json tensor_map_json(const TensorMapReport& report);
/// "tensor map ok on PROFILE (ARCH): DESCRIPTION; extent N bytes" for a valid map.
[[nodiscard]] std::string tensor_map_text(const TensorMapReport& report);

}  // namespace ptxgate::commands
