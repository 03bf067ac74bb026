// A faulty GPU program for checked mode against compute-sanitizer memcheck (bench/checked_cost.sh):
// bench/checked/faulty_smoother.pg's matrix is built and its vector initialised on the device, then
// STEPS smoothing launches alternate between two vectors, one synchronisation at the end. Host
// set-up is the runtime, three kernels from the module cache and three allocations: the program's
// time is its GPU work. The first step's result is checked against a CPU reference (every row but
// the faulty last one), the final vector for finite values. Prints the phases' wall times and, in
// checked mode, the PG3804 reports (the first in full). Exits 0 when the checks pass, 1 otherwise,
// 3 without a GPU.
//
// Usage: ptxgate_checked_faulty [--checked] [SIDE [STEPS]]   (default 1024 4000: 2^20 cells)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptxgate/runtime/runtime.hpp"

namespace pg = ptxgate;
namespace be = ptxgate::runtime;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// bench/checked/faulty_smoother.pg: $PTXGATE_BENCH_KERNELS_DIR/faulty_smoother.pg, else the source tree's.
std::string kernel_path() {
  const char* dir = std::getenv("PTXGATE_BENCH_KERNELS_DIR");
  return std::string(dir != nullptr ? dir : PTXGATE_SOURCE_DIR "/bench/checked") + "/faulty_smoother.pg";
}

int fail(const pg::diag::Diagnostics& d) {
  std::fputs(pg::diag::render_text(d).c_str(), stderr);
  return 1;
}

template <class T>
std::expected<std::vector<T>, pg::diag::Diagnostics> download(const be::DeviceBuffer& b, size_t count) {
  std::vector<T> host(count);
  if (auto ok = b.download(std::as_writable_bytes(std::span(host))); !ok) return std::unexpected(ok.error());
  return host;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = Clock::now();
  bool checked = false;
  std::vector<uint32_t> numbers;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--checked") == 0)
      checked = true;
    else
      numbers.push_back(static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 10)));
  }
  const uint32_t side = numbers.size() > 0 && numbers[0] >= 2 ? numbers[0] : 1024;
  const uint32_t steps = numbers.size() > 1 && numbers[1] >= 1 ? numbers[1] : 4000;
  const uint32_t cells = side * side;

  be::RuntimeOptions options;
  options.checked = checked;
  auto rt = be::Runtime::create(options);
  if (!rt) {
    std::printf("checked_faulty: SKIPPED: no GPU: %s", pg::diag::render_text(rt.error(), false).c_str());
    return 3;
  }
  std::ifstream in(kernel_path(), std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "checked_faulty: cannot read %s\n", kernel_path().c_str());
    return 1;
  }
  auto build = (*rt)->compile(text.str(), "build", kernel_path());
  auto init = (*rt)->compile(text.str(), "init", kernel_path());
  auto smooth = (*rt)->compile(text.str(), "smooth", kernel_path());
  if (!build) return fail(build.error());
  if (!init) return fail(init.error());
  if (!smooth) return fail(smooth.error());
  auto cols = (*rt)->allocate_array<uint32_t>(size_t{5} * cells);
  auto x = (*rt)->allocate_array<float>(cells);
  auto y = (*rt)->allocate_array<float>(cells);
  if (!cols) return fail(cols.error());
  if (!x) return fail(x.error());
  if (!y) return fail(y.error());
  const auto config = be::LaunchConfig::linear((cells + 255) / 256, 256);
  if (auto ok = (*build)->launch(config, {*cols, cells, side}); !ok) return fail(ok.error());
  if (auto ok = (*init)->launch(config, {*x, cells}); !ok) return fail(ok.error());
  const double setup = seconds_since(t0);

  // The first step, checked against the CPU: row i is 0.2 * sum of x over its five columns.
  const auto t1 = Clock::now();
  if (auto ok = (*smooth)->launch(config, {*y, *x, *cols, cells}); !ok) return fail(ok.error());
  auto first = download<float>(*y, cells);
  auto x0 = download<float>(*x, cells);
  auto c = download<uint32_t>(*cols, size_t{5} * cells);
  if (!first || !x0 || !c) return fail(!first ? first.error() : !x0 ? x0.error() : c.error());
  size_t wrong = 0;
  for (uint32_t i = 0; i + 1 < cells; ++i) {  // the last row reads past x: its value is the hardware's
    float acc = 0.0f;
    for (uint32_t k = 0; k < 5; ++k) acc = acc + (*x0)[(*c)[size_t{k} * cells + i]];
    if (std::fabs(0.2f * acc - (*first)[i]) > 1e-6f) ++wrong;
  }
  const uint32_t past = (*c)[size_t{2} * cells + cells - 1];

  // The remaining steps, alternating x -> y and y -> x; one synchronisation at the end.
  for (uint32_t s = 1; s < steps; ++s) {
    const be::DeviceBuffer& src = s % 2 == 0 ? *x : *y;
    const be::DeviceBuffer& dst = s % 2 == 0 ? *y : *x;
    if (auto ok = (*smooth)->launch(config, {dst, src, *cols, cells}); !ok) return fail(ok.error());
  }
  auto synced = (*rt)->synchronize();
  const double loop = seconds_since(t1);
  size_t reports = 0;
  if (!synced) {
    for (const auto& d : synced.error().items()) reports += d.code == pg::diag::Code::checked_violation;
    if (reports != synced.error().items().size()) return fail(synced.error());
    pg::diag::Diagnostics one;
    one.items().push_back(synced.error().items().front());
    std::fputs(pg::diag::render_text(one).c_str(), stdout);
  }
  auto last = download<float>(steps % 2 == 1 ? *y : *x, cells);
  if (!last) return fail(last.error());
  size_t not_finite = 0;
  double sum = 0;
  for (float v : *last) {
    not_finite += !std::isfinite(v);
    sum += v;
  }
  const bool ok = wrong == 0 && not_finite == 0 && past == cells;
  std::printf("checked_faulty: %s, %u cells, %u steps; set-up %.3f s, steps %.3f s, total %.3f s; first step: %zu "
              "of %u rows wrong; final sum %.6g, %zu not finite; last row's right column %u (x has %u); PG3804 "
              "reports: %zu; %s\n",
              checked ? "checked" : "unchecked", cells, steps, setup, loop, seconds_since(t0), wrong, cells - 1, sum,
              not_finite, past, cells, reports, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
