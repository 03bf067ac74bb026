#!/usr/bin/env python3
"""Peer measurements on the GPU machine: CuPy RawKernel and Triton launch overhead (host time per launch, as
ptxgate's launch benchmark), NVRTC and Triton compile latency, and the libraries users pick for the workloads of
ptxgate_gpu_bench workloads (torch.sum, torch.softmax, F.layer_norm, torch on f16/bf16, cuBLAS f32 through
torch.matmul with TF32 off, cuBLAS bf16), timed GPU-bound as ptxgate's kernels are (20 calls between two events)
and checked at the timed size.

Writes one JSON result file in the format of ptxgate_gpu_bench (part, rows, errors, info), rewritten
after every row so that a failure or timeout still leaves partial results.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import traceback


class ResultFile:
    def __init__(self, path, part):
        self.path = path
        self.doc = {"part": part, "rows": [], "errors": [], "info": {}}
        self.flush()

    def flush(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=2)
        os.replace(tmp, self.path)

    def add(self, name, unit, values, **extra):
        values = sorted(values)
        rank = lambda p: values[min(len(values) - 1, round(p * (len(values) - 1)))]
        row = {"name": name, "unit": unit, "median": statistics.median(values), "p10": rank(0.1),
               "p90": rank(0.9), "min": values[0], "max": values[-1], "samples": len(values)}
        row.update(extra)
        self.doc["rows"].append(row)
        print(f"  {name:<48} median {row['median']:>12.3f} {unit:<8} p10 {row['p10']:>12.3f} "
              f"p90 {row['p90']:>12.3f} (n={len(values)})", flush=True)
        self.flush()

    def error(self, step, exc):
        message = f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(exc)
        self.doc["errors"].append({"step": step, "message": message})
        print(f"  FAILED {step}: {message}", file=sys.stderr, flush=True)
        if isinstance(exc, BaseException):
            traceback.print_exc()
        self.flush()

    def info(self, key, value):
        self.doc["info"][key] = value
        self.flush()


def time_batches(launch, sync, batches, per_batch):
    """Host ns per launch: per_batch launches then one synchronisation, per batch; one warm-up batch."""
    out = []
    for b in range(batches + 1):
        t0 = time.perf_counter_ns()
        for _ in range(per_batch):
            launch()
        sync()
        t1 = time.perf_counter_ns()
        if b > 0:
            out.append((t1 - t0) / per_batch)
    return out


# ---------------------------------------------------------------- CuPy
def cupy_launches(res, cuda_dir, batches, per_batch):
    import cupy as cp
    import numpy as np
    res.info("cupy_version", cp.__version__)
    src = open(os.path.join(cuda_dir, "launch.cu")).read()
    module = cp.RawModule(code=src, options=("-std=c++17",))
    stream = cp.cuda.Stream(non_blocking=True)
    bufs = [cp.asarray(np.random.default_rng(1).random(16, dtype=np.float32)) for _ in range(4)]
    argsets = {
        0: (),
        4: (bufs[0], np.float32(1.5), np.uint32(7), np.int32(-3)),
        16: (bufs[0], bufs[1], bufs[2], bufs[3], np.float32(1.5), np.float32(2.5), np.float64(3.0),
             np.float64(4.0), np.int32(-1), np.int32(2), np.uint32(3), np.uint32(4), np.int64(-5),
             np.uint64(6), np.uint64(7), np.uint32(0)),
    }
    for nargs, name in ((0, "launch0"), (4, "launch4"), (16, "launch16")):
        try:
            kernel = module.get_function(name)
            args = argsets[nargs]
            with stream:
                ns = time_batches(lambda: kernel((1,), (32,), args), stream.synchronize, batches, per_batch)
            res.add(f"launch.cupy.args{nargs}", "ns", ns, kernel=name, args=nargs, variant="cupy")
        except Exception as e:  # noqa: BLE001 - every failure is recorded, the rest goes on
            res.error(f"launch.cupy.args{nargs}", e)


# ---------------------------------------------------------------- Triton
TRITON_SOURCE = '''
import triton
import triton.language as tl

@triton.jit
def launch0():
    pass

@triton.jit
def launch4(y, a, flag, c):
    if flag == 123456789:
        tl.store(y, a + c)

@triton.jit
def launch16(y0, y1, x0, x1, a, b, c, d, e, f, g, h, p, q, r, flag):
    if flag == 123456789:
        tl.store(y0, tl.load(x0) * a + b + c + d + e + f + g + h + p + q + r)
        tl.store(y1, tl.load(x1))

@triton.jit
def saxpy(y, x, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y + offs, a * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

@triton.jit
def copy(dst, src, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

@triton.jit
def block_sum(total, x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total, tl.sum(tl.load(x + offs, mask=offs < n, other=0.0), axis=0))
'''


def load_triton_module(tag):
    """A fresh Python module holding fresh JITFunctions (so no in-memory compile cache survives)."""
    import importlib.util
    d = tempfile.mkdtemp(prefix="pg_triton_src_")
    path = os.path.join(d, f"pg_triton_kernels_{tag}.py")
    with open(path, "w") as f:
        f.write(TRITON_SOURCE)
    spec = importlib.util.spec_from_file_location(f"pg_triton_kernels_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def set_triton_cache_dir(path):
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        import triton
        knobs = getattr(triton, "knobs", None)
        if knobs is not None and hasattr(knobs, "cache"):
            knobs.cache.dir = path
    except Exception:  # noqa: BLE001 - older Triton reads only the environment
        pass


def triton_launches(res, batches, per_batch):
    import torch
    import triton
    res.info("triton_version", triton.__version__)
    res.info("torch_version", torch.__version__)
    set_triton_cache_dir(tempfile.mkdtemp(prefix="pg_triton_cache_"))
    mod = load_triton_module("launch")
    bufs = [torch.rand(16, device="cuda") for _ in range(4)]
    argsets = {
        0: (mod.launch0, ()),
        4: (mod.launch4, (bufs[0], 1.5, 7, -3)),
        16: (mod.launch16, (bufs[0], bufs[1], bufs[2], bufs[3], 1.5, 2.5, 3.0, 4.0, -1, 2, 3, 4, -5, 6, 7, 0)),
    }
    stream = torch.cuda.Stream()
    for nargs, (fn, args) in argsets.items():
        try:
            with torch.cuda.stream(stream):
                fn[(1,)](*args)  # compile outside the timing
                stream.synchronize()
                ns = time_batches(lambda: fn[(1,)](*args), stream.synchronize, batches, per_batch)
            res.add(f"launch.triton.args{nargs}", "ns", ns, args=nargs, variant="triton")
        except Exception as e:  # noqa: BLE001
            res.error(f"launch.triton.args{nargs}", e)


def triton_compiles(res, reps):
    import torch
    n = 1 << 20
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    total = torch.zeros(1, device="cuda")
    calls = {
        "saxpy": lambda m: m.saxpy[(n // 1024,)](y, x, 1.5, n, BLOCK=1024),
        "copy": lambda m: m.copy[(n // 1024,)](y, x, n, BLOCK=1024),
        "block_sum": lambda m: m.block_sum[(n // 256,)](total, x, n, BLOCK=256),
    }
    # One throw-away compile so that imports and one-time initialisation stay out of the numbers.
    set_triton_cache_dir(tempfile.mkdtemp(prefix="pg_triton_cache_"))
    calls["copy"](load_triton_module("warm"))
    torch.cuda.synchronize()
    for name, call in calls.items():
        ms = []
        try:
            for i in range(reps):
                set_triton_cache_dir(tempfile.mkdtemp(prefix="pg_triton_cache_"))
                mod = load_triton_module(f"{name}_{i}")
                t0 = time.perf_counter_ns()
                call(mod)  # fresh cache dir + fresh JITFunction: a cold compile (plus the first launch)
                torch.cuda.synchronize()
                ms.append((time.perf_counter_ns() - t0) / 1e6)
            res.add(f"compile.triton_cold.{name}", "ms", ms, kernel=name)
        except Exception as e:  # noqa: BLE001
            res.error(f"compile.triton_cold.{name}", e)


# ---------------------------------------------------------------- NVRTC
def nvrtc_api():
    """(compile_fn(src, name, arch_option, want_cubin) -> bytes, version string)."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        def compile_fn(src, name, opts, want_cubin):
            prog = nvrtc.createProgram(src, name, (), ())
            try:
                try:
                    nvrtc.compileProgram(prog, list(opts))
                except (TypeError, AttributeError):  # a build that wants bytes
                    nvrtc.compileProgram(prog, [o.encode() for o in opts])
                return nvrtc.getCUBIN(prog) if want_cubin else nvrtc.getPTX(prog)
            finally:
                nvrtc.destroyProgram(prog)
        return compile_fn, "cupy_backends nvrtc {}.{}".format(*nvrtc.getVersion())
    except Exception:  # noqa: BLE001 - fall back to cuda-python
        from cuda.bindings import nvrtc as cnv

        def compile_fn(src, name, opts, want_cubin):
            err, prog = cnv.nvrtcCreateProgram(src.encode(), name.encode(), 0, [], [])
            try:
                (err,) = cnv.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
                if err != cnv.nvrtcResult.NVRTC_SUCCESS:
                    raise RuntimeError(f"nvrtcCompileProgram: {err}")
                get_size = cnv.nvrtcGetCUBINSize if want_cubin else cnv.nvrtcGetPTXSize
                get = cnv.nvrtcGetCUBIN if want_cubin else cnv.nvrtcGetPTX
                err, size = get_size(prog)
                buf = b" " * size
                (err,) = get(prog, buf)
                return buf
            finally:
                cnv.nvrtcDestroyProgram(prog)
        err, major, minor = cnv.nvrtcVersion()
        return compile_fn, f"cuda.bindings nvrtc {major}.{minor}"


