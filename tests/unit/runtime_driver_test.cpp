// Backend without a GPU: driver-absent behaviour, the error boundary and poisoning, through a fake driver table.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/runtime/device.hpp"
#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/runtime/driver_error.hpp"
#include "runtime_fake_driver.hpp"
#include "ptxgate/validation/device_caps.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

bool has(const diag::Diagnostics& d, diag::Code c) {
  for (const auto& i : d)
    if (i.code == c) return true;
  return false;
}

}  // namespace

TEST_CASE("backend driver: a missing library is PG4001 naming the library") {
  auto api = load_driver("libptxgate-no-such-driver.so.1");
  REQUIRE_FALSE(api);
  REQUIRE(api.error().size() == 1);
  CHECK(api.error().items()[0].code == diag::Code::driver_unavailable);
  CHECK(api.error().items()[0].message.find("libptxgate-no-such-driver.so.1") != std::string::npos);
  CHECK_FALSE(api.error().items()[0].fix.empty());
}

TEST_CASE("backend driver: a library without cuGetProcAddress_v2 is PG4001") {
  auto api = load_driver("libm.so.6");
  REQUIRE_FALSE(api);
  CHECK(api.error().items()[0].code == diag::Code::driver_unavailable);
  CHECK(api.error().items()[0].message.find("cuGetProcAddress_v2") != std::string::npos);
}

