#!/usr/bin/env python3
"""Data-parallel linear regression from Python (the C++ examples/data_parallel, in Python): the
.pg kernels of examples/linreg.pg, each GPU holding a slice of the rows, the gradient (fixed point,
i64) all-reduced with NCCL every step, so N GPUs give bit for bit the weights of one.

Two ways to drive the GPUs:
  --mode process   one process drives every GPU: a DeviceSet, Communicator.init_all, and the
                   all-reduces of every rank issued together (ptxgate.nccl.group)
  --mode ranks     one process per GPU (spawned here), the NCCL unique id passed through
                   torch.distributed's TCPStore (Communicator.from_store)
Both check the result against the same steps on one GPU without NCCL. Exit 0 when the weights are
equal, 1 otherwise, 77 without a GPU (or fewer than --gpus).

    python3 examples/python/data_parallel.py [--gpus N] [--mode process|ranks] [--rows R] [--steps S]
"""
import argparse
import os
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(os.path.dirname(HERE), "linreg.pg")


class Replica:
    """One GPU's rows, weights and gradient."""

    def __init__(self, rt, first, rows, features):
        self.rt, self.first, self.rows = rt, first, rows
        self.stream = rt.stream()
        self.x = rt.empty(rows * features, "f32")
        self.y = rt.empty(rows, "f32")
        self.w = rt.empty(features, "f64")
        self.grad = rt.empty(features + 1, "i64")
        self.data_k = rt.compile(KERNELS, "linreg_data")
        self.grad_k = rt.compile(KERNELS, "linreg_grad")
        self.update_k = rt.compile(KERNELS, "linreg_update")
        self.data_k[(rows + 255) // 256, 256, self.stream](self.x, self.y, first, rows, features)
        self.w.fill(0, stream=self.stream)


def slices(rows, n):
    return [(rows * k // n, rows * (k + 1) // n - rows * k // n) for k in range(n)]


def run(replicas, comms, a):
    """`a.steps` steps; returns (weights as bytes, [step ms], [loss])."""
    import ptxgate

    features = a.features
    for r in replicas:
        r.stream.synchronize()
    times, losses = [], []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        for r in replicas:
            r.grad.fill(0, stream=r.stream)
            r.grad_k[(r.rows + 255) // 256, 256, r.stream](r.grad, r.x, r.y, r.w, r.rows, features)
        if comms:
            if len(comms) > 1:  # one thread drives several ranks: their calls go out as one group
                with ptxgate.nccl.group():
                    for c, r in zip(comms, replicas):
                        c.all_reduce(r.grad, stream=r.stream)
            else:
                comms[0].all_reduce(replicas[0].grad, stream=replicas[0].stream)
        for r in replicas:
            r.update_k[1, 256, r.stream](r.w, r.grad, a.rate, a.rows, features)
        for k, r in enumerate(replicas):
            comms[k].synchronize(r.stream) if comms else r.stream.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(int(replicas[0].grad.numpy()[features]) / 16777216.0 / a.rows / 2)
    weights = [r.w.numpy().tobytes() for r in replicas]
    if any(w != weights[0] for w in weights[1:]):
        raise RuntimeError("the replicas' weights differ")
    return weights[0], times, losses


def report(label, result, gpus):
    weights, times, losses = result
    steady = sorted(times[1:] or times)[len(times[1:] or times) // 2]
    w = struct.unpack(f"<{len(weights) // 8}d", weights)
    print(f"{label}: median step {steady:.3f} ms (steps 2..{len(times)}), final loss {losses[-1]:.6g}, "
          f"weights {' '.join(f'{v:.9f}' for v in w[:4])}{' ...' if len(w) > 4 else ''}")
    return steady


def single(a):
    """The same steps on GPU 0 alone, without NCCL."""
    import ptxgate

    rt = ptxgate.Runtime(0)
    return run([Replica(rt, 0, a.rows, a.features)], [], a)


def process_mode(a, gpus):
    import ptxgate

    ds = ptxgate.DeviceSet(list(range(gpus)))
    print(f"data_parallel (one process): {ds!r}, peer access "
          f"{[[ds.peer_enabled(i, j) for j in range(gpus)] for i in range(gpus)]}")
    replicas = [Replica(rt, first, rows, a.features) for rt, (first, rows) in zip(ds, slices(a.rows, gpus))]
    comms = ptxgate.Communicator.init_all(list(ds))
    print(f"  {comms}")
    return run(replicas, comms, a)


def rank_main(a):
    """One rank of --mode ranks (a process of its own)."""
    import ptxgate
    import torch.distributed as dist

    rank, world = a.rank, a.world
    store = dist.TCPStore("127.0.0.1", a.port, world, rank == 0, wait_for_workers=True)
    rt = ptxgate.Runtime(rank)
    comm = ptxgate.Communicator.from_store(rt, store, rank, world)
    first, rows = slices(a.rows, world)[rank]
    result = run([Replica(rt, first, rows, a.features)], [comm], a)
    if rank == 0:
        with open(a.out, "wb") as f:
            f.write(result[0])
        report(f"  rank 0 of {world} ({comm!r})", result, world)
    store.set(f"done{rank}", "1")
    return 0


def ranks_mode(a, gpus):
    import tempfile

    out = tempfile.mktemp(prefix="pg_dp_weights_")
    port = 29500 + os.getpid() % 1000
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--world", str(gpus), "--port", str(port),
                               "--out", out, "--rows", str(a.rows), "--features", str(a.features), "--steps",
                               str(a.steps), "--rate", str(a.rate)], env=env) for r in range(gpus)]
    codes = [p.wait(timeout=600) for p in procs]
    if any(codes):
        raise RuntimeError(f"a rank failed: exit codes {codes}")
    with open(out, "rb") as f:
        weights = f.read()
    os.unlink(out)
    return weights


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=0, help="GPUs (0: every GPU)")
    ap.add_argument("--mode", choices=("process", "ranks"), default="process")
    ap.add_argument("--rows", type=int, default=1 << 22)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rate", type=float, default=1.5)
    ap.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=29500, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
    import ptxgate

    if a.rank >= 0:
        return rank_main(a)
    listing = ptxgate.devices()
    count = len(listing["devices"])
    if not listing["driver_available"] or count == 0:
        print("SKIPPED: data_parallel: no GPU")
        return 77
    gpus = a.gpus or count
    if gpus > count:
        print(f"SKIPPED: data_parallel: needs {gpus} GPUs, this machine has {count}")
        return 77
    print(f"data_parallel: linear regression, {a.rows} rows x {a.features} features, {a.steps} steps, rate {a.rate}, "
          f"{gpus} GPU{'s' if gpus > 1 else ''}, mode {a.mode}")
    if a.mode == "process":
        result = process_mode(a, gpus)
        parallel = report(f"  {gpus} GPU{'s' if gpus > 1 else ''}", result, gpus)
        weights = result[0]
    else:
        weights = ranks_mode(a, gpus)
        parallel = None
    reference = single(a)
    one = report("  1 GPU, no NCCL", reference, 1)
    equal = reference[0] == weights
    if parallel:
        print(f"  speed-up on {gpus} GPUs: {one / parallel:.2f}x")
    print(f"data_parallel: equal to the single-GPU result: {'yes (every weight bit for bit)' if equal else 'NO'}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
