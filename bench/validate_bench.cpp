// Benchmark: fresh check_launch (no ptxas) and the launch cache fast path, median ns per call; and
// what the memory-safety part adds to a fresh check_launch of a new launch shape for kernels of
// several sizes and for every shipped kernel near its documented launch (bench/shipped_launches.hpp).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptxgate/runtime/internal/launch_cache.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/launch_shape.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "new_shapes.hpp"
#include "shipped_launches.hpp"

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

/// Which launches the memory rows check (PTXGATE_BENCH_NEW): `all` (the default) cycles through
/// bench::new_shapes, a launch new in every input the kernel lets change, that nothing remembered
/// serves; `grid` alternates the first grid component of more than one block with half of it (a
/// launch that sizes its grid to the data); `same` repeats the documented launch (what the kernel's
/// remembered node bounds then serve).
std::vector<contract::LaunchPlan> shapes_for(const contract::KernelInfo& info, const contract::KernelResources& r,
                                             const contract::LaunchPlan& p, const DeviceCaps& caps) {
  const char* mode = std::getenv("PTXGATE_BENCH_NEW");
  const std::string m = mode ? mode : "all";
  if (m == "same") return {p};
  if (m == "grid") {
    contract::LaunchPlan half = p;
    unsigned c = 0;
    while (c < 2 && half.grid[c] < 2) ++c;
    half.grid[c] = std::max<uint64_t>(p.grid[c] / 2, 1);
    return {p, half};
  }
  if (m != "all") {
    std::fprintf(stderr, "PTXGATE_BENCH_NEW=%s: expected all, grid or same\n", m.c_str());
    std::exit(2);
  }
  return bench::new_shapes(info, r, p, caps);
}

/// The memory-safety part of a fresh check_launch: batches with and without the kernel's access
/// facts alternate, each about 2 ms of checks (3 to 5000 calls) cycling through `shapes`; the
/// median of each side.
struct MemoryCost {
  double with = 0, without = 0;
};
/// `calls` fresh checks cycling through `shapes`, for an instruction count
/// (callgrind --toggle-collect='*fixed_checks*').
[[gnu::noinline]] bool fixed_checks(const contract::KernelInfo& k, const contract::KernelResources& r,
                                    const std::vector<contract::LaunchPlan>& shapes, const DeviceCaps& caps, int calls) {
  bool any = false;
  for (int i = 0; i < calls; ++i) any |= check_launch(k, r, shapes[i % shapes.size()], caps).launchable;
  return any;
}

MemoryCost memory_cost(const contract::KernelInfo& info, const contract::KernelResources& r, const contract::LaunchPlan& p,
                       const DeviceCaps& caps) {
  contract::KernelInfo bare = info;
  bare.access = nullptr;
  const std::vector<contract::LaunchPlan> shapes = shapes_for(info, r, p, caps);
  volatile bool sink = false;
  // PTXGATE_BENCH_FIXED_CALLS=N: N calls with the facts (PTXGATE_BENCH_FIXED_SIDE=without: without them)
  // and no timing, for instruction counts under callgrind (fixed_checks).
  if (const char* fixed = std::getenv("PTXGATE_BENCH_FIXED_CALLS")) {
    const int calls = std::max(std::atoi(fixed), 1);
    const char* side = std::getenv("PTXGATE_BENCH_FIXED_SIDE");
    sink = fixed_checks(side && std::string(side) == "without" ? bare : info, r, shapes, caps, calls);
    return {};
  }
  size_t next = 0;
  const auto check = [&](const contract::KernelInfo& k) {
    sink = check_launch(k, r, shapes[next], caps).launchable;
    next = next + 1 == shapes.size() ? 0 : next + 1;
  };
  const auto iterations_for = [&](const contract::KernelInfo& k) {
    auto start = std::chrono::steady_clock::now();
    check(k);
    const double one = std::max(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count(), 1.0);
    return std::clamp(static_cast<int>(2e6 / one), 3, 5000);
  };
  const int n[2] = {iterations_for(info), iterations_for(bare)};
  std::vector<double> with, without;
  for (int b = 0; b < 25; ++b)
    for (int side = 0; side < 2; ++side) {
      const bool facts = (side == 0) == (b % 2 == 0);
      const contract::KernelInfo& k = facts ? info : bare;
      const int count = n[facts ? 0 : 1];
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < count; ++i) check(k);
      (facts ? with : without)
          .push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / count);
    }
  (void)sink;
  std::nth_element(with.begin(), with.begin() + 12, with.end());
  std::nth_element(without.begin(), without.begin() + 12, without.end());
  return {with[12], without[12]};
}

/// A kernel of the IR for the memory-safety rows: its KernelInfo (with the access facts) and a
/// launch with every argument known.
struct MemoryCase {
  const char* name;
  const char* text;
  std::array<uint64_t, 3> grid, block;
  uint64_t dynamic_shared;
  std::vector<std::pair<uint64_t, bool>> arguments;  ///< value (bytes of a buffer, bits of a scalar), is buffer
};

