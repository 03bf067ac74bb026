// Several fake devices: DeviceSet (one context per device, peer access where the topology allows it),
// PG4070 for launches and copies that use memory of a device they cannot reach, PG4071 for a device
// set asked badly, peer copies (PG4072), and dependency tracking carried across contexts.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "ptxgate/commands/reports.hpp"
#include "runtime_fake_order.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;
using testing::FakeCall;
using testing::HappensBefore;

namespace {

/// The machine the fake driver pretends to be: `count` devices, peer access where `peer` says.
struct FakeTopology {
  int count = 4;
  std::vector<std::pair<int, int>> peer;  ///< pairs (either order) that can access each other
  CUcontext current = nullptr;
  bool can(int a, int b) const {
    for (auto [x, y] : peer)
      if ((x == a && y == b) || (x == b && y == a)) return true;
    return false;
  }
};

FakeTopology& topology() {
  static FakeTopology t;
  return t;
}

CUcontext context_of_device(CUdevice d) { return reinterpret_cast<CUcontext>(0x1000 + 0x100 * static_cast<uintptr_t>(d)); }

DriverApi make_multi_device_driver() {
  DriverApi api = testing::make_fake_driver();
  api.cuDeviceGetCount = [](int* n) {
    *n = topology().count;
    return CUDA_SUCCESS;
  };
  api.cuDeviceGet = [](CUdevice* d, int ordinal) {
    if (ordinal < 0 || ordinal >= topology().count) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
  };
  api.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice d) {
    *c = context_of_device(d);
    return CUDA_SUCCESS;
  };
  api.cuCtxSetCurrent = [](CUcontext c) {
    topology().current = c;
    return CUDA_SUCCESS;
  };
  api.cuDeviceCanAccessPeer = [](int* can, CUdevice a, CUdevice b) {
    *can = topology().can(a, b) ? 1 : 0;
    return CUDA_SUCCESS;
  };
  api.cuCtxEnablePeerAccess = [](CUcontext peer, unsigned) {
    return fake_state().log({"cuCtxEnablePeerAccess", nullptr, nullptr, reinterpret_cast<uint64_t>(peer),
                             reinterpret_cast<uint64_t>(topology().current), 0, {}});
  };
  api.cuMemcpyPeerAsync = [](CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, size_t n, CUstream s) {
    return fake_state().log({"cuMemcpyPeerAsync", s, nullptr, dst, src, n, {}});
  };
  return api;
}

std::string example_text(const std::string& name) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/examples/" + name + ".pg");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Four fake devices; 0<->1 and 2<->3 are peers, no other pair is.
struct Fixture {
  DriverApi api;
  std::unique_ptr<DeviceSet> set;
  explicit Fixture(std::vector<int> devices = {}) {
    testing::reset_fake_state();
    topology() = FakeTopology{4, {{0, 1}, {2, 3}}, nullptr};
    api = make_multi_device_driver();
    DeviceSetOptions options;
    options.devices = std::move(devices);
    options.runtime.cache.use_disk = false;
    auto opened = DeviceSet::open(options, &api);
    if (!opened) FAIL(diag::render_text(opened.error()));
    set = std::move(*opened);
  }
  DeviceBuffer buffer(size_t device, size_t bytes) { return *set->runtime(device).allocate(bytes); }
  Stream stream(size_t device) { return *set->runtime(device).create_stream(); }
};

std::string text_of(const std::expected<void, diag::Diagnostics>& r) {
  REQUIRE_FALSE(r);
  return diag::render_text(r.error());
}
diag::Code first_code(const std::expected<void, diag::Diagnostics>& r) {
  REQUIRE_FALSE(r);
  return r.error().items().front().code;
}

}  // namespace

TEST_CASE("devices: a device set opens one context per device and enables peer access where the topology allows") {
  Fixture f;
  REQUIRE(f.set->size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(f.set->context(i).ordinal() == static_cast<int>(i));
    CHECK(f.set->context(i).handle() == context_of_device(static_cast<CUdevice>(i)));
  }
  CHECK(f.set->peers().can_access(0, 1));
  CHECK(f.set->peers().can_access(3, 2));
  CHECK_FALSE(f.set->peers().can_access(1, 2));
  CHECK(f.set->peer_enabled(0, 1));
  CHECK(f.set->peer_enabled(1, 0));
  CHECK(f.set->peer_enabled(2, 3));
  CHECK_FALSE(f.set->peer_enabled(0, 2));
  CHECK_FALSE(f.set->peer_enabled(3, 1));
  // Once per allowed ordered pair, with the accessing context current.
  CHECK(fake_state().count("cuCtxEnablePeerAccess") == 4);
  for (const FakeCall& c : fake_state().calls)
    if (c.name == "cuCtxEnablePeerAccess") {
      const bool pair01 = (c.src == 0x1000 && c.dst == 0x1100) || (c.src == 0x1100 && c.dst == 0x1000);
      const bool pair23 = (c.src == 0x1200 && c.dst == 0x1300) || (c.src == 0x1300 && c.dst == 0x1200);
      CHECK((pair01 || pair23));
    }
  auto contexts = f.set->contexts();
  CHECK(contexts.size() == 4);
  CHECK(contexts[2].get() == &f.set->context(2));
}

