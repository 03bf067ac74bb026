#!/usr/bin/env python3
"""Merges the benchmark parts into bench_results.json and bench_results.md (ratios against targets) and draws plots.

Inputs: the JSON result files of ptxgate_gpu_bench and peers.py, and env.json (device, driver, clocks,
versions). Every ratio is computed from numbers measured in the same run; targets are compared, never assumed.
"""
import argparse
import glob
import json
import os
import sys

# (measurement, baseline, relation, target, goal, meaning): "ratio" = measurement.median / baseline.median;
# "speedup" = baseline.median / measurement.median; "paired" = the measurement row's own median, a ratio
# measured batch by batch against the baseline.
ARGS = ("args0", "args4", "args16")


def comparisons():
    c = []
    for a in ARGS:
        c += [
            # Targets on host time per launch, as paired ratios: each raw launch is timed next to one
            # launch of the variant (order alternating), a batch's ratio is the variant's summed time
            # over raw's, and the row is the median over batches; bursts of host noise hit both sides.
            # The back-to-back times (batches up to the end of a synchronise) are kept as info.
            # The targets are README's (steady <= 1.02, a new grid <= 1.15); the A/A control (raw against raw,
            # paired the same way) shows what the method gives with nothing to tell apart.
            (f"launch.raw_over_raw.{a}", f"launch.raw.{a}", "paired", None, None,
             "A/A control: raw cuLaunchKernel / raw cuLaunchKernel, paired launch by launch as the rows below"),
            (f"launch.guarded_over_raw.{a}", f"launch.raw.{a}", "paired", 1.02, "<=",
             "host time: guarded steady launch (launch_cuda_function, cached verdict) / raw cuLaunchKernel, paired launch by launch"),
            (f"launch.kernel_api_over_raw.{a}", f"launch.raw.{a}", "paired", 1.02, "<=",
             "host time: Kernel::launch (typed args, steady) / raw cuLaunchKernel, paired launch by launch"),
            (f"launch.first_validated_over_raw.{a}", f"launch.raw.{a}", "paired", 1.15, "<=",
             "host time: Kernel::launch with a new grid (fresh validation) every launch / raw cuLaunchKernel, paired launch by launch"),
            (f"launch.guarded.{a}", f"launch.raw.{a}", "ratio", None, None, "back to back: guarded steady / raw"),
            (f"launch.kernel_api.{a}", f"launch.raw.{a}", "ratio", None, None, "back to back: Kernel::launch / raw"),
            (f"launch.first_validated.{a}", f"launch.raw.{a}", "ratio", None, None,
             "back to back: first validated / raw"),
            (f"launch.first_validated.{a}", f"launch.raw_grid_cycle.{a}", "ratio", None, None,
             "first validated / raw with the same cycling grids"),
            (f"launch.fresh_function.{a}", f"launch.raw.{a}", "ratio", None, None,
             "resolve a new LoadedFunction (4 attribute queries) + first launch / raw"),
            (f"launch.cupy.{a}", f"launch.raw.{a}", "ratio", None, None, "CuPy RawKernel / raw"),
            (f"launch.triton.{a}", f"launch.raw.{a}", "ratio", None, None, "Triton / raw"),
            (f"launch.graph_1node_replay.{a}", f"launch.raw.{a}", "ratio", None, None,
             "cuGraphLaunch of a 1-node graph / raw"),
            (f"launch.graph_nodes_amortised.{a}", f"launch.raw.{a}", "ratio", None, None,
             "per node of one graph of N launches / raw"),
        ]
    for k in ("saxpy", "copy", "block_sum", "matmul"):
        c += [
            (f"compile.ptx.{k}", f"compile.nvrtc_ptx.{k}", "speedup", 5.0, ">=",
             "NVRTC (CUDA C++ -> PTX) time / ptxgate text -> PTX time"),
            (f"compile.ptx.{k}", f"compile.ptx_llvm_o3.{k}", "speedup", None, None,
             "text -> PTX with LLVM's O3 pipeline / with ptxgate's kernel pipeline"),
            # The compile target is the compiler's own work (text -> PTX); PTX -> cubin is NVIDIA's
            # ptxas for both (NVRTC runs it in-process, ptxgate as a child process), reported as is.
            (f"compile.cubin.{k}", f"compile.nvrtc_cubin.{k}", "speedup", None, None,
             "NVRTC (-> cubin) time / ptxgate text -> cubin (PTX + ptxas process) time"),
            (f"compile.cubin.{k}", f"compile.triton_cold.{k}", "speedup", None, None,
             "Triton cold compile + first launch / ptxgate text -> cubin"),
            (f"compile.disk_hit_runtime.{k}", f"compile.nvrtc_cubin.{k}", "speedup", None, None,
             "NVRTC cubin / ptxgate disk hit in a fresh process (incl. module load)"),
        ]
    # Issue 17, in one process (ptxgate_gpu_bench compile-compare): text -> PTX against NVRTC on every kernel
    # with a CUDA C++ twin, the rounds interleaved; and the cold path, text -> loaded module in a fresh Runtime.
    # Issue 29's targets: text -> PTX >= 5x NVRTC's on the small kernels, >= 3x on every other; the cold first
    # load (text -> loaded module) not slower than NVRTC -> cubin -> load, beside CuPy's first RawModule call.
    for k in TWINS:
        c.append((f"compile_cmp.ptx.{k}", f"compile_cmp.nvrtc_ptx.{k}", "speedup", 5.0 if k in SMALL_TWINS else 3.0,
                  ">=", "NVRTC (CUDA C++ -> PTX) / ptxgate text -> PTX, interleaved in one process"))
        c.append((f"compile_cmp.cubin.{k}", f"compile_cmp.nvrtc_cubin.{k}", "speedup", 1.0, ">=",
                  "NVRTC (-> cubin) / ptxgate text -> cubin (ptxas process)"))
    # Issue 29's target 5: ptxas's child CPU time on ptxgate's PTX not above its time on nvcc's PTX of the twin (the
    # same ptxas and options, in rounds of rotating order); a ratio above 1 by less than the A/A control's distance
    # from 1 is a tie (see evaluate).
    for k in TWINS:
        c.append((f"compile_cmp.ptxas_pg_cpu.{k}", f"compile_cmp.ptxas_twin_cpu.{k}", "ratio", 1.0, "<=",
                  "ptxas child CPU on ptxgate's PTX / on nvcc's PTX of the twin (same ptxas, same options)",
                  f"compile_cmp.ptxas_twin_again_cpu.{k}"))
        c.append((f"compile_cmp.ptxas_twin_again_cpu.{k}", f"compile_cmp.ptxas_twin_cpu.{k}", "ratio", None, None,
                  "A/A control: ptxas on the twin's PTX again / on the twin's PTX, in the same rounds"))
    # Issue 29's target 4: text -> PTX of the generated kernels grows at most 2.1x per doubling of their size.
    for small in SCALING[:-1]:
        c.append((f"compile_cmp.ptx_cpu.generated_{2 * small}", f"compile_cmp.ptx_cpu.generated_{small}", "ratio", 2.1,
                  "<=", f"text -> PTX CPU time, generated kernel of {2 * small} / of {small} statements"))
    for k in TWINS:
        c += [
            (f"compile.cold_cubin_load.{k}", f"compile.nvrtc_cubin_load.{k}", "ratio", 1.0, "<=",
             "cold text -> loaded module, ptxas cubin / NVRTC -> cubin -> load"),
            (f"compile.cold_jit_load.{k}", f"compile.nvrtc_cubin_load.{k}", "ratio", 1.0, "<=",
             "cold text -> loaded module, driver JIT of the PTX / NVRTC -> cubin -> load"),
            (f"compile.cold_cubin_load.{k}", f"compile.cupy_first.{k}", "ratio", None, None,
             "cold text -> loaded module, ptxas cubin / CuPy RawModule first call (compile + load)"),
        ]
    for k in ("copy", "saxpy", "copy4", "saxpy4"):
        # The targets against memcpy apply to the four-elements-per-thread kernels; one element per
        # thread has too few loads in flight per SM to reach the memory system's rate (nvcc's twin
        # measures the same), and is reported for reference.
        four = k.endswith("4")
        c += [
            (f"kernel.{k}.ptxgate", f"kernel.{k}.nvcc", "ratio", 0.95, ">=", "GB/s ptxgate / GB/s nvcc twin"),
            (f"kernel.{k}.ptxgate", "kernel.memcpy_dtod", "ratio", 0.90 if four else None, ">=" if four else None,
             "GB/s ptxgate / GB/s cuMemcpyDtoD" + ("" if four else " (one element per thread)")),
            (f"kernel.{k}.nvcc", "kernel.memcpy_dtod", "ratio", None, None, "GB/s nvcc twin / GB/s cuMemcpyDtoD"),
        ]
    c += [
        ("kernel.block_sum.ptxgate", "kernel.block_sum.nvcc", "ratio", 0.95, ">=", "GB/s ptxgate / GB/s nvcc twin"),
        ("kernel.block_sum.ptxgate", "kernel.memcpy_dtod", "ratio", None, None, "read GB/s / memcpy GB/s"),
        # Issue 13: a sum reduction at >= 0.9x device-to-device memcpy bandwidth (warp shuffles).
        ("kernel.warp_sum.ptxgate", "kernel.memcpy_dtod", "ratio", 0.90, ">=", "read GB/s (warp shuffles) / memcpy GB/s"),
        ("kernel.warp_sum.ptxgate", "kernel.warp_sum.nvcc", "ratio", 0.95, ">=", "GB/s ptxgate / GB/s nvcc twin"),
        ("kernel.matmul.ptxgate", "kernel.matmul.nvcc", "ratio", None, None, "GFLOP/s ptxgate / GFLOP/s nvcc twin"),
    ]
    # Issue 13's workloads (ptxgate_gpu_bench workloads; the library rows from peers.py --steps workloads).
    for w, unit in WORKLOADS:
        memcpy_target, library_target = WORKLOAD_TARGETS.get(w, (None, None))
        c += [
            (f"workload.{w}.ptxgate", f"workload.{w}.nvcc", "ratio", 0.95, ">=", f"{unit} ptxgate / {unit} nvcc twin"),
            (f"workload.{w}.ptxgate", f"workload.{w}.torch", "ratio", library_target, ">=" if library_target else None,
             f"{unit} ptxgate / {unit} {LIBRARY[w]}"),
        ]
        if w == "gemm_bf16":  # issue 16: the algorithm itself (nvcc's build of it) against cuBLAS
            c.append((f"workload.{w}.nvcc", f"workload.{w}.torch", "ratio", library_target, ">=",
                      f"{unit} nvcc twin / {unit} {LIBRARY[w]}"))
        if unit == "GB/s":
            c.append((f"workload.{w}.ptxgate", "workload.memcpy_dtod", "ratio", memcpy_target,
                      ">=" if memcpy_target else None, "GB/s ptxgate / GB/s cuMemcpyDtoD (2^28 f32)"))
    return c


