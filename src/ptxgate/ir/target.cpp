// Target: parsing and spelling sm_XY[a|f], the supported targets, and the target policy.
#include "ptxgate/ir/target.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ptxgate/ir/ast.hpp"
#include "ptxgate/support/numbers.hpp"

namespace ptxgate::ir {

std::optional<Target> Target::parse(std::string_view text) {
  if (!text.starts_with("sm_")) return std::nullopt;
  text.remove_prefix(3);
  Variant variant = Variant::generic;
  if (!text.empty() && (text.back() == 'a' || text.back() == 'f')) {
    variant = text.back() == 'a' ? Variant::arch_specific : Variant::family_specific;
    text.remove_suffix(1);
  }
  auto sm = support::parse_count(text, UINT32_MAX);
  if (!sm) return std::nullopt;
  return Target(static_cast<uint32_t>(*sm), variant);
}

std::string Target::name() const {
  const char* suffix = variant_ == Variant::arch_specific ? "a" : variant_ == Variant::family_specific ? "f" : "";
  return fmt::format("sm_{}{}", sm_, suffix);
}

const std::vector<Target>& supported_targets() {
  // CUDA 13's ptxas assembles sm_75 and later (sm_70/sm_72 were dropped). Blackwell's targets are
  // newer than LLVM 19's NVPTX backend, which ends at sm_90a: their PTX is sm_90 PTX, which ptxas
  // assembles for them and the driver compiles for them.
  static const std::vector<Target> targets = {Target(75), Target(80), Target(86), Target(87), Target(89), Target(90),
                                              Target(90, Target::Variant::arch_specific), Target(100), Target(120)};
  return targets;
}

std::vector<std::string> supported_target_names() {
  std::vector<std::string> names;
  for (Target t : supported_targets()) names.push_back(t.name());
  return names;
}

bool is_supported(Target target) {
  const auto& all = supported_targets();
  return std::find(all.begin(), all.end(), target) != all.end();
}

diag::Diagnostics unsupported_target(std::string_view name) {
  diag::Diagnostics d;
  d.add(diag::Code::unknown_target,
        fmt::format("unsupported target architecture '{}' (supported: {})", name,
                    fmt::join(supported_target_names(), ", ")),
        {}, "pass one of the supported targets, e.g. --target sm_90");
  return d;
}

std::expected<Target, diag::Diagnostics> supported_target(std::string_view name) {
  auto target = Target::parse(name);
  if (!target || !is_supported(*target)) return std::unexpected(unsupported_target(name));
  return *target;
}

DeviceTarget target_for_device(Target device) {
  const Target own = device.generic();
  if (is_supported(own)) return {own, true};
  Target best = supported_targets().front();
  for (Target t : supported_targets())
    if (!t.specific() && t.sm() <= own.sm()) best = t;
  return {best, false};
}

bool TargetRequirement::met_by(Target target) const {
  if (minimum.specific()) return target == minimum;
  return target.sm() >= minimum.sm();
}

void TargetRequirement::raise(const TargetRequirement& other) {
  if (!other.any()) return;
  const bool stronger = other.minimum.specific() != minimum.specific() ? other.minimum.specific()
                                                                        : other.minimum.sm() > minimum.sm();
  if (!stronger) return;
  *this = other;
}

Target target_for_module(const Module& verified, Target requested) {
  if (requested.specific()) return requested;
  for (const Kernel& k : verified.kernels) {
    const Target& minimum = k.target_requirement.minimum;
    if (minimum.specific() && minimum.generic() == requested) return minimum;
  }
  return requested;
}

std::expected<void, diag::Diagnostics> check_target(const Module& verified, Target target) {
  diag::Diagnostics d;
  for (const Kernel& k : verified.kernels) {
    const TargetRequirement& need = k.target_requirement;
    if (!need.any() || need.met_by(target)) continue;
    const std::string minimum = need.minimum.name();
    if (need.minimum.specific())
      d.add(diag::Code::hopper_needs_sm90a,
            fmt::format("kernel '{}' uses {}, which exists only on the architecture-specific target {}; the target "
                        "is {}",
                        k.name, need.operation, minimum, target.name()),
            need.location,
            fmt::format("compile for {} (--target {}, or --target {} or a device profile of such a GPU, which "
                        "choose it), or leave out {}",
                        minimum, minimum, need.minimum.generic().name(), need.operation));
    else
      d.add(diag::Code::target_too_old,
            fmt::format("kernel '{}' uses {}, which needs {} or newer, but the target is {}", k.name, need.operation,
                        minimum, target.name()),
            need.location,
            fmt::format("compile for {} or newer (--target {}, a device profile of such a GPU), or leave out {}",
                        minimum, minimum, need.operation));
  }
  if (d.empty()) return {};
  return std::unexpected(std::move(d));
}

}  // namespace ptxgate::ir
