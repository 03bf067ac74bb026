// Our verdict vs the raw driver's outcome for plans around every limit; offline vs driver occupancy.
// Test-only code: the raw cuLaunchKernel / cuLaunchCooperativeKernel calls here establish ground truth.
#include <fmt/format.h>

#include "ptxgate/runtime/driver_api.hpp"
#include "gpu_support.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"
#include "ptxgate/toolchain/ptxas.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::Arg;
using runtime::LaunchConfig;

namespace {

/// A kernel with no @workgroup, so every block shape is the driver's decision.
constexpr const char* kTouch = R"(// y[i] += 1 for i < n (agreement sweeps; no @workgroup)
kernel touch(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] + 1.0; }
}
)";

const runtime::DriverApi& api() { return **runtime::driver(); }

struct Agreement {
  int agree = 0, total = 0;
  std::vector<std::string> disagreements;
};

/// Launches `config` on the raw driver with `kernel`'s function and the given parameter
/// slots (the hidden barrier word included by the caller); true when the driver ran it.
bool driver_accepts(runtime::Kernel& kernel, const LaunchConfig& c, std::vector<void*>& params, CUresult& why) {
  auto& fn = kernel.function();
  auto u = [](uint64_t v) { return static_cast<unsigned>(std::min<uint64_t>(v, 0xffffffffu)); };
  // Values that do not fit the driver's unsigned parameters are outside every limit: the
  // driver cannot even be asked; count them as rejected.
  for (auto v : {c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.dynamic_shared_bytes})
    if (v > 0xffffffffu) {
      why = CUDA_ERROR_INVALID_VALUE;
      return false;
    }
  if (c.cooperative)
    why = api().cuLaunchCooperativeKernel(fn.handle(), u(c.grid[0]), u(c.grid[1]), u(c.grid[2]), u(c.block[0]),
                                          u(c.block[1]), u(c.block[2]), u(c.dynamic_shared_bytes), nullptr,
                                          params.data());
  else
    why = api().cuLaunchKernel(fn.handle(), u(c.grid[0]), u(c.grid[1]), u(c.grid[2]), u(c.block[0]), u(c.block[1]),
                               u(c.block[2]), u(c.dynamic_shared_bytes), nullptr, params.data(), nullptr);
  if (why != CUDA_SUCCESS) return false;
  why = api().cuCtxSynchronize();
  return why == CUDA_SUCCESS;
}

void compare(Agreement& a, runtime::Kernel& kernel, const LaunchConfig& c, std::span<const Arg> args,
             std::vector<void*>& params) {
  auto verdict = kernel.check(c, args);
  CUresult why = CUDA_SUCCESS;
  bool driver = driver_accepts(kernel, c, params, why);
  ++a.total;
  if (verdict.launchable == driver) {
    ++a.agree;
    return;
  }
  const char* name = "?";
  api().cuGetErrorName(why, &name);
  std::string ours;
  for (const auto& d : verdict.diagnostics)
    if (d.severity == diag::Severity::error) ours += fmt::format(" [{}] {}", diag::info(d.code).name, d.message);
  a.disagreements.push_back(fmt::format("{} grid=({},{},{}) block=({},{},{}) shared={} coop={}: ours={} driver={} ({}){}",
                                        kernel.info().name, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
                                        c.block[2], c.dynamic_shared_bytes, c.cooperative,
                                        verdict.launchable ? "launch" : "block", driver ? "ran" : "rejected", name, ours));
}

}  // namespace

