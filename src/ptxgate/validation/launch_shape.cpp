// LaunchShape::of: a plan's verdict-relevant fields, encoded like the backend's argument-by-argument shapes.
#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::validation {

LaunchShape LaunchShape::of(const contract::LaunchPlan& plan) {
  LaunchShape s;
  s.start(plan.grid, plan.block, plan.dynamic_shared_bytes,
          {plan.cooperative, plan.block_given, plan.arguments_known, plan.stream_is_null, plan.stream_policy,
           plan.function_is_null, plan.require_memory_proof});
  for (const auto& a : plan.arguments) s.add(a);
  if (!plan.required_elements.empty()) s.set_uncacheable();
  return s;
}

}  // namespace ptxgate::validation
