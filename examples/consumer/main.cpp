// Example consumer of an installed ptxgate: check a launch offline, then run it when a GPU is present.
#include <cstdio>
#include <cstring>
#include <vector>

#include "saxpy_ptx.hpp"  // generated at build time by ptxgate_add_kernels

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace pg = ptxgate;

static const char* kSaxpy = R"(@workgroup(256)
kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = a * x[i] + y[i]; }
}
)";

int main() {
  // Build time: ptxgate_add_kernels compiled ../saxpy.pg for sm_80 and embedded the PTX.
  if (std::strlen(reinterpret_cast<const char*>(saxpy_ptx)) != saxpy_ptx_size ||
      !std::strstr(reinterpret_cast<const char*>(saxpy_ptx), ".entry saxpy") ||
      !std::strstr(reinterpret_cast<const char*>(saxpy_ptx), ".target sm_80")) {
    std::fputs("the embedded PTX is not saxpy's for sm_80\n", stderr);
    return 1;
  }
  std::printf("embedded PTX: %zu bytes\n", saxpy_ptx_size);
  // Offline: parse and verify, then validate a launch against a shipped device profile.
  pg::diag::SourceFile file("saxpy.pg", kSaxpy);
  auto module = pg::ir::load_module(file);
  if (!module) {
    std::fputs(pg::diag::render_text(module.error()).c_str(), stderr);
    return 1;
  }
  auto profile = pg::validation::load_profile("h100-sxm");
  if (!profile) {
    std::fputs(pg::diag::render_text(profile.error()).c_str(), stderr);
    return 1;
  }
  auto info = pg::codegen::describe(module->module).front();
  pg::contract::LaunchPlan plan;
  plan.grid = {4, 1, 1};
  plan.block = {512, 1, 1};  // differs from @workgroup(256): blocked
  pg::contract::KernelResources resources{.registers_per_thread = 16};
  auto verdict = pg::validation::check_launch(info, resources, plan, *profile);
  std::printf("%s\n", verdict.summary_line(info.name, plan).c_str());
  if (verdict.launchable) return 1;

  // Online: the same kernel through the runtime, when a driver and GPU are present.
  auto rt = pg::runtime::Runtime::create();
  if (!rt) {
    std::printf("no GPU here: %s", pg::diag::render_text(rt.error(), false).c_str());
    return 0;
  }
  auto k = (*rt)->compile(module->module, "saxpy");
  if (!k) {
    std::fputs(pg::diag::render_text(k.error()).c_str(), stderr);
    return 1;
  }
  const uint32_t n = 1000;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  auto dx = (*rt)->upload(std::span<const float>(x));
  auto dy = (*rt)->upload(std::span<const float>(y));
  if (!dx || !dy) return 1;
  if (auto ok = (*k)->launch(pg::runtime::LaunchConfig::linear((n + 255) / 256, 256), {*dy, *dx, 3.0f, n}); !ok) {
    std::fputs(pg::diag::render_text(ok.error()).c_str(), stderr);
    return 1;
  }
  auto out = (*rt)->download<float>(*dy);
  if (!out || (*out)[n - 1] != 5.0f) return 1;
  std::printf("saxpy on %s: y[%u] = %g\n", (*rt)->caps().name.c_str(), n - 1, (*out)[n - 1]);
  return 0;
}
