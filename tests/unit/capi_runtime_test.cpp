// The C API's version-3 runtime called as C callers call it, over the fake driver and fake NCCL:
// every dtype, real numbers, the packed launch, events, copies, pools, profiling, graphs, tensor
// maps, device sets and collectives.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/runtime/nccl_api.hpp"
#include "ptxgate/capi/ptxgate.h"
#include "runtime_fake_driver.hpp"
#include "runtime_fake_nccl.hpp"
#include "runtime_fake_programs.hpp"
#include "capi_test_support.hpp"

using ptxgate::runtime::testing::fake_programs;
using ptxgate::runtime::testing::fake_state;
using Diags = ptxgate::testing::CapiDiagnostics;
using ptxgate::testing::buffer;
using ptxgate::testing::f32_bits;
using ptxgate::testing::integer;
using ptxgate::testing::linear;
using ptxgate::testing::pointer;
using ptxgate::testing::real;
using ptxgate::testing::scalar;

namespace {

const char* const kKernels = R"(
@workgroup(64)
kernel halves(inout h: f16[], in b: bf16[], in c: u8[], out d: i8[], in e: u16[], inout f: i16[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    h[i] = f16(f32(h[i]) * a + f32(b[i]));
    d[i] = i8(c[i]);
    f[i] = f[i] + i16(e[i]);
  }
}
kernel scale(inout y: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] * a; }
}
kernel wide(inout y: f64[], a: f64, k: i32, m: u64) {
  y[0] = a + f64(k) + f64(m);
}
)";

/// A C runtime over the fake driver with its graphs and pools and two devices.
struct Fake {
  ptxgate::runtime::DriverApi api = ptxgate::runtime::testing::make_fake_driver();
  ptxgate_runtime* rt = nullptr;
  explicit Fake(void (*adjust)(ptxgate_runtime_options&) = nullptr) {
    ptxgate::runtime::testing::reset_fake_state();
    ptxgate::runtime::testing::add_fake_programs(api);
    api.cuDeviceGetCount = [](int* n) {
      *n = 2;
      return CUDA_SUCCESS;
    };
    api.cuDeviceCanAccessPeer = [](int* can, CUdevice, CUdevice) {
      *can = 1;
      return CUDA_SUCCESS;
    };
    api.cuMemcpyPeerAsync = [](CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, size_t n, CUstream s) {
      return ptxgate::runtime::testing::fake_state().log({"cuMemcpyPeerAsync", s, nullptr, dst, src, n, {}});
    };
    ptxgate::runtime::install_driver_for_testing(&api);
    ptxgate_runtime_options o;
    ptxgate_runtime_options_init(&o);
    o.disk_cache = 0;
    if (adjust != nullptr) adjust(o);
    Diags d;
    REQUIRE_MESSAGE(ptxgate_runtime_create(&o, &rt, d.out()) == PTXGATE_OK, d.text());
  }
  Fake(const Fake&) = delete;
  Fake& operator=(const Fake&) = delete;
  ~Fake() {
    ptxgate_runtime_free(rt);
    ptxgate::runtime::install_driver_for_testing(nullptr);
  }
  ptxgate_kernel* kernel(const char* name) {
    ptxgate_kernel* k = nullptr;
    Diags d;
    REQUIRE_MESSAGE(ptxgate_runtime_compile(rt, kKernels, std::strlen(kKernels), "k.pg", name, &k, d.out()) == PTXGATE_OK,
                    d.text());
    return k;
  }
  ptxgate_buffer* array(size_t count, ptxgate_dtype dtype, ptxgate_stream* stream = nullptr) {
    ptxgate_buffer* b = nullptr;
    Diags d;
    REQUIRE_MESSAGE(ptxgate_buffer_allocate_array(rt, count, dtype, stream, &b, d.out()) == PTXGATE_OK, d.text());
    return b;
  }
};

ptxgate_copy_end device_end(ptxgate_buffer* b, uint64_t bytes, ptxgate_dtype dtype = PTXGATE_DTYPE_UNKNOWN,
                            uint64_t offset = 0) {
  ptxgate_copy_end e{};
  e.memory = PTXGATE_MEMORY_DEVICE;
  e.dtype = dtype;
  e.buffer = b;
  e.offset = offset;
  e.bytes = bytes;
  return e;
}

ptxgate_copy_end pinned_end(ptxgate_host_buffer* b, uint64_t bytes) {
  ptxgate_copy_end e{};
  e.memory = PTXGATE_MEMORY_PINNED;
  e.pinned = b;
  e.bytes = bytes;
  return e;
}

}  // namespace

