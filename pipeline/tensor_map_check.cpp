// check_tensor_map_text and its reports.
#include "ptxgate/pipeline/tensor_map_check.hpp"

#include <fmt/format.h>

#include "ptxgate/pipeline/reports.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::pipeline {

TensorMapReport check_tensor_map_text(const validation::TensorMapText& text, const std::string& profile) {
  TensorMapReport report;
  auto desc = validation::parse_tensor_map(text);
  if (!desc) {
    report.usage = true;
    report.diagnostics = desc.error();
    return report;
  }
  report.description = validation::describe(*desc);
  report.extent_bytes = validation::tensor_extent_bytes(*desc);
  auto caps = validation::load_profile(profile);
  if (!caps) {
    report.diagnostics = caps.error();
    return report;
  }
  report.profile = caps->profile;
  report.arch = caps->arch();
  report.diagnostics = validation::check_tensor_map(*desc, &*caps);
  report.valid = !report.diagnostics.has_errors();
  return report;
}

nlohmann::json tensor_map_json(const TensorMapReport& r) {
  return {{"schema_version", kJsonSchemaVersion}, {"valid", r.valid},
          {"profile", r.profile},                 {"arch", r.arch},
          {"description", r.description},         {"extent_bytes", r.extent_bytes},
          {"diagnostics", nlohmann::json::parse(diag::render_json(r.diagnostics))}};
}

std::string tensor_map_text(const TensorMapReport& r) {
  return fmt::format("tensor map ok on {} ({}): {}; extent {} bytes\n", r.profile, r.arch, r.description, r.extent_bytes);
}

}  // namespace ptxgate::pipeline
