#!/usr/bin/env python3
"""Side-by-side launch overhead of two builds: reads before_*.json and after_*.json written by
`ptxgate_gpu_bench launch --out`, prints the median of each paired ratio per build (the median over
rounds of each round's median) as a Markdown table. Usage: compare_launch.py DIR"""
import glob
import json
import os
import statistics
import sys


def medians(pattern):
    rows = {}
    for path in sorted(glob.glob(pattern)):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"compare_launch: {path}: {e}", file=sys.stderr)
            continue
        for row in doc.get("rows", []):
            name = row.get("name", "")
            if name.startswith("launch.") and ("_over_raw" in name or name.startswith("launch.raw.")):
                rows.setdefault(name, []).append(row["median"])
    return {k: statistics.median(v) for k, v in rows.items()}


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    before = medians(os.path.join(d, "before_*.json"))
    after = medians(os.path.join(d, "after_*.json"))
    names = sorted(set(before) | set(after))
    if not names:
        print("compare_launch: no launch rows found", file=sys.stderr)
        return 1
    print("| row | before | after |\n|---|---|---|")
    for n in names:
        b = f"{before[n]:.3f}" if n in before else "-"
        a = f"{after[n]:.3f}" if n in after else "-"
        print(f"| {n} | {b} | {a} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
