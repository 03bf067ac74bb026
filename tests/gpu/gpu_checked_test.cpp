// Checked mode on a real device: accesses out of bounds (a write, a read, an atomic, a vector store, a
// dynamic shared array, a misaligned TMA coordinate) are stopped and reported with their site, thread
// and index; the memory around them is untouched, the context stays healthy and the next launch is
// correct; a correct kernel computes exactly what it computes unchecked.
#include <algorithm>
#include <numeric>

#include "gpu_support.hpp"

#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "ptxgate/runtime/tensor_map.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::Arg;
using runtime::LaunchConfig;

namespace {

std::unique_ptr<runtime::Runtime> checked_runtime(bool checked_launches = false) {
  runtime::RuntimeOptions options;
  options.checked = true;
  options.checked_launches = checked_launches;
  options.cache.use_disk = false;
  auto rt = runtime::Runtime::create(options);
  if (!rt) FAIL(diag::render_text(rt.error()));
  return std::move(*rt);
}

std::shared_ptr<runtime::Kernel> compile(runtime::Runtime& rt, const std::string& text, const std::string& kernel) {
  auto k = rt.compile(text, kernel, kernel + ".pg");
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

template <class T>
runtime::DeviceBuffer upload_to(runtime::Runtime& rt, const std::vector<T>& host) {
  auto b = rt.upload(std::span<const T>(host));
  if (!b) FAIL(diag::render_text(b.error()));
  return std::move(*b);
}

template <class T>
std::vector<T> download_from(runtime::Runtime& rt, const runtime::DeviceBuffer& buffer) {
  auto v = rt.download<T>(buffer);
  if (!v) FAIL(diag::render_text(v.error()));
  return std::move(*v);
}

/// The one PG3804 of a synchronisation that must report one.
diag::Diagnostic one_violation(std::expected<void, diag::Diagnostics> synced) {
  REQUIRE_FALSE(synced);
  const auto& items = synced.error().items();
  REQUIRE(items.size() == 1);
  MESSAGE(diag::render_text(synced.error()));
  CHECK(items.front().code == diag::Code::checked_violation);
  return items.front();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kScatter = R"(kernel scatter(out y: f32[], in idx: u32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[idx[i]] = f32(i) + 0.5;
  }
}
)";

const char* kGather = R"(kernel gather(out y: f32[], in x: f32[], in idx: i32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = x[idx[i]] + 1.0;
  }
}
)";

const char* kHistogram = R"(kernel histogram(inout h: u32[], in bins: u32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    atomic_add(h, bins[i], 1);
  }
}
)";

const char* kStore4 = R"(kernel put4(out y: f32[], in at: u32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    store4(y, at[i], f32x4(f32(i)));
  }
}
)";

const char* kDynamicShared = R"(@workgroup(128)
kernel spread(out y: f32[], in slot: u32[]) {
  shared s: f32[];
  let t = thread_id.x;
  s[slot[t]] = f32(t);
  barrier();
  y[t] = s[t];
}
)";

}  // namespace

