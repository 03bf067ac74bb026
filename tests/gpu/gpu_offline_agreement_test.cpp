// The product's claim, proved on the device: the OFFLINE verdict (check_launch against a device
// profile built from the live device's attributes, with ptxas resources and cuda_occupancy.h)
// equals the raw driver's outcome where registers bind (a >64-register kernel without
// @workgroup, block sizes 32..1024 in steps of 32 and each +1), where static + dynamic shared
// memory bind, and for cooperative grids at and one past the limit (issue 11 item 24).
// Test-only code: the raw cuLaunchKernel / cuLaunchCooperativeKernel calls establish ground truth.
#include <fmt/format.h>

#include "ptxgate/runtime/driver_api.hpp"
#include "gpu_support.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;

namespace {

const runtime::DriverApi& raw() { return **runtime::driver(); }

/// 96 values loaded before any is stored back into the same buffer (the stores may alias the
/// loads, so every value stays live): far more than 64 registers per thread, no @workgroup.
std::string heavy_source() {
  constexpr int kValues = 96;
  std::string s = "kernel heavy(inout y: f32[], n: u32) {\n  let base = global_id.x * 96;\n  if (base + 96 <= n) {\n";
  for (int k = 0; k < kValues; ++k) s += fmt::format("    let a{} = y[base + {}];\n", k, k);
  for (int k = 0; k < kValues; ++k)
    s += fmt::format("    y[base + {}] = a{} * a{} + a{};\n", k, k, kValues - 1 - k, (k + 1) % kValues);
  s += "  }\n}\n";
  return s;
}

/// A kernel with a static shared array and no @workgroup: static + dynamic shared both count.
constexpr const char* kShared = R"(kernel staged(inout y: f32[], n: u32) {
  shared tile: f32[4096];
  let t = thread_id.x;
  let i = global_id.x;
  if (t < 4096) { tile[t % 4096] = 1.0; }
  barrier();
  if (i < n) { y[i] = y[i] + tile[t % 4096]; }
}
)";

struct Sweep {
  int agree = 0, total = 0;
  std::vector<std::string> disagreements;
};

/// One comparison: the offline verdict against the raw driver for this launch.
void compare(Sweep& s, runtime::Kernel& kernel, const contract::KernelResources& offline_resources,
             const validation::DeviceCaps& profile, std::array<uint64_t, 3> grid, uint64_t block,
             uint64_t dynamic_shared, bool cooperative, std::vector<void*>& params) {
  contract::LaunchPlan plan;
  plan.grid = grid;
  plan.block = {block, 1, 1};
  plan.block_given = true;
  plan.dynamic_shared_bytes = dynamic_shared;
  plan.cooperative = cooperative;
  auto verdict = validation::check_launch(kernel.info(), offline_resources, plan, profile);
  auto& fn = kernel.function();
  auto u = [](uint64_t v) { return static_cast<unsigned>(v); };
  CUresult why = cooperative
                     ? raw().cuLaunchCooperativeKernel(fn.handle(), u(grid[0]), u(grid[1]), u(grid[2]), u(block), 1, 1,
                                                       u(dynamic_shared), nullptr, params.data())
                     : raw().cuLaunchKernel(fn.handle(), u(grid[0]), u(grid[1]), u(grid[2]), u(block), 1, 1,
                                            u(dynamic_shared), nullptr, params.data(), nullptr);
  if (why == CUDA_SUCCESS) why = raw().cuCtxSynchronize();
  const bool driver = why == CUDA_SUCCESS;
  ++s.total;
  if (verdict.launchable == driver) {
    ++s.agree;
    return;
  }
  const char* name = "?";
  raw().cuGetErrorName(why, &name);
  std::string ours;
  for (const auto& d : verdict.diagnostics)
    if (d.severity == diag::Severity::error) ours += fmt::format(" [{}] {}", diag::info(d.code).name, d.message);
  s.disagreements.push_back(fmt::format("{} grid={} block={} shared={} coop={}: offline={} driver={} ({}){}",
                                        kernel.info().name, grid[0], block, dynamic_shared, cooperative,
                                        verdict.launchable ? "launch" : "block", driver ? "ran" : "rejected", name,
                                        ours));
}

/// The live device's attributes as a device profile: serialised and parsed back, so it is a
/// profile `ptxgate check --device-profile` accepts (every field within its range).
validation::DeviceCaps live_profile() {
  auto parsed = validation::caps_from_json(validation::to_json(gpu_runtime().caps()), "live-device.json");
  if (!parsed) FAIL(diag::render_text(parsed.error()));
  return *parsed;
}