TEST_CASE("devices: a chosen subset keeps its order; peer access off enables nothing") {
  Fixture f({3, 2});
  REQUIRE(f.set->size() == 2);
  CHECK(f.set->context(0).ordinal() == 3);
  CHECK(f.set->peers().ordinals == std::vector<int>{3, 2});
  CHECK(f.set->peer_enabled(0, 1));

  testing::reset_fake_state();
  DeviceSetOptions off;
  off.enable_peer_access = false;
  off.runtime.cache.use_disk = false;
  auto set = DeviceSet::open(off, &f.api);
  REQUIRE(set);
  CHECK(fake_state().count("cuCtxEnablePeerAccess") == 0);
  CHECK((*set)->peers().can_access(0, 1));
  CHECK_FALSE((*set)->peer_enabled(0, 1));
}

TEST_CASE("devices: an ordinal the driver lacks, or one named twice, is PG4071 before any context is opened") {
  Fixture f;
  DeviceSetOptions options;
  options.devices = {0, 7};
  auto r = DeviceSet::open(options, &f.api);
  REQUIRE_FALSE(r);
  CHECK(r.error().items().front().code == diag::Code::device_set_setup);
  CHECK(diag::render_text(r.error()).find("device 7 asked for, but the driver reports 4 devices (ordinals 0 to 3)") !=
        std::string::npos);
  options.devices = {1, 2, 1};
  r = DeviceSet::open(options, &f.api);
  REQUIRE_FALSE(r);
  CHECK(r.error().items().front().code == diag::Code::device_set_setup);
  CHECK(diag::render_text(r.error()).find("device 1 named twice") != std::string::npos);
  topology().count = 0;
  r = DeviceSet::open({}, &f.api);
  REQUIRE_FALSE(r);
  CHECK(r.error().items().front().code == diag::Code::no_device);
}

TEST_CASE("devices: the peer matrix as text and in the devices JSON document") {
  Fixture f({0, 1, 2});
  const std::string text = format_peer_matrix(f.set->peers());
  CHECK(text.find("gpu0 ->" + std::string(12, ' ') + "-   yes    no\n") != std::string::npos);
  CHECK(text.find("gpu2 ->" + std::string(11, ' ') + "no    no     -\n") != std::string::npos);
  commands::DeviceListing listing;
  listing.driver_available = true;
  for (size_t i = 0; i < f.set->size(); ++i) listing.devices.push_back(f.set->context(i).live());
  listing.peers = f.set->peers();
  auto json = commands::devices_json(listing);
  REQUIRE(json["devices"].size() == 3);
  CHECK(json["peer_access"][0][1] == true);
  CHECK(json["peer_access"][1][2] == false);
  CHECK(json["peer_access"][2][2] == true);
  CHECK(commands::devices_text(listing).find("PEER ACCESS") != std::string::npos);
}

TEST_CASE("devices: a launch with a buffer of a device without peer access is PG4070 naming both, before the driver") {
  Fixture f;
  auto k = f.set->runtime(0).compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  auto y = f.buffer(0, 4000), far = f.buffer(2, 4000), near = f.buffer(1, 4000);
  fake_state().param_sizes = {8, 8, 4, 4};
  auto r = (*k)->launch(LaunchConfig::linear(4, 256), {y, far, 2.0f, 1000u});
  CHECK(first_code(r) == diag::Code::peer_not_accessible);
  CHECK(text_of(r).find("launch of kernel 'saxpy': the buffer of parameter 'x' lives on device 2 (Fake H100), but "
                        "the operation runs in the context of device 0 (Fake H100), which has no peer access to device 2") !=
        std::string::npos);
  CHECK(fake_state().launches == 0);
  const Arg args[] = {y, far, 2.0f, 1000u};
  auto verdict = (*k)->check(LaunchConfig::linear(4, 256), args);
  CHECK_FALSE(verdict.launchable);
  // A peer's buffer is fine.
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {y, near, 2.0f, 1000u}));
  CHECK(fake_state().launches == 1);
  CHECK(fake_state().last_params[1] == near.pointer());
}

TEST_CASE("devices: a launch reading a peer's buffer waits for that device's writer, and its later writer waits for it") {
  Fixture f;
  auto k0 = f.set->runtime(0).compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  auto k1 = f.set->runtime(1).compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  REQUIRE(k0);
  REQUIRE(k1);
  auto y0 = f.buffer(0, 4000), x1 = f.buffer(1, 4000), z1 = f.buffer(1, 4000);
  Stream s0 = f.stream(0), s1 = f.stream(1);
  fake_state().param_sizes = {8, 8, 4, 4};
  fake_state().calls.clear();
  REQUIRE((*k1)->launch(LaunchConfig::linear(4, 256), {x1, z1, 1.0f, 1000u}, &s1));  // device 1 writes x1
  REQUIRE((*k0)->launch(LaunchConfig::linear(4, 256), {y0, x1, 2.0f, 1000u}, &s0));  // device 0 reads x1
  REQUIRE((*k1)->launch(LaunchConfig::linear(4, 256), {x1, z1, 3.0f, 1000u}, &s1));  // device 1 writes x1 again
  const auto& calls = fake_state().calls;
  HappensBefore hb(calls);
  auto launch_on = [&](CUstream s, size_t nth) {
    return hb.find([&](const FakeCall& c) { return c.name == "cuLaunchKernel" && c.stream == s; }, nth);
  };
  const size_t write1 = launch_on(s1.handle(), 0), read0 = launch_on(s0.handle(), 0),
               write2 = launch_on(s1.handle(), 1);
  REQUIRE(write1 != HappensBefore::npos);
  REQUIRE(read0 != HappensBefore::npos);
  REQUIRE(write2 != HappensBefore::npos);
  CHECK(hb.ordered(write1, read0));
  CHECK(hb.ordered(read0, write2));
}

