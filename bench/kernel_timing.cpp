// The kernel benchmarks' shared method: launches, data, checks and interleaved event timing.
#include "kernel_timing.hpp"

#include <fmt/format.h>

#include "bench_parts.hpp"

namespace ptxgate::bench {

std::expected<Session, int> open_session(ResultFile& out, std::string_view part, bool checked) {
  runtime::RuntimeOptions options;
  options.checked = checked;
  auto rt = runtime::Runtime::create(options);
  if (!rt) {
    out.error("runtime", one_line(rt.error()));
    fmt::print("no CUDA driver or device: {} skipped\n", part);
    return std::unexpected(kSkipped);
  }
  auto stream = (*rt)->create_stream();
  if (!stream) {
    out.error("stream", one_line(stream.error()));
    return std::unexpected(1);
  }
  return Session{std::move(*rt), std::move(*stream)};
}

Step raw_launch(Bench& c, CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                std::vector<void*> params, unsigned dynamic_shared_bytes) {
  CUresult r = c.api.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], dynamic_shared_bytes,
                                    c.stream.handle(), params.data(), nullptr);
  if (r != CUDA_SUCCESS) return std::unexpected(cu_error(r, "cuLaunchKernel"));
  return {};
}

unsigned resident_blocks(Bench& c, CUfunction f, unsigned block) {
  int per_sm = 0;
  if (c.api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, static_cast<int>(block), 0) != CUDA_SUCCESS)
    per_sm = 1;
  return std::max(1u, static_cast<unsigned>(per_sm) * c.rt.caps().sm_count);
}

std::expected<runtime::DeviceBuffer, std::string> filled(Bench& c, size_t bytes, uint8_t value) {
  auto b = c.rt.allocate(bytes);
  if (!b) return std::unexpected(one_line(b.error()));
  if (auto f = b->fill_bytes(value); !f) return std::unexpected(one_line(f.error()));
  return std::move(*b);
}

double relative_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

std::vector<double> matmul_reference(const std::vector<float>& a, const std::vector<float>& b, size_t m, size_t n,
                                     size_t k) {
  std::vector<double> ref(m * n, 0.0);
  for (size_t r = 0; r < m; ++r)
    for (size_t q = 0; q < k; ++q)
      for (size_t col = 0; col < n; ++col) ref[r * n + col] += double(a[r * k + q]) * b[q * n + col];
  return ref;
}

bool record_check(ResultFile& out, const std::string& what, const Step& s, double err, double tol) {
  if (!s) {
    out.error("verify." + what, s.error());
    fmt::print("  verify {:<24} FAILED: {}\n", what, s.error());
    return false;
  }
  bool pass = err <= tol;
  out.info("verify." + what, {{"relative_error", std::isfinite(err) ? err : -1.0}, {"tolerance", tol}, {"pass", pass}});
  fmt::print("  verify {:<24} rel. error {:.3e} (tolerance {:.0e}) {}\n", what, err, tol, pass ? "ok" : "WRONG");
  return pass;
}

bool time_interleaved(Bench& c, std::vector<Timed>& variants, size_t warmups, size_t repetitions,
                      const std::string& prefix) {
  bool ok = true;
  auto start = runtime::Event::create(c.rt.shared_context());
  auto stop = runtime::Event::create(c.rt.shared_context());
  if (!start || !stop) {
    c.out.error("events", one_line(!start ? start.error() : stop.error()));
    return false;
  }
  auto run_one = [&](Timed& v, bool record) {
    if (v.failed) return;
    const size_t calls = v.prepare ? 1 : std::max<size_t>(v.calls, 1);
    Step s = [&]() -> Step {
      if (v.prepare)
        if (auto p = v.prepare(); !p) return p;
      if (auto r = start->record(&c.stream); !r) return std::unexpected(one_line(r.error()));
      for (size_t i = 0; i < calls; ++i)
        if (auto r = v.launch(); !r) return r;
      if (auto r = stop->record(&c.stream); !r) return std::unexpected(one_line(r.error()));
      if (auto r = stop->synchronize(); !r) return std::unexpected(one_line(r.error()));
      auto ms_elapsed = stop->elapsed_ms_since(*start);
      if (!ms_elapsed) return std::unexpected(one_line(ms_elapsed.error()));
      if (record) {
        double sec = *ms_elapsed * 1e-3 / static_cast<double>(calls);
        v.times_us.push_back(sec * 1e6);
        v.rates.push_back(v.work / sec * 1e-9);
      }
      return {};
    }();
    if (!s) {
      c.out.error("time." + v.name, s.error());
      v.failed = true;
      ok = false;
    }
  };
  auto round = [&](size_t r, bool record) {
    if (r % 2 == 0)
      for (auto& v : variants) run_one(v, record);
    else
      for (auto it = variants.rbegin(); it != variants.rend(); ++it) run_one(*it, record);
  };
  for (size_t w = 0; w < warmups; ++w) round(w, false);
  for (size_t r = 0; r < repetitions; ++r) round(r, true);
  for (auto& v : variants) {
    if (v.rates.empty()) continue;
    auto ts = summarize(v.times_us);
    c.out.add(prefix + v.name, v.unit, summarize(v.rates),
              {{"time_us_median", ts.median}, {"time_us_p10", ts.p10}, {"time_us_p90", ts.p90}, {"work", v.work},
               {"calls_per_sample", v.prepare ? 1 : std::max<size_t>(v.calls, 1)}});
  }
  return ok;
}

NvccModules::~NvccModules() {
  for (auto& [name, m] : modules_) (void)c_.api.cuModuleUnload(m);
}

CUfunction NvccModules::get(const std::filesystem::path& cubin, const std::string& function) {
  const std::string key = cubin.string();
  CUmodule m = nullptr;
  for (auto& [name, loaded] : modules_)
    if (name == key) m = loaded;
  if (!m) {
    auto bytes = read_text(cubin);
    if (!bytes) {
      c_.out.error("nvcc." + function, bytes.error());
      return nullptr;
    }
    if (auto r = c_.api.cuModuleLoadData(&m, bytes->data()); r != CUDA_SUCCESS) {
      c_.out.error("nvcc." + function, cu_error(r, "cuModuleLoadData"));
      return nullptr;
    }
    modules_.emplace_back(key, m);
  }
  CUfunction f = nullptr;
  if (auto r = c_.api.cuModuleGetFunction(&f, m, function.c_str()); r != CUDA_SUCCESS) {
    c_.out.error("nvcc." + function, cu_error(r, "cuModuleGetFunction"));
    return nullptr;
  }
  int regs = 0;
  c_.api.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  c_.out.info("nvcc_resources." + function, {{"registers", regs}});
  return f;
}

std::shared_ptr<runtime::Kernel> compile_kernel(Bench& c, const std::filesystem::path& path, const std::string& kernel) {
  auto text = read_text(path);
  if (!text) {
    c.out.error("compile." + kernel, text.error());
    return nullptr;
  }
  auto k = c.rt.compile(*text, kernel, path.filename().string());
  if (!k) {
    c.out.error("compile." + kernel, one_line(k.error()));
    return nullptr;
  }
  const auto& res = (*k)->resources();
  c.out.info("ptxgate_resources." + kernel, {{"registers", res.registers_per_thread},
                                             {"static_shared_bytes", res.static_shared_bytes},
                                             {"local_bytes", res.local_bytes},
                                             {"from_cubin", (*k)->loaded_from_cubin()}});
  return *k;
}

}  // namespace ptxgate::bench