TEST_CASE("backend driver: sticky errors are the context-poisoning ones") {
  CHECK(is_sticky_error(CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(is_sticky_error(CUDA_ERROR_ASSERT));
  CHECK(is_sticky_error(CUDA_ERROR_LAUNCH_FAILED));
  CHECK(is_sticky_error(CUDA_ERROR_ILLEGAL_INSTRUCTION));
  CHECK(is_sticky_error(CUDA_ERROR_MISALIGNED_ADDRESS));
  CHECK_FALSE(is_sticky_error(CUDA_ERROR_INVALID_VALUE));
  CHECK_FALSE(is_sticky_error(CUDA_ERROR_OUT_OF_MEMORY));
  CHECK_FALSE(is_sticky_error(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  CHECK_FALSE(is_sticky_error(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE));
}

TEST_CASE("backend driver: a failed call becomes PG4002 with call, error name, text and subject") {
  testing::reset_fake_state();
  DriverApi api = testing::make_fake_driver();
  ContextHealth health;
  auto r = health.check(api, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "buffer of 64 bytes");
  REQUIRE_FALSE(r);
  const auto& d = r.error().items().at(0);
  CHECK(d.code == diag::Code::driver_call_failed);
  CHECK(d.message.find("cuMemAlloc") != std::string::npos);
  CHECK(d.message.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
  CHECK(d.message.find("fake error text") != std::string::npos);
  CHECK(d.message.find("buffer of 64 bytes") != std::string::npos);
  CHECK_FALSE(health.poisoned());
  CHECK(health.healthy("cuMemAlloc", "")); 
  CHECK(health.check(api, CUDA_SUCCESS, "cuMemAlloc", ""));
}

TEST_CASE("backend driver: an unknown CUresult still gets a name") {
  DriverApi api = testing::make_fake_driver();
  // 777 is no CUresult of CUDA 13 but within the enumeration's range (a value past it, such as
  // 12345, would be undefined behaviour to form at all: clang's UBSan reports the load).
  CHECK(driver_error_name(api, static_cast<CUresult>(777)).find("777") != std::string::npos);
}

TEST_CASE("backend driver: live caps from attributes make a valid device profile") {
  testing::reset_fake_state();
  DriverApi api = testing::make_fake_driver();
  auto dev = query_device(api, 0);
  REQUIRE(dev);
  CHECK(dev->caps.name == "Fake H100");
  CHECK(dev->caps.arch() == "sm_90");
  CHECK(dev->caps.sm_count == 132);
  CHECK(dev->caps.shared_per_block_optin == 232448);
  CHECK(dev->caps.cooperative_launch);
  CHECK(dev->driver_version == 13000);
  auto round = validation::caps_from_json(validation::to_json(dev->caps), "live");
  REQUIRE(round);
  CHECK(validation::to_json(*round) == validation::to_json(dev->caps));
}

TEST_CASE("backend driver: a failing attribute query is reported, not zero-filled") {
  testing::reset_fake_state();
  fake_state().fail["cuDeviceGetAttribute"] = CUDA_ERROR_INVALID_VALUE;
  DriverApi api = testing::make_fake_driver();
  auto dev = query_device(api, 0);
  REQUIRE_FALSE(dev);
  CHECK(has(dev.error(), diag::Code::driver_call_failed));
  CHECK(dev.error().items()[0].message.find("cuDeviceGetAttribute") != std::string::npos);
  testing::reset_fake_state();
}

TEST_CASE("backend driver: a sticky error poisons the context; later calls fail fast with PG4003") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto ctx = Context::open(0, &api);
  REQUIRE(ctx);
  auto buffer = DeviceBuffer::allocate(*ctx, 256);
  REQUIRE(buffer);
  int allocations_before = fake_state().allocations;

  fake_state().fail["cuCtxSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto sync = (*ctx)->synchronize("kernel 'saxpy'");
  REQUIRE_FALSE(sync);
  CHECK(sync.error().items()[0].code == diag::Code::driver_call_failed);
  CHECK(sync.error().items()[0].message.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
  CHECK_FALSE(sync.error().items()[0].notes.empty());
  CHECK((*ctx)->poisoned());

  auto again = DeviceBuffer::allocate(*ctx, 256);
  REQUIRE_FALSE(again);
  CHECK(again.error().items()[0].code == diag::Code::context_poisoned);
  CHECK(again.error().items()[0].message.find("CUDA_ERROR_ILLEGAL_ADDRESS in cuCtxSynchronize") != std::string::npos);
  CHECK(fake_state().allocations == allocations_before);  // failed fast: the driver was not called
  CHECK_FALSE(buffer->upload(std::as_bytes(std::span("abc", 3))));
  CHECK_FALSE(Stream::create(*ctx));

  // Destructors in a poisoned context call the driver, ignore its errors, and never throw.
  fake_state().fail["cuMemFree"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  fake_state().fail["cuDevicePrimaryCtxRelease"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  int frees = fake_state().frees;
  buffer->reset();
  CHECK(fake_state().frees == frees + 1);
  ctx->reset();
  CHECK(fake_state().primary_releases == 1);
  testing::reset_fake_state();
}

TEST_CASE("backend driver: a non-sticky failure does not poison") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto ctx = Context::open(0, &api);
  REQUIRE(ctx);
  fake_state().fail["cuMemAlloc"] = CUDA_ERROR_OUT_OF_MEMORY;
  auto b = DeviceBuffer::allocate(*ctx, size_t{1} << 40, "huge buffer");
  REQUIRE_FALSE(b);
  CHECK(b.error().items()[0].code == diag::Code::driver_call_failed);
  CHECK(b.error().items()[0].message.find("huge buffer") != std::string::npos);
  CHECK_FALSE((*ctx)->poisoned());
  fake_state().fail.clear();
  CHECK(DeviceBuffer::allocate(*ctx, 16));
}

TEST_CASE("backend driver: the grid barrier word is allocated and zeroed once per stream") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto ctx = Context::open(0, &api);
  REQUIRE(ctx);
  auto a = (*ctx)->grid_barrier_word(nullptr);
  auto b = (*ctx)->grid_barrier_word(nullptr);
  auto c = (*ctx)->grid_barrier_word(reinterpret_cast<CUstream>(0x2000));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(*a == *b);
  CHECK(*a != *c);
  CHECK(fake_state().memsets == 2);
  CHECK(fake_state().allocations == 2);
}

TEST_CASE("backend: entry points are resolved at the version of cuda.h's prototype") {
  // CUDA 13 added cuCtxSynchronize_v2(CUcontext); the table's pointer is the void version.
  CHECK(ptxgate::runtime::entry_point_version("cuCtxSynchronize") == 2000);
  CHECK(ptxgate::runtime::entry_point_version("cuLaunchKernel") == CUDA_VERSION);
}

TEST_CASE("backend driver: a driver that reports no device is PG4004") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  api.cuDeviceGetCount = [](int* count) {
    *count = 0;
    return CUDA_SUCCESS;
  };
  install_driver_for_testing(&api);
  auto devices = list_live_devices();
  install_driver_for_testing(nullptr);
  REQUIRE_FALSE(devices);
  REQUIRE(devices.error().size() == 1);
  CHECK(devices.error().items()[0].code == diag::Code::no_device);
  CHECK_FALSE(devices.error().items()[0].fix.empty());
}