const MemoryCase kMemoryCases[] = {
    {"saxpy (4 arguments, 3 accesses)",
     "@workgroup(256)\nkernel k(inout y: f32[], in x: f32[], a: f32, n: u32) {\n  let i = global_id.x;\n"
     "  if (i < n) { y[i] = a * x[i] + y[i]; }\n}\n",
     {4096, 1, 1}, {256, 1, 1}, 0, {{1 << 22, true}, {1 << 22, true}, {0x40000000, false}, {1 << 20, false}}},
    {"stencil 2-D (5 arguments, 7 accesses)",
     "@workgroup(16, 16)\nkernel k(out dst: f32[], in src: f32[], a: f32, w: u32, h: u32) {\n"
     "  let x = global_id.x;\n  let y = global_id.y;\n  if (x < w && y < h) {\n    let c = y * w + x;\n"
     "    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { dst[c] = src[c]; }\n"
     "    else { dst[c] = a * (src[c - 1] + src[c + 1] + src[c - w] + src[c + w]); }\n  }\n}\n",
     {64, 64, 1}, {16, 16, 1}, 0, {{4 << 20, true}, {4 << 20, true}, {0x3e800000, false}, {1024, false}, {1024, false}}},
    {"softmax-style row (3 arguments, 8 accesses, loops)",
     "@workgroup(256)\nkernel k(out y: f32[], in x: f32[], cols: u32) {\n  shared row: f32[];\n"
     "  let vectors = cols / 4;\n  let base = u64(block_id.x) * u64(vectors);\n  var j = thread_id.x;\n"
     "  while (j + 256 < vectors) {\n    store4(row, j, load4(x, base + u64(j)));\n"
     "    store4(row, j + 256, load4(x, base + u64(j + 256)));\n    j = j + 512;\n  }\n"
     "  while (j < vectors) {\n    store4(row, j, load4(x, base + u64(j)));\n    j = j + 256;\n  }\n"
     "  barrier();\n  var k = thread_id.x;\n  while (k < vectors) {\n    store4(y, base + u64(k), load4(row, k));\n"
     "    k = k + 256;\n  }\n}\n",
     {1024, 1, 1}, {256, 1, 1}, 16384, {{16 << 20, true}, {16 << 20, true}, {4096, false}}},
};

}  // namespace

