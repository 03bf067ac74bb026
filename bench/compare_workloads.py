#!/usr/bin/env python3
"""Side-by-side kernel run times of two builds: reads before_R.json and after_R.json written by
`ptxgate_gpu_bench workloads --out` (bench/workloads_ab.sh), and prints per workload and round the
median rate of ptxgate's kernel and of nvcc's twin timed in the same run, and their ratio, for each
build, as a Markdown table. Usage: compare_workloads.py DIR"""
import glob
import json
import os
import re
import sys


def rates(path):
    """{workload: {"ptxgate": median, "nvcc": median, "unit": unit}} of one run's JSON."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"compare_workloads: {path}: {e}", file=sys.stderr)
        return {}
    out = {}
    for row in doc.get("rows", []):
        m = re.fullmatch(r"workload\.(.+)\.(ptxgate|nvcc)", row.get("name", ""))
        if m and "median" in row:
            entry = out.setdefault(m.group(1), {})
            entry[m.group(2)] = row["median"]
            entry["unit"] = row.get("unit", "")
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "*_*.json"))):
        side, _, rnd = os.path.basename(path)[:-5].partition("_")
        if side in ("before", "after"):
            runs[(side, rnd)] = rates(path)
    if not runs:
        print("compare_workloads: no before_*.json or after_*.json", file=sys.stderr)
        return 1
    names = sorted({w for r in runs.values() for w in r})
    print("| workload | round | before: ptxgate / nvcc (ratio) | after: ptxgate / nvcc (ratio) |")
    print("|---|---|---|---|")

    def cell(entry):
        if not entry or "ptxgate" not in entry or "nvcc" not in entry:
            return "-"
        p, n = entry["ptxgate"], entry["nvcc"]
        return f"{p:.1f} / {n:.1f} {entry['unit']} ({p / n:.3f})" if n else "-"

    for w in names:
        for rnd in sorted({r for _, r in runs}):
            print(f"| {w} | {rnd} | {cell(runs.get(('before', rnd), {}).get(w))} | "
                  f"{cell(runs.get(('after', rnd), {}).get(w))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