# The kernels with a CUDA C++ twin in bench/cuda (compile-compare's NVRTC rows).
TWINS = ("saxpy", "copy", "block_sum", "matmul", "copy4", "saxpy4", "warp_sum", "softmax", "layer_norm", "axpy_half",
         "bfs", "sgemm", "gemm_bf16_mma", "gemm_bf16_wgmma")
# Issue 29's small kernels (text -> PTX >= 5x NVRTC's).
SMALL_TWINS = ("saxpy", "copy", "block_sum", "copy4", "saxpy4")
# Statement counts of compile-compare's generated kernels (--scaling), each doubling gated (issue 29's target 4).
SCALING = (250, 500, 1000, 2000)

# The workloads, their unit and the library a user would pick instead.
WORKLOADS = (("sum", "GB/s"), ("softmax", "GB/s"), ("layer_norm", "GB/s"), ("axpy_f16", "GB/s"),
             ("axpy_bf16", "GB/s"), ("bfs", "GTEPS"), ("sgemm", "GFLOP/s"), ("gemm_bf16", "GFLOP/s"),
             ("gemm_bf16_mma", "GFLOP/s"))
LIBRARY = {"sum": "torch.sum", "softmax": "torch.softmax", "layer_norm": "F.layer_norm",
           "axpy_f16": "torch y.add_(x, alpha=a)", "axpy_bf16": "torch y.add_(x, alpha=a)", "bfs": "(none)",
           "sgemm": "torch.matmul (cuBLAS f32, TF32 off)", "gemm_bf16": "torch.matmul (cuBLAS bf16, c = a b^T)",
           "gemm_bf16_mma": "torch.matmul (cuBLAS bf16, c = a b)"}