/// ptxas's resources for `kernel` on the profile's architecture (the offline path's source).
contract::KernelResources offline_resources(runtime::Kernel& kernel, const validation::DeviceCaps& profile) {
  auto assembly = toolchain::assemble(kernel.entry().ptx, profile.arch(), toolchain::discover());
  if (!assembly) FAIL(diag::render_text(assembly.error()));
  auto it = assembly->resources.find(kernel.info().name);
  REQUIRE(it != assembly->resources.end());
  return it->second;
}

/// Every sweep for one kernel: blocks 32..1024 step 32 and each +1, at grid 1; dynamic shared
/// memory at and one past what fits beside the static arrays; cooperative grids at and one past
/// the offline limit for each launchable block.
void sweep(Sweep& s, runtime::Kernel& kernel, const validation::DeviceCaps& profile, std::vector<void*>& params) {
  auto res = offline_resources(kernel, profile);
  auto& fn = kernel.function();
  CHECK(res.registers_per_thread == fn.resources().registers_per_thread);
  CHECK(res.static_shared_bytes == fn.resources().static_shared_bytes);
  // The backend's opt-in, set on the raw function too, so the driver may use all of it.
  const uint64_t max_dynamic = profile.shared_per_block_optin - res.static_shared_bytes;
  REQUIRE(raw().cuFuncSetAttribute(fn.handle(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(max_dynamic)) == CUDA_SUCCESS);
  for (uint64_t step = 32; step <= 1024; step += 32) {
    for (uint64_t block : {step, step + 1}) {
      compare(s, kernel, res, profile, {1, 1, 1}, block, 0, false, params);
      for (uint64_t dynamic : {max_dynamic, max_dynamic + 1}) compare(s, kernel, res, profile, {1, 1, 1}, block, dynamic, false, params);
      for (uint64_t dynamic : {uint64_t{0}, max_dynamic / 2}) {
        contract::LaunchPlan probe;
        probe.block = {block, 1, 1};
        probe.block_given = true;
        probe.dynamic_shared_bytes = dynamic;
        probe.cooperative = true;
        auto v = validation::check_launch(kernel.info(), res, probe, profile);
        if (!v.launchable || v.max_cooperative_grid == 0) {
          compare(s, kernel, res, profile, {1, 1, 1}, block, dynamic, true, params);
          continue;
        }
        for (uint64_t grid : {v.max_cooperative_grid, v.max_cooperative_grid + 1})
          compare(s, kernel, res, profile, {grid, 1, 1}, block, dynamic, true, params);
      }
    }
  }
}

}  // namespace

TEST_CASE("offline agreement: check against a live-device profile equals the raw driver where registers, shared "
          "memory and cooperative residency bind") {
  const auto profile = live_profile();
  MESSAGE("offline profile from the live device: " << profile.name << " (" << profile.arch() << ", "
                                                    << profile.sm_count << " SMs)");
  auto heavy = gpu_runtime().compile(heavy_source(), "heavy", "heavy.pg");
  if (!heavy) FAIL(diag::render_text(heavy.error()));
  auto staged = gpu_runtime().compile(kShared, "staged", "staged.pg");
  if (!staged) FAIL(diag::render_text(staged.error()));
  REQUIRE_FALSE((*heavy)->info().has_required_block());
  REQUIRE_FALSE((*staged)->info().has_required_block());
  MESSAGE("heavy uses " << (*heavy)->resources().registers_per_thread << " registers/thread");
  REQUIRE((*heavy)->resources().registers_per_thread > 64);
  REQUIRE((*staged)->resources().static_shared_bytes >= 16384);

  // A buffer large enough for every launch of the sweep (n = 0: the kernels touch nothing).
  auto y = gpu_runtime().allocate(1 << 20);
  PG_REQUIRE_OK(y);
  CUdeviceptr y_ptr = y->pointer();
  uint32_t n = 0;
  std::vector<void*> params{&y_ptr, &n};

  Sweep s;
  sweep(s, **heavy, profile, params);
  sweep(s, **staged, profile, params);
  for (const auto& d : s.disagreements) MESSAGE(d);
  std::printf("offline agreement: %d/%d\n", s.agree, s.total);
  CHECK(s.total > 0);
  CHECK(s.agree == s.total);
}
