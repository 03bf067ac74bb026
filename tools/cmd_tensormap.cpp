// `ptxgate tensormap`: check a TMA tensor-map description against a device profile, offline.
#include "cli.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "ptxgate/commands/tensor_map_check.hpp"

namespace ptxgate::cli {

CLI::App* register_tensormap(CLI::App& app, Runner& runner) {
  struct Options {
    commands::TensorMapText text;
    std::string profile{validation::kDefaultProfile};
    std::string format = "text";
  };
  auto opt = std::make_shared<Options>();
  auto& t = opt->text;
  auto* cmd = app.add_subcommand("tensormap", "Check a TMA tensor map (cuTensorMapEncodeTiled/Im2col) offline");
  cmd->add_option("--type", t.type, "Element type (u8 u16 u32 i32 u64 i64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz)")
      ->required();
  cmd->add_option("--dims", t.dims, "Tensor dimensions, innermost first: N0[,N1...]")->required();
  cmd->add_option("--strides", t.strides, "Byte strides of dimensions 1.. (default: dense)");
  cmd->add_option("--box", t.box, "Box (tile) dimensions, innermost first (tiled maps)");
  cmd->add_option("--element-strides", t.element_strides, "Traversal step per dimension (default: all 1)");
  cmd->add_option("--interleave", t.interleave, "none, 16B or 32B")->capture_default_str();
  cmd->add_option("--swizzle", t.swizzle, "none, 32B, 64B, 128B, 128B_atom_32B, 128B_atom_32B_flip_8B, 128B_atom_64B")
      ->capture_default_str();
  cmd->add_option("--l2-promotion", t.l2_promotion, "none, 64B, 128B or 256B")->capture_default_str();
  cmd->add_option("--oob-fill", t.oob_fill, "none (zeros) or nan")->capture_default_str();
  cmd->add_flag("--im2col", t.im2col, "An im2col map (cuTensorMapEncodeIm2col) instead of a tiled one");
  cmd->add_option("--lower-corner", t.lower_corner, "im2col: lower pixel-box corner, innermost spatial dim first");
  cmd->add_option("--upper-corner", t.upper_corner, "im2col: upper pixel-box corner");
  cmd->add_option("--channels", t.channels, "im2col: channels per pixel");
  cmd->add_option("--pixels", t.pixels, "im2col: pixels per column");
  cmd->add_option("--offset", t.offset, "Byte offset of the tensor in its (256-byte aligned) allocation")
      ->capture_default_str();
  cmd->add_option("--buffer-bytes", t.buffer_bytes, "Bytes of the allocation: the tensor must fit");
  cmd->add_option("--device-profile", opt->profile, "Device profile NAME or PATH")->capture_default_str();
  add_common_options(cmd, opt->format);
  runner = [opt] {
    const auto format = *diag::format_from_name(opt->format);
    auto report = commands::check_tensor_map_text(opt->text, opt->profile);
    if (common_options().warnings_as_errors() && diag::promote_warnings(report.diagnostics) > 0) report.valid = false;
    // Under --format json one document, valid or not, with its diagnostics inside.
    if (format == diag::Format::json) print_product(commands::tensor_map_json(report).dump(2) + "\n");
    else if (report.valid) print_product(commands::tensor_map_text(report));
    if (format != diag::Format::json && !report.diagnostics.empty()) print_diagnostics(report.diagnostics, format);
    return static_cast<int>(report.usage ? kUsage : report.valid ? kSuccess : kDiagnostics);
  };
  return cmd;
}

}  // namespace ptxgate::cli
