// `ptxgate tensormap`: a tensor-map description parsed from text and checked against a device
// profile, with its text and JSON reports.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/tensor_map.hpp"

namespace ptxgate::pipeline {

/// The outcome of one tensor-map check.
struct TensorMapReport {
  bool usage = false;            ///< the description itself is malformed (a flag's value)
  bool valid = false;            ///< parsed, profile loaded, no error
  std::string profile, arch;     ///< the profile checked against, when it loaded
  std::string description;       ///< validation::describe, when it parsed
  uint64_t extent_bytes = 0;
  diag::Diagnostics diagnostics;
};

/// parse_tensor_map, load_profile(profile), check_tensor_map.
[[nodiscard]] TensorMapReport check_tensor_map_text(const validation::TensorMapText& text, const std::string& profile);

/// {"schema_version", "valid", "profile", "arch", "description", "extent_bytes", "diagnostics"}
[[nodiscard]] nlohmann::json tensor_map_json(const TensorMapReport& report);
/// "tensor map ok on PROFILE (ARCH): DESCRIPTION; extent N bytes" for a valid map.
[[nodiscard]] std::string tensor_map_text(const TensorMapReport& report);

}  // namespace ptxgate::pipeline
