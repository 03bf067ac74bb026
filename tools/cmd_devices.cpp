// `ptxgate devices [--format json] | --profiles | --profile NAME|PATH`: live GPUs or the shipped device profiles.
#include "ptxgate/commands/reports.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct DevicesOptions {
  bool list_profiles = false;
  std::string profile;
  bool json = false;
  std::string format = "text";
};

int run_devices(const DevicesOptions& opt) {
  const bool json = opt.json || opt.format == "json";
  const auto format = json ? diag::Format::json : *diag::format_from_name(opt.format);
  // Under JSON every outcome is one document on standard output, a failure's too.
  auto failed = [&](const diag::Diagnostics& d) {
    if (json) print_product(commands::stop_json(d, false).dump(2) + "\n");
    else print_diagnostics(d, format);
    return static_cast<int>(kDiagnostics);
  };
  if (!opt.profile.empty()) {
    // A profile document, in the profile file format (`--device-profile` reads it back).
    auto caps = validation::load_profile(opt.profile);
    if (!caps) return failed(caps.error());
    print_product(validation::to_json(*caps).dump(2) + "\n");
    return kSuccess;
  }
  if (opt.list_profiles) {
    auto profiles = validation::list_profiles();
    if (!profiles) return failed(profiles.error());
    print_product(json ? commands::profiles_json(*profiles).dump(2) + "\n" : commands::profiles_text(*profiles));
    return kSuccess;
  }
  // Under JSON one document of one shape with or without a driver; its diagnostics inside it.
  auto listing = commands::list_devices();
  if (json) print_product(commands::devices_json(listing).dump(2) + "\n");
  else if (listing.driver_available) print_product(commands::devices_text(listing));
  else print_diagnostics(listing.diagnostics, format);
  if (listing.driver_available) return kSuccess;
  for (const auto& d : listing.diagnostics)
    if (d.code == diag::Code::driver_unavailable || d.code == diag::Code::no_device) return kNoDriver;
  return kDiagnostics;
}

}  // namespace

CLI::App* register_devices(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<DevicesOptions>();
  auto* cmd = app.add_subcommand("devices", "List GPUs, or the device profiles used for offline checks");
  auto* profiles = cmd->add_flag("--profiles", opt->list_profiles, "List the device profiles (name, device, cc, SMs)");
  cmd->add_option("--profile", opt->profile, "Print one device profile (NAME or PATH) as JSON")
      ->excludes(profiles);
  cmd->add_flag("--json", opt->json, "Print JSON (the same as --format json)");
  add_common_options(cmd, opt->format);
  runner = [opt] { return run_devices(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
