// The set-up the guarded-launch tests share over the fake driver: a fresh context and the plans of their argument tables.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>

#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/runtime/context.hpp"
#include "runtime_fake_driver.hpp"

namespace ptxgate::runtime::testing {

/// A context of the fake driver's device 0, over a fresh fake state (every launch test starts here).
struct FakeContext {
  DriverApi api = make_fake_driver();
  std::shared_ptr<Context> ctx;

  FakeContext() {
    reset_fake_state();
    ctx = *Context::open(0, &api);
  }
};

/// A plan on the null stream with grid (grid, 1, 1) and block (block, 1, 1), its arguments known:
/// `buffers` buffer slots (8 bytes each), then one scalar of each type in `scalars` (its type's
/// width), of which the first `count` are described (fewer than the kernel declares: a count
/// mismatch).
inline contract::LaunchPlan fake_plan(uint64_t grid, uint64_t block, size_t buffers,
                                      std::initializer_list<ir::Type> scalars, size_t count = SIZE_MAX) {
  contract::LaunchPlan p;
  p.grid = {grid, 1, 1};
  p.block = {block, 1, 1};
  p.stream_is_null = true;
  p.arguments_known = true;
  for (size_t i = 0; i < buffers && p.arguments.size() < count; ++i) {
    contract::ArgumentDesc d;
    d.kind = contract::ArgumentDesc::Kind::buffer;
    d.size_bytes = 8;
    p.arguments.push_back(d);
  }
  for (ir::Type type : scalars) {
    if (p.arguments.size() >= count) break;
    contract::ArgumentDesc d;
    d.kind = contract::ArgumentDesc::Kind::scalar;
    d.size_bytes = ir::byte_size(type);
    d.scalar_type = type;
    p.arguments.push_back(d);
  }
  return p;
}

}  // namespace ptxgate::runtime::testing
