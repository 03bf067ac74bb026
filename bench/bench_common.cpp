// Shared pieces of the GPU benchmarks: statistics, the JSON result file, extra driver entry points, file reading.
#include "bench_common.hpp"

#include <dlfcn.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/support/files.hpp"

namespace ptxgate::bench {

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto rank = [&](double p) {
    size_t at = static_cast<size_t>(std::lround(p * static_cast<double>(values.size() - 1)));
    return values[std::min(at, values.size() - 1)];
  };
  s.samples = values.size();
  s.median = values.size() % 2 == 1 ? values[values.size() / 2]
                                    : 0.5 * (values[values.size() / 2 - 1] + values[values.size() / 2]);
  s.p10 = rank(0.10);
  s.p90 = rank(0.90);
  s.min = values.front();
  s.max = values.back();
  return s;
}

ResultFile::ResultFile(std::filesystem::path path, std::string part) : path_(std::move(path)) {
  doc_ = {{"part", std::move(part)},
          {"rows", nlohmann::json::array()},
          {"errors", nlohmann::json::array()},
          {"info", nlohmann::json::object()}};
  flush();
}

void ResultFile::add(const std::string& name, const std::string& unit, const Summary& s, nlohmann::json extra) {
  nlohmann::json row = {{"name", name},     {"unit", unit},   {"median", s.median}, {"p10", s.p10},
                        {"p90", s.p90},     {"min", s.min},   {"max", s.max},       {"samples", s.samples}};
  if (extra.is_object())
    for (auto& [k, v] : extra.items()) row[k] = v;
  doc_["rows"].push_back(std::move(row));
  fmt::print("  {:<48} median {:>12.3f} {:<8} p10 {:>12.3f} p90 {:>12.3f} (n={})\n", name, s.median, unit, s.p10,
             s.p90, s.samples);
  std::fflush(stdout);
  flush();
}

void ResultFile::error(const std::string& step, const std::string& message) {
  doc_["errors"].push_back({{"step", step}, {"message", message}});
  fmt::print(stderr, "  FAILED {}: {}\n", step, message);
  std::fflush(stderr);
  flush();
}

void ResultFile::info(const std::string& key, nlohmann::json value) {
  doc_["info"][key] = std::move(value);
  flush();
}

void ResultFile::flush() const {
  if (path_.empty()) return;
  // Best effort: a results file that cannot be written leaves the previous one whole.
  (void)support::write_file_atomically(path_.string(), doc_.dump(2) + "\n");
}

std::string one_line(const diag::Diagnostics& d) {
  std::string text = diag::render_text(d, false);
  for (char& c : text)
    if (c == '\n') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::expected<DriverExtras, std::string> load_driver_extras() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::unexpected(std::string("cannot load libcuda.so.1"));
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(handle, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) return std::unexpected(std::string("libcuda.so.1 has no cuGetProcAddress_v2"));
  DriverExtras x;
  std::string missing;
  auto resolve = [&](const char* name, auto& slot) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    if (get_proc(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&
        status == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr)
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(fn);
    else
      missing += missing.empty() ? name : fmt::format(", {}", name);
  };
  resolve("cuMemcpyDtoDAsync", x.cuMemcpyDtoDAsync);
  resolve("cuStreamBeginCapture", x.cuStreamBeginCapture);
  resolve("cuStreamEndCapture", x.cuStreamEndCapture);
  resolve("cuGraphInstantiateWithFlags", x.cuGraphInstantiateWithFlags);
  resolve("cuGraphLaunch", x.cuGraphLaunch);
  resolve("cuGraphExecDestroy", x.cuGraphExecDestroy);
  resolve("cuGraphDestroy", x.cuGraphDestroy);
  resolve("cuModuleLoadData", x.cuModuleLoadData);
  if (!missing.empty()) fmt::print(stderr, "  note: driver entry points not resolved: {}\n", missing);
  return x;
}

std::string cu_error(CUresult r, std::string_view call) {
  const char* name = "?";
  if (auto api = runtime::driver(); api && (*api)->cuGetErrorName != nullptr) (*api)->cuGetErrorName(r, &name);
  return fmt::format("{} failed: {} ({})", call, name, static_cast<int>(r));
}

std::expected<std::string, std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(fmt::format("cannot read {}", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
  // splitmix64: fast enough for 2^26 elements, and a fixed seed gives the same data every run.
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  std::vector<float> v(n);
  for (auto& x : v) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float unit = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    x = lo + (hi - lo) * unit;
  }
  return v;
}

}  // namespace ptxgate::bench
