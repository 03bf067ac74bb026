// Launches that differ from one documented launch in every input a kernel lets change, for timing
// the memory verdict of a new launch shape that nothing remembered can serve.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/device_caps.hpp"

namespace ptxgate::bench {

/// More launches than a kernel remembers verdicts for (the race memo keeps 8), so that cycling
/// through them never finds a remembered one.
inline constexpr int kNewShapes = 16;

/// `kNewShapes` launches of `info` derived from `plan`: shape j has its first grid component of more
/// than one block made j smaller, every buffer 256 * j bytes longer, every integer scalar j smaller,
/// every floating-point scalar's lowest bit flipped on odd j, the dynamic shared bytes 16 * j larger,
/// and, for a kernel without @workgroup, the block 32 * (j % 4) threads smaller. A change is kept only
/// where the launch stays launchable with the same number of proven sites as `plan` (the verdict's
/// class does not change, only its inputs), so each shape costs what validating a legal new launch
/// costs; shape 0 is `plan`.
inline std::vector<contract::LaunchPlan> new_shapes(const contract::KernelInfo& info, const contract::KernelResources& r,
                                                    const contract::LaunchPlan& plan, const validation::DeviceCaps& caps) {
  // Each candidate is checked against a copy of the facts: the verdicts a kernel remembers belong to its
  // facts object, so the facts the benchmark times have seen none of these launches.
  contract::KernelInfo probe = info;
  if (info.access) probe.access = std::make_shared<const ir::AccessFacts>(*info.access);
  const auto proven = [&](const contract::LaunchPlan& p) {
    const validation::Verdict v = validation::check_launch(probe, r, p, caps);
    return v.launchable && v.memory ? v.memory->proven + v.memory->unreachable : ~0u;
  };
  const uint32_t expected = proven(plan);
  std::vector<contract::LaunchPlan> shapes{plan};
  for (uint64_t j = 1; j < kNewShapes; ++j) {
    contract::LaunchPlan p = plan;
    // try(change): applies it and keeps it only where the verdict keeps its class.
    const auto attempt = [&](auto&& change) {
      contract::LaunchPlan before = p;
      change(p);
      if (proven(p) != expected) p = before;
    };
    for (unsigned c = 0; c < 3; ++c)
      if (plan.grid[c] > j) {
        attempt([&](contract::LaunchPlan& q) { q.grid[c] = plan.grid[c] - j; });
        break;
      }
    for (size_t a = 0; a < p.arguments.size(); ++a) {
      const contract::ArgumentDesc& d = plan.arguments[a];
      if (d.buffer_bytes) {
        attempt([&](contract::LaunchPlan& q) { *q.arguments[a].buffer_bytes = *d.buffer_bytes + 256 * j; });
      } else if (d.scalar_bits && d.scalar_type) {
        const bool floating = *d.scalar_type == ir::Type::f32 || *d.scalar_type == ir::Type::f64 ||
                              *d.scalar_type == ir::Type::f16 || *d.scalar_type == ir::Type::bf16;
        if (floating) {
          attempt([&](contract::LaunchPlan& q) { *q.arguments[a].scalar_bits = *d.scalar_bits ^ (j & 1); });
        } else if (*d.scalar_bits > j) {
          attempt([&](contract::LaunchPlan& q) { *q.arguments[a].scalar_bits = *d.scalar_bits - j; });
        }
      }
    }
    attempt([&](contract::LaunchPlan& q) { q.dynamic_shared_bytes = plan.dynamic_shared_bytes + 16 * j; });
    if (!info.has_required_block() && plan.block[0] > 32 * (j % 4))
      attempt([&](contract::LaunchPlan& q) { q.block[0] = plan.block[0] - 32 * (j % 4); });
    shapes.push_back(p);
  }
  return shapes;
}

}  // namespace ptxgate::bench
