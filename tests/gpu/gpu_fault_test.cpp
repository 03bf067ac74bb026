// Faults on purpose, in this case's own process (the supervisor runs every case in one): a kernel that writes
// through a wild pointer. The fault is reported and poisons the context; after Runtime::reset the old objects
// report PG4010, and either the driver gives a fresh context (a correct kernel then computes exactly, and a
// second fault, a failed assert, is recovered from too) or, as an H100 with driver 580 does, it keeps the
// fault for the whole process and the reset says so (PG4011: start a new process). The cases after this one
// run in their own processes with their own results.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace ptxgate::gpu_test {
namespace {

constexpr const char* kFaultKernels = R"(
kernel poke(out y: f32[]) {
  y[global_id.x] = 1.0;
}
kernel guarded(inout y: u32[], n: u32) {
  let i = global_id.x;
  assert(i < n);
  y[i] = i;
}
kernel scale_add(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = a * x[i] + y[i]; }
}
)";

std::shared_ptr<runtime::Kernel> fault_kernel(const char* name) {
  auto k = gpu_runtime().compile(kFaultKernels, name, "faults.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

diag::Code first_code(const diag::Diagnostics& d) {
  REQUIRE_FALSE(d.items().empty());
  return d.items().front().code;
}

/// Launches `faulty` (which faults) and synchronises: the fault must be reported and poison the context.
void fault_on_purpose(const char* what, const std::function<std::expected<void, diag::Diagnostics>()>& faulty) {
  CAPTURE(what);
  auto launched = faulty();
  if (launched) launched = gpu_runtime().synchronize();
  REQUIRE_FALSE(launched);
  const std::string text = diag::render_text(launched.error(), false);
  MESSAGE(what << ": " << text);
  CHECK(first_code(launched.error()) == diag::Code::kernel_fault);
  CHECK(gpu_runtime().context().poisoned());
  auto after = gpu_runtime().allocate(64);  // every later call of the old context fails fast
  REQUIRE_FALSE(after);
  CHECK(first_code(after.error()) == diag::Code::context_poisoned);
}

/// A correct kernel: y = 2 x + y on 1M + 3 elements, exact.
void correct_kernel() {
  const uint32_t n = (1u << 20) + 3;
  auto k = fault_kernel("scale_add");
  std::vector<float> x = random_values<float>(n, -1.0, 1.0, 5), y = random_values<float>(n, -1.0, 1.0, 6);
  auto dy = upload(y), dx = upload(x);
  PG_REQUIRE_OK(k->launch(runtime::LaunchConfig::linear((n + 255) / 256, 256), {dy, dx, 2.0f, n}));
  auto got = download<float>(dy);
  std::vector<float> want(n);
  for (uint32_t i = 0; i < n; ++i) want[i] = std::fma(2.0f, x[i], y[i]);
  CHECK(mismatches(got, want, 0.0, 0.0, "y after the reset") == 0);
}

}  // namespace

TEST_CASE("containment: kernels that fault on purpose are reported; Runtime::reset recovers or says to start a new process") {
  auto& rt = gpu_runtime();
  correct_kernel();  // the context works before the faults

  // 1. An illegal address: a write through a wild pointer.
  auto poke = fault_kernel("poke");
  auto kept = upload(std::vector<float>(256, 3.0f));
  fault_on_purpose("wild pointer", [&] {
    // A pointer that claims 1 MiB at address 64: the launch is in bounds of what the pointer claims (so the
    // memory-safety analysis lets it through), and the hardware faults. With its true size ptxgate would
    // refuse it before the driver (PG3801, the next case).
    return poke->launch(runtime::LaunchConfig::linear(4, 64), {runtime::Arg::device_pointer(64, 1 << 20)});
  });
  auto reset = rt.reset();
  // Whatever the driver allows, nothing of the old context is used again: each use is PG4010.
  auto old_launch = poke->launch(runtime::LaunchConfig::linear(1, 32), {kept});
  REQUIRE_FALSE(old_launch);
  CHECK(first_code(old_launch.error()) == diag::Code::context_reset);
  auto old_read = rt.download<float>(kept);
  REQUIRE_FALSE(old_read);
  CHECK(first_code(old_read.error()) == diag::Code::context_reset);
  if (!reset) {
    // Measured on an H100 with driver 580: after the reset the driver still answers the fault's error to
    // cuDevicePrimaryCtxRetain (and cuCtxCreate) for this process. The reset says so, and what to do.
    const std::string text = diag::render_text(reset.error(), false);
    MESSAGE("reset: " << text);
    CHECK(first_code(reset.error()) == diag::Code::context_unrecoverable);
    CHECK(text.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
    CHECK(text.find("start a new process") != std::string::npos);
    return;  // this process's GPU work ends here; the next case runs in a fresh process
  }
  // A driver that gives a new context: a correct kernel computes exactly, and a second fault (a trap: a
  // failed device assert) is contained and recovered from the same way.
  CHECK_FALSE(rt.context().poisoned());
  correct_kernel();
  auto guarded = fault_kernel("guarded");
  auto y = upload(std::vector<uint32_t>(256, 0));
  fault_on_purpose("failed assert", [&] { return guarded->launch(runtime::LaunchConfig::linear(1, 256), {y, 200u}); });
  PG_REQUIRE_OK(rt.reset());
  correct_kernel();
}

TEST_CASE("memory safety: a launch proven out of bounds is refused before the driver; the context stays healthy") {
  auto& rt = gpu_runtime();
  auto poke = fault_kernel("poke");
  auto y = upload(std::vector<float>(200, 3.0f));  // 200 elements, 256 threads write
  auto refused = poke->launch(runtime::LaunchConfig::linear(4, 64), {y});
  REQUIRE_FALSE(refused);
  const std::string text = diag::render_text(refused.error(), false);
  MESSAGE(text);
  CHECK(first_code(refused.error()) == diag::Code::access_out_of_bounds);
  CHECK(text.find("writes buffer 'y' out of bounds") != std::string::npos);
  CHECK(text.find("which holds 800 bytes") != std::string::npos);
  CHECK_FALSE(rt.context().poisoned());
  auto kept = download<float>(y);  // nothing was written
  CHECK(mismatches(kept, std::vector<float>(200, 3.0f), 0.0, 0.0, "y after the refused launch") == 0);
  correct_kernel();  // and the next launch computes exactly
}

}  // namespace ptxgate::gpu_test
