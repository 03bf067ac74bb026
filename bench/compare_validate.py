#!/usr/bin/env python3
"""Before/after table of bench/validate_ab.sh: per memory row of validate_bench (the verdict of a launch
new in every input, ns: with the facts minus without), the median over rounds of each side and the
median of the per-round ratios after/before, with the A/A control (again/after, the same library)."""
import re
import statistics
import sys
from pathlib import Path

ROW = re.compile(r"^  (.*\S)\s{2,}(-?[0-9.]+) ns \(([0-9.]+) with, ([0-9.]+) without\)")


def read(path):
    rows = {}
    for line in path.read_text(errors="replace").splitlines():
        m = ROW.match(line)
        if m:
            rows.setdefault(m.group(1), float(m.group(2)))
    return rows


def main():
    folder = Path(sys.argv[1])
    sides = {}
    for f in sorted(folder.glob("*_*.txt")):
        side, _, round_ = f.stem.partition("_")
        sides.setdefault(side, {})[int(round_)] = read(f)
    before, after, again = sides.get("before", {}), sides.get("after", {}), sides.get("again", {})
    names = sorted({n for r in after.values() for n in r})
    print(f"rounds: {len(after)}; ns of the memory verdict (median over rounds); ratios: median of per-round ratios\n")
    print("| row | before ns | after ns | after / before | A/A (after again / after) |")
    print("|---|---:|---:|---:|---:|")
    for n in names:
        b = [before[r][n] for r in before if n in before[r]]
        a = [after[r][n] for r in after if n in after[r]]
        g = [again[r][n] for r in again if n in again[r]]
        ab = [after[r][n] / before[r][n] for r in after if n in after[r] and r in before and before[r].get(n, 0) > 0]
        aa = [again[r][n] / after[r][n] for r in again if n in again[r] and r in after and after[r].get(n, 0) > 0]
        med = lambda v: f"{statistics.median(v):.1f}" if v else "-"
        ratio = lambda v: f"{statistics.median(v):.3f}" if v else "-"
        print(f"| {n} | {med(b)} | {med(a)} | {ratio(ab)} | {ratio(aa)} |")


if __name__ == "__main__":
    main()
