// `ptxgate devices [--json] | --profiles | --profile NAME|PATH`: live GPUs or the shipped device profiles.
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptxgate/backend/device.hpp"
#include "cli.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::cli {
namespace {

struct DevicesOptions {
  bool list_profiles = false;
  std::string profile;
  bool json = false;
  std::string format = "text";
};

void print_caps_table_header() {
  std::fputs(fmt::format("{:<12} {:<28} {:<6} {:>4}\n", "PROFILE", "DEVICE", "CC", "SMS").c_str(), stdout);
}

int run_profiles(const DevicesOptions& opt, diag::Format format) {
  auto profiles = validation::list_profiles();
  if (!profiles) {
    print_diagnostics(profiles.error(), format);
    return kDiagnostics;
  }
  if (opt.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& p : *profiles) arr.push_back(validation::to_json(p.caps));
    std::fputs((arr.dump(2) + "\n").c_str(), stdout);
    return kSuccess;
  }
  print_caps_table_header();
  for (const auto& p : *profiles)
    std::fputs(fmt::format("{:<12} {:<28} {:<6} {:>4}{}\n", p.name, p.caps.name,
                           fmt::format("{}.{}", p.caps.cc_major, p.caps.cc_minor), p.caps.sm_count,
                           p.name == validation::kDefaultProfile ? "  (default)" : "")
                   .c_str(),
               stdout);
  return kSuccess;
}

int run_one_profile(const DevicesOptions& opt, diag::Format format) {
  auto caps = validation::load_profile(opt.profile);
  if (!caps) {
    print_diagnostics(caps.error(), format);
    return kDiagnostics;
  }
  std::fputs((validation::to_json(*caps).dump(2) + "\n").c_str(), stdout);
  return kSuccess;
}

int run_live(const DevicesOptions& opt, diag::Format format) {
  auto devices = backend::list_live_devices();
  if (!devices) {
    print_diagnostics(devices.error(), format);
    bool no_driver = false;
    for (const auto& d : devices.error())
      no_driver |= d.code == diag::Code::driver_unavailable || d.code == diag::Code::no_device;
    return no_driver ? kNoDriver : kDiagnostics;
  }
  if (opt.json) {
    nlohmann::json out;
    if (devices->size() == 1) {
      out = validation::to_json(devices->front().caps);
    } else {
      out = nlohmann::json::array();
      for (const auto& d : *devices) out.push_back(validation::to_json(d.caps));
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return kSuccess;
  }
  std::fputs(fmt::format("{:<8} {:<28} {:<6} {:>4}\n", "ORDINAL", "DEVICE", "CC", "SMS").c_str(), stdout);
  for (const auto& d : *devices)
    std::fputs(fmt::format("{:<8} {:<28} {:<6} {:>4}\n", d.ordinal, d.caps.name,
                           fmt::format("{}.{}", d.caps.cc_major, d.caps.cc_minor), d.caps.sm_count)
                   .c_str(),
               stdout);
  return kSuccess;
}

}  // namespace

CLI::App* register_devices(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<DevicesOptions>();
  auto* cmd = app.add_subcommand("devices", "List GPUs, or the device profiles used for offline checks");
  auto* profiles = cmd->add_flag("--profiles", opt->list_profiles, "List the device profiles (name, device, cc, SMs)");
  cmd->add_option("--profile", opt->profile, "Print one device profile (NAME or PATH) as JSON")
      ->excludes(profiles);
  cmd->add_flag("--json", opt->json, "Print JSON (a device profile per GPU / profile)");
  add_format_option(cmd, opt->format);
  runner = [opt] {
    auto format = *diag::format_from_name(opt->format);
    if (!opt->profile.empty()) return run_one_profile(*opt, format);
    if (opt->list_profiles) return run_profiles(*opt, format);
    return run_live(*opt, format);
  };
  return cmd;
}

}  // namespace ptxgate::cli