TEST_CASE("agreement: our verdict equals the driver's outcome around every limit") {
  const auto& caps = gpu_runtime().caps();
  auto touch = gpu_runtime().compile(kTouch, "touch", "touch.pg");
  if (!touch) FAIL(diag::render_text(touch.error()));
  auto& k = **touch;
  std::vector<float> host(64, 1.0f);
  auto y = upload(host);
  uint32_t n = 0;  // the kernel touches nothing: huge grids finish at once
  CUdeviceptr yp = y.pointer();
  std::vector<void*> params{&yp, &n};
  std::vector<Arg> args{Arg(y), Arg(n)};
  Agreement a;

  for (uint64_t b = 1; b <= caps.max_threads_per_block + 1; ++b) compare(a, k, LaunchConfig::linear(3, b), args, params);
  const uint64_t bx = caps.max_block_dim[0], by = caps.max_block_dim[1], bz = caps.max_block_dim[2];
  for (auto block : std::vector<std::array<uint64_t, 3>>{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {1, by, 1}, {1, by + 1, 1},
                                                          {1, 1, bz}, {1, 1, bz + 1}, {bx, 1, 1}, {bx + 1, 1, 1},
                                                          {32, 32, 1}, {32, 32, 2}, {16, 16, 4}, {16, 16, 5},
                                                          {8, 8, 16}, {4, 4, 64}, {2, 8, 64}})
    compare(a, k, LaunchConfig{{2, 1, 1}, block}, args, params);
  const uint64_t gx = caps.max_grid_dim[0], gy = caps.max_grid_dim[1], gz = caps.max_grid_dim[2];
  for (auto grid : std::vector<std::array<uint64_t, 3>>{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {gx, 1, 1}, {gx + 1, 1, 1},
                                                         {1, gy, 1}, {1, gy + 1, 1}, {1, 1, gz}, {1, 1, gz + 1},
                                                         {1u << 16, 1u << 15, 1}})
    compare(a, k, LaunchConfig{grid, {1, 1, 1}}, args, params);
  for (uint64_t shared : {uint64_t{0}, uint64_t{caps.shared_per_block} - 1, uint64_t{caps.shared_per_block},
                          uint64_t{caps.shared_per_block} + 1, uint64_t{caps.shared_per_block_optin} - 1,
                          uint64_t{caps.shared_per_block_optin}, uint64_t{caps.shared_per_block_optin} + 1,
                          uint64_t{caps.shared_per_sm}})
    for (uint64_t block : {32u, 1024u}) compare(a, k, LaunchConfig{{2, 1, 1}, {block, 1, 1}, shared}, args, params);

  // Cooperative grids at the resident capacity N and N + 1, across blocks and shared sizes.
  for (uint64_t block : {32u, 128u, 256u, 1024u})
    for (uint64_t shared : {uint64_t{0}, uint64_t{20000}, uint64_t{100000}}) {
      LaunchConfig c{{1, 1, 1}, {block, 1, 1}, shared, true};
      uint64_t max_grid = k.check(c, args).max_cooperative_grid;
      CHECK(max_grid > 0);
      for (uint64_t g : {max_grid, max_grid + 1}) {
        c.grid = {g, 1, 1};
        compare(a, k, c, args, params);
      }
    }

  // A grid_sync kernel: normalize at N and N + 1 (the hidden barrier word appended by hand).
  auto normalize = compile_example("normalize");
  std::vector<float> x = random_values<float>(1024, 0.5, 1.5, 5);
  std::vector<float> acc{0.0f};
  auto dx = upload(x), dacc = upload(acc);
  CUdeviceptr xp = dx.pointer(), accp = dacc.pointer();
  uint32_t nn = 1024;
  auto word = gpu_runtime().context().grid_barrier_word(nullptr);
  REQUIRE(word);
  CUdeviceptr wp = *word;
  std::vector<void*> nparams{&xp, &accp, &nn, &wp};
  std::vector<Arg> nargs{Arg(dx), Arg(dacc), Arg(nn)};
  uint64_t nmax = normalize->check(LaunchConfig{{1, 1, 1}, {256, 1, 1}, 0, true}, nargs).max_cooperative_grid;
  for (uint64_t g : {nmax, nmax + 1}) compare(a, *normalize, LaunchConfig{{g, 1, 1}, {256, 1, 1}, 0, true}, nargs, nparams);
  // Examples with @workgroup: the driver must reject any other block (reqntid).
  for (uint64_t b : {128u, 255u, 256u, 257u}) {
    LaunchConfig c{{1, 1, 1}, {b, 1, 1}, 0, true};
    compare(a, *normalize, c, nargs, nparams);
  }

  MESSAGE("agreement: " << a.agree << "/" << a.total);
  std::printf("agreement: %d/%d\n", a.agree, a.total);
  for (const auto& d : a.disagreements) MESSAGE("disagreement: " << d);
  CHECK(a.disagreements.empty());
  PG_REQUIRE_OK(gpu_runtime().synchronize());
}

TEST_CASE("occupancy: offline (profile + ptxas resources) equals the driver's for every example") {
  const auto& live = gpu_runtime().caps();
  validation::DeviceCaps caps = live;
  std::string source = "live caps";
  for (auto [needle, profile] : {std::pair{"H100", "h100-sxm"}, {"H200", "h200"}, {"A100", "a100-sxm"}, {"L4", "l4"}, {"T4", "t4"}})
    if (live.name.find(needle) != std::string::npos) {
      auto p = validation::load_profile(profile);
      if (p && p->sm_count == live.sm_count) {
        caps = *p;
        source = std::string("profile ") + profile;
      }
    }
  MESSAGE("occupancy model uses " << source);
  int agree = 0, total = 0;
  for (const char* name : {"saxpy", "block_sum", "normalize", "transpose", "histogram", "stencil", "math", "grid_stride"}) {
    auto k = compile_example(name);
    auto assembly = toolchain::assemble(k->entry().ptx, caps.arch(), toolchain::discover());
    if (!assembly) FAIL(diag::render_text(assembly.error()));
    auto it = assembly->resources.find(name);
    REQUIRE(it != assembly->resources.end());
    auto& fn = k->function();
    CHECK(it->second.registers_per_thread == fn.resources().registers_per_thread);
    CHECK(it->second.static_shared_bytes == fn.resources().static_shared_bytes);
    int max_dynamic = static_cast<int>(live.shared_per_block_optin - fn.resources().static_shared_bytes);
    REQUIRE(api().cuFuncSetAttribute(fn.handle(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic) ==
            CUDA_SUCCESS);
    for (uint32_t threads : {32u, 64u, 96u, 128u, 256u, 384u, 512u, 768u, 1024u}) {
      if (threads > fn.resources().max_threads_per_block) continue;
      for (uint64_t shared : {uint64_t{0}, uint64_t{1000}, uint64_t{16384}, uint64_t{49152}, uint64_t{100000},
                              uint64_t(max_dynamic)}) {
        int driver = -1;
        CUresult r = api().cuOccupancyMaxActiveBlocksPerMultiprocessor(&driver, fn.handle(), int(threads), shared);
        if (r != CUDA_SUCCESS) continue;
        auto offline = validation::compute_occupancy(caps, it->second, threads, shared);
        ++total;
        if (offline.active_blocks_per_sm == uint32_t(driver)) {
          ++agree;
        } else {
          MESSAGE(name << " threads=" << threads << " shared=" << shared << ": offline "
                       << offline.active_blocks_per_sm << " driver " << driver);
        }
      }
    }
  }
  std::printf("occupancy agreement: %d/%d\n", agree, total);
  CHECK(total > 0);
  CHECK(agree == total);
}
