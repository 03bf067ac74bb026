#!/usr/bin/env python3
"""ptxgate from Python against the Python GPU libraries, one run, side by side (issue 28 item 6):

  launch  host ns per launch of the 0/4/16-argument probes (bench/kernels/launch*.pg; CuPy,
          cuda.core and Triton run the same kernels' CUDA C++ or Python twins), each library on a
          stream of its own (ptxgate with CuPy's arrays on CuPy's, the stream the arrays name),
          batches of launches and one synchronisation; the variants alternate
          round by round and each round's ratio to CuPy is kept (paired); ptxgate runs twice (an
          A/A control), and once more on the ctypes path (the Python Launcher) beside the C
          extension's (python/ext/launch.c), which kernel[...] is when it is built
  graph   host ns per kernel of one replay of a 100-kernel graph (add one to 1024 floats):
          ptxgate (Buffers, and PyTorch tensors) against torch.cuda.CUDAGraph; every result checked
  packer  host ns per launch of a Launcher specialised to its arguments' types against the same
          Launcher packing argument by argument (4 and 16 arguments, numpy or Python scalars), with
          an A/A control; runs over the stand-in driver too
  first   the first launch of a never-seen kernel in a fresh process (empty caches): ptxgate
          (.pg -> PTX -> cubin -> load), CuPy RawKernel (NVRTC), Triton; import, device set-up and
          compile + launch + synchronise timed apart

Writes python_bench.json and python_bench.md into --out. Usage:
    python3 bench/python_bench.py [--out DIR] [--parts launch,graph,first] [--rounds 15] [--per-batch 1000]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "bench", "kernels")
CUDA_DIR = os.path.join(ROOT, "bench", "cuda")


class Results:
    def __init__(self, out):
        self.out = out
        self.doc = {"rows": [], "errors": [], "info": {}}

    def add(self, name, unit, values, **extra):
        values = sorted(values)
        row = {"name": name, "unit": unit, "median": statistics.median(values), "p10": values[len(values) // 10],
               "p90": values[min(len(values) - 1, len(values) * 9 // 10)], "samples": len(values)}
        row.update(extra)
        self.doc["rows"].append(row)
        print(f"  {name:<44} median {row['median']:>11.2f} {unit:<6} p10 {row['p10']:>11.2f} p90 {row['p90']:>11.2f}",
              flush=True)
        self.flush()
        return row

    def error(self, step, exc):
        self.doc["errors"].append({"step": step, "message": f"{type(exc).__name__}: {exc}"})
        print(f"  FAILED {step}: {type(exc).__name__}: {exc}", flush=True)
        traceback.print_exc()
        self.flush()

    def flush(self):
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "python_bench.json"), "w") as f:
            json.dump(self.doc, f, indent=1)


# ---------------------------------------------------------------- launch

def launch_variants(res):
    """name -> (args -> None launcher per argument count, synchronise). Each library's objects
    as its users pass them."""
    import numpy as np
    import ptxgate
    import torch

    variants = {}
    from ptxgate import _native

    rt = ptxgate.Runtime()
    res.doc["info"]["device"] = rt.name
    res.doc["info"]["launch_path"] = "C extension" if _native.module() is not None else f"ctypes ({_native.reason})"
    print(f"  launch path: {res.doc['info']['launch_path']}", flush=True)
    ks = {n: rt.compile(os.path.join(KERNELS, f"launch{n}.pg"), f"launch{n}") for n in (0, 4, 16)}
    s = rt.stream()
    tbufs = [torch.rand(16, device="cuda") for _ in range(4)]
    py_args = {0: (), 4: (tbufs[0], 1.5, 7, -3),
               16: (*tbufs, 1.5, 2.5, 3.0, 4.0, -1, 2, 3, 4, -5, 6, 7, 0)}
    try:
        import cupy as cp

        res.doc["info"]["cupy"] = cp.__version__
        cbufs = [cp.asarray(np.random.default_rng(1).random(16, dtype=np.float32)) for _ in range(4)]
        np_args = {0: (), 4: (cbufs[0], np.float32(1.5), np.uint32(7), np.int32(-3)),
                   16: (*cbufs, np.float32(1.5), np.float32(2.5), np.float64(3.0), np.float64(4.0), np.int32(-1),
                        np.int32(2), np.uint32(3), np.uint32(4), np.int64(-5), np.uint64(6), np.uint64(7),
                        np.uint32(0))}
        module = cp.RawModule(code=open(os.path.join(CUDA_DIR, "launch.cu")).read(), options=("-std=c++17",))
        cstream = cp.cuda.Stream(non_blocking=True)
        cks = {n: module.get_function(f"launch{n}") for n in (0, 4, 16)}

        def cupy_launch(n):
            k, a = cks[n], np_args[n]

            def go():
                with cstream:
                    for _ in range(PER_BATCH):
                        k((1,), (32,), a)
                cstream.synchronize()
            return go
        variants["cupy"] = cupy_launch
        # ptxgate launches CuPy's arrays on CuPy's stream (borrowed), as a CuPy user would: the stream
        # the arrays name (__cuda_array_interface__ v3, CuPy's current stream) is the launch's, so
        # no wait is needed (on another stream each launch would wait for it through an event).
        ps = rt.stream(cstream)

        def ptx_on_cupy_stream(path):
            def variant(n):
                go = _ptx(ks[n], ps, np_args[n], path)

                def run():
                    with cstream:
                        go()
                return run
            return variant
        for label in ("ptxgate", "ptxgate (A/A)"):
            variants[label] = ptx_on_cupy_stream("default")
        variants["ptxgate (ctypes path)"] = ptx_on_cupy_stream("ctypes")
    except Exception as e:  # noqa: BLE001 - CuPy missing: ptxgate with torch objects only
        res.error("launch.cupy", e)
    variants["ptxgate, torch + Python scalars"] = lambda n: _ptx(ks[n], s, py_args[n])
    variants["ptxgate, torch + Python scalars (ctypes path)"] = lambda n: _ptx(ks[n], s, py_args[n], "ctypes")
    try:
        variants["triton"] = triton_variant(res, torch, py_args)
    except Exception as e:  # noqa: BLE001
        res.error("launch.triton", e)
    try:
        variants["cuda.core"] = cuda_core_variant(res)
    except Exception as e:  # noqa: BLE001
        res.error("launch.cuda_core", e)
    return variants, rt


PER_BATCH = 1000


def _ptx(kernel, stream, args, path="default"):
    """Batches of ``kernel[1, 32, stream](*args)``: the package's launcher (the C extension's when it
    is built), or ("ctypes") the Python Launcher's ctypes path."""
    from ptxgate import runtime as R

    launcher = R.Launcher(kernel, 1, 32, stream) if path == "ctypes" else kernel[1, 32, stream]

    def go():
        for _ in range(PER_BATCH):
            launcher(*args)
        stream.synchronize()
    return go