TEST_CASE("checked: a write through a data-dependent index past the end is skipped and reported; the next launch is correct") {
  auto rt = checked_runtime();
  auto k = compile(*rt, kScatter, "scatter");
  REQUIRE(k->info().checked);
  const uint32_t n = 1000;
  // y is the first n floats of a larger buffer: the guard band after it must stay as it was.
  auto whole = upload_to(*rt, std::vector<float>(n + 64, -3.0f));
  std::vector<uint32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0u);
  idx[777] = n + 5;  // thread 777 writes 5 elements past y's end
  auto didx = upload_to(*rt, idx);
  runtime::DeviceSpan<float> y(whole, 0, n);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(4, 256), {Arg(y), didx, n}));
  const diag::Diagnostic d = one_violation(rt->synchronize());
  CHECK(d.location.file == "scatter.pg");
  CHECK(d.location.line == 4);
  CHECK(d.location.column == 5);
  CHECK(contains(d.message, "launch #1 of kernel 'scatter'"));
  CHECK(contains(d.message, "y[idx[i]] would write buffer 'y' out of bounds"));
  CHECK(contains(d.message, "thread (9, 0, 0) of block (3, 0, 0)"));  // 777 = 3 * 256 + 9
  CHECK(contains(d.message, "idx[i] = 1005"));
  CHECK(contains(d.message, "holds 4000 bytes (1000 elements)"));
  auto got = download_from<float>(*rt, whole);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != (i == 777 ? -3.0f : float(i) + 0.5f);
  for (uint32_t i = n; i < n + 64; ++i) wrong += got[i] != -3.0f;  // nothing past y was written
  CHECK(wrong == 0);
  // The context is healthy: the next launch (in bounds) runs and reports nothing.
  idx[777] = 777;
  auto fixed = upload_to(*rt, idx);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(4, 256), {Arg(y), fixed, n}));
  PG_REQUIRE_OK(rt->synchronize());
  got = download_from<float>(*rt, whole);
  wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != float(i) + 0.5f;
  CHECK(wrong == 0);
}

TEST_CASE("checked: a read at a negative index gives 0 and is reported with the index as computed") {
  auto rt = checked_runtime();
  auto k = compile(*rt, kGather, "gather");
  const uint32_t n = 512;
  auto x = random_values<float>(n, 1.0, 2.0, 5);
  std::vector<int32_t> idx(n);
  for (uint32_t i = 0; i < n; ++i) idx[i] = int32_t(n - 1 - i);
  idx[100] = -3;
  auto dx = upload_to(*rt, x), didx = upload_to(*rt, idx), dy = upload_to(*rt, std::vector<float>(n, 0.0f));
  auto stream = rt->create_stream();
  REQUIRE(stream);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(2, 256), {dy, dx, didx, n}, &*stream));
  const diag::Diagnostic d = one_violation(stream->synchronize());
  CHECK(contains(d.message, "x[idx[i]] would read buffer 'x' out of bounds"));
  CHECK(contains(d.message, "thread (100, 0, 0) of block (0, 0, 0)"));
  CHECK(contains(d.message, "idx[i] = -3"));
  CHECK(contains(d.message, "the read gave 0"));
  CHECK(contains(d.fix, "negative"));
  auto got = download_from<float>(*rt, dy);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != (i == 100 ? 1.0f : x[n - 1 - i] + 1.0f);
  CHECK(wrong == 0);
}

TEST_CASE("checked: an atomic on a bin past the histogram is skipped; the other bins count exactly") {
  auto rt = checked_runtime();
  auto k = compile(*rt, kHistogram, "histogram");
  const uint32_t n = 4096, bins = 16;
  std::vector<uint32_t> b(n);
  for (uint32_t i = 0; i < n; ++i) b[i] = i % bins;
  b[4000] = 16;  // one past the last bin
  b[4001] = 1u << 30;
  auto whole = upload_to(*rt, std::vector<uint32_t>(bins + 16, 0));
  auto db = upload_to(*rt, b);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(16, 256), {Arg(runtime::DeviceSpan<uint32_t>(whole, 0, bins)), db, n}));
  const diag::Diagnostic d = one_violation(rt->synchronize());
  CHECK(contains(d.message, "atomic_add(h, bins[i], 1) would update buffer 'h' out of bounds"));
  CHECK(contains(d.message, "2 threads of this launch had accesses stopped"));
  auto got = download_from<uint32_t>(*rt, whole);
  std::vector<uint32_t> want(bins + 16, 0);
  for (uint32_t i = 0; i < n; ++i)
    if (b[i] < bins) ++want[b[i]];
  CHECK(got == want);
}

