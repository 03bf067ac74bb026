#!/usr/bin/env python3
"""CUDA-graph replay of 100 small kernels in CuPy and PyTorch: host time per kernel of one replay.

The peers of ptxgate_programs_bench's "graph replay" rows (issue 12 item 9). Each framework is
skipped with its reason when it is not installed or has no GPU. Usage: graph_replay_peers.py [BATCHES]
"""
import statistics
import sys
import time

KERNELS = 100
N = 1024


def measure(replay, sync, batches):
    """Median host ns per kernel of one replay; the stream is drained untimed between replays."""
    host = []
    for b in range(batches + 3):
        t0 = time.perf_counter_ns()
        replay()
        t1 = time.perf_counter_ns()
        sync()
        if b >= 3:
            host.append((t1 - t0) / KERNELS)
    return statistics.median(host)


def torch_graph(batches):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device")
    y = torch.zeros(N, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(KERNELS):
            y.add_(1.0)
    return measure(g.replay, torch.cuda.synchronize, batches)


def cupy_graph(batches):
    import cupy as cp
    y = cp.zeros(N, dtype=cp.float32)
    add_one = cp.ElementwiseKernel("", "float32 y", "y += 1.0f", "add_one")
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        add_one(y)
        s.synchronize()
        s.begin_capture()
        for _ in range(KERNELS):
            add_one(y)
        g = s.end_capture()
    return measure(lambda: g.launch(s), s.synchronize, batches)


def main():
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for name, run in (("PyTorch CUDA graph replay", torch_graph), ("CuPy CUDA graph replay", cupy_graph)):
        try:
            print(f"  {name:<28} host {run(batches):8.1f} ns/kernel", flush=True)
        except Exception as e:  # a missing framework or GPU is a skip, not a failure
            print(f"  {name:<28} SKIPPED: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
