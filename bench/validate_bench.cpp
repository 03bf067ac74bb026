// Benchmark: fresh check_launch (no ptxas) and the launch cache fast path, median ns per call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "ptxgate/backend/internal/launch_cache.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/launch_shape.hpp"
#include "ptxgate/validation/profiles.hpp"

using namespace ptxgate;
using namespace ptxgate::validation;

namespace {

template <typename F>
double median_ns_per_call(F&& body, int iterations, int batches) {
  std::vector<double> samples;
  for (int b = 0; b < batches; ++b) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) body(i);
    auto stop = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / iterations);
  }
  std::nth_element(samples.begin(), samples.begin() + batches / 2, samples.end());
  return samples[batches / 2];
}

}  // namespace

int main() {
  auto caps = load_profile("h100-sxm");
  if (!caps) {
    std::fprintf(stderr, "cannot load the h100-sxm profile\n");
    return 1;
  }
  contract::KernelInfo kernel;
  kernel.name = "saxpy";
  kernel.params = {{"y", 0, true, ir::Access::inout, ir::Type::f32, 8},
                   {"x", 1, true, ir::Access::in, ir::Type::f32, 8},
                   {"a", 2, false, ir::Access::inout, ir::Type::f32, 4},
                   {"n", 3, false, ir::Access::inout, ir::Type::u32, 4}};
  kernel.required_block = {256, 1, 1};
  contract::KernelResources res;
  res.registers_per_thread = 10;
  res.max_threads_per_block = 256;

  contract::LaunchPlan plan;
  plan.grid = {4096, 1, 1};
  plan.block = {256, 1, 1};
  plan.arguments_known = true;
  plan.arguments = {{contract::ArgumentDesc::Kind::buffer, 8, false, false, std::nullopt, 1 << 24},
                    {contract::ArgumentDesc::Kind::buffer, 8, false, false, std::nullopt, 1 << 24},
                    {contract::ArgumentDesc::Kind::scalar, 4, false, false, ir::Type::f32, std::nullopt},
                    {contract::ArgumentDesc::Kind::scalar, 4, false, false, ir::Type::u32, std::nullopt}};
  plan.required_elements = {{0, 1 << 20}, {1, 1 << 20}};

  volatile bool sink = false;
  double fresh = median_ns_per_call(
      [&](int) { sink = check_launch(kernel, res, plan, *caps).launchable; }, 20000, 25);

  auto coop_plan = plan;
  coop_plan.cooperative = true;
  coop_plan.grid = {1056, 1, 1};
  double fresh_coop = median_ns_per_call(
      [&](int) { sink = check_launch(kernel, res, coop_plan, *caps).launchable; }, 20000, 25);

  contract::LaunchPlan blocked = plan;
  blocked.block = {2048, 1, 1};
  double fresh_blocked = median_ns_per_call(
      [&](int) { sink = check_launch(kernel, res, blocked, *caps).launchable; }, 5000, 25);

  // The cached fast path as the backend runs it: the plan's LaunchShape, then a launch cache lookup.
  backend::LaunchCache cache(plan.arguments.size());
  for (uint64_t g = 1; g < backend::LaunchCache::kEntries; ++g) {
    auto other = plan;
    other.grid[0] = g;
    cache.insert(LaunchShape::of(other), {256, 1, 1});
  }
  cache.insert(LaunchShape::of(plan), {256, 1, 1});
  double cached = median_ns_per_call([&](int) { sink = cache.find(LaunchShape::of(plan)).has_value(); }, 1000000, 25);
  const LaunchShape precomputed = LaunchShape::of(plan);
  double lookup_only = median_ns_per_call([&](int) { sink = cache.find(precomputed).has_value(); }, 1000000, 25);
  auto oldest = plan;
  oldest.grid[0] = 1;
  const LaunchShape oldest_shape = LaunchShape::of(oldest);
  double lookup_worst = median_ns_per_call([&](int) { sink = cache.find(oldest_shape).has_value(); }, 1000000, 25);
  (void)sink;

  std::printf("validate_bench (median of 25 batches, ns per call)\n");
  std::printf("  check_launch fresh, launchable saxpy with 4 arguments   %8.1f ns\n", fresh);
  std::printf("  check_launch fresh, cooperative at capacity             %8.1f ns\n", fresh_coop);
  std::printf("  check_launch fresh, blocked (diagnostics formatted)     %8.1f ns\n", fresh_blocked);
  std::printf("  cached verdict: LaunchShape::of(plan) + LaunchCache::find %6.1f ns\n", cached);
  std::printf("  cached verdict: find of a precomputed shape (last hit)  %8.1f ns\n", lookup_only);
  std::printf("  cached verdict: find, another of %zu entries             %8.1f ns\n", backend::LaunchCache::kEntries,
              lookup_worst);
  return 0;
}