TEST_CASE("checked: a vector store of the last partial vector is skipped whole") {
  auto rt = checked_runtime();
  auto k = compile(*rt, kStore4, "put4");
  const uint32_t n = 8;
  auto whole = upload_to(*rt, std::vector<float>(64, -1.0f));
  std::vector<uint32_t> at(n);
  std::iota(at.begin(), at.end(), 0u);
  at[7] = 9;  // y holds 36 floats: vector 9 is elements 36..39, past the end
  auto dat = upload_to(*rt, at);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 32), {Arg(runtime::DeviceSpan<float>(whole, 0, 36)), dat, n}));
  const diag::Diagnostic d = one_violation(rt->synchronize());
  CHECK(contains(d.message, "store4(y, at[i], f32x4(f32(i))) would write buffer 'y' out of bounds"));
  CHECK(contains(d.message, "at[i] = 9"));
  CHECK(contains(d.message, "holds 144 bytes (9 16-byte units)"));
  auto got = download_from<float>(*rt, whole);
  size_t wrong = 0;
  for (uint32_t i = 0; i < 64; ++i) wrong += got[i] != (i < 28 ? float(i / 4) : -1.0f);
  CHECK(wrong == 0);
}

TEST_CASE("checked: a dynamic shared array indexed past the launch's bytes is caught at the first thread") {
  auto rt = checked_runtime();
  auto k = compile(*rt, kDynamicShared, "spread");
  std::vector<uint32_t> slot(128);
  std::iota(slot.begin(), slot.end(), 0u);
  slot[64] = 200;  // 128 floats of dynamic shared memory: 200 is past them
  auto ds = upload_to(*rt, slot), dy = upload_to(*rt, std::vector<float>(128, -1.0f));
  LaunchConfig config{{1, 1, 1}, {128, 1, 1}, 128 * 4, false, true};
  PG_REQUIRE_OK(k->launch(config, {dy, ds}));
  const diag::Diagnostic d = one_violation(rt->synchronize());
  CHECK(contains(d.message, "s[slot[t]] would write shared array 's' out of bounds"));
  CHECK(contains(d.message, "thread (64, 0, 0)"));
  CHECK(contains(d.message, "slot[t] = 200"));
  CHECK(contains(d.message, "holds 512 bytes"));
  // The same launch with enough dynamic shared memory is clean.
  config.dynamic_shared_bytes = 256 * 4;
  PG_REQUIRE_OK(k->launch(config, {dy, ds}));
  PG_REQUIRE_OK(rt->synchronize());
}

TEST_CASE("checked: checked launches report at the launch; a graph replay reports at its stream's synchronisation") {
  {
    auto rt = checked_runtime(/*checked_launches=*/true);
    auto k = compile(*rt, kScatter, "scatter");
    auto dy = upload_to(*rt, std::vector<float>(16, 0.0f));
    auto didx = upload_to(*rt, std::vector<uint32_t>{0, 1, 99, 3});
    auto launched = k->launch(LaunchConfig::linear(1, 32), {dy, didx, 4u});
    const diag::Diagnostic d = one_violation(std::move(launched));
    CHECK(contains(d.message, "idx[i] = 99"));
    PG_REQUIRE_OK(rt->synchronize());  // read already: nothing more to report
  }
  auto rt = checked_runtime();
  auto k = compile(*rt, kScatter, "scatter");
  auto dy = upload_to(*rt, std::vector<float>(16, 0.0f));
  auto didx = upload_to(*rt, std::vector<uint32_t>{0, 1, 2, 30});
  auto graph = runtime::Graph::create(rt->shared_context());
  REQUIRE(graph);
  PG_REQUIRE_OK(graph->launch(*k, LaunchConfig::linear(1, 32), {dy, didx, 4u}));
  auto exec = graph->instantiate();
  REQUIRE(exec);
  auto stream = rt->create_stream();
  REQUIRE(stream);
  PG_REQUIRE_OK(exec->launch(*stream));
  PG_REQUIRE_OK(exec->launch(*stream));
  const diag::Diagnostic d = one_violation(stream->synchronize());
  CHECK(contains(d.message, "graph node #0"));
  CHECK(contains(d.message, "idx[i] = 30"));
  PG_REQUIRE_OK(stream->synchronize());
}