# (target against memcpy, target against the library), issues 13 and 16, as README states them: the half axpys
# aim at the memcpy rate (the library beside it is information), the mma.sync GEMM is information (Hopper's path
# is the wgmma GEMM).
WORKLOAD_TARGETS = {"sum": (0.90, 1.0), "softmax": (None, 1.0), "layer_norm": (None, 1.0), "axpy_f16": (0.90, None),
                    "axpy_bf16": (0.90, None), "sgemm": (None, 0.8), "gemm_bf16": (None, 0.6)}


def load_parts(parts_dir):
    rows, errors, info = {}, [], {}
    for path in sorted(glob.glob(os.path.join(parts_dir, "*.json"))):
        try:
            doc = json.load(open(path))
        except Exception as e:  # noqa: BLE001 - a truncated part is reported, the rest is used
            errors.append({"part": os.path.basename(path), "step": "read", "message": str(e)})
            continue
        part = doc.get("part", os.path.basename(path))
        if part in info and doc.get("info"):
            info[part].update(doc["info"])
            doc["info"] = {}
        for r in doc.get("rows", []):
            r = dict(r, part=part)
            rows[r["name"]] = r
        for e in doc.get("errors", []):
            errors.append(dict(e, part=part))
        if doc.get("info"):
            info[part] = doc["info"]
    return rows, errors, info


