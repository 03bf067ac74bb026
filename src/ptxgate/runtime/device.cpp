// Fills validation::DeviceCaps from the live driver, one attribute at a time.
#include "ptxgate/runtime/device.hpp"

#include <fmt/format.h>

#include "ptxgate/runtime/driver_error.hpp"

namespace ptxgate::runtime {

std::expected<LiveDevice, diag::Diagnostics> query_device(const DriverApi& api, int ordinal) {
  ContextHealth health;  // attribute queries need no context; errors are never sticky here
  CUdevice dev = 0;
  std::string subject = fmt::format("device {}", ordinal);
  if (auto ok = health.check(api, api.cuDeviceGet(&dev, ordinal), "cuDeviceGet", subject); !ok)
    return std::unexpected(ok.error());
  LiveDevice out;
  out.ordinal = ordinal;
  char name[256] = {};
  if (auto ok = health.check(api, api.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName", subject); !ok)
    return std::unexpected(ok.error());
  out.caps.name = name;
  size_t total = 0;
  if (auto ok = health.check(api, api.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem", subject); !ok)
    return std::unexpected(ok.error());
  out.total_memory_bytes = total;
  if (auto ok = health.check(api, api.cuDriverGetVersion(&out.driver_version), "cuDriverGetVersion", subject); !ok)
    return std::unexpected(ok.error());

  diag::Diagnostics errors;
  auto attr = [&](CUdevice_attribute a, const char* what) -> int {
    int v = 0;
    if (auto ok = health.check(api, api.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute",
                               fmt::format("{} of {}", what, subject));
        !ok)
      errors.append(ok.error());
    return v;
  };
  auto u = [&](CUdevice_attribute a, const char* what) { return static_cast<uint32_t>(attr(a, what)); };
  auto& c = out.caps;
  c.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major");
  c.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor");
  c.sm_count = u(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  c.warp_size = u(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  c.max_threads_per_block = u(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  c.max_block_dim = {u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "max block x"),
                     u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, "max block y"),
                     u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "max block z")};
  c.max_grid_dim = {u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "max grid x"),
                    u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "max grid y"),
                    u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "max grid z")};
  c.max_threads_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "max threads per SM");
  c.max_blocks_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "max blocks per SM");
  c.registers_per_block = u(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
  c.registers_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM");
  c.shared_per_block = u(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared per block");
  c.shared_per_block_optin = u(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "shared per block opt-in");
  c.shared_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared per SM");
  c.reserved_shared_per_block = u(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, "reserved shared per block");
  c.cooperative_launch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, "cooperative launch") != 0;
  // Not exposed as attributes; these are the values of every architecture ptxgate targets
  // (sm_75 and later), as in the toolkit's cuda_occupancy.h.
  c.max_registers_per_thread = 255;
  c.register_allocation_unit = 256;
  c.shared_allocation_unit = 128;
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return out;
}

std::expected<std::vector<LiveDevice>, diag::Diagnostics> list_live_devices() {
  auto api = driver();
  if (!api) return std::unexpected(api.error());
  int count = 0;
  ContextHealth health;
  if (auto ok = health.check(**api, (*api)->cuDeviceGetCount(&count), "cuDeviceGetCount", ""); !ok)
    return std::unexpected(ok.error());
  if (count == 0) {
    diag::Diagnostics d;
    d.add(diag::Code::no_device, "the CUDA driver reports no device", {},
          "check nvidia-smi and CUDA_VISIBLE_DEVICES");
    return std::unexpected(std::move(d));
  }
  std::vector<LiveDevice> out;
  for (int i = 0; i < count; ++i) {
    auto dev = query_device(**api, i);
    if (!dev) return std::unexpected(dev.error());
    out.push_back(std::move(*dev));
  }
  return out;
}

}  // namespace ptxgate::runtime