TEST_CASE("checked: correct kernels compute bit for bit what they compute unchecked, and report nothing") {
  auto checked = checked_runtime();
  runtime::RuntimeOptions plain_options;
  plain_options.cache.use_disk = false;
  auto made = runtime::Runtime::create(plain_options);
  REQUIRE(made);
  runtime::Runtime& plain = **made;
  // Runs `name` from examples/ in both runtimes with the same inputs; the outputs must be identical.
  auto same = [&](const char* name, LaunchConfig config, auto make_args, size_t output) {
    const std::string text = read_text(example_path(name));
    auto a = compile(*checked, text, name);
    auto b = compile(plain, text, name);
    REQUIRE(a->info().checked);
    CHECK_FALSE(b->info().checked);
    auto [args_a, buffers_a] = make_args(*checked);
    auto [args_b, buffers_b] = make_args(plain);
    PG_REQUIRE_OK(a->launch(config, args_a));
    PG_REQUIRE_OK(b->launch(config, args_b));
    PG_REQUIRE_OK(checked->synchronize());  // nothing was stopped
    PG_REQUIRE_OK(plain.synchronize());
    INFO(name);
    CHECK(download_from<std::byte>(*checked, buffers_a[output]) == download_from<std::byte>(plain, buffers_b[output]));
  };
  using Made = std::pair<std::vector<Arg>, std::vector<runtime::DeviceBuffer>>;
  const uint32_t n = 1 << 20;
  auto x = random_values<float>(n, -1.0, 1.0, 3), y = random_values<float>(n, -1.0, 1.0, 4);
  same("saxpy", LaunchConfig::linear(n / 256, 256), [&](runtime::Runtime& rt) {
    Made m;
    m.second.push_back(upload_to(rt, y));
    m.second.push_back(upload_to(rt, x));
    m.first = {m.second[0], m.second[1], 2.5f, n};
    return m;
  }, 0);
  // matmul: shared tiles and a multiply-add chain (the fmas must be the same ones); 200 x 120 x 72.
  const uint32_t rows = 200, cols = 120, inner = 72;
  auto ma = random_values<float>(size_t{rows} * inner, -1.0, 1.0, 5), mb = random_values<float>(size_t{inner} * cols, -1.0, 1.0, 6);
  same("matmul", LaunchConfig{{(cols + 15) / 16, (rows + 15) / 16, 1}, {16, 16, 1}, 0, false, true}, [&](runtime::Runtime& rt) {
    Made m;
    m.second.push_back(upload_to(rt, std::vector<float>(size_t{rows} * cols, 0.0f)));
    m.second.push_back(upload_to(rt, ma));
    m.second.push_back(upload_to(rt, mb));
    m.first = {m.second[0], m.second[1], m.second[2], rows, cols, inner};
    return m;
  }, 0);
  // stencil: f64, neighbours at c - 1, c + width, guarded edges; 300 x 170.
  const uint32_t width = 300, height = 170;
  auto src = random_values<double>(size_t{width} * height, 0.0, 1.0, 7);
  same("stencil", LaunchConfig{{(width + 15) / 16, (height + 15) / 16, 1}, {16, 16, 1}, 0, false, true}, [&](runtime::Runtime& rt) {
    Made m;
    m.second.push_back(upload_to(rt, std::vector<double>(size_t{width} * height, 0.0)));
    m.second.push_back(upload_to(rt, src));
    m.first = {m.second[0], m.second[1], 0.2, width, height};
    return m;
  }, 0);
}

namespace {

// The loop returns (textually) before its access: the report must still name the access's length.
const char* kReturnInLoop = R"(kernel early(out y: f32[], in idx: u32[], n: u32) {
  let i = global_id.x;
  for j in 0..4 {
    if (j == 2 || i >= n) {
      return;
    }
    y[idx[i * 2 + j]] = f32(j);
  }
}
)";

}  // namespace