# The Triton kernels of the peer benchmark (launch0, launch4, launch16): one source for both.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import TRITON_SOURCE  # noqa: E402


def _module_from_source(source, tag):
    import importlib.util

    d = tempfile.mkdtemp(prefix="pg_py_bench_")
    path = os.path.join(d, f"pg_bench_{tag}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"pg_bench_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def triton_variant(res, torch, py_args):
    import triton

    res.doc["info"]["triton"] = triton.__version__
    mod = _module_from_source(TRITON_SOURCE, "launch")
    fns = {0: mod.launch0, 4: mod.launch4, 16: mod.launch16}
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for n, fn in fns.items():
            fn[(1,)](*py_args[n])  # compile outside the timing
    stream.synchronize()

    def variant(n):
        fn, a = fns[n], py_args[n]

        def go():
            with torch.cuda.stream(stream):
                for _ in range(PER_BATCH):
                    fn[(1,)](*a)
            stream.synchronize()
        return go
    return variant


def cuda_core_variant(res):
    import numpy as np

    try:
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    import cuda.core

    res.doc["info"]["cuda.core"] = getattr(cuda.core, "__version__", "?")
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    cc = dev.compute_capability
    prog = Program(open(os.path.join(CUDA_DIR, "launch.cu")).read(), "c++",
                   ProgramOptions(arch=f"sm_{cc[0]}{cc[1]}", std="c++17"))
    module = prog.compile("cubin", name_expressions=("launch0", "launch4", "launch16"))
    ks = {n: module.get_kernel(f"launch{n}") for n in (0, 4, 16)}
    bufs = [dev.allocate(64, stream=stream) for _ in range(4)]
    ptrs = bufs  # cuda.core passes a Buffer as its device pointer (1.2 refuses ctypes.c_void_p)
    args = {0: (), 4: (ptrs[0], np.float32(1.5), np.uint32(7), np.int32(-3)),
            16: (*ptrs, np.float32(1.5), np.float32(2.5), np.float64(3.0), np.float64(4.0), np.int32(-1), np.int32(2),
                 np.uint32(3), np.uint32(4), np.int64(-5), np.uint64(6), np.uint64(7), np.uint32(0))}
    config = LaunchConfig(grid=1, block=32)
    for n in (0, 4, 16):
        launch(stream, config, ks[n], *args[n])
    stream.sync()

    def variant(n):
        k, a = ks[n], args[n]

        def go():
            for _ in range(PER_BATCH):
                launch(stream, config, k, *a)
            stream.sync()
        return go
    variant.keep = (bufs, prog, module)
    return variant


def bench_launch(res, rounds):
    variants, rt = launch_variants(res)
    names = list(variants)
    for n in (0, 4, 16):
        fns = {}
        for name in names:
            try:
                fns[name] = variants[name](n)
                fns[name]()  # warm-up batch
            except Exception as e:  # noqa: BLE001
                res.error(f"launch.{name}.args{n}", e)
        samples = {name: [] for name in fns}
        for r in range(rounds):
            order = list(fns)[r % len(fns):] + list(fns)[:r % len(fns)]  # rotate who goes first
            for name in order:
                t0 = time.perf_counter_ns()
                fns[name]()
                samples[name].append((time.perf_counter_ns() - t0) / PER_BATCH)
        base = samples.get("cupy")
        for name, values in samples.items():
            extra = {"args": n, "variant": name}
            if base is not None:
                extra["ratio_to_cupy"] = statistics.median(v / b for v, b in zip(values, base))
            row = res.add(f"launch.args{n}.{name}", "ns", values, **extra)
            if "ratio_to_cupy" in row:
                print(f"    ratio to CuPy (paired, median of rounds): {row['ratio_to_cupy']:.3f}")


# ---------------------------------------------------------------- packer

def bench_packer(res, rounds):
    """Host ns per launch of a Launcher specialised to its arguments' types (one struct call) against
    the same Launcher packing argument by argument, on any driver (the stand-in too: no PyTorch)."""
    import numpy as np
    import ptxgate
    from ptxgate import runtime as R

    rt = ptxgate.Runtime()
    res.doc["info"].setdefault("device", rt.name)
    ks = {n: rt.compile(os.path.join(KERNELS, f"launch{n}.pg"), f"launch{n}") for n in (4, 16)}
    s = rt.stream()
    b = [rt.zeros(16, "f32") for _ in range(4)]
    cases = {"args4 numpy": (4, (b[0], np.float32(1.5), np.uint32(7), np.int32(-3))),
             "args4 python": (4, (b[0], 1.5, 7, -3)),
             "args16 numpy": (16, (*b, np.float32(1.5), np.float32(2.5), np.float64(3.0), np.float64(4.0),
                                  np.int32(-1), np.int32(2), np.uint32(3), np.uint32(4), np.int64(-5), np.uint64(6),
                                  np.uint64(7), np.uint32(0)))}
    for label, (n, args) in cases.items():
        launchers = {}
        for name, packers in (("packed", 0), ("per-argument", 99), ("per-argument (A/A)", 99)):
            launchers[name] = R.Launcher(ks[n], 1, 32, s)
            launchers[name]._packers_made = packers
            for _ in range(10):
                launchers[name](*args)
        samples = {name: [] for name in launchers}
        for r in range(rounds):
            names = list(launchers)
            for name in names[r % 3:] + names[:r % 3]:
                t0 = time.perf_counter_ns()
                for _ in range(PER_BATCH):
                    launchers[name](*args)
                s.synchronize()
                samples[name].append((time.perf_counter_ns() - t0) / PER_BATCH)
        base = samples["per-argument"]
        for name, values in samples.items():
            res.add(f"packer.{label}.{name}", "ns", values, variant=name,
                    ratio_to_per_argument=statistics.median(v / b for v, b in zip(values, base)))


# ---------------------------------------------------------------- graph

BUMP = """
@workgroup(256)
kernel bump(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] + 1.0; }
}
"""
KERNELS_PER_GRAPH = 100
N = 1024


def measure_replays(replay, sync, batches):
    host = []
    for b in range(batches + 3):
        t0 = time.perf_counter_ns()
        replay()
        t1 = time.perf_counter_ns()
        sync()
        if b >= 3:
            host.append((t1 - t0) / KERNELS_PER_GRAPH)
    return host


def bench_graph(res, batches):
    import numpy as np
    import ptxgate
    import torch

    rt = ptxgate.Runtime()
    k = rt.compile(BUMP, "bump")
    s = rt.stream()
    # ptxgate over its own Buffers (tracked) and over a PyTorch tensor (a raw pointer).
    y = rt.zeros(N, "f32")
    t = torch.zeros(N, device="cuda")
    runs = {}
    for label, target in (("ptxgate (Buffer)", y), ("ptxgate (torch tensor)", t)):
        g = rt.graph()
        with g:
            for _ in range(KERNELS_PER_GRAPH):
                k[(N + 255) // 256, 256](target, N)
        x = g.instantiate()
        runs[label] = (x, target)
    tg = torch.zeros(N, device="cuda")
    ts = torch.cuda.Stream()
    ts.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(ts):
        for _ in range(3):
            tg.add_(1.0)
    torch.cuda.current_stream().wait_stream(ts)
    torch.cuda.synchronize()
    tg.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(KERNELS_PER_GRAPH):
            tg.add_(1.0)
    torch.cuda.synchronize()
    tg.zero_()
    torch.cuda.synchronize()
    samples = {}
    for r in range(3):  # alternate whole measurements
        for label, (x, target) in runs.items():
            samples.setdefault(label, []).extend(measure_replays(lambda: x.replay(s), s.synchronize, batches))
        samples.setdefault("torch.cuda.CUDAGraph", []).extend(
            measure_replays(graph.replay, torch.cuda.synchronize, batches))
    replays = 3 * (batches + 3)
    want = float(replays * KERNELS_PER_GRAPH)
    checks = {"ptxgate (Buffer)": float(y.numpy()[0]), "ptxgate (torch tensor)": float(t[0]),
              "torch.cuda.CUDAGraph": float(tg[0])}
    torch_median = statistics.median(samples["torch.cuda.CUDAGraph"])
    for label, values in samples.items():
        ok = checks[label] == want and bool(np.all((y.numpy() if label.endswith("(Buffer)") else
                                                    (t if "tensor" in label else tg).cpu().numpy()) == want))
        res.add(f"graph.replay_per_kernel.{label}", "ns", values, result_checked=ok, value=checks[label], expected=want,
                ratio_to_torch=statistics.median(values) / torch_median)


# ---------------------------------------------------------------- first launch

FIRST = {
    "ptxgate": r'''
import os, sys, time
t0 = time.perf_counter()
import ptxgate
t1 = time.perf_counter()
rt = ptxgate.Runtime(cache_dir=os.environ["FRESH_CACHE"])
x = rt.zeros(1 << 20, "f32"); y = rt.zeros(1 << 20, "f32")
rt.synchronize()
t2 = time.perf_counter()
src = """
@workgroup(256)
kernel saxpy_SEED(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = a * x[i] + y[i] + SEED.0; }
}
""".replace("SEED", os.environ["SEED"])
k = rt.compile(src, "saxpy_" + os.environ["SEED"])
k[(1 << 20) // 256, 256](y, x, 2.0, 1 << 20)
rt.synchronize()
t3 = time.perf_counter()
assert float(y.numpy()[7]) == float(os.environ["SEED"])
print(t1 - t0, t2 - t1, t3 - t2)
''',
    "cupy (NVRTC)": r'''
import os, time
t0 = time.perf_counter()
import cupy as cp
t1 = time.perf_counter()
x = cp.zeros(1 << 20, dtype=cp.float32); y = cp.zeros(1 << 20, dtype=cp.float32)
cp.cuda.Device().synchronize()
t2 = time.perf_counter()
seed = os.environ["SEED"]
src = ('extern "C" __global__ void saxpy_%s(float* y, const float* x, float a, unsigned n) {'
       ' unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i] + %s.0f; }') % (seed, seed)
k = cp.RawKernel(src, "saxpy_" + seed)
k(((1 << 20) // 256,), (256,), (y, x, cp.float32(2.0), cp.uint32(1 << 20)))
cp.cuda.Device().synchronize()
t3 = time.perf_counter()
assert float(y[7]) == float(seed)
print(t1 - t0, t2 - t1, t3 - t2)
''',
    "triton": r'''
import os, sys, time, importlib.util, tempfile
t0 = time.perf_counter()
import torch, triton, triton.language as tl
t1 = time.perf_counter()
x = torch.zeros(1 << 20, device="cuda"); y = torch.zeros(1 << 20, device="cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
seed = os.environ["SEED"]
src = """
import triton, triton.language as tl
@triton.jit
def saxpy(y, x, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs, a * tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m) + SEED.0, mask=m)
""".replace("SEED", seed)
d = tempfile.mkdtemp(); p = os.path.join(d, "k%s.py" % seed); open(p, "w").write(src)
spec = importlib.util.spec_from_file_location("k" + seed, p); mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mod.saxpy[((1 << 20) // 1024,)](y, x, 2.0, 1 << 20, BLOCK=1024)
torch.cuda.synchronize()
t3 = time.perf_counter()
assert float(y[7]) == float(seed)
print(t1 - t0, t2 - t1, t3 - t2)
''',
}


def bench_first(res, reps):
    import random

    for name, script in FIRST.items():
        parts = {"import": [], "device": [], "compile+launch": [], "total": []}
        try:
            for i in range(reps):
                cache = tempfile.mkdtemp(prefix="pg_first_")
                env = dict(os.environ, SEED=str(random.randint(1, 10 ** 6)), FRESH_CACHE=cache, CUPY_CACHE_DIR=cache,
                           TRITON_CACHE_DIR=cache, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
                out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
                if out.returncode != 0:
                    raise RuntimeError(out.stderr[-2000:])
                a, b, c = (float(v) * 1e3 for v in out.stdout.split()[-3:])
                parts["import"].append(a)
                parts["device"].append(b)
                parts["compile+launch"].append(c)
                parts["total"].append(a + b + c)
            for part, values in parts.items():
                res.add(f"first.{name}.{part}", "ms", values, framework=name)
        except Exception as e:  # noqa: BLE001
            res.error(f"first.{name}", e)


def markdown(doc):
    lines = ["# Python benchmarks", "", f"device: {doc['info'].get('device', '?')}; "
             + ", ".join(f"{k} {v}" for k, v in doc["info"].items() if k != "device"), ""]
    lines += ["| measurement | median | p10 | p90 | notes |", "|---|---|---|---|---|"]
    for r in doc["rows"]:
        notes = []
        for key in ("ratio_to_cupy", "ratio_to_torch", "ratio_to_per_argument"):
            if key in r:
                notes.append(f"{key.replace('_', ' ')} {r[key]:.3f}")
        if "result_checked" in r:
            notes.append("result checked" if r["result_checked"] else f"RESULT WRONG ({r['value']} != {r['expected']})")
        lines.append(f"| {r['name']} | {r['median']:.1f} {r['unit']} | {r['p10']:.1f} | {r['p90']:.1f} | {'; '.join(notes)} |")
    for e in doc["errors"]:
        lines.append(f"\nFAILED {e['step']}: {e['message']}")
    return "\n".join(lines) + "\n"


def main():
    global PER_BATCH
    ap = argparse.ArgumentParser(description="ptxgate from Python against CuPy, Triton, cuda.core and PyTorch")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--parts", default="launch,graph,first")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--per-batch", type=int, default=1000)
    ap.add_argument("--graph-batches", type=int, default=200)
    ap.add_argument("--first-reps", type=int, default=3)
    a = ap.parse_args()
    PER_BATCH = a.per_batch
    res = Results(a.out)
    parts = a.parts.split(",")
    steps = {"launch": lambda: bench_launch(res, a.rounds), "graph": lambda: bench_graph(res, a.graph_batches),
             "first": lambda: bench_first(res, a.first_reps), "packer": lambda: bench_packer(res, a.rounds)}
    for part in parts:
        print(f"== {part}", flush=True)
        try:
            steps[part]()
        except Exception as e:  # noqa: BLE001
            res.error(part, e)
    with open(os.path.join(a.out, "python_bench.md"), "w") as f:
        f.write(markdown(res.doc))
    return 0 if not res.doc["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
