// `ptxgate occupancy` against the driver: for a few kernels, the offline table (a device profile of
// the live GPU, ptxas resources, cuda_occupancy.h) gives the block size
// cuOccupancyMaxPotentialBlockSize suggests, its minimum grid, and at every block size of the
// table the active blocks cuOccupancyMaxActiveBlocksPerMultiprocessor answers (#15.3).
// Test-only code: the two driver occupancy calls are resolved here as ground truth.
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "gpu_support.hpp"
#include "ptxgate/commands/occupancy.hpp"
#include "ptxgate/support/files.hpp"
#include "ptxgate/validation/device_caps.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;

namespace {

using PotentialBlockSize = CUresult (*)(int*, int*, CUfunction, CUoccupancyB2DSize, size_t, int);
using ActiveBlocks = CUresult (*)(int*, CUfunction, int, size_t);

/// The live device's attributes as a profile file, so the CLI's path (--device-profile PATH) is tested.
std::filesystem::path live_profile_file() {
  auto path = std::filesystem::temp_directory_path() / fmt::format("ptxgate-live-profile-{}.json", ::getpid());
  auto written = support::write_file_atomically(path.string(), validation::to_json(gpu_runtime().caps()).dump(2));
  if (!written) FAIL(diag::render_text(written.error()));
  return path;
}

/// A kernel without @workgroup (the table then spans 32..1024) with a static shared array.
constexpr const char* kFree = R"(kernel free_block(inout y: f32[], n: u32) {
  shared tile: f32[2048];
  let t = thread_id.x;
  let i = global_id.x;
  tile[t % 2048] = 1.0;
  barrier();
  if (i < n) { y[i] = y[i] + tile[(t + 1) % 2048]; }
}
)";

}  // namespace

TEST_CASE("occupancy: the offline table and suggestion equal the driver's occupancy answers") {
  void* libcuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  REQUIRE(libcuda != nullptr);
  auto potential = reinterpret_cast<PotentialBlockSize>(::dlsym(libcuda, "cuOccupancyMaxPotentialBlockSize"));
  auto active = reinterpret_cast<ActiveBlocks>(::dlsym(libcuda, "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  const bool resolved = potential != nullptr && active != nullptr;
  REQUIRE(resolved);
  const auto profile = live_profile_file();
  int agree = 0, total = 0;
  const auto free_path = std::filesystem::temp_directory_path() / fmt::format("free_block-{}.pg", ::getpid());
  REQUIRE(support::write_file_atomically(free_path.string(), kFree));
  for (const char* name : {"free_block", "saxpy", "block_sum", "matmul", "stencil", "histogram", "math"}) {
    const bool example = std::string_view(name) != "free_block";
    const auto path = example ? example_path(name) : free_path;
    auto compiled = gpu_runtime().compile(read_text(path), name, path.string());
    if (!compiled) FAIL(diag::render_text(compiled.error()));
    auto kernel = *compiled;
    for (uint64_t dynamic : {uint64_t{0}, uint64_t{12288}}) {
      commands::OccupancyRequest request;
      request.input = path.string();
      request.kernel = name;
      request.profile = profile.string();
      request.shared_bytes = std::to_string(dynamic);
      request.cache.use_disk = false;
      auto report = commands::occupancy_offline(request);
      if (!report) FAIL(diag::render_text(report.error().diagnostics));
      CHECK(report->compiled.resources.registers_per_thread == kernel->function().resources().registers_per_thread);
      // The backend's opt-in, so the driver may use all of the shared memory the model assumes.
      const auto& r = report->compiled.resources;
      const auto& caps = report->compiled.caps;
      const int max_dynamic = static_cast<int>(caps.shared_per_block_optin - r.static_shared_bytes);
      auto& fn = kernel->function();
      REQUIRE((**runtime::driver()).cuFuncSetAttribute(fn.handle(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                       max_dynamic) == CUDA_SUCCESS);
      // The kernel's block limit (its .reqntid/.maxntid) is passed as the search's limit: the driver's
      // search does not apply .reqntid itself (driver 580 on an H100 suggests 1024 threads for a
      // .reqntid 256 kernel, a block size that kernel cannot launch with); ptxgate's suggestion
      // stays within what the kernel accepts.
      int min_grid = 0, block = 0;
      REQUIRE(potential(&min_grid, &block, fn.handle(), nullptr, dynamic,
                        static_cast<int>(report->table.block_limit)) == CUDA_SUCCESS);
      ++total;
      if (static_cast<uint32_t>(block) == report->table.suggested_block &&
          static_cast<uint64_t>(min_grid) == report->table.min_grid_for_full_occupancy)
        ++agree;
      else
        MESSAGE(std::string(name) << " dynamic=" << dynamic << ": driver suggests block " << block << " grid " << min_grid
                     << ", offline " << report->table.suggested_block << " grid "
                     << report->table.min_grid_for_full_occupancy);
      for (const auto& row : report->table.rows) {
        int blocks = -1;
        REQUIRE(active(&blocks, fn.handle(), static_cast<int>(row.block_threads), dynamic) == CUDA_SUCCESS);
        ++total;
        const uint32_t offline = row.occupancy.computed ? row.occupancy.active_blocks_per_sm : 0;
        if (static_cast<uint32_t>(blocks) == offline) ++agree;
        else
          MESSAGE(std::string(name) << " dynamic=" << dynamic << " block=" << row.block_threads << ": driver " << blocks
                       << " blocks/SM, offline " << offline);
      }
    }
  }
  std::filesystem::remove(profile);
  std::filesystem::remove(free_path);
  std::printf("occupancy agreement: %d/%d\n", agree, total);
  CHECK(total > 0);
  CHECK(agree == total);
}