def evaluate(rows):
    out = []
    # A run of some parts only (e.g. GPU_PARTS=kernels) lists no "not measured" rows for the parts it skipped.
    groups = {n.split(".")[0] for n in rows}
    for name, base, kind, target, goal, meaning, *control in comparisons():
        if name not in rows or base not in rows:
            if target is not None and name.split(".")[0] in groups:
                missing = [n for n in (name, base) if n not in rows]
                out.append({"measurement": name, "baseline": base, "meaning": meaning, "target": f"{goal} {target}",
                            "status": "not measured", "missing": missing})
            continue
        m, b = rows[name], rows[base]
        if m["median"] <= 0 or b["median"] <= 0:
            continue
        if kind == "paired":
            ratio = m["median"]  # the row is already a ratio, measured pair by pair
        elif kind == "speedup":
            ratio = b["median"] / m["median"]
        else:
            ratio = m["median"] / b["median"]
        status = "info"
        verdict = {"measurement": name, "baseline": base, "kind": kind, "ratio": ratio, "meaning": meaning,
                   "target": f"{goal} {target}" if target is not None else None}
        if target is not None:
            ok = ratio <= target if goal == "<=" else ratio >= target
            status = "pass" if ok else "miss"
            # A miss by less than the A/A control's distance from 1 (the same measurement against itself in the
            # same rounds) is below what the run can resolve: a tie, said so, neither pass nor miss.
            aa = rows.get(control[0]) if control else None
            if not ok and aa and aa["median"] > 0 and b["median"] > 0:
                noise = abs(aa["median"] / b["median"] - 1)
                verdict["control_ratio"] = aa["median"] / b["median"]
                if abs(ratio - target) <= noise * target:
                    status = "tie (within the A/A control)"
        verdict["status"] = status
        out.append(verdict)
    return out


