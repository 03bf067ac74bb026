#!/usr/bin/env python3
"""Host instructions per launch from Python, on a CPU machine: the ctypes path (the Python Launcher)
against the C extension's (python/ext/launch.c), over the test build's stand-in libcuda, counted by
callgrind (load-independent, unlike wall time on a shared machine). Each loop of launches runs
inside one call of PyFile_WriteObject (``print`` of an object whose __str__ runs the loop), which
callgrind counts alone (--toggle-collect) and dumps after each call (--dump-after); each case and
path runs N and 3N launches, and instructions per launch are the difference / 2N (the print's own
cost cancels). Cases: the 0/4/16-argument probes (bench/kernels/launch*.pg) with ptxgate Buffers and
numpy scalars (python_bench.py passes CuPy's arrays and numpy scalars), and with Python scalars.
Re-runs itself under valgrind; prints a table (and --json FILE).

    BUILD_DIR=build N=2000 python3 bench/python_launch_instructions.py [--json FILE]
"""
import argparse
import glob
import io
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = ("ctypes", "extension")
CASES = ("args0", "args4_numpy", "args4_python", "args16_numpy", "args16_python")
SIZES = (1, 3)  # N and 3N launches per case and path


class Loop:
    """print(Loop(...)) runs the launches inside PyFile_WriteObject."""

    def __init__(self, launcher, args, n):
        self.launcher, self.args, self.n = launcher, args, n

    def __str__(self):
        launcher, args = self.launcher, self.args
        for _ in range(self.n):
            launcher(*args)
        return ""


def cases(rt, np):
    """case -> (probe, arguments)."""
    bufs = [rt.zeros(16, "f32") for _ in range(4)]
    return {
        "args0": ("launch0", ()),
        "args4_numpy": ("launch4", (bufs[0], np.float32(1.5), np.uint32(7), np.int32(-3))),
        "args4_python": ("launch4", (bufs[0], 1.5, 7, -3)),
        "args16_numpy": ("launch16", (*bufs, np.float32(1.5), np.float32(2.5), np.float64(3.0), np.float64(4.0),
                                      np.int32(-1), np.int32(2), np.uint32(3), np.uint32(4), np.int64(-5),
                                      np.uint64(6), np.uint64(7), np.uint32(0))),
        "args16_python": ("launch16", (*bufs, 1.5, 2.5, 3.0, 4.0, -1, 2, 3, 4, -5, 6, 7, 0)),
    }


def run_loops(n):
    """Inside valgrind: every case and path, N then 3N launches, each loop in one print."""
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import ptxgate
    from ptxgate import _native, runtime as R

    if _native.module() is None:
        sys.exit(f"python_launch_instructions: the launch extension is not used: {_native.reason}")
    rt = ptxgate.Runtime()
    kernels = {n_: rt.compile(os.path.join(ROOT, "bench", "kernels", f"{n_}.pg"), n_)
               for n_ in ("launch0", "launch4", "launch16")}
    stream = rt.stream()
    sink = io.StringIO()
    for case, (probe, args) in cases(rt, np).items():
        for path in PATHS:
            py = R.Launcher(kernels[probe], 1, 32, stream)
            launcher = py if path == "ctypes" else _native.wrap(py)
            for _ in range(20):  # warm: packers made, types classified
                launcher(*args)
            for k in SIZES:
                print(Loop(launcher, args, k * n), file=sink, end="")
            if path == "extension":
                assert launcher.handed_over == 0, case
    stream.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    n = int(os.environ.get("N", "2000"))
    if a.inside:
        run_loops(n)
        return
    build = os.path.abspath(os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    fake = os.path.join(build, "tests", "libptxgate_fake_cuda.so")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, PTXGATE_CUDA_DRIVER=fake, PTXGATE_LIBRARY=os.path.join(build, "libptxgate.so"),
                   PTXGATE_CACHE_DIR=os.path.join(tmp, "cache"))
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                              "--toggle-collect=PyFile_WriteObject", "--dump-after=PyFile_WriteObject",
                              sys.executable, os.path.abspath(__file__), "--inside"], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"python_launch_instructions: the run under valgrind failed:\n{run.stdout}{run.stderr[-4000:]}")
        totals = []
        for path in sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])):
            with open(path) as f:
                for line in f:
                    if line.startswith("totals:"):
                        value = int(line.split()[1])
                        if value > 100000:  # a loop's dump (not the print of its empty end)
                            totals.append(value)
    expected = len(CASES) * len(PATHS) * len(SIZES)
    if len(totals) != expected:
        sys.exit(f"python_launch_instructions: {len(totals)} loop dumps, expected {expected}")
    per = {}
    it = iter(totals)
    for case in CASES:
        for path in PATHS:
            small, large = next(it), next(it)
            per[(path, case)] = (large - small) / ((SIZES[1] - SIZES[0]) * n)
    rows = []
    print(f"{'case':<15} {'ctypes':>10} {'extension':>10} {'saved':>8} {'ratio':>7}  instructions per launch (N={n})")
    for case in CASES:
        c, e = per[("ctypes", case)], per[("extension", case)]
        rows.append({"case": case, "ctypes": c, "extension": e})
        print(f"{case:<15} {c:>10.0f} {e:>10.0f} {c - e:>8.0f} {e / c:>7.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": n, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