TEST_CASE("devices: copies to a device without peer access are PG4070; with peer access a device-to-device copy") {
  Fixture f;
  auto a = f.buffer(0, 4096), near = f.buffer(1, 4096), far = f.buffer(3, 4096);
  Stream s0 = f.stream(0);
  auto r = copy_async(s0, DeviceSpan<float>(far), DeviceSpan<float>(a));
  CHECK(first_code(r) == diag::Code::peer_not_accessible);
  CHECK(text_of(r).find("copy of 4096 bytes: the destination device buffer lives on device 3 (Fake H100), but the operation runs "
                        "in the context of device 0") != std::string::npos);
  CHECK(fake_state().count("cuMemcpyDtoDAsync") == 0);
  REQUIRE(copy_async(s0, DeviceSpan<float>(near), DeviceSpan<float>(a)));
  CHECK(fake_state().count("cuMemcpyDtoDAsync") == 1);
  // A pinned buffer of another context stays PG4008.
  auto pinned1 = *HostBuffer::allocate(f.set->contexts()[1], 4096);
  CHECK(first_code(copy_async(s0, DeviceSpan<float>(a), HostSpan<float>(pinned1))) == diag::Code::foreign_object);
}

TEST_CASE("devices: a peer copy between devices without peer access is one cuMemcpyPeerAsync, ordered on both sides") {
  Fixture f;
  auto src = f.buffer(0, 4096), dst = f.buffer(2, 4096), other = f.buffer(2, 4096);
  Stream s0 = f.stream(0), s2 = f.stream(2);
  auto k2 = f.set->runtime(2).compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  REQUIRE(k2);
  fake_state().param_sizes = {8, 8, 4, 4};
  fake_state().calls.clear();
  REQUIRE((*k2)->launch(LaunchConfig::linear(4, 256), {dst, other, 1.0f, 1000u}, &s2));  // device 2 writes dst
  REQUIRE(copy_peer_async(s0, DeviceSpan<float>(dst, 10, 100), DeviceSpan<float>(src, 0, 100)));
  REQUIRE((*k2)->launch(LaunchConfig::linear(4, 256), {other, dst, 1.0f, 1000u}, &s2));  // device 2 reads dst
  const auto& calls = fake_state().calls;
  HappensBefore hb(calls);
  const size_t copy = hb.find("cuMemcpyPeerAsync");
  REQUIRE(copy != HappensBefore::npos);
  CHECK(calls[copy].dst == dst.pointer() + 40);
  CHECK(calls[copy].src == src.pointer());
  CHECK(calls[copy].bytes == 400);
  CHECK(calls[copy].stream == s0.handle());
  CHECK(hb.ordered(hb.find("cuLaunchKernel"), copy));
  CHECK(hb.ordered(copy, hb.find("cuLaunchKernel", 1)));
}

TEST_CASE("devices: a peer copy with a host end, a stream of neither device, or a bad range is refused") {
  Fixture f;
  auto a = f.buffer(0, 4096), b = f.buffer(1, 4096);
  Stream s0 = f.stream(0), s3 = f.stream(3);
  auto pinned = *HostBuffer::allocate(f.set->contexts()[0], 4096);
  CopyEnd host = CopyEnd::of(HostSpan<float>(pinned));
  auto r = copy_peer_async(s0, CopyEnd::of(DeviceSpan<float>(b)), host);
  CHECK(first_code(r) == diag::Code::peer_copy_invalid);
  CHECK(text_of(r).find("peer copy with a source pinned host buffer") != std::string::npos);
  r = copy_peer_async(s3, DeviceSpan<float>(b), DeviceSpan<float>(a));
  CHECK(first_code(r) == diag::Code::peer_copy_invalid);
  CHECK(text_of(r).find("peer copy from device 0 to device 1 on a stream of device 3") != std::string::npos);
  r = copy_peer_async(s0, DeviceSpan<float>(b, 1000, 100), DeviceSpan<float>(a, 0, 100));
  CHECK(first_code(r) == diag::Code::copy_out_of_range);
  r = copy_peer_async(s0, DeviceSpan<float>(b, 0, 10), DeviceSpan<float>(a, 0, 20));
  CHECK(first_code(r) == diag::Code::copy_size_mismatch);
  CHECK(fake_state().count("cuMemcpyPeerAsync") == 0);
}
