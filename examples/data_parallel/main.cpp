// Data-parallel linear regression over every GPU of a DeviceSet: the .pg kernels of examples/linreg.pg,
// the gradient all-reduced with NCCL at each step. Prints the time of each step and checks that the
// weights equal, bit for bit, those of the same steps on one GPU.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/stream_ops.hpp"

namespace pg = ptxgate;
namespace be = ptxgate::runtime;

namespace {

/// Exit codes: 0 success, 1 failure, 77 skipped (no driver, no GPU, or fewer GPUs than asked for).
constexpr int kSkipped = 77;

struct Options {
  int gpus = 0;  ///< 0: every GPU
  uint32_t rows = 1u << 24;
  uint32_t features = 16;
  int steps = 10;
  double rate = 1.5;
  bool reference = true;
  int min_gpus = 1;
  std::string kernels;
};

struct Failure {
  pg::diag::Diagnostics d;
};

template <class T>
T need(std::expected<T, pg::diag::Diagnostics> r) {
  if (!r) throw Failure{std::move(r.error())};
  return std::move(*r);
}
void need(std::expected<void, pg::diag::Diagnostics> r) {
  if (!r) throw Failure{std::move(r.error())};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One GPU's slice of the rows, its copy of the weights and its gradient.
struct Replica {
  be::Runtime* rt = nullptr;
  be::Stream stream;
  be::DeviceBuffer x, y, w, grad;
  std::shared_ptr<be::Kernel> grad_kernel, update_kernel;
  uint32_t first = 0, rows = 0;
};

struct RunResult {
  std::vector<double> weights;
  std::vector<double> step_ms;
  std::vector<double> loss;  ///< mean squared error / 2 before each step
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Runs `o.steps` steps on the devices `which` of `set` (NCCL ranks `comms`, or none for one device).
RunResult run(be::DeviceSet& set, const std::vector<size_t>& which, std::vector<std::unique_ptr<be::Communicator>>* comms,
              const Options& o, const std::string& source) {
  const size_t n = which.size();
  std::vector<Replica> replicas(n);
  const uint32_t features = o.features;
  for (size_t k = 0; k < n; ++k) {
    Replica& r = replicas[k];
    r.rt = &set.runtime(which[k]);
    r.first = static_cast<uint32_t>(uint64_t{o.rows} * k / n);
    r.rows = static_cast<uint32_t>(uint64_t{o.rows} * (k + 1) / n) - r.first;
    r.stream = need(r.rt->create_stream());
    r.x = need(r.rt->allocate(size_t{r.rows} * features * sizeof(float)));
    r.y = need(r.rt->allocate(size_t{r.rows} * sizeof(float)));
    r.w = need(r.rt->allocate(features * sizeof(double)));
    r.grad = need(r.rt->allocate((features + 1) * sizeof(int64_t)));
    auto data = need(r.rt->compile(source, "linreg_data", "linreg.pg"));
    r.grad_kernel = need(r.rt->compile(source, "linreg_grad", "linreg.pg"));
    r.update_kernel = need(r.rt->compile(source, "linreg_update", "linreg.pg"));
    const uint64_t blocks = (r.rows + 255) / 256;
    need(data->launch(be::LaunchConfig::linear(blocks, 256), {r.x, r.y, r.first, r.rows, features}, &r.stream));
    need(be::fill_async(r.stream, be::CopyEnd::of(be::DeviceSpan<double>(r.w)), 0u, 4));
  }
  for (auto& r : replicas) need(r.stream.synchronize());

  RunResult out;
  std::vector<int64_t> grad_host(features + 1);
  for (int step = 0; step < o.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    for (auto& r : replicas) {
      need(be::fill_async(r.stream, be::CopyEnd::of(be::DeviceSpan<int64_t>(r.grad)), 0u, 4));
      need(r.grad_kernel->launch(be::LaunchConfig::linear((r.rows + 255) / 256, 256), {r.grad, r.x, r.y, r.w, r.rows, features},
                                 &r.stream));
    }
    if (comms != nullptr) {
      be::Group group;  // one process drives every rank: the all-reduces go out as one group
      for (size_t k = 0; k < n; ++k)
        need(group.add(*(*comms)[k], replicas[k].stream,
                       {be::CollectiveKind::all_reduce, be::CollectiveEnd::of(be::DeviceSpan<int64_t>(replicas[k].grad)),
                        be::CollectiveEnd::of(be::DeviceSpan<int64_t>(replicas[k].grad)), ncclSum, 0}));
      need(group.end());
    }
    for (auto& r : replicas)
      need(r.update_kernel->launch(be::LaunchConfig::linear(1, 256), {r.w, r.grad, o.rate, o.rows, features}, &r.stream));
    for (size_t k = 0; k < n; ++k) {
      if (comms != nullptr)
        need((*comms)[k]->synchronize(replicas[k].stream));
      else
        need(replicas[k].stream.synchronize());
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out.step_ms.push_back(ms);
    need(replicas[0].grad.download(std::as_writable_bytes(std::span(grad_host))));
    out.loss.push_back(static_cast<double>(grad_host[features]) / 16777216.0 / o.rows / 2);
  }
  // Every replica holds the same weights: they applied the same all-reduced gradients.
  std::vector<double> w(features), other(features);
  need(replicas[0].w.download(std::as_writable_bytes(std::span(w))));
  for (size_t k = 1; k < n; ++k) {
    need(replicas[k].w.download(std::as_writable_bytes(std::span(other))));
    if (std::memcmp(w.data(), other.data(), w.size() * sizeof(double)) != 0)
      throw std::runtime_error(fmt::format("the weights on GPU {} differ from those on GPU {}", which[k], which[0]));
  }
  out.weights = std::move(w);
  return out;
}

void print_steps(const RunResult& r, const char* label) {
  for (size_t s = 0; s < r.step_ms.size(); ++s)
    std::printf("%s step %zu: %.3f ms  loss %.6g\n", label, s + 1, r.step_ms[s], r.loss[s]);
}

/// The median step after the first (which pays for first launches and NCCL's warm-up).
double steady_ms(const RunResult& r) {
  return median(std::vector<double>(r.step_ms.begin() + (r.step_ms.size() > 1 ? 1 : 0), r.step_ms.end()));
}

int program(const Options& o) {
  auto api = be::driver();
  if (!api) {
    std::printf("SKIPPED: data-parallel: %s", pg::diag::render_text(api.error(), false).c_str());
    return kSkipped;
  }
  int count = 0;
  if ((*api)->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < std::max(o.min_gpus, o.gpus)) {
    std::printf("SKIPPED: data-parallel: needs %d GPUs, this machine has %d\n", std::max(o.min_gpus, o.gpus), count);
    return kSkipped;
  }
  const int gpus = o.gpus == 0 ? count : o.gpus;
  if (uint64_t{o.rows} * o.features >= (uint64_t{1} << 32) || o.features == 0 || o.features > 256 || o.rows < 1 ||
      o.steps < 1) {
    std::fprintf(stderr, "data-parallel: rows x features must stay below 2^32, features 1..256, steps >= 1\n");
    return 2;
  }
  const std::string source = read_text(o.kernels);
  be::DeviceSetOptions so;
  for (int i = 0; i < gpus; ++i) so.devices.push_back(i);
  auto set = need(be::DeviceSet::open(so));
  std::printf("data-parallel: linear regression, %u rows x %u features, %d steps, rate %g, on %d GPU%s:", o.rows,
              o.features, o.steps, o.rate, gpus, gpus == 1 ? "" : "s");
  for (size_t i = 0; i < set->size(); ++i) std::printf(" [%d] %s", set->context(i).ordinal(), set->context(i).caps().name.c_str());
  std::printf("\n%s", be::format_peer_matrix(set->peers()).c_str());

  std::vector<size_t> all;
  for (size_t i = 0; i < set->size(); ++i) all.push_back(i);
  RunResult parallel;
  if (gpus > 1) {
    auto comms = need(be::Communicator::init_all(set->contexts()));
    parallel = run(*set, all, &comms, o, source);
  } else {
    parallel = run(*set, all, nullptr, o, source);
  }
  print_steps(parallel, fmt::format("gpus={}", gpus).c_str());
  const double steady = steady_ms(parallel);
  std::printf("data-parallel: gpus=%d median step %.3f ms (steps 2..%d), %.3g rows/s, final loss %.6g\n", gpus, steady,
              o.steps, o.rows / (steady / 1000), parallel.loss.back());
  std::printf("weights:");
  for (uint32_t j = 0; j < std::min<uint32_t>(o.features, 4); ++j) std::printf(" %.9f", parallel.weights[j]);
  std::printf("%s\n", o.features > 4 ? " ..." : "");

  if (gpus > 1 && o.reference) {
    RunResult single = run(*set, {0}, nullptr, o, source);
    print_steps(single, "gpus=1");
    const double one = steady_ms(single);
    const bool equal = std::memcmp(single.weights.data(), parallel.weights.data(), o.features * sizeof(double)) == 0;
    std::printf("data-parallel: gpus=1 median step %.3f ms; speed-up on %d GPUs %.2fx\n", one, gpus, one / steady);
    std::printf("equal to the single-GPU result: %s\n", equal ? "yes (every weight bit for bit)" : "NO");
    if (!equal) {
      for (uint32_t j = 0; j < o.features; ++j)
        if (single.weights[j] != parallel.weights[j])
          std::printf("  weight %u: %.17g on 1 GPU, %.17g on %d\n", j, single.weights[j], parallel.weights[j], gpus);
      return 1;
    }
  }
  return 0;
}

std::string default_kernels() {
  if (const char* dir = std::getenv("PTXGATE_EXAMPLES_DIR"); dir != nullptr && *dir != 0)
    return std::string(dir) + "/linreg.pg";
  return PTXGATE_SOURCE_DIR "/examples/linreg.pg";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.kernels = default_kernels();
  CLI::App app("Data-parallel linear regression on several GPUs: .pg kernels, NCCL all-reduce, per-step timing");
  app.add_option("--gpus", o.gpus, "GPUs to use (0: all)")->check(CLI::NonNegativeNumber);
  app.add_option("--rows", o.rows, "Rows of the data set (split across the GPUs)")->capture_default_str();
  app.add_option("--features", o.features, "Features per row (1..256)")->capture_default_str();
  app.add_option("--steps", o.steps, "Gradient steps")->capture_default_str();
  app.add_option("--rate", o.rate, "Learning rate")->capture_default_str();
  app.add_option("--min-gpus", o.min_gpus, "Skip (exit 77) on a machine with fewer GPUs")->capture_default_str();
  app.add_option("--kernels", o.kernels, "The kernels' .pg file")->capture_default_str();
  bool no_reference = false;
  app.add_flag("--no-reference", no_reference, "Skip the same steps on one GPU (the equality check and speed-up)");
  CLI11_PARSE(app, argc, argv);
  o.reference = !no_reference;
  try {
    return program(o);
  } catch (const Failure& f) {
    std::fputs(pg::diag::render_text(f.d).c_str(), stderr);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data-parallel: %s\n", e.what());
    return 1;
  }
}