TEST_CASE("capi v3: dtypes are named and sized; floats round to nearest even, out of range is a usage error") {
  CHECK(std::string(ptxgate_dtype_name(PTXGATE_DTYPE_BF16)) == "bf16");
  CHECK(std::string(ptxgate_dtype_name(PTXGATE_DTYPE_U8)) == "u8");
  CHECK(std::string(ptxgate_dtype_name(PTXGATE_DTYPE_UNKNOWN)) == "unknown");
  CHECK(ptxgate_dtype_name(14) == nullptr);
  CHECK(ptxgate_dtype_size(PTXGATE_DTYPE_I16) == 2);
  CHECK(ptxgate_dtype_size(PTXGATE_DTYPE_I8) == 1);
  CHECK(ptxgate_dtype_size(PTXGATE_DTYPE_F64) == 8);
  CHECK(ptxgate_dtype_size(99) == 0);
  Diags d;
  uint64_t bits = 0;
  REQUIRE(ptxgate_float_bits(1.00048828125, PTXGATE_DTYPE_F16, &bits, d.out()) == PTXGATE_OK);
  CHECK(bits == 0x3c00);  // the tie goes to the even neighbour, 1.0
  REQUIRE(ptxgate_float_bits(1.00390625, PTXGATE_DTYPE_BF16, &bits, d.out()) == PTXGATE_OK);
  CHECK(bits == 0x3f80);
  REQUIRE(ptxgate_float_bits(-2.5, PTXGATE_DTYPE_F32, &bits, d.out()) == PTXGATE_OK);
  CHECK(bits == f32_bits(-2.5f));
  CHECK(ptxgate_float_bits(70000.0, PTXGATE_DTYPE_F16, &bits, d.out()) == PTXGATE_USAGE);
  CHECK(d.text().find("beyond the range of f16") != std::string::npos);
  CHECK(ptxgate_float_bits(1.0, PTXGATE_DTYPE_I32, &bits, d.out()) == PTXGATE_USAGE);
}

