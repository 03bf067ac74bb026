// The `tensormap` command: its flags parsed into a description (parse_tensor_map), checked, and reported.
#include "ptxgate/commands/tensor_map_check.hpp"

#include <fmt/format.h>

#include "ptxgate/commands/reports.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::commands {

std::expected<validation::TensorMapDesc, diag::Diagnostics> parse_tensor_map(const TensorMapText& t) {
  diag::Diagnostics errors;
  auto bad = [&](std::string_view flag, std::string_view value, std::string why, std::string fix) {
    errors.add(diag::Code::invalid_launch_option, fmt::format("invalid --{} '{}': {}", flag, value, why), {}, std::move(fix));
  };
  validation::TensorMapDesc d;
  d.kind = t.im2col ? validation::TensorMapKind::im2col : validation::TensorMapKind::tiled;
  if (auto v = validation::tma_type_from_name(t.type)) d.type = *v;
  else bad("type", t.type, "not a tensor-map element type", "use one of " + validation::tma_type_names());
  auto enum_field = [&](std::string_view flag, const std::string& value, auto from_name, auto& out, auto names) {
    if (auto v = from_name(value)) out = *v;
    else bad(flag, value, "not a known mode", "use one of " + names());
  };
  enum_field("interleave", t.interleave, validation::interleave_from_name, d.interleave, validation::interleave_names);
  enum_field("swizzle", t.swizzle, validation::swizzle_from_name, d.swizzle, validation::swizzle_names);
  enum_field("l2-promotion", t.l2_promotion, validation::l2_promotion_from_name, d.l2_promotion,
             validation::l2_promotion_names);
  enum_field("oob-fill", t.oob_fill, validation::oob_fill_from_name, d.oob_fill, validation::oob_fill_names);

  // Up to 8 values per list: more than the 5 a map may have, so the rank rule reports the count.
  constexpr size_t kMaxItems = 8;
  auto counts = [&](std::string_view flag, const std::string& value, uint64_t max, auto& out) {
    if (value.empty()) return;
    auto v = support::parse_count_list(value, kMaxItems, max);
    if (!v) return bad(flag, value, v.error(), "write comma-separated decimal counts, innermost dimension first");
    out.assign(v->begin(), v->end());
  };
  if (t.dims.empty()) bad("dims", t.dims, "the tensor's dimensions are required", "give --dims N0[,N1...]");
  counts("dims", t.dims, UINT64_MAX, d.dims);
  counts("strides", t.strides, UINT64_MAX, d.strides);
  counts("box", t.box, UINT32_MAX, d.box);
  counts("element-strides", t.element_strides, UINT32_MAX, d.element_strides);
  auto corners = [&](std::string_view flag, const std::string& value, std::vector<int32_t>& out) {
    if (value.empty()) return;
    auto v = support::parse_integer_list(value, kMaxItems, INT32_MIN, INT32_MAX);
    if (!v) return bad(flag, value, v.error(), "write comma-separated integers, innermost spatial dimension first");
    out.assign(v->begin(), v->end());
  };
  auto count = [&](std::string_view flag, const std::string& value, uint64_t max, auto& out) {
    if (value.empty()) return;
    auto v = support::parse_count(value, max);
    if (!v) return bad(flag, value, v.error(), "write a decimal count");
    out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
  };
  if (t.im2col) {
    corners("lower-corner", t.lower_corner, d.lower_corner);
    corners("upper-corner", t.upper_corner, d.upper_corner);
    count("channels", t.channels, UINT32_MAX, d.channels_per_pixel);
    count("pixels", t.pixels, UINT32_MAX, d.pixels_per_column);
    if (!t.box.empty()) bad("box", t.box, "an im2col map has no box", "give --channels and --pixels instead");
    if (t.channels.empty() || t.pixels.empty())
      bad(t.channels.empty() ? "channels" : "pixels", "", "an im2col map needs --channels and --pixels",
          "give both --channels C and --pixels P");
  } else {
    for (auto [flag, value] : {std::pair{"lower-corner", &t.lower_corner}, std::pair{"upper-corner", &t.upper_corner},
                               std::pair{"channels", &t.channels}, std::pair{"pixels", &t.pixels}})
      if (!value->empty()) bad(flag, *value, "only an im2col map has this", "add --im2col or drop the flag");
    if (t.box.empty()) bad("box", t.box, "a tiled map needs a box", "give --box B0[,B1...]");
  }
  uint64_t offset = 0;
  count("offset", t.offset, UINT64_MAX, offset);
  // An allocation starts 256-byte aligned (cuMemAlloc); only the offset decides the alignment.
  d.address = offset;
  if (!t.buffer_bytes.empty()) {
    uint64_t total = 0;
    count("buffer-bytes", t.buffer_bytes, UINT64_MAX, total);
    if (total < offset) bad("offset", t.offset, fmt::format("past the end of the {}-byte buffer", total),
                            "start the tensor inside its buffer");
    else d.buffer_bytes = total - offset;
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  // Dense strides by default: each dimension packed against the previous one.
  if (t.strides.empty() && !d.dims.empty()) {
    uint64_t stride = validation::element_bytes(d.type);
    for (size_t i = 0; i + 1 < d.dims.size(); ++i) {
      if (__builtin_mul_overflow(stride, d.dims[i], &stride)) stride = UINT64_MAX;
      d.strides.push_back(stride);
    }
  }
  return d;
}

TensorMapReport check_tensor_map_text(const TensorMapText& text, const std::string& profile) {
  TensorMapReport report;
  auto desc = parse_tensor_map(text);
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
          {"diagnostics", diag::to_json(r.diagnostics)}};
}

std::string tensor_map_text(const TensorMapReport& r) {
  return fmt::format("tensor map ok on {} ({}): {}; extent {} bytes\n", r.profile, r.arch, r.description, r.extent_bytes);
}

}  // namespace ptxgate::commands