def nvrtc_compiles(res, cuda_dir, reps):
    try:
        compile_fn, version = nvrtc_api()
    except Exception as e:  # noqa: BLE001
        res.error("compile.nvrtc", e)
        return
    res.info("nvrtc", version)
    for name in ("saxpy", "copy", "block_sum", "matmul"):
        src = open(os.path.join(cuda_dir, f"{name}.cu")).read()
        for kind, opts, cubin in (("ptx", ("-arch=compute_90",), False), ("cubin", ("-arch=sm_90",), True)):
            try:
                compile_fn(src, f"{name}.cu", opts, cubin)  # warm-up: library load, first-use costs
                ms = []
                for _ in range(reps):
                    t0 = time.perf_counter_ns()
                    out = compile_fn(src, f"{name}.cu", opts, cubin)
                    ms.append((time.perf_counter_ns() - t0) / 1e6)
                    if not out:
                        raise RuntimeError("empty output")
                res.add(f"compile.nvrtc_{kind}.{name}", "ms", ms, kernel=name)
            except Exception as e:  # noqa: BLE001
                res.error(f"compile.nvrtc_{kind}.{name}", e)


def twin_kernels(cuda_dir):
    """(name, source, first kernel, nvcc arch) of every CUDA C++ twin of a compiled kernel (launch.cu,
    the launch probes, compiles nothing worth timing)."""
    out = []
    for f in sorted(os.listdir(cuda_dir)):
        if not f.endswith(".cu") or f == "launch.cu":
            continue
        src = open(os.path.join(cuda_dir, f)).read()
        m = re.search(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(', src)
        arch = re.search(r"^// nvcc-arch: (sm_\w+)", src, re.M)
        if m:
            out.append((f[:-3], src, m.group(1), arch.group(1) if arch else "sm_90"))
    return out


def cupy_first_calls(res, cuda_dir, reps):
    """CuPy's first call of a RawModule kernel, cold: compile (NVRTC) and load, each repetition with a
    source of its own (one more empty kernel) so that neither CuPy's caches nor NVRTC's answer it, and
    CuPy's disk cache in a fresh folder. The peer of compile.cold_cubin_load (text -> loaded module)."""
    import cupy as cp

    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="pg_cupy_cache_")
    cp.RawModule(code='extern "C" __global__ void warm() {}').get_function("warm")  # first-use costs
    for name, src, kernel, arch in twin_kernels(cuda_dir):
        if arch != "sm_90":  # RawModule compiles for the device's sm_90; the twin needs the arch-specific target
            res.info(f"skipped.compile.cupy_first.{name}", f"the twin needs {arch}; CuPy's RawModule compiles for sm_90")
            continue
        ms = []
        try:
            for i in range(reps):
                unique = src + f'\nextern "C" __global__ void ptxgate_first_{i}() {{}}\n'
                t0 = time.perf_counter_ns()
                cp.RawModule(code=unique).get_function(kernel)
                ms.append((time.perf_counter_ns() - t0) / 1e6)
            res.add(f"compile.cupy_first.{name}", "ms", ms, kernel=name)
        except Exception as e:  # noqa: BLE001
            res.error(f"compile.cupy_first.{name}", e)


# ---------------------------------------------------------------- library peers of the workloads
def sampled_lines(m, n, count=8):
    """`count` row and column indices spread over m and n, both ends included (as bench/workloads.cpp)."""
    return ([(m - 1) * i // (count - 1) for i in range(count)], [(n - 1) * i // (count - 1) for i in range(count)])


def check_close(res, name, got, want, tol):
    """Relative error ||got - want|| / ||want|| (float64) against `tol`; an error row and False when above it."""
    import torch
    got, want = got.double(), want.double()
    if not bool(torch.isfinite(got).all()):
        err = float("inf")
    else:
        err = float(torch.linalg.vector_norm(got - want) / max(float(torch.linalg.vector_norm(want)), 1e-30))
    ok = err <= tol
    res.info(f"verify.{name}", {"relative_error": err if err != float("inf") else -1.0, "tolerance": tol, "pass": ok})
    print(f"  verify {name:<40} rel. error {err:.3e} (tolerance {tol:.0e}) {'ok' if ok else 'WRONG'}", flush=True)
    if not ok:
        res.error(f"verify.{name}", f"relative error {err:.3e} above {tol:.0e}")
    return ok


def check_gemm_lines(res, name, c, a, b_kn, tol, elementwise=False):
    """Sampled rows and columns of c = a @ b_kn (b_kn: k x n, a view) against float64 on the device."""
    import torch
    m, n = c.shape
    rows, cols = sampled_lines(m, n)
    a64, b64 = a.double(), b_kn.double()
    want = torch.cat([(a64[rows] @ b64).flatten(), (a64 @ b64[:, cols]).flatten()])
    got = torch.cat([c[rows].flatten(), c[:, cols].flatten()])
    if not elementwise:
        return check_close(res, name, got, want, tol)
    # bf16 output: each element within 1% of the reference plus 1e-3 (as bench/workloads.cpp's check_gemm).
    bad = int((~((got.double() - want).abs() <= 0.01 * want.abs() + 1e-3)).sum())
    ok = bad == 0
    res.info(f"verify.{name}", {"wrong_elements": bad, "checked": int(want.numel()), "pass": ok})
    print(f"  verify {name:<40} {bad} of {want.numel()} elements off {'ok' if ok else 'WRONG'}", flush=True)
    if not ok:
        res.error(f"verify.{name}", f"{bad} of {want.numel()} sampled elements off")
    return ok


def workload_peers(res, warmups, reps, sizes, calls):
    """Rows workload.<name>.torch with the same work per call as ptxgate_gpu_bench workloads, timed the same
    way: GPU-bound, `calls` calls queued between two CUDA events per sample (the Python dispatch of one call
    overlaps the GPU's work on the previous ones), the ops interleaved round by round with the order reversed
    every other round, medians over `reps` rounds. Every op's result is checked first at the timed size
    (the GEMMs on 8 sampled rows and columns against float64); an op that is wrong is not timed."""
    import torch
    import torch.nn.functional as F
    res.info("torch_version", torch.__version__)
    res.info("calls_per_sample", calls)
    # cuBLAS f32 without TF32: what torch.matmul on f32 tensors is with TF32 off.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    res.info("torch_matmul_allow_tf32", torch.backends.cuda.matmul.allow_tf32)
    dev = "cuda"
    gen = torch.Generator(device=dev).manual_seed(1)
    ops = []  # (name, unit, work, call, check)
    n = sizes["sum_elements"]
    x = torch.rand(n, device=dev, generator=gen)
    dst = torch.empty_like(x)
    ops.append(("workload.memcpy.torch", "GB/s", 8.0 * n, lambda: dst.copy_(x),
                lambda name: check_close(res, name, dst.copy_(x), x, 0.0)))
    ops.append(("workload.sum.torch", "GB/s", 4.0 * n, lambda: torch.sum(x),
                lambda name: check_close(res, name, torch.sum(x).reshape(1), x.double().sum().reshape(1), 1e-5)))
    r, c = sizes["softmax_rows"], sizes["softmax_cols"]
    sx = torch.rand(r, c, device=dev, generator=gen) * 8 - 4
    rows, _ = sampled_lines(r, c)
    ops.append(("workload.softmax.torch", "GB/s", 8.0 * r * c, lambda: torch.softmax(sx, dim=-1),
                lambda name, rows=rows: check_close(res, name, torch.softmax(sx, dim=-1)[rows],
                                                    torch.softmax(sx[rows].double(), dim=-1), 1e-5)))
    r, c = sizes["norm_rows"], sizes["norm_cols"]
    lx = torch.rand(r, c, device=dev, generator=gen) * 8 - 4
    w = torch.rand(c, device=dev, generator=gen)
    b = torch.rand(c, device=dev, generator=gen)
    rows, _ = sampled_lines(r, c)
    ops.append(("workload.layer_norm.torch", "GB/s", 8.0 * r * c, lambda c=c: F.layer_norm(lx, (c,), w, b, 1e-5),
                lambda name, c=c, rows=rows: check_close(res, name, F.layer_norm(lx, (c,), w, b, 1e-5)[rows],
                                              F.layer_norm(lx[rows].double(), (c,), w.double(), b.double(), 1e-5), 1e-5)))
    h = sizes["half_elements"]
    for name, dtype in (("axpy_f16", torch.float16), ("axpy_bf16", torch.bfloat16)):
        hx = torch.full((h,), 1.06, dtype=dtype, device=dev)
        hy = torch.full((h,), 1.06, dtype=dtype, device=dev)

        # y += a x: computed in f32 and rounded once to the half type (torch's opmath for halves).
        def check_axpy(name, hx=hx, hy=hy, dtype=dtype):
            before = hy.clone()
            hy.add_(hx, alpha=1e-3)
            a = torch.tensor(1e-3, dtype=torch.float32, device=dev)  # alpha in torch's opmath type
            want = (before.float() + a * hx.float()).to(dtype)  # product and sum rounded apart
            fused = (before.double() + a.double() * hx.double()).float().to(dtype)  # one fma
            bad = int(((hy != want) & (hy != fused)).sum())
            res.info(f"verify.{name}", {"wrong_elements": bad, "pass": bad == 0})
            print(f"  verify {name:<40} {bad} of {hy.numel()} elements off {'ok' if bad == 0 else 'WRONG'}", flush=True)
            if bad:
                res.error(f"verify.{name}", f"{bad} elements off")
            return bad == 0
        ops.append((f"workload.{name}.torch", "GB/s", 6.0 * h, lambda hx=hx, hy=hy: hy.add_(hx, alpha=1e-3), check_axpy))
    s = sizes["sgemm_size"]
    ma = torch.rand(s, s, device=dev, generator=gen) * 2 - 1
    mb = torch.rand(s, s, device=dev, generator=gen) * 2 - 1
    mc = torch.empty(s, s, device=dev)

    def check_sgemm(name):
        torch.matmul(ma, mb, out=mc)
        return check_gemm_lines(res, name, mc, ma, mb, 1e-5)
    ops.append(("workload.sgemm.torch", "GFLOP/s", 2.0 * s * s * s, lambda: torch.matmul(ma, mb, out=mc), check_sgemm))
    # cuBLAS bf16 (f32 accumulation) on the layout of bench/cuda/gemm_bf16_wgmma.cu: c = a b^T, b stored n x k.
    g = sizes["gemm_size"]
    ga = (torch.rand(g, g, device=dev, generator=gen) * 2 - 1).to(torch.bfloat16)
    gb = (torch.rand(g, g, device=dev, generator=gen) * 2 - 1).to(torch.bfloat16)
    gc = torch.empty(g, g, device=dev, dtype=torch.bfloat16)

    def check_bf16(name, transposed):
        torch.matmul(ga, gb.t() if transposed else gb, out=gc)
        return check_gemm_lines(res, name, gc, ga, gb.t() if transposed else gb, 0.0, elementwise=True)
    ops.append(("workload.gemm_bf16.torch", "GFLOP/s", 2.0 * g * g * g, lambda: torch.matmul(ga, gb.t(), out=gc),
                lambda name: check_bf16(name, True)))
    # cuBLAS bf16 on the layout of bench/kernels/gemm_bf16_mma.pg: c = a b, b stored k x n (row-major).
    ops.append(("workload.gemm_bf16_mma.torch", "GFLOP/s", 2.0 * g * g * g, lambda: torch.matmul(ga, gb, out=gc),
                lambda name: check_bf16(name, False)))
    checked = []
    for op in ops:
        try:
            if op[4](op[0]):
                checked.append(op)
        except Exception as e:  # noqa: BLE001 - a failing check drops that op, the others go on
            res.error(f"verify.{op[0]}", e)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = {name: [] for name, *_ in checked}
    for rnd in range(warmups + reps):
        for name, unit, work, call, _ in (checked if rnd % 2 == 0 else checked[::-1]):
            start.record()
            for _ in range(calls):
                call()
            stop.record()
            stop.synchronize()
            if rnd >= warmups:
                times[name].append(start.elapsed_time(stop) * 1e-3 / calls)
    for name, unit, work, call, _ in checked:
        secs = times[name]
        us = sorted(t * 1e6 for t in secs)
        res.add(name, unit, [work / t * 1e-9 for t in secs], time_us_median=statistics.median(us), work=work,
                calls_per_sample=calls)


STEPS = ("cupy", "triton", "nvrtc", "triton_compile", "cupy_first", "workloads")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cuda-dir", required=True, help="bench/cuda (the CUDA C++ twins)")
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--per-batch", type=int, default=2000)
    ap.add_argument("--compile-reps", type=int, default=10)
    ap.add_argument("--triton-reps", type=int, default=5)
    ap.add_argument("--steps", default="cupy,triton,nvrtc,triton_compile,cupy_first",
                    help="comma-separated steps: " + ",".join(STEPS))
    ap.add_argument("--workload-reps", type=int, default=30)
    ap.add_argument("--calls", type=int, default=20,
                    help="workload calls queued between the two events of one sample (GPU-bound, as ptxgate_gpu_bench)")
    ap.add_argument("--sum-elements", type=int, default=1 << 28)
    ap.add_argument("--half-elements", type=int, default=1 << 28)
    ap.add_argument("--sgemm-size", type=int, default=4096)
    ap.add_argument("--gemm-size", type=int, default=4096, help="square bf16 GEMM")
    args = ap.parse_args()
    sizes = {"sum_elements": args.sum_elements, "softmax_rows": 8192, "softmax_cols": 8192, "norm_rows": 16384,
             "norm_cols": 4096, "half_elements": args.half_elements, "sgemm_size": args.sgemm_size,
             "gemm_size": args.gemm_size}
    chosen = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STEPS]
    if unknown:
        ap.error(f"unknown steps {unknown}; known: {', '.join(STEPS)}")
    res = ResultFile(args.out, "peers")
    res.info("python", sys.version.split()[0])
    steps = (
        ("cupy", "cupy launches", lambda: cupy_launches(res, args.cuda_dir, args.batches, args.per_batch)),
        ("triton", "triton launches", lambda: triton_launches(res, args.batches, args.per_batch)),
        ("nvrtc", "nvrtc compiles", lambda: nvrtc_compiles(res, args.cuda_dir, args.compile_reps)),
        ("triton_compile", "triton compiles", lambda: triton_compiles(res, args.triton_reps)),
        ("cupy_first", "CuPy RawModule first calls", lambda: cupy_first_calls(res, args.cuda_dir, args.triton_reps)),
        ("workloads", "library peers of the workloads",
         lambda: workload_peers(res, 3, args.workload_reps, sizes, args.calls)),
    )
    for key, title, step in steps:
        if key not in chosen:
            continue
        print(f"peers: {title}", flush=True)
        try:
            step()
        except ModuleNotFoundError as e:  # the library is not installed here: skipped with the reason
            res.info(f"skipped.{key}", str(e))
            print(f"  SKIPPED {title}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - a failing step is recorded; the other steps go on
            res.error(title, e)
    # A failed check or step fails the run (bench/run_on_gpu.sh then names this step); the rows stay.
    return 1 if res.doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
