// The arguments the launch benchmarks pass to their probe kernels (bench/kernels/launch{0,4,16}.pg):
// launch_overhead (timed on the GPU) and launch_instructions (counted under callgrind) pass the same.
#pragma once

#include <string>
#include <vector>

#include "ptxgate/runtime/arg.hpp"
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

}  // namespace ptxgate::bench