def fmt(v):
    if v is None:
        return ""
    a = abs(v)
    return f"{v:.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 1 else f"{v:.3g}"


def markdown(rows, verdicts, errors, env, info):
    L = ["# ptxgate benchmark results", ""]
    dev = env.get("gpu", {})
    L.append(f"Device: **{dev.get('name', '?')}**, driver {dev.get('driver_version', '?')}, "
             f"CUDA toolkit {env.get('nvcc', '?')}; ptxgate {info.get('compile', {}).get('ptxgate_version', '?')}, "
             f"LLVM {info.get('compile', {}).get('llvm_version', '?')}; "
             f"CuPy {info.get('peers', {}).get('cupy_version', '?')}, Triton {info.get('peers', {}).get('triton_version', '?')}, "
             f"torch {info.get('peers', {}).get('torch_version', '?')}, {info.get('peers', {}).get('nvrtc', 'nvrtc ?')}.")
    for when in ("before", "after"):
        c = env.get(f"clocks_{when}")
        if c:
            L.append(f"Clocks {when}: {c}")
    L += ["", "## Against targets", "",
          "| measurement | baseline | ratio | target | status | meaning |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        L.append(f"| `{v['measurement']}` | `{v['baseline']}` | {fmt(v.get('ratio'))} | {v.get('target') or ''} | "
                 f"{v['status']} | {v['meaning']} |")
    if any(k.startswith("workload.") for k in rows):
        L += ["", "## Workloads: ptxgate, its nvcc twin, the library (same run)", "",
              "| workload | unit | ptxgate | nvcc | library | library's | ptxgate / nvcc | ptxgate / library | ptxgate / memcpy |",
              "|---|---|---|---|---|---|---|---|---|"]
        memcpy = rows.get("workload.memcpy_dtod")
        for w, unit in WORKLOADS:
            pg, nv, lib = (rows.get(f"workload.{w}.{v}") for v in ("ptxgate", "nvcc", "torch"))
            med = lambda r: r["median"] if r else None
            ratio = lambda a, b: fmt(a["median"] / b["median"]) if a and b and b["median"] > 0 else ""
            L.append(f"| {w} | {unit} | {fmt(med(pg))} | {fmt(med(nv))} | {LIBRARY[w]} | {fmt(med(lib))} | {ratio(pg, nv)} | "
                     f"{ratio(pg, lib)} | {ratio(pg, memcpy) if unit == 'GB/s' else ''} |")
        if memcpy:
            L.append(f"\nDevice-to-device memcpy of 2^28 f32: {fmt(memcpy['median'])} GB/s (read + write).")
    L += ["", "## All measurements (median, p10-p90)", "",
          "| measurement | median | p10 | p90 | unit | samples |", "|---|---|---|---|---|---|"]
    for name in sorted(rows):
        r = rows[name]
        L.append(f"| `{name}` | {fmt(r['median'])} | {fmt(r['p10'])} | {fmt(r['p90'])} | {r['unit']} | {r['samples']} |")
    if errors:
        L += ["", "## Failed steps", ""]
        for e in errors:
            L.append(f"- {e.get('part', '?')} / {e.get('step', '?')}: {e.get('message', '')[:400]}")
    return "\n".join(L) + "\n"