TEST_CASE("checked: a violation before an early return in a loop is reported with its array's length") {
  auto rt = checked_runtime();
  auto k = compile(*rt, kReturnInLoop, "early");
  const uint32_t n = 64;
  std::vector<uint32_t> idx(2 * n);
  std::iota(idx.begin(), idx.end(), 0u);
  idx[2 * 10 + 1] = 500;  // thread 10, j = 1: past y's 128 elements
  auto didx = upload_to(*rt, idx), dy = upload_to(*rt, std::vector<float>(2 * n, -1.0f));
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 64), {dy, didx, n}));
  const diag::Diagnostic d = one_violation(rt->synchronize());
  CHECK(d.location.line == 7);
  CHECK(contains(d.message, "thread (10, 0, 0)"));
  CHECK(contains(d.message, "idx[i * 2 + j] = 500"));
  CHECK(contains(d.message, "holds 512 bytes (128 elements)"));
  auto got = download_from<float>(*rt, dy);
  size_t wrong = 0;
  for (uint32_t e = 0; e < 2 * n; ++e) wrong += got[e] != (e == 21 ? -1.0f : float(e % 2));
  CHECK(wrong == 0);
}

namespace {

// A 16 x 32 f32 box at (x0, 0), its destination aligned to 128 bytes at run time.
const char* kTileCopy = R"(@workgroup(128)
kernel tile_copy(out y: f32[], m: tensor_map, x0: i32) {
  shared bars: u64[1];
  shared tile: f32[544];
  let pad = ((128 - shared_address(tile, 0) % 128) % 128) / 4;
  if (thread_id.x == 0) {
    mbarrier_init(bars, 0, 1);
    fence_proxy_async();
  }
  barrier();
  if (thread_id.x == 0) {
    mbarrier_arrive_expect_tx(bars, 0, 2048);
    tma_load(tile, pad, m, bars, 0, x0, 0);
  }
  mbarrier_wait(bars, 0, 0);
  for e in 0..4 {
    y[thread_id.x * 4 + e] = tile[pad + thread_id.x * 4 + e];
  }
}
)";

}  // namespace

TEST_CASE("checked: a TMA tile at a misaligned coordinate is zero-filled and reported; an aligned one loads") {
  const auto& caps = gpu_runtime().context().caps();
  if (caps.cc_major != 9 || caps.cc_minor != 0) {
    MESSAGE("device is sm_" << caps.cc_major << caps.cc_minor << ": TMA needs sm_90a; not run");
    return;
  }
  auto rt = checked_runtime();
  auto k = compile(*rt, kTileCopy, "tile_copy");
  const uint32_t width = 64, height = 32;
  auto x = random_values<float>(size_t{width} * height, 1.0, 2.0, 17);
  auto dx = upload_to(*rt, x);
  const runtime::TensorMap map = f32_tile_map(dx, width, height, {16, 32});
  auto dy = upload_to(*rt, std::vector<float>(512, -1.0f));
  // x0 = 6: 24 bytes into the row, not a multiple of 16 (an illegal instruction on an H100 unchecked).
  PG_REQUIRE_OK(k->launch(LaunchConfig{}, {dy, map, int32_t(6)}));
  const diag::Diagnostic v = one_violation(rt->synchronize());
  CHECK(contains(v.message, "innermost coordinate x0 = 6, 24 bytes into the row"));
  CHECK(contains(v.message, "thread (0, 0, 0) of block (0, 0, 0)"));
  CHECK(v.location.line == 13);
  CHECK(download_from<float>(*rt, dy) == std::vector<float>(512, 0.0f));
  // The context is healthy: x0 = 8 (32 bytes) loads the box.
  PG_REQUIRE_OK(k->launch(LaunchConfig{}, {dy, map, int32_t(8)}));
  PG_REQUIRE_OK(rt->synchronize());
  auto got = download_from<float>(*rt, dy);
  std::vector<float> want(512);
  for (uint32_t r = 0; r < 32; ++r)
    for (uint32_t c = 0; c < 16; ++c) want[r * 16 + c] = 8 + c < width ? x[size_t{r} * width + 8 + c] : 0.0f;
  CHECK(mismatches(got, want, 0.0, 0.0, "tile at x0 = 8") == 0);
}
