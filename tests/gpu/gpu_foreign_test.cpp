// Kernels of other compilers on a real device: nvcc's PTX (JIT-compiled by the driver) and the
// cubin ptxas makes of it for this device compute the same saxpy, the resources read from the
// cubin equal what the driver reports for the loaded function (registers, static shared memory
// including sm_90's reserved-prefix rule, local memory), and a launch past the cubin's own
// thread limit is blocked before the driver.
#include "gpu_support.hpp"

#include "ptxgate/toolchain/cubin_entries.hpp"
#include "ptxgate/toolchain/ptxas.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::Arg;
using runtime::LaunchConfig;

namespace {

std::string fixture(const std::string& name) {
  std::string text = read_text(ptx_fixture_path(name));
  if (text.empty()) FAIL("cannot read " << ptx_fixture_path(name).string() << " (set PTXGATE_PTX_DIR)");
  return text;
}

/// The cubin ptxas makes of `ptx` for this device.
std::string cubin_for_device(const std::string& ptx) {
  auto assembled = toolchain::assemble(ptx, gpu_runtime().caps().arch(), toolchain::discover());
  if (!assembled) FAIL(diag::render_text(assembled.error()));
  return assembled->cubin;
}

/// y = a*x + y through `k` (nvcc's saxpy: n, a, x, y), compared with the host's fmaf.
void run_saxpy(runtime::Kernel& k) {
  const uint32_t n = 100000;
  auto x = random_values<float>(n, -4.0, 4.0, 1);
  auto y = random_values<float>(n, -4.0, 4.0, 2);
  auto dx = upload(x), dy = upload(y);
  PG_REQUIRE_OK(k.launch(LaunchConfig::linear((n + 255) / 256, 256), {int32_t(n), 1.5f, dx, dy}));
  auto got = download<float>(dy);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != std::fma(1.5f, x[i], y[i]);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("foreign: nvcc's PTX and its cubin for this device compute saxpy exactly") {
  const std::string ptx = fixture("nvcc_saxpy.ptx");
  auto from_ptx = gpu_runtime().load_foreign(ptx, "_Z5saxpyifPKfPf", "nvcc_saxpy.ptx");
  if (!from_ptx) FAIL(diag::render_text(from_ptx.error()));
  run_saxpy(**from_ptx);

  const std::string cubin = cubin_for_device(ptx);
  auto from_cubin = gpu_runtime().load_foreign(cubin, "_Z5saxpyifPKfPf", "nvcc_saxpy.cubin", "i32, f32, f32[], f32[]");
  if (!from_cubin) FAIL(diag::render_text(from_cubin.error()));
  run_saxpy(**from_cubin);
  // The signature is enforced: an f64 buffer for f32[] never reaches the driver.
  auto dd = gpu_runtime().allocate_array<double>(10);
  if (!dd) FAIL(diag::render_text(dd.error()));
  auto df = upload(std::vector<float>(10, 1.0f));
  auto wrong = (*from_cubin)->launch(LaunchConfig::linear(1, 32), {int32_t(10), 1.0f, *dd, df});
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().items().front().code == diag::Code::buffer_element_type_mismatch);
}

TEST_CASE("foreign: a cubin's recorded resources are what the driver reports; its thread limit blocks a launch") {
  for (const char* name : {"nvcc_saxpy.ptx", "nvcc_block_sum.ptx"}) {
    CAPTURE(name);
    const std::string cubin = cubin_for_device(fixture(name));
    auto read = toolchain::read_cubin_entries({name, cubin});
    if (!read) FAIL(diag::render_text(read.error()));
    REQUIRE(read->entries.size() == 1);
    const auto& entry = read->entries.front();
    auto k = gpu_runtime().load_foreign(cubin, entry.info.name, name);
    if (!k) FAIL(diag::render_text(k.error()));
    const auto& driver = (*k)->resources();
    CHECK(entry.resources->registers_per_thread == driver.registers_per_thread);
    CHECK(entry.resources->static_shared_bytes == driver.static_shared_bytes);
    CHECK(entry.resources->local_bytes == driver.local_bytes);
    CHECK(entry.resources->max_threads_per_block >= driver.max_threads_per_block);
  }
  // nvcc's block_sum has .maxntid 256: 512 threads are blocked before the driver. (Its third
  // parameter is a 64-bit count, which the cubin records only as 8 bytes: the signature says so.)
  auto k = gpu_runtime().load_foreign(cubin_for_device(fixture("nvcc_block_sum.ptx")), "_Z9block_sumPKfPfm", "block_sum.cubin",
                                  "f32[], f32[], u64");
  if (!k) FAIL(diag::render_text(k.error()));
  auto in = upload(std::vector<float>(1024, 1.0f)), out = upload(std::vector<float>(1, 0.0f));
  auto blocked = (*k)->launch(LaunchConfig::linear(2, 512), {in, out, uint64_t(1024)});
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().items().front().code == diag::Code::threads_exceed_kernel_max);
  CHECK((*k)->counters().driver_calls == 0);
  PG_REQUIRE_OK((*k)->launch(LaunchConfig::linear(4, 256), {in, out, uint64_t(1024)}));
  // The kernel adds each block's first element into out[0] (atomically): one per block.
  CHECK(download<float>(out) == std::vector<float>{4.0f});
}
