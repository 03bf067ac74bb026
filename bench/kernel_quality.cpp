// Kernel quality: ptxgate's generated kernels vs nvcc's twins and vs device-to-device memcpy, checked then timed.
#include "bench_parts.hpp"

#include <cmath>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "kernel_timing.hpp"

namespace ptxgate::bench {
namespace {

using runtime::LaunchConfig;

struct Twins {
  std::shared_ptr<runtime::Kernel> saxpy, copy, block_sum, matmul, saxpy4, copy4, warp_sum;
  CUfunction nv_saxpy = nullptr, nv_copy = nullptr, nv_block_sum = nullptr, nv_matmul = nullptr, nv_saxpy4 = nullptr,
             nv_copy4 = nullptr, nv_warp_sum = nullptr;

  std::shared_ptr<runtime::Kernel>* pg(const std::string& name) {
    return name == "saxpy" ? &saxpy : name == "copy" ? &copy : name == "block_sum" ? &block_sum
         : name == "matmul" ? &matmul : name == "saxpy4" ? &saxpy4 : name == "copy4" ? &copy4
         : name == "warp_sum" ? &warp_sum : nullptr;
  }
  CUfunction* nv(const std::string& name) {
    return name == "saxpy" ? &nv_saxpy : name == "copy" ? &nv_copy : name == "block_sum" ? &nv_block_sum
         : name == "matmul" ? &nv_matmul : name == "saxpy4" ? &nv_saxpy4 : name == "copy4" ? &nv_copy4
         : name == "warp_sum" ? &nv_warp_sum : nullptr;
  }
};

/// Blocks of 256 threads for n elements at `per_thread` elements per thread.
unsigned blocks_for(size_t n, unsigned per_thread) {
  return static_cast<unsigned>((n + 256 * per_thread - 1) / (256 * per_thread));
}

/// Runs both twins of each kernel on small random inputs and compares with a CPU reference.
void verify(Bench& c, Twins& t, ResultFile& out, bool& ok_saxpy, bool& ok_copy, bool& ok_sum, bool& ok_mm) {
  auto record = [&](const std::string& what, const Step& s, double err, double tol, bool& flag) {
    if (!record_check(out, what, s, err, tol)) flag = false;
  };
  const uint32_t n = 1'000'003;  // not a multiple of the block size
  const unsigned blocks = (n + 255) / 256;
  auto x = random_floats(n, 11), y = random_floats(n, 12);
  const float a = 1.75f;
  // saxpy, one and four elements per thread
  for (int twin = 0; twin < 4; ++twin) {
    const bool is_pg = twin % 2 == 0;
    const std::string name = twin < 2 ? "saxpy" : "saxpy4";
    const unsigned vblocks = blocks_for(n, twin < 2 ? 1 : 4);
    auto& pg = *t.pg(name);
    CUfunction nvf = *t.nv(name);
    if (is_pg ? !pg : !nvf) continue;
    std::string what = name + (is_pg ? ".ptxgate" : ".nvcc");
    double err = INFINITY;
    Step s = [&]() -> Step {
      auto dx = upload(c, x);
      auto dy = upload(c, y);
      if (!dx || !dy) return std::unexpected(dx ? dy.error() : dx.error());
      CUdeviceptr py = dy->pointer(), px = dx->pointer();
      float av = a;
      uint32_t nv = n;
      Step l = is_pg ? from_diag(pg->launch(grid1d(vblocks), {*dy, *dx, a, n}, &c.stream))
                     : raw_launch(c, nvf, {vblocks, 1, 1}, {256, 1, 1}, {&py, &px, &av, &nv});
      if (!l) return l;
      auto got = download(c, *dy);
      if (!got) return std::unexpected(got.error());
      std::vector<double> ref(n);
      for (size_t i = 0; i < n; ++i) ref[i] = double(a) * x[i] + y[i];
      err = relative_error(*got, ref);
      return {};
    }();
    record(what, s, err, 1e-6, ok_saxpy);
  }
  // copy, one and four elements per thread (destination poisoned with NaN first)
  for (int twin = 0; twin < 4; ++twin) {
    const bool is_pg = twin % 2 == 0;
    const std::string name = twin < 2 ? "copy" : "copy4";
    const unsigned vblocks = blocks_for(n, twin < 2 ? 1 : 4);
    auto& pg = *t.pg(name);
    CUfunction nvf = *t.nv(name);
    if (is_pg ? !pg : !nvf) continue;
    std::string what = name + (is_pg ? ".ptxgate" : ".nvcc");
    double err = INFINITY;
    Step s = [&]() -> Step {
      auto dx = upload(c, x);
      auto dd = c.rt.allocate(size_t{n} * 4);
      if (!dx) return std::unexpected(dx.error());
      if (!dd) return std::unexpected(one_line(dd.error()));
      if (auto f = dd->fill_bytes(0xFF); !f) return std::unexpected(one_line(f.error()));
      CUdeviceptr pd = dd->pointer(), px = dx->pointer();
      uint32_t nv = n;
      Step l = is_pg ? from_diag(pg->launch(grid1d(vblocks), {*dd, *dx, n}, &c.stream))
                     : raw_launch(c, nvf, {vblocks, 1, 1}, {256, 1, 1}, {&pd, &px, &nv});
      if (!l) return l;
      auto got = download(c, *dd);
      if (!got) return std::unexpected(got.error());
      std::vector<double> ref(x.begin(), x.end());
      err = relative_error(*got, ref);
      return {};
    }();
    record(what, s, err, 0.0, ok_copy);
  }
  // block_sum and warp_sum (positive inputs, total zeroed)
  auto xp = random_floats(n, 13, 0.0f, 1.0f);
  for (int twin = 0; twin < 4; ++twin) {
    bool is_pg = twin % 2 == 0;
    const bool warp = twin >= 2;
    auto& pg_sum = warp ? t.warp_sum : t.block_sum;
    CUfunction nv_sum = warp ? t.nv_warp_sum : t.nv_block_sum;
    if (is_pg ? !pg_sum : !nv_sum) continue;
    const unsigned sum_blocks =
        warp ? std::min(blocks, resident_blocks(c, is_pg ? pg_sum->function().handle() : nv_sum, 256)) : blocks;
    std::string what = std::string(warp ? "warp_sum." : "block_sum.") + (is_pg ? "ptxgate" : "nvcc");
    double err = INFINITY;
    Step s = [&]() -> Step {
      auto dx = upload(c, xp);
      auto total = upload(c, std::vector<float>{0.0f});
      if (!dx || !total) return std::unexpected(dx ? total.error() : dx.error());
      CUdeviceptr pt = total->pointer(), px = dx->pointer();
      uint32_t nv = n;
      Step l = is_pg ? from_diag(pg_sum->launch(grid1d(sum_blocks), {*total, *dx, n}, &c.stream))
                     : raw_launch(c, nv_sum, {sum_blocks, 1, 1}, {256, 1, 1}, {&pt, &px, &nv});
      if (!l) return l;
      auto got = download(c, *total);
      if (!got) return std::unexpected(got.error());
      double ref = 0;
      for (float v : xp) ref += v;
      err = relative_error(*got, std::vector<double>{ref});
      return {};
    }();
    record(what, s, err, 1e-4, ok_sum);
  }
  // matmul at sizes that are not multiples of the tile
  const uint32_t m = 257, nn = 129, k = 131;
  auto A = random_floats(size_t{m} * k, 14), B = random_floats(size_t{k} * nn, 15);
  for (int twin = 0; twin < 2; ++twin) {
    bool is_pg = twin == 0;
    if (is_pg ? !t.matmul : !t.nv_matmul) continue;
    std::string what = std::string("matmul.") + (is_pg ? "ptxgate" : "nvcc");
    double err = INFINITY;
    Step s = [&]() -> Step {
      auto da = upload(c, A);
      auto db = upload(c, B);
      auto dc = c.rt.allocate(size_t{m} * nn * 4);
      if (!da || !db) return std::unexpected(da ? db.error() : da.error());
      if (!dc) return std::unexpected(one_line(dc.error()));
      if (auto f = dc->fill_bytes(0xFF); !f) return std::unexpected(one_line(f.error()));
      CUdeviceptr pc = dc->pointer(), pa = da->pointer(), pb = db->pointer();
      uint32_t mv = m, nv = nn, kv = k;
      unsigned gx = (nn + 15) / 16, gy = (m + 15) / 16;
      Step l = is_pg ? from_diag(t.matmul->launch(LaunchConfig{{gx, gy, 1}, {0, 0, 0}, 0, false},
                                                  {*dc, *da, *db, m, nn, k}, &c.stream))
                     : raw_launch(c, t.nv_matmul, {gx, gy, 1}, {16, 16, 1}, {&pc, &pa, &pb, &mv, &nv, &kv});
      if (!l) return l;
      auto got = download(c, *dc);
      if (!got) return std::unexpected(got.error());
      err = relative_error(*got, matmul_reference(A, B, m, nn, k));
      return {};
    }();
    record(what, s, err, 1e-5, ok_mm);
  }
}

}  // namespace

int run_kernel_quality(const KernelOptions& o, ResultFile& out) {
  auto session = open_session(out, "kernel quality");
  if (!session) return session.error();
  Bench c = session->bench(out);
  auto& rt = c.rt;
  const auto& api = c.api;
  int status = 0;
  out.info("device", rt.caps().name);
  out.info("elements", o.elements);
  out.info("matmul_size", o.matmul_size);

  // ptxgate kernels.
  Twins t;
  auto sources = quality_kernels(o.examples_dir, o.kernels_dir);
  for (auto& extra : bandwidth_kernels(o.kernels_dir)) sources.push_back(extra);
  sources.push_back({"warp_sum", o.kernels_dir / "warp_sum.pg"});  // the warp-shuffle reduction (#13)
  for (const auto& ks : sources) {
    auto text = read_text(ks.path);
    if (!text) {
      out.error("compile." + ks.name, text.error());
      status = 1;
      continue;
    }
    auto k = rt.compile(*text, ks.name, ks.path.filename().string());
    if (!k) {
      out.error("compile." + ks.name, one_line(k.error()));
      status = 1;
      continue;
    }
    const auto& res = (*k)->resources();
    out.info("ptxgate_resources." + ks.name, {{"registers", res.registers_per_thread},
                                              {"static_shared_bytes", res.static_shared_bytes},
                                              {"local_bytes", res.local_bytes},
                                              {"from_cubin", (*k)->loaded_from_cubin()}});
    if (auto* slot = t.pg(ks.name)) *slot = *k;
  }
  // nvcc twins.
  std::vector<CUmodule> modules;
  for (const std::string name : {"saxpy", "copy", "block_sum", "matmul", "saxpy4", "copy4", "warp_sum"}) {
    auto bytes = read_text(o.cubin_dir / (name + ".cubin"));
    if (!bytes) {
      out.error("nvcc." + name, bytes.error());
      status = 1;
      continue;
    }
    CUmodule m = nullptr;
    CUfunction f = nullptr;
    if (auto r = api.cuModuleLoadData(&m, bytes->data()); r != CUDA_SUCCESS) {
      out.error("nvcc." + name, cu_error(r, "cuModuleLoadData"));
      status = 1;
      continue;
    }
    modules.push_back(m);
    if (auto r = api.cuModuleGetFunction(&f, m, name.c_str()); r != CUDA_SUCCESS) {
      out.error("nvcc." + name, cu_error(r, "cuModuleGetFunction"));
      status = 1;
      continue;
    }
    int regs = 0;
    api.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    out.info("nvcc_resources." + name, {{"registers", regs}});
    *t.nv(name) = f;
  }

  fmt::print("kernel quality: verification on small random inputs\n");
  bool ok_saxpy = true, ok_copy = true, ok_sum = true, ok_mm = true;
  verify(c, t, out, ok_saxpy, ok_copy, ok_sum, ok_mm);
  if (!(ok_saxpy && ok_copy && ok_sum && ok_mm)) status = 1;

  // Timing buffers: large enough to defeat the L2 cache (2^26 f32 = 256 MiB each).
  const size_t n = o.elements;
  const auto n32 = static_cast<uint32_t>(n);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  fmt::print("kernel quality: timing with {} elements ({} MiB per buffer)\n", n, n * 4 >> 20);
  auto x = upload(c, random_floats(n, 21));
  auto y = upload(c, random_floats(n, 22));
  auto d = rt.allocate(n * 4);
  if (!x || !y || !d) {
    out.error("allocate", !x ? x.error() : !y ? y.error() : one_line(d.error()));
    return 1;
  }
  const size_t ms = o.matmul_size;
  auto ma = upload(c, random_floats(ms * ms, 23));
  auto mb = upload(c, random_floats(ms * ms, 24));
  auto mc = rt.allocate(ms * ms * 4);
  auto total = rt.allocate(4);
  CUdeviceptr px = x->pointer(), py = y->pointer(), pd = d->pointer();
  CUdeviceptr pt = total ? total->pointer() : 0;
  const float a = 1e-3f;  // small: y stays finite however often saxpy runs
  uint32_t nv = n32;
  float av = a;
  auto extras = load_driver_extras();

  std::vector<Timed> timed;
  const double bytes4 = 4.0 * static_cast<double>(n);
  if (extras && extras->cuMemcpyDtoDAsync)
    timed.push_back({"memcpy_dtod", "GB/s", 2 * bytes4, [&]() -> Step {
                       CUresult r = extras->cuMemcpyDtoDAsync(pd, px, n * 4, c.stream.handle());
                       if (r != CUDA_SUCCESS) return std::unexpected(cu_error(r, "cuMemcpyDtoDAsync"));
                       return {};
                     }});
  else
    out.error("memcpy_dtod", extras ? "cuMemcpyDtoDAsync not resolved" : extras.error());
  if (t.copy && ok_copy)
    timed.push_back({"copy.ptxgate", "GB/s", 2 * bytes4,
                     [&] { return from_diag(t.copy->launch(grid1d(blocks), {*d, *x, n32}, &c.stream)); }});
  if (t.nv_copy && ok_copy)
    timed.push_back({"copy.nvcc", "GB/s", 2 * bytes4,
                     [&] { return raw_launch(c, t.nv_copy, {blocks, 1, 1}, {256, 1, 1}, {&pd, &px, &nv}); }});
  const unsigned blocks4 = blocks_for(n, 4);
  if (t.copy4 && ok_copy)
    timed.push_back({"copy4.ptxgate", "GB/s", 2 * bytes4,
                     [&] { return from_diag(t.copy4->launch(grid1d(blocks4), {*d, *x, n32}, &c.stream)); }});
  if (t.nv_copy4 && ok_copy)
    timed.push_back({"copy4.nvcc", "GB/s", 2 * bytes4,
                     [&] { return raw_launch(c, t.nv_copy4, {blocks4, 1, 1}, {256, 1, 1}, {&pd, &px, &nv}); }});
  if (t.saxpy4 && ok_saxpy)
    timed.push_back({"saxpy4.ptxgate", "GB/s", 3 * bytes4,
                     [&] { return from_diag(t.saxpy4->launch(grid1d(blocks4), {*y, *x, a, n32}, &c.stream)); }});
  if (t.nv_saxpy4 && ok_saxpy)
    timed.push_back({"saxpy4.nvcc", "GB/s", 3 * bytes4, [&] {
                       return raw_launch(c, t.nv_saxpy4, {blocks4, 1, 1}, {256, 1, 1}, {&py, &px, &av, &nv});
                     }});
  if (t.saxpy && ok_saxpy)
    timed.push_back({"saxpy.ptxgate", "GB/s", 3 * bytes4,
                     [&] { return from_diag(t.saxpy->launch(grid1d(blocks), {*y, *x, a, n32}, &c.stream)); }});
  if (t.nv_saxpy && ok_saxpy)
    timed.push_back({"saxpy.nvcc", "GB/s", 3 * bytes4, [&] {
                       return raw_launch(c, t.nv_saxpy, {blocks, 1, 1}, {256, 1, 1}, {&py, &px, &av, &nv});
                     }});
  if (total && t.block_sum && ok_sum)
    timed.push_back({"block_sum.ptxgate", "GB/s", bytes4,
                     [&] { return from_diag(t.block_sum->launch(grid1d(blocks), {*total, *x, n32}, &c.stream)); }});
  if (total && t.nv_block_sum && ok_sum)
    timed.push_back({"block_sum.nvcc", "GB/s", bytes4, [&] {
                       return raw_launch(c, t.nv_block_sum, {blocks, 1, 1}, {256, 1, 1}, {&pt, &px, &nv});
                     }});
  // The warp-shuffle sum: one read of x, grid-stride over one full wave of blocks, against memcpy's rate.
  const unsigned warp_blocks = t.warp_sum ? std::min(blocks, resident_blocks(c, t.warp_sum->function().handle(), 256)) : 1;
  const unsigned nv_warp_blocks = t.nv_warp_sum ? std::min(blocks, resident_blocks(c, t.nv_warp_sum, 256)) : 1;
  if (total && t.warp_sum && ok_sum)
    timed.push_back({"warp_sum.ptxgate", "GB/s", bytes4,
                     [&] { return from_diag(t.warp_sum->launch(grid1d(warp_blocks), {*total, *x, n32}, &c.stream)); }});
  if (total && t.nv_warp_sum && ok_sum)
    timed.push_back({"warp_sum.nvcc", "GB/s", bytes4, [&] {
                       return raw_launch(c, t.nv_warp_sum, {nv_warp_blocks, 1, 1}, {256, 1, 1}, {&pt, &px, &nv});
                     }});
  uint32_t msv = static_cast<uint32_t>(ms);
  unsigned mg = static_cast<unsigned>((ms + 15) / 16);
  CUdeviceptr pma = ma ? ma->pointer() : 0, pmb = mb ? mb->pointer() : 0, pmc = mc ? mc->pointer() : 0;
  const double flops = 2.0 * double(ms) * double(ms) * double(ms);
  if (ma && mb && mc && t.matmul && ok_mm)
    timed.push_back({"matmul.ptxgate", "GFLOP/s", flops, [&] {
                       return from_diag(t.matmul->launch(LaunchConfig{{mg, mg, 1}, {0, 0, 0}, 0, false},
                                                         {*mc, *ma, *mb, msv, msv, msv}, &c.stream));
                     }});
  if (ma && mb && mc && t.nv_matmul && ok_mm)
    timed.push_back({"matmul.nvcc", "GFLOP/s", flops, [&] {
                       return raw_launch(c, t.nv_matmul, {mg, mg, 1}, {16, 16, 1}, {&pmc, &pma, &pmb, &msv, &msv, &msv});
                     }});

  if (!time_interleaved(c, timed, 3, o.repetitions, "kernel.")) status = 1;
  for (CUmodule m : modules) (void)api.cuModuleUnload(m);
  return status;
}

}  // namespace ptxgate::bench
