// The arguments the launch benchmarks pass to their probe kernels (bench/kernels/launch{0,4,16}.pg):
// launch_overhead (timed on the GPU) and launch_instructions (counted under callgrind) pass the same.
#pragma once

#include <string>
#include <vector>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"

namespace ptxgate::bench {

/// `name`'s arguments over four buffers `b`: none, 1 buffer + 3 scalars, or 4 buffers + 12 scalars.
inline std::vector<runtime::Arg> probe_args(const std::string& name, const std::vector<runtime::DeviceBuffer>& b) {
  using runtime::Arg;
  if (name == "launch0") return {};
  if (name == "launch4") return {Arg(b[0]), Arg(1.5f), Arg(7u), Arg(int32_t{-3})};
  return {Arg(b[0]),  Arg(b[1]),         Arg(b[2]),        Arg(b[3]),          Arg(1.5f),           Arg(2.5f),
          Arg(3.0),   Arg(4.0),          Arg(int32_t{-1}), Arg(int32_t{2}),    Arg(3u),             Arg(4u),
          Arg(int64_t{-5}), Arg(uint64_t{6}), Arg(uint64_t{7}), Arg(0u)};
}

/// The LaunchPlan Kernel::launch would build for `args` (bound into `bound` against `params`) on a
/// non-null stream, grid x `grid`, the kernel's default block: the guarded path's plan.
inline contract::LaunchPlan probe_plan(const std::vector<runtime::Arg>& args, const std::vector<runtime::BoundSlot>& bound,
                                       const std::vector<contract::ParamInfo>& params, uint64_t grid = 1) {
  using runtime::Arg;
  contract::LaunchPlan plan;
  plan.grid = {grid, 1, 1};
  plan.arguments_known = true;
  plan.stream_is_null = false;
  for (size_t i = 0; i < args.size(); ++i) {
    contract::ArgumentDesc d;
    const Arg& a = args[i];
    d.kind = a.kind() == Arg::Kind::buffer ? contract::ArgumentDesc::Kind::buffer : contract::ArgumentDesc::Kind::scalar;
    d.size_bytes = bound[i].size;
    if (a.kind() == Arg::Kind::scalar) d.scalar_type = params[i].type;
    if (a.kind() == Arg::Kind::buffer && a.buffer_bytes() != 0) d.buffer_bytes = a.buffer_bytes();
    plan.arguments.push_back(d);
  }
  return plan;
}

}  // namespace ptxgate::bench