def plots(rows, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        print(f"report: no plots ({e})", file=sys.stderr)
        return

    def bars(ax, names, labels, title, unit, log=False):
        present = [(n, l) for n, l in zip(names, labels) if n in rows]
        if not present:
            return
        med = [rows[n]["median"] for n, _ in present]
        lo = [rows[n]["median"] - rows[n]["p10"] for n, _ in present]
        hi = [rows[n]["p90"] - rows[n]["median"] for n, _ in present]
        ax.bar(range(len(present)), med, yerr=[lo, hi], capsize=3, color="#4878a8")
        ax.set_xticks(range(len(present)))
        ax.set_xticklabels([l for _, l in present], rotation=40, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(unit)
        if log:
            ax.set_yscale("log")

    variants = ("raw", "guarded", "kernel_api", "first_validated", "fresh_function", "graph_1node_replay",
                "graph_nodes_amortised", "cupy", "triton")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, a in zip(axes, ARGS):
        bars(ax, [f"launch.{v}.{a}" for v in variants], variants, f"host time per launch, {a}", "ns (p10-p90)",
             log=True)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "launch_overhead.png"), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 4, figsize=(16, 4.5))
    kinds = ("ptx", "ptx_llvm_o3", "cubin", "memory_hit", "runtime_hit", "disk_hit", "disk_hit_runtime", "nvrtc_ptx", "nvrtc_cubin",
             "triton_cold")
    for ax, k in zip(axes, ("saxpy", "copy", "block_sum", "matmul")):
        bars(ax, [f"compile.{x}.{k}" for x in kinds], kinds, f"compile latency, {k}", "ms (p10-p90)", log=True)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "compile_latency.png"), dpi=110)
    plt.close(fig)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    names = ["kernel.memcpy_dtod", "kernel.copy4.ptxgate", "kernel.copy4.nvcc", "kernel.saxpy4.ptxgate",
             "kernel.saxpy4.nvcc", "kernel.copy.ptxgate", "kernel.copy.nvcc", "kernel.saxpy.ptxgate",
             "kernel.saxpy.nvcc", "kernel.block_sum.ptxgate", "kernel.block_sum.nvcc", "kernel.warp_sum.ptxgate",
             "kernel.warp_sum.nvcc"]
    bars(ax1, names, [n.replace("kernel.", "") for n in names], "bandwidth (bytes read + written)", "GB/s")
    names = ["kernel.matmul.ptxgate", "kernel.matmul.nvcc"]
    bars(ax2, names, ["ptxgate", "nvcc"], "tiled f32 matmul", "GFLOP/s")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "kernel_quality.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parts", required=True, help="directory of part JSON files")
    ap.add_argument("--env", help="env.json")
    ap.add_argument("--out", required=True, help="directory for bench_results.{json,md} and plots")
    args = ap.parse_args()
    rows, errors, info = load_parts(args.parts)
    env = {}
    if args.env and os.path.exists(args.env):
        try:
            env = json.load(open(args.env))
        except Exception as e:  # noqa: BLE001
            errors.append({"part": "env", "step": "read", "message": str(e)})
    verdicts = evaluate(rows)
    os.makedirs(args.out, exist_ok=True)
    doc = {"env": env, "info": info, "comparisons": verdicts, "rows": [rows[k] for k in sorted(rows)],
           "errors": errors}
    with open(os.path.join(args.out, "bench_results.json"), "w") as f:
        json.dump(doc, f, indent=2)
    md = markdown(rows, verdicts, errors, env, info)
    with open(os.path.join(args.out, "bench_results.md"), "w") as f:
        f.write(md)
    plots(rows, args.out)
    # The short table last: the device tool returns the end of the output.
    print("\n| measurement | ratio | target | status |\n|---|---|---|---|")
    for v in verdicts:
        print(f"| {v['measurement']} / {'.'.join(v['baseline'].split('.')[1:])} | {fmt(v.get('ratio'))} | {v.get('target') or ''} | {v['status']} |")
    print(f"\n{len(rows)} measurements, {len(errors)} failed steps; see bench_results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