/// `validate_bench [WORD]`: with WORD, only the memory-safety rows whose name contains it (for a profiler).
/// The shipped kernels are read from $PTXGATE_SOURCE_DIR, else from the source tree it was built from.
int main(int argc, char** argv) {
  const char* source_dir = std::getenv("PTXGATE_SOURCE_DIR");
  if (!source_dir) source_dir = PTXGATE_SOURCE_DIR;
  const std::string only = argc > 1 ? argv[1] : "";
  const auto wanted = [&](const std::string& name) { return only.empty() || name.find(only) != std::string::npos; };
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

  // With a WORD the headline rows run once (their numbers are not printed).
  const auto calls = [&](int n) { return only.empty() ? n : 1; };
  volatile bool sink = false;
  double fresh = median_ns_per_call(
      [&](int) { sink = check_launch(kernel, res, plan, *caps).launchable; }, calls(20000), 25);

  auto coop_plan = plan;
  coop_plan.cooperative = true;
  coop_plan.grid = {1056, 1, 1};
  double fresh_coop = median_ns_per_call(
      [&](int) { sink = check_launch(kernel, res, coop_plan, *caps).launchable; }, calls(20000), 25);

  contract::LaunchPlan blocked = plan;
  blocked.block = {2048, 1, 1};
  double fresh_blocked = median_ns_per_call(
      [&](int) { sink = check_launch(kernel, res, blocked, *caps).launchable; }, calls(5000), 25);

  // The cached fast path as the backend runs it: the plan's LaunchShape, then a launch cache lookup.
  runtime::LaunchCache cache(plan.arguments.size());
  for (uint64_t g = 1; g < runtime::LaunchCache::kEntries; ++g) {
    auto other = plan;
    other.grid[0] = g;
    cache.insert(LaunchShape::of(other), {256, 1, 1});
  }
  cache.insert(LaunchShape::of(plan), {256, 1, 1});
  double cached = median_ns_per_call([&](int) { sink = cache.find(LaunchShape::of(plan)).has_value(); }, calls(1000000), 25);
  const LaunchShape precomputed = LaunchShape::of(plan);
  double lookup_only = median_ns_per_call([&](int) { sink = cache.find(precomputed).has_value(); }, calls(1000000), 25);
  auto oldest = plan;
  oldest.grid[0] = 1;
  const LaunchShape oldest_shape = LaunchShape::of(oldest);
  double lookup_worst = median_ns_per_call([&](int) { sink = cache.find(oldest_shape).has_value(); }, calls(1000000), 25);
  // The memory-safety part: the same fresh check_launch with and without the kernel's access facts.
  struct MemoryRow {
    const char* name;
    double with, without;
  };
  std::vector<MemoryRow> memory_rows;
  std::deque<std::string> shipped_names;
  for (const MemoryCase& m : kMemoryCases) {
    if (!wanted(m.name)) continue;
    diag::SourceFile file("bench.pg", m.text);
    auto loaded = ir::load_module(file);
    if (!loaded) {
      std::fprintf(stderr, "%s", diag::render_text(loaded.error()).c_str());
      return 1;
    }
    contract::KernelInfo info = codegen::describe(loaded->module).front();
    contract::LaunchPlan p;
    p.grid = m.grid;
    p.block = m.block;
    p.dynamic_shared_bytes = m.dynamic_shared;
    p.arguments_known = true;
    for (size_t i = 0; i < m.arguments.size(); ++i) {
      contract::ArgumentDesc d;
      d.kind = m.arguments[i].second ? contract::ArgumentDesc::Kind::buffer : contract::ArgumentDesc::Kind::scalar;
      d.size_bytes = m.arguments[i].second ? 8 : info.params[i].size_bytes;
      if (m.arguments[i].second) {
        d.buffer_bytes = m.arguments[i].first;
      } else {
        d.scalar_type = info.params[i].type;
        d.scalar_bits = m.arguments[i].first;
      }
      p.arguments.push_back(d);
    }
    contract::KernelResources r;
    r.registers_per_thread = 32;
    const Verdict v = check_launch(info, r, p, *caps);
    if (!v.launchable || !v.memory || v.memory->proven != v.memory->sites) {
      std::fprintf(stderr, "%s: not launchable with every access proven\n", m.name);
      return 1;
    }
    const MemoryCost cost = memory_cost(info, r, p, *caps);
    memory_rows.push_back({m.name, cost.with, cost.without});
  }
  // The shipped kernels at their documented launches.
  for (const shipped::Launch& l : shipped::shipped_launches()) {
    if (!wanted(std::string(l.file) + " " + l.kernel)) continue;
    std::ifstream in(std::string(source_dir) + "/" + l.file);
    std::stringstream text;
    text << in.rdbuf();
    diag::SourceFile file(l.file, text.str());
    auto loaded = ir::load_module(file);
    if (!loaded) {
      std::fprintf(stderr, "%s", diag::render_text(loaded.error()).c_str());
      return 1;
    }
    const std::vector<contract::KernelInfo> infos = codegen::describe(loaded->module);
    auto info = std::find_if(infos.begin(), infos.end(), [&](const contract::KernelInfo& k) { return k.name == l.kernel; });
    if (info == infos.end()) {
      std::fprintf(stderr, "%s: no kernel %s\n", l.file, l.kernel);
      return 1;
    }
    contract::LaunchPlan p;
    p.grid = l.grid;
    p.block = l.block;
    p.block_given = true;
    p.cooperative = info->cooperative;
    p.dynamic_shared_bytes = l.dynamic_shared;
    p.arguments_known = true;
    for (const auto& param : info->params) {
      contract::ArgumentDesc d;
      d.kind = param.is_buffer ? contract::ArgumentDesc::Kind::buffer : contract::ArgumentDesc::Kind::scalar;
      d.size_bytes = param.size_bytes;
      uint64_t value = 0;
      for (const auto& [name, bits] : l.arguments)
        if (name == param.name) value = bits;
      if (param.is_buffer) {
        d.buffer_bytes = value;
      } else {
        d.scalar_type = param.type;
        d.scalar_bits = value;
      }
      p.arguments.push_back(d);
    }
    contract::KernelResources r;
    r.registers_per_thread = 32;
    if (!check_launch(*info, r, p, *caps).launchable) {
      std::fprintf(stderr, "%s %s: not launchable\n%s", l.file, l.kernel, diag::render_text(check_launch(*info, r, p, *caps).diagnostics).c_str());
      return 1;
    }
    const MemoryCost cost = memory_cost(*info, r, p, *caps);
    shipped_names.push_back(std::string(l.file) + " " + l.kernel);
    memory_rows.push_back({shipped_names.back().c_str(), cost.with, cost.without});
  }
  (void)sink;

  if (only.empty()) {
    std::printf("validate_bench (median of 25 batches, ns per call)\n");
    std::printf("  check_launch fresh, launchable saxpy with 4 arguments   %8.1f ns\n", fresh);
    std::printf("  check_launch fresh, cooperative at capacity             %8.1f ns\n", fresh_coop);
    std::printf("  check_launch fresh, blocked (diagnostics formatted)     %8.1f ns\n", fresh_blocked);
    std::printf("  cached verdict: LaunchShape::of(plan) + LaunchCache::find %6.1f ns\n", cached);
    std::printf("  cached verdict: find of a precomputed shape (last hit)  %8.1f ns\n", lookup_only);
    std::printf("  cached verdict: find, another of %zu entries             %8.1f ns\n", runtime::LaunchCache::kEntries,
                lookup_worst);
  }
  const char* mode = std::getenv("PTXGATE_BENCH_NEW");
  std::printf("memory safety (fresh check_launch with the kernel's access facts, minus without them; launches: %s)\n",
              mode ? mode : "all");
  for (const MemoryRow& m : memory_rows)
    std::printf("  %-56s %8.1f ns (%.1f with, %.1f without)\n", m.name, m.with - m.without, m.with, m.without);
  return 0;
}
