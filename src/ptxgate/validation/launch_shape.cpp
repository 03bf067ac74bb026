// LaunchShape::of: a plan's verdict-relevant fields, encoded like the backend's argument-by-argument shapes.
#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::validation {

LaunchShape LaunchShape::of(const contract::LaunchPlan& plan) {
  LaunchShape s;
  s.start(plan.grid, plan.block, plan.dynamic_shared_bytes,
          {plan.cooperative, plan.block_given, plan.arguments_known, plan.stream_is_null, plan.stream_policy,
           plan.function_is_null, plan.require_memory_proof});
  const size_t n = plan.arguments.size();
  if (n <= kMaxArguments) [[likely]] {
    // One pass, each argument's two words written in place (add() also keeps the count and the
    // bound, which argument_words settles once).
    uint64_t* words = s.argument_words(n);
    for (size_t i = 0; i < n; ++i) {
      words[kWordsPerArgument * i] = argument_word(plan.arguments[i]);
      words[kWordsPerArgument * i + 1] = value_word(plan.arguments[i]);
    }
  } else {
    for (const auto& a : plan.arguments) s.add(a);
  }
  if (!plan.required_elements.empty()) s.set_uncacheable();
  return s;
}

}  // namespace ptxgate::validation
