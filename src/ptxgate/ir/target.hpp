// The code-generation target (sm_80, sm_90a, ...): one value type with its spelling, the targets
// ptxgate compiles for, what a kernel's operations need of a target, and the one policy that picks
// the target for a device and a module (the runtime, `check`, `emit` and the C API all use it).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::ir {

struct Module;

/// A GPU architecture as a compilation target: `sm_XY` (compute capability X.Y), optionally with a
/// suffix that ties the code to one architecture.
class Target {
 public:
  /// What follows the number: nothing; `a`, architecture-specific features (sm_90a's wgmma, TMA,
  /// mbarrier: code for it runs only on that architecture); `f`, family-specific features (PTX ISA
  /// 8.8; treated like `a`).
  enum class Variant : uint8_t { generic, arch_specific, family_specific };

  constexpr Target() = default;
  constexpr explicit Target(uint32_t sm, Variant variant = Variant::generic) : sm_(sm), variant_(variant) {}

  /// "sm_90" -> sm 90; "sm_90a" -> sm 90, arch_specific; "sm_100f" -> sm 100, family_specific.
  /// nullopt for anything else (another prefix, no number, spaces, a sign).
  [[nodiscard]] static std::optional<Target> parse(std::string_view text);
  /// The architecture of a device of compute capability `major`.`minor` (sm_86 for 8.6, sm_100 for 10.0).
  static constexpr Target of_device(uint32_t major, uint32_t minor) { return Target(major * 10 + minor); }

  /// The compute capability as one number: 90 for sm_90 and sm_90a.
  constexpr uint32_t sm() const { return sm_; }
  constexpr Variant variant() const { return variant_; }
  /// True for `a` and `f` targets.
  constexpr bool specific() const { return variant_ != Variant::generic; }
  /// The same architecture without a suffix (sm_90 for sm_90a).
  constexpr Target generic() const { return Target(sm_); }
  /// "sm_90a".
  [[nodiscard]] std::string name() const;

  /// Whether PTX for this target runs on a device of architecture `device` (the driver compiles it
  /// there): not newer than the device, and a specific target only on its own architecture.
  constexpr bool ptx_runs_on(Target device) const {
    return sm_ <= device.sm_ && (!specific() || sm_ == device.sm_);
  }
  /// Whether a cubin for this target runs on a device of architecture `device`: the same major
  /// architecture at the same or a newer minor version.
  constexpr bool cubin_runs_on(Target device) const { return sm_ / 10 == device.sm_ / 10 && sm_ <= device.sm_; }

  friend constexpr bool operator==(Target, Target) = default;

 private:
  uint32_t sm_ = 0;
  Variant variant_ = Variant::generic;
};

/// The targets ptxgate compiles for, in order: sm_75 .. sm_90a (what CUDA 13's ptxas assembles and
/// LLVM 19 generates), then sm_100 and sm_120 (Blackwell), generated as sm_90 PTX.
[[nodiscard]] const std::vector<Target>& supported_targets();
/// Their names ("sm_75", ..., "sm_120"), for command-line checks and messages.
[[nodiscard]] std::vector<std::string> supported_target_names();
[[nodiscard]] bool is_supported(Target target);
/// PG2001 for a target name ptxgate does not compile for, listing the supported ones.
[[nodiscard]] diag::Diagnostics unsupported_target(std::string_view name);
/// The supported target `name` spells; PG2001 (unsupported_target) for anything else.
[[nodiscard]] std::expected<Target, diag::Diagnostics> supported_target(std::string_view name);

/// The target for a device of architecture `device`: its own when ptxgate compiles for it (`exact`:
/// ptxas builds a cubin for it), else the newest supported generic target below it (PTX that the
/// driver compiles for the device), else the oldest supported target.
struct DeviceTarget {
  Target target;
  bool exact = false;
};
[[nodiscard]] DeviceTarget target_for_device(Target device);

/// What a routine needs of its target because of the operations it uses, itself or through the
/// functions it calls: the weakest target that has them, the operation that asks for it, and where.
struct TargetRequirement {
  /// sm_80 for mma, ldmatrix, cp.async and tf32; sm_90a for Hopper's mbarrier, TMA and wgmma;
  /// sm 0: any target.
  Target minimum;
  std::string operation;    ///< e.g. "mma_m16n8k16"; empty when there is no requirement
  diag::Location location;  ///< where `operation` is (no position for builder modules)

  constexpr bool any() const { return minimum.sm() != 0; }
  /// Whether code for `target` may use what this requirement asks for: a specific requirement
  /// only on its own specific target, a generic one on every target at least as new.
  [[nodiscard]] bool met_by(Target target) const;
  /// Keeps the stronger of this requirement and `other`: an architecture-specific one over any
  /// generic one, then the higher sm, then the one seen first.
  void raise(const TargetRequirement& other);
};

/// The target the module compiles for when `requested` is asked for (a device's architecture, the
/// CLI's --target, the C API's option): requested's architecture-specific form when a kernel
/// needs it (sm_90 becomes sm_90a for Hopper's operations; an sm_90a cubin runs on the H100 and
/// the H200 alike), else `requested` itself.
[[nodiscard]] Target target_for_module(const Module& verified, Target requested);

/// PG1350 for each kernel that needs an architecture-specific target that `target` is not, PG1331
/// for each that needs a newer one; located at the operation that asks for it.
[[nodiscard]] std::expected<void, diag::Diagnostics> check_target(const Module& verified, Target target);

}  // namespace ptxgate::ir