TEST_CASE("capi v3: small-type arrays bind to their parameters; a bf16 array for an f16 parameter names both") {
  Fake f;
  ptxgate_kernel* k = f.kernel("halves");
  const ptxgate_launch_config c = linear(2);
  fake_state().param_sizes = {8, 8, 8, 8, 8, 8, 4, 4};
  ptxgate_arg args[] = {pointer(0x10000, PTXGATE_DTYPE_F16, 100, 0), pointer(0x20000, PTXGATE_DTYPE_BF16, 100, 0),
                        pointer(0x30000, PTXGATE_DTYPE_U8, 100, 0),  pointer(0x40000, PTXGATE_DTYPE_I8, 100, 0),
                        pointer(0x50000, PTXGATE_DTYPE_U16, 100, 0), pointer(0x60000, PTXGATE_DTYPE_I16, 100, 0),
                        real(0.1),                                   scalar(PTXGATE_DTYPE_I64, 100)};
  Diags d;
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &c, args, 8, nullptr, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().launches == 1);
  CHECK(fake_state().last_params[1] == 0x20000);
  CHECK(fake_state().last_params[6] == f32_bits(0.1f));  // the real number rounded to the f32 parameter
  CHECK(fake_state().last_params[7] == 100);

  ptxgate_arg swapped[8];
  std::copy(std::begin(args), std::end(args), swapped);
  swapped[0] = pointer(0x10000, PTXGATE_DTYPE_BF16, 100, 0);
  CHECK(ptxgate_kernel_launch(k, &c, swapped, 8, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.codes() == std::vector<std::string>{"PG3010"});
  CHECK(d.text().find("an array of bf16 elements for a buffer of f16") != std::string::npos);
  std::copy(std::begin(args), std::end(args), swapped);
  swapped[2] = pointer(0x30000, PTXGATE_DTYPE_I8, 100, 0);
  swapped[4] = pointer(0x50000, PTXGATE_DTYPE_I16, 100, 0);
  CHECK(ptxgate_kernel_launch(k, &c, swapped, 8, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.codes() == std::vector<std::string>{"PG3010", "PG3010"});
  std::copy(std::begin(args), std::end(args), swapped);
  swapped[6] = real(1e39);  // beyond f32
  CHECK(ptxgate_kernel_launch(k, &c, swapped, 8, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3007"));
  CHECK(d.text().find("within the range of f32") != std::string::npos);
  swapped[6] = scalar(PTXGATE_DTYPE_F16, 0x3c00);  // a half scalar is not an f32
  CHECK(ptxgate_kernel_launch(k, &c, swapped, 8, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3007"));
  CHECK(fake_state().launches == 1);
  ptxgate_kernel_free(k);
}

TEST_CASE("capi v3: scalars of every width bind as their parameter's type; small integers are range-checked") {
  Fake f;
  ptxgate_kernel* k = f.kernel("wide");
  ptxgate_buffer* y = f.array(1, PTXGATE_DTYPE_F64);
  const ptxgate_launch_config c = linear(1, 32);
  fake_state().param_sizes = {8, 8, 4, 8};
  Diags d;
  ptxgate_arg args[] = {buffer(y), real(0.1), scalar(PTXGATE_DTYPE_I8, static_cast<uint64_t>(-5)),
                        scalar(PTXGATE_DTYPE_U16, 65535)};
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &c, args, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
  double tenth = 0.1;
  uint64_t tenth_bits;
  std::memcpy(&tenth_bits, &tenth, 8);
  CHECK(fake_state().last_params[1] == tenth_bits);
  CHECK(fake_state().last_params[2] == 0xfffffffbu);  // -5 as an i32
  CHECK(fake_state().last_params[3] == 65535);
  // Integers (a Python int): any number parameter, when the value fits.
  ptxgate_arg ints[] = {buffer(y), integer(3), integer(-7), integer(1) };
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &c, ints, 4, nullptr, d.out()) == PTXGATE_OK, d.text());
  double three = 3.0;
  uint64_t three_bits;
  std::memcpy(&three_bits, &three, 8);
  CHECK(fake_state().last_params[1] == three_bits);
  CHECK(fake_state().last_params[2] == 0xfffffff9u);
  ints[2] = integer(int64_t{1} << 40);
  CHECK(ptxgate_kernel_launch(k, &c, ints, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.text().find("an integer (1099511627776)") != std::string::npos);
  ints[2] = integer(1);
  ints[3] = integer(-1);
  CHECK(ptxgate_kernel_launch(k, &c, ints, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3007"));
  args[3] = scalar(PTXGATE_DTYPE_I16, static_cast<uint64_t>(-1));  // a negative value for a u64
  CHECK(ptxgate_kernel_launch(k, &c, args, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3007"));
  args[3] = scalar(PTXGATE_DTYPE_U64, 7);
  args[2] = scalar(PTXGATE_DTYPE_U64, uint64_t{1} << 31);  // does not fit i32
  CHECK(ptxgate_kernel_launch(k, &c, args, 4, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3007"));
  ptxgate_buffer_free(y);
  ptxgate_kernel_free(k);
}

TEST_CASE("capi v3: the packed launch is the same launch, its failures waiting for the same thread") {
  Fake f;
  ptxgate_kernel* k = f.kernel("scale");
  ptxgate_buffer* y = f.array(1000, PTXGATE_DTYPE_F32);
  ptxgate_stream* s = nullptr;
  Diags d;
  REQUIRE(ptxgate_stream_create(f.rt, &s, d.out()) == PTXGATE_OK);
  fake_state().param_sizes = {8, 4, 4};
  double half = 0.5;
  uint64_t half_bits;
  std::memcpy(&half_bits, &half, 8);
  std::vector<uint64_t> words = {3, 4, 1, 1, 256, 1, 1, 0, reinterpret_cast<uintptr_t>(s),
                                 reinterpret_cast<uintptr_t>(y), PTXGATE_ARG_BUFFER | (PTXGATE_DTYPE_F32 << 4),
                                 half_bits, PTXGATE_ARG_REAL,
                                 1000, PTXGATE_ARG_SCALAR | (PTXGATE_DTYPE_I64 << 4)};
  REQUIRE(ptxgate_kernel_launch_packed(k, words.data()) == PTXGATE_OK);
  CHECK(ptxgate_take_last_diagnostics() == nullptr);
  CHECK(fake_state().launches == 1);
  CHECK(fake_state().last_grid[0] == 4);
  CHECK(fake_state().last_block[0] == 256);
  CHECK(fake_state().last_stream == reinterpret_cast<CUstream>(ptxgate_stream_handle(s)));
  CHECK(fake_state().last_params[0] == ptxgate_buffer_device_pointer(y));
  CHECK(fake_state().last_params[1] == f32_bits(0.5f));
  CHECK(fake_state().last_params[2] == 1000);
  // A pointer of 10 f32 elements on device 0, then a block past the device's limit.
  words[9] = 0x1234000;
  words[10] = PTXGATE_ARG_POINTER | (PTXGATE_DTYPE_F32 << 4) | (uint64_t{1} << 12) | (uint64_t{10} << 20);
  words[4] = 2048;
  CHECK(ptxgate_kernel_launch_packed(k, words.data()) == PTXGATE_ERROR);
  d.list = ptxgate_take_last_diagnostics();
  REQUIRE(d.list != nullptr);
  CHECK(d.has("PG3102"));
  CHECK(ptxgate_take_last_diagnostics() == nullptr);  // taken once
  words[4] = 256;
  words[10] = PTXGATE_ARG_POINTER | (PTXGATE_DTYPE_F32 << 4) | (uint64_t{2} << 12);  // device 1
  CHECK(ptxgate_kernel_launch_packed(k, words.data()) == PTXGATE_ERROR);
  d.list = ptxgate_take_last_diagnostics();
  CHECK(d.codes() == std::vector<std::string>{"PG4008"});
  words[0] = 3 | (uint64_t{8} << 32);  // an unknown flag
  CHECK(ptxgate_kernel_launch_packed(k, words.data()) == PTXGATE_USAGE);
  d.list = ptxgate_take_last_diagnostics();
  CHECK(d.codes() == std::vector<std::string>{"PG5002"});
  CHECK(ptxgate_kernel_launch_packed(nullptr, words.data()) == PTXGATE_USAGE);
  d.list = ptxgate_take_last_diagnostics();
  CHECK(d.has("PG5002"));
  CHECK(fake_state().launches == 1);
  ptxgate_stream_free(s);
  ptxgate_buffer_free(y);
  ptxgate_kernel_free(k);
}

TEST_CASE("capi v3: typed buffers, events and stream waits, pinned copies and fills, each checked first") {
  Fake f;
  Diags d;
  ptxgate_buffer* a = f.array(256, PTXGATE_DTYPE_BF16);
  CHECK(ptxgate_buffer_size(a) == 512);
  CHECK(ptxgate_buffer_dtype(a) == PTXGATE_DTYPE_BF16);
  CHECK(ptxgate_buffer_device(a) == 0);
  ptxgate_stream *s1 = nullptr, *s2 = nullptr;
  REQUIRE(ptxgate_stream_create(f.rt, &s1, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_stream_create(f.rt, &s2, d.out()) == PTXGATE_OK);
  ptxgate_event* e = nullptr;
  REQUIRE(ptxgate_event_create(f.rt, &e, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_event_record(e, s1, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_stream_wait_event(s2, e, d.out()) == PTXGATE_OK);
  const auto& calls = fake_state().calls;
  REQUIRE(calls.size() >= 2);
  CHECK(calls.back().name == "cuStreamWaitEvent");
  CHECK(calls.back().stream == reinterpret_cast<CUstream>(ptxgate_stream_handle(s2)));
  int32_t complete = -1;
  REQUIRE(ptxgate_event_query(e, &complete, d.out()) == PTXGATE_OK);
  CHECK(complete == 1);
  fake_state().events_pending = true;
  REQUIRE(ptxgate_event_query(e, &complete, d.out()) == PTXGATE_OK);
  CHECK(complete == 0);
  fake_state().events_pending = false;

  ptxgate_host_buffer* h = nullptr;
  REQUIRE(ptxgate_host_buffer_allocate(f.rt, 512, &h, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_host_buffer_size(h) == 512);
  CHECK(ptxgate_host_buffer_data(h) != nullptr);
  ptxgate_copy_end dst = device_end(a, 512, PTXGATE_DTYPE_BF16), src = pinned_end(h, 512);
  REQUIRE_MESSAGE(ptxgate_copy_async(s1, &dst, &src, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().count("cuMemcpyHtoDAsync") == 1);
  ptxgate_copy_end back = pinned_end(h, 512), from = device_end(a, 512);
  REQUIRE(ptxgate_copy_async(s2, &back, &from, d.out()) == PTXGATE_OK);
  // Tracking orders the read on s2 after the write on s1.
  CHECK(fake_state().count("cuStreamWaitEvent") >= 2);
  REQUIRE(ptxgate_host_buffer_wait(h, 0, d.out()) == PTXGATE_OK);

  ptxgate_copy_end too_far = device_end(a, 512, PTXGATE_DTYPE_UNKNOWN, 256);
  CHECK(ptxgate_copy_async(s1, &too_far, &src, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4006"));
  ptxgate_copy_end as_f32 = device_end(a, 512, PTXGATE_DTYPE_F32);
  CHECK(ptxgate_copy_async(s1, &as_f32, &src, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4009"));
  ptxgate_copy_end bad{};
  bad.memory = 7;
  CHECK(ptxgate_copy_async(s1, &bad, &src, d.out()) == PTXGATE_USAGE);
  CHECK(d.codes() == std::vector<std::string>{"PG5002"});
  ptxgate_copy_end fill = device_end(a, 512, PTXGATE_DTYPE_BF16);
  REQUIRE(ptxgate_fill_async(s1, &fill, 0x3f80, 2, d.out()) == PTXGATE_OK);  // bf16 1.0
  CHECK(fake_state().count("cuMemsetD16Async") == 1);
  CHECK(ptxgate_fill_async(s1, &fill, 0, 8, d.out()) == PTXGATE_ERROR);
  float ms = 0;
  ptxgate_event* e2 = nullptr;
  REQUIRE(ptxgate_event_create(f.rt, &e2, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_event_record(e2, s1, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_event_elapsed_ms(e, e2, &ms, d.out()) == PTXGATE_OK);
  ptxgate_event_free(e2);
  ptxgate_event_free(e);
  ptxgate_host_buffer_free(h);
  ptxgate_stream_free(s1);
  ptxgate_stream_free(s2);
  ptxgate_buffer_free(a);
}

TEST_CASE("capi v3: a legacy default stream is refused where the runtime requires explicit streams") {
  Fake f([](ptxgate_runtime_options& o) { o.require_explicit_stream = 1; });
  Diags d;
  ptxgate_buffer* a = f.array(16, PTXGATE_DTYPE_F32);
  ptxgate_copy_end fill = device_end(a, 64);
  CHECK(ptxgate_fill_async(nullptr, &fill, 0, 4, d.out()) == PTXGATE_ERROR);
  CHECK(d.codes() == std::vector<std::string>{"PG3002"});
  ptxgate_event* e = nullptr;
  REQUIRE(ptxgate_event_create(f.rt, &e, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_event_record(e, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3002"));
  ptxgate_event_free(e);
  ptxgate_buffer_free(a);
  auto info = nlohmann::json::parse(ptxgate_runtime_json(f.rt));
  CHECK(info["require_explicit_stream"] == true);
  CHECK(info["target"] == "sm_90");
}

TEST_CASE("capi v3: option values out of range are usage errors; checked mode is an option like the others") {
  ptxgate::runtime::testing::reset_fake_state();
  static ptxgate::runtime::DriverApi api = ptxgate::runtime::testing::make_fake_driver();
  ptxgate::runtime::install_driver_for_testing(&api);
  ptxgate_runtime_options o;
  ptxgate_runtime_options_init(&o);
  o.opt_level = 4;
  o.fp_mode = 3;
  ptxgate_runtime* rt = nullptr;
  Diags d;
  CHECK(ptxgate_runtime_create(&o, &rt, d.out()) == PTXGATE_USAGE);
  CHECK(rt == nullptr);
  CHECK(d.codes() == std::vector<std::string>{"PG5002", "PG5002"});
  CHECK(d.text().find("opt_level 4") != std::string::npos);
  ptxgate_runtime_options_init(&o);
  o.checked = 1;
  REQUIRE_MESSAGE(ptxgate_runtime_create(&o, &rt, d.out()) == PTXGATE_OK, d.text());
  CHECK(nlohmann::json::parse(ptxgate_runtime_json(rt))["checked"] == true);
  ptxgate_runtime_free(rt);
  ptxgate::runtime::install_driver_for_testing(nullptr);
}

TEST_CASE("capi v3: stream-ordered buffers come from the pool, whose usage and limit the C caller sees") {
  Fake f([](ptxgate_runtime_options& o) {
    o.stream_ordered = 1;
    o.pool_limit_bytes = 4096;
  });
  Diags d;
  ptxgate_stream* s = nullptr;
  REQUIRE(ptxgate_stream_create(f.rt, &s, d.out()) == PTXGATE_OK);
  ptxgate_buffer* a = f.array(512, PTXGATE_DTYPE_F32, s);
  CHECK(fake_state().count("cuMemAllocFromPoolAsync") == 1);
  ptxgate_pool_usage u{};
  REQUIRE(ptxgate_runtime_pool_usage(f.rt, &u, d.out()) == PTXGATE_OK);
  CHECK(u.live_bytes == 2048);
  CHECK(u.allocations == 1);
  CHECK(u.limit_bytes == 4096);
  ptxgate_buffer* b = nullptr;
  CHECK(ptxgate_buffer_allocate_array(f.rt, 1024, PTXGATE_DTYPE_F32, s, &b, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4021"));
  ptxgate_buffer_free(a);
  REQUIRE(ptxgate_runtime_pool_usage(f.rt, &u, d.out()) == PTXGATE_OK);
  CHECK(u.live_bytes == 0);
  CHECK(u.live_peak_bytes == 2048);
  REQUIRE(ptxgate_runtime_pool_trim(f.rt, 0, d.out()) == PTXGATE_OK);
  CHECK(fake_programs().trims.size() == 1);
  REQUIRE(ptxgate_runtime_pool_reset_peaks(f.rt, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_runtime_pool_usage(f.rt, &u, d.out()) == PTXGATE_OK);
  CHECK(u.live_peak_bytes == 0);
  ptxgate_stream_free(s);
}

TEST_CASE("capi v3: profiled launches are summarised per kernel; an unprofiled runtime says so") {
  {
    Fake f([](ptxgate_runtime_options& o) { o.profile_launches = 1; });
    ptxgate_kernel* k = f.kernel("scale");
    ptxgate_buffer* y = f.array(64, PTXGATE_DTYPE_F32);
    const ptxgate_launch_config c = linear(1, 64);
    ptxgate_arg args[] = {buffer(y), real(2.0), scalar(PTXGATE_DTYPE_U32, 64)};
    Diags d;
    for (int i = 0; i < 3; ++i) REQUIRE(ptxgate_kernel_launch(k, &c, args, 3, nullptr, d.out()) == PTXGATE_OK);
    ptxgate_text* t = nullptr;
    REQUIRE_MESSAGE(ptxgate_runtime_profile(f.rt, 1, &t, d.out()) == PTXGATE_OK, d.text());
    auto j = nlohmann::json::parse(ptxgate_text_data(t));
    CHECK(j["launches"].size() == 3);
    REQUIRE(j["summary"].size() == 1);
    CHECK(j["summary"][0]["kernel"] == "scale");
    CHECK(j["summary"][0]["count"] == 3);
    ptxgate_text_free(t);
    REQUIRE(ptxgate_runtime_profile(f.rt, 0, &t, d.out()) == PTXGATE_OK);
    CHECK(nlohmann::json::parse(ptxgate_text_data(t))["launches"].empty());  // cleared
    ptxgate_text_free(t);
    ptxgate_buffer_free(y);
    ptxgate_kernel_free(k);
  }
  Fake plain;
  ptxgate_text* t = nullptr;
  Diags d;
  CHECK(ptxgate_runtime_profile(plain.rt, 0, &t, d.out()) == PTXGATE_USAGE);
  CHECK(t == nullptr);
  CHECK(d.text().find("profile_launches") != std::string::npos);
}

TEST_CASE("capi v3: graphs are built from validated launches and copies, replayed, and updated before the driver") {
  Fake f;
  ptxgate_kernel* k = f.kernel("scale");
  ptxgate_buffer* y = f.array(1000, PTXGATE_DTYPE_F32);
  ptxgate_buffer* z = f.array(1000, PTXGATE_DTYPE_F32);
  Diags d;
  ptxgate_graph* g = nullptr;
  REQUIRE(ptxgate_graph_create(f.rt, &g, d.out()) == PTXGATE_OK);
  const ptxgate_launch_config c = linear(4, 256);
  ptxgate_arg args[] = {buffer(y), real(2.0), scalar(PTXGATE_DTYPE_I64, 1000)};
  uint32_t n0 = 99, n1 = 99, n2 = 99;
  REQUIRE_MESSAGE(ptxgate_graph_add_launch(g, k, &c, args, 3, &n0, d.out()) == PTXGATE_OK, d.text());
  ptxgate_copy_end dst = device_end(z, 4000), src = device_end(y, 4000);
  REQUIRE(ptxgate_graph_add_copy(g, &dst, &src, &n1, d.out()) == PTXGATE_OK);
  ptxgate_copy_end fill = device_end(y, 4000);
  REQUIRE(ptxgate_graph_add_fill(g, &fill, 0, 4, &n2, d.out()) == PTXGATE_OK);
  CHECK(n0 == 0);
  CHECK(n1 == 1);
  CHECK(n2 == 2);
  CHECK(ptxgate_graph_size(g) == 3);
  uint32_t deps[4];
  CHECK(ptxgate_graph_dependencies(g, 1, deps, 4) == 1);  // the copy reads what the launch wrote
  CHECK(deps[0] == 0);
  // The fill overwrites y: it waits for y's last writer (the launch) and the reader since (the copy).
  CHECK(ptxgate_graph_dependencies(g, 2, deps, 4) == 2);
  CHECK(deps[0] == 0);
  CHECK(deps[1] == 1);
  // A launch that Kernel::launch blocks adds nothing.
  const ptxgate_launch_config big = linear(4, 2048);
  CHECK(ptxgate_graph_add_launch(g, k, &big, args, 3, &n0, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3102"));
  CHECK(ptxgate_graph_size(g) == 3);
  ptxgate_host_buffer* h = nullptr;
  REQUIRE(ptxgate_host_buffer_allocate(f.rt, 16, &h, d.out()) == PTXGATE_OK);
  std::vector<float> pageable(4);
  ptxgate_copy_end host{};
  host.memory = PTXGATE_MEMORY_HOST;
  host.host = pageable.data();
  host.bytes = 16;
  ptxgate_copy_end head = device_end(y, 16);
  CHECK(ptxgate_graph_add_copy(g, &host, &head, &n0, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4031"));

  ptxgate_graph_exec* x = nullptr;
  REQUIRE(ptxgate_graph_instantiate(g, &x, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_graph_exec_size(x) == 3);
  ptxgate_stream* s = nullptr;
  REQUIRE(ptxgate_stream_create(f.rt, &s, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_graph_exec_launch(x, s, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_graph_exec_launch(x, s, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_graph_exec_replays(x) == 2);
  CHECK(fake_state().count("cuGraphLaunch") == 2);
  CHECK(ptxgate_graph_exec_launch(x, nullptr, d.out()) == PTXGATE_USAGE);
  ptxgate_stream* legacy = nullptr;
  REQUIRE(ptxgate_stream_wrap(f.rt, 0, &legacy, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_graph_exec_launch(x, legacy, d.out()) == PTXGATE_OK);
  CHECK(fake_state().calls.back().name == "cuGraphLaunch");
  CHECK(fake_state().calls.back().stream == nullptr);

  fake_state().param_sizes = {8, 4, 4};
  ptxgate_arg update[] = {buffer(y), real(3.0), scalar(PTXGATE_DTYPE_U32, 500)};
  const ptxgate_launch_config half = linear(2, 256);
  REQUIRE_MESSAGE(ptxgate_graph_exec_update(x, 0, &half, update, 3, d.out()) == PTXGATE_OK, d.text());
  REQUIRE(fake_programs().updates.size() == 1);
  CHECK(fake_programs().updates[0].second.grid[0] == 2);
  CHECK(fake_programs().updates[0].second.params[1] == f32_bits(3.0f));
  CHECK(ptxgate_graph_exec_update(x, 0, &big, update, 3, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3102"));
  CHECK(ptxgate_graph_exec_update(x, 1, &half, update, 3, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4032"));
  update[0] = pointer(0x9000, PTXGATE_DTYPE_F64, 10, 0);
  CHECK(ptxgate_graph_exec_update(x, 0, &half, update, 3, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3010"));
  CHECK(fake_programs().updates.size() == 1);

  ptxgate_buffer_free(z);  // a buffer the graph uses is gone: the replay is refused before the driver
  CHECK(ptxgate_graph_exec_launch(x, s, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4030"));
  ptxgate_stream_free(legacy);
  ptxgate_stream_free(s);
  ptxgate_graph_exec_free(x);
  ptxgate_graph_free(g);
  ptxgate_host_buffer_free(h);
  ptxgate_buffer_free(y);
  ptxgate_kernel_free(k);
}

TEST_CASE("capi v3: tensor maps are checked before the driver and bind to tensor_map parameters") {
  Fake f;
  Diags d;
  ptxgate_buffer* a = f.array(64 * 64, PTXGATE_DTYPE_BF16);
  ptxgate_tensor_map_desc desc{};
  desc.type = "bf16";
  desc.rank = 2;
  desc.dims[0] = desc.dims[1] = 64;
  desc.strides[0] = 128;
  desc.box[0] = desc.box[1] = 64;
  desc.swizzle = "128B";
  ptxgate_tensor_map* m = nullptr;
  REQUIRE_MESSAGE(ptxgate_tensor_map_encode(f.rt, &desc, a, 0, 0, 0, &m, d.out()) == PTXGATE_OK, d.text());
  CHECK(std::string(ptxgate_tensor_map_describe(m)).find("bf16") != std::string::npos);
  // A raw pointer of another library's tensor, with its extent known: past it is refused.
  ptxgate_tensor_map* raw = nullptr;
  CHECK(ptxgate_tensor_map_encode(f.rt, &desc, nullptr, 0x100000, 0, 4096, &raw, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3711"));
  CHECK(raw == nullptr);
  desc.box[0] = 512;  // past 256 elements
  desc.swizzle = "129B";
  CHECK(ptxgate_tensor_map_encode(f.rt, &desc, a, 0, 0, 0, &raw, d.out()) == PTXGATE_USAGE);
  CHECK(d.codes() == std::vector<std::string>{"PG5004"});
  desc.swizzle = "none";
  CHECK(ptxgate_tensor_map_encode(f.rt, &desc, a, 0, 0, 0, &raw, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3706"));

  const char* tma = R"(
@workgroup(128)
kernel k(out y: f32[], m: tensor_map, n: u32) {
  if (global_id.x < n) { y[global_id.x] = 1.0; }
}
)";
  ptxgate_kernel* k = nullptr;
  REQUIRE_MESSAGE(ptxgate_runtime_compile(f.rt, tma, std::strlen(tma), "tma.pg", "k", &k, d.out()) == PTXGATE_OK, d.text());
  ptxgate_buffer* y = f.array(128, PTXGATE_DTYPE_F32);
  ptxgate_arg args[] = {buffer(y), {}, scalar(PTXGATE_DTYPE_U32, 128)};
  args[1].kind = PTXGATE_ARG_TENSOR_MAP;
  args[1].tensor_map = m;
  const ptxgate_launch_config c = linear(1, 128);
  REQUIRE_MESSAGE(ptxgate_kernel_launch(k, &c, args, 3, nullptr, d.out()) == PTXGATE_OK, d.text());
  args[1] = scalar(PTXGATE_DTYPE_U64, 1);
  CHECK(ptxgate_kernel_launch(k, &c, args, 3, nullptr, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3712"));
  ptxgate_buffer_free(y);
  ptxgate_kernel_free(k);
  ptxgate_tensor_map_free(m);
  ptxgate_buffer_free(a);
}

TEST_CASE("capi v3: a device set opens a runtime per device with peer access; peer copies cross devices") {
  Fake f;
  Diags d;
  ptxgate_device_set* set = nullptr;
  const int both[] = {0, 1};
  REQUIRE_MESSAGE(ptxgate_device_set_open(both, 2, nullptr, 1, &set, d.out()) == PTXGATE_OK, d.text());
  REQUIRE(ptxgate_device_set_size(set) == 2);
  CHECK(ptxgate_device_set_peer_enabled(set, 0, 1) == 1);
  ptxgate_runtime* r0 = ptxgate_device_set_runtime(set, 0);
  ptxgate_runtime* r1 = ptxgate_device_set_runtime(set, 1);
  CHECK(ptxgate_device_set_runtime(set, 2) == nullptr);
  ptxgate_device_set_free(set);  // the runtimes keep the set alive
  CHECK(ptxgate_runtime_device(r0) == 0);
  CHECK(ptxgate_runtime_device(r1) == 1);
  ptxgate_buffer *a = nullptr, *b = nullptr;
  REQUIRE(ptxgate_buffer_allocate_array(r0, 64, PTXGATE_DTYPE_F32, nullptr, &a, d.out()) == PTXGATE_OK);
  REQUIRE(ptxgate_buffer_allocate_array(r1, 64, PTXGATE_DTYPE_F32, nullptr, &b, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_buffer_device(b) == 1);
  ptxgate_stream* s0 = nullptr;
  REQUIRE(ptxgate_stream_create(r0, &s0, d.out()) == PTXGATE_OK);
  ptxgate_copy_end dst = device_end(b, 256), src = device_end(a, 256);
  REQUIRE_MESSAGE(ptxgate_copy_peer_async(s0, &dst, &src, d.out()) == PTXGATE_OK, d.text());
  CHECK(fake_state().count("cuMemcpyPeerAsync") == 1);
  const int twice[] = {1, 1};
  CHECK(ptxgate_device_set_open(twice, 2, nullptr, 1, &set, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4071"));
  ptxgate_text* devices = nullptr;
  REQUIRE(ptxgate_devices_json(&devices, d.out()) == PTXGATE_OK);
  CHECK(nlohmann::json::parse(ptxgate_text_data(devices)).contains("devices"));
  ptxgate_text_free(devices);
  ptxgate_stream_free(s0);
  ptxgate_buffer_free(a);
  ptxgate_buffer_free(b);
  ptxgate_runtime_free(r0);
  ptxgate_runtime_free(r1);
}

TEST_CASE("capi v3: NCCL communicators and collectives, validated before NCCL, every element type") {
  Fake f;
  ptxgate::runtime::NcclApi nccl = ptxgate::runtime::testing::make_fake_nccl();
  ptxgate::runtime::testing::fake_nccl_state() = {};
  ptxgate::runtime::install_nccl_for_testing(&nccl);
  Diags d;
  char hex[257];
  REQUIRE(ptxgate_nccl_unique_id(hex, d.out()) == PTXGATE_OK);
  CHECK(std::strlen(hex) == 256);
  ptxgate_device_set* set = nullptr;
  REQUIRE(ptxgate_device_set_open(nullptr, 0, nullptr, 1, &set, d.out()) == PTXGATE_OK);
  ptxgate_runtime* rts[] = {ptxgate_device_set_runtime(set, 0), ptxgate_device_set_runtime(set, 1)};
  ptxgate_communicator* comms[2] = {};
  REQUIRE_MESSAGE(ptxgate_communicator_init_all(rts, 2, comms, d.out()) == PTXGATE_OK, d.text());
  CHECK(ptxgate_communicator_rank(comms[1]) == 1);
  CHECK(ptxgate_communicator_size(comms[0]) == 2);
  CHECK(ptxgate_communicator_device(comms[1]) == 1);
  ptxgate_buffer* g = nullptr;
  REQUIRE(ptxgate_buffer_allocate_array(rts[0], 100, PTXGATE_DTYPE_BF16, nullptr, &g, d.out()) == PTXGATE_OK);
  ptxgate_stream* s = nullptr;
  REQUIRE(ptxgate_stream_create(rts[0], &s, d.out()) == PTXGATE_OK);
  ptxgate_collective c{};
  c.kind = PTXGATE_ALL_REDUCE;
  c.op = PTXGATE_AVG;
  c.send = {g, 0, 100, PTXGATE_DTYPE_BF16, 0};
  c.recv = c.send;
  REQUIRE_MESSAGE(ptxgate_collective_run(comms[0], s, &c, d.out()) == PTXGATE_OK, d.text());
  CHECK(ptxgate::runtime::testing::fake_nccl_state().last_type == ncclBfloat16);
  CHECK(ptxgate::runtime::testing::fake_nccl_state().last_count == 100);
  CHECK(ptxgate::runtime::testing::fake_nccl_state().last_op == ncclAvg);
  c.recv.count = 101;  // past the buffer
  CHECK(ptxgate_collective_run(comms[0], s, &c, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4207"));
  c.recv = c.send;
  c.send.dtype = PTXGATE_DTYPE_F16;  // a view of a bf16 buffer as f16
  CHECK(ptxgate_collective_run(comms[0], s, &c, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4009"));
  c.send.dtype = PTXGATE_DTYPE_I16;  // NCCL has no 16-bit integers
  CHECK(ptxgate_collective_run(comms[0], s, &c, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4206"));
  c.send.dtype = PTXGATE_DTYPE_BF16;
  c.op = 9;
  CHECK(ptxgate_collective_run(comms[0], s, &c, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4210"));
  c.op = PTXGATE_SUM;
  c.root = 5;
  c.kind = PTXGATE_BROADCAST;
  CHECK(ptxgate_collective_run(comms[0], s, &c, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4211"));
  REQUIRE(ptxgate_communicator_synchronize(comms[0], s, d.out()) == PTXGATE_OK);
  ptxgate_group* group = nullptr;
  REQUIRE(ptxgate_group_create(&group, d.out()) == PTXGATE_OK);
  c.kind = PTXGATE_SEND;
  c.root = 1;
  REQUIRE_MESSAGE(ptxgate_group_add(group, comms[0], s, &c, d.out()) == PTXGATE_OK, d.text());
  CHECK(ptxgate_group_add(group, comms[0], nullptr, &c, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG3002"));
  REQUIRE(ptxgate_group_end(group, d.out()) == PTXGATE_OK);
  CHECK(ptxgate_group_end(group, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4212"));
  ptxgate_group_free(group);
  ptxgate_communicator* rank = nullptr;
  CHECK(ptxgate_communicator_init_rank(rts[1], 2, 1, "not hex", &rank, d.out()) == PTXGATE_ERROR);
  CHECK(d.has("PG4205"));
  ptxgate_stream_free(s);
  ptxgate_buffer_free(g);
  ptxgate_communicator_free(comms[0]);
  ptxgate_communicator_free(comms[1]);
  ptxgate_runtime_free(rts[0]);
  ptxgate_runtime_free(rts[1]);
  ptxgate_device_set_free(set);
  ptxgate::runtime::install_nccl_for_testing(nullptr);
}
