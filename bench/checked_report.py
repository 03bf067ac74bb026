#!/usr/bin/env python3
"""The report of bench/checked_cost.sh: checked mode's kernel time against unchecked on the workloads
(with the A/A controls), and the faulty program checked against compute-sanitizer memcheck."""
import json
import os
import re
import sys

WORKLOADS = ["sum", "softmax", "layer_norm", "axpy_f16", "axpy_bf16", "sgemm"]
TARGET = {"sgemm": 1.30}  # the bandwidth workloads: 1.10


def rows(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}, {}
    return {r["name"]: r for r in doc.get("rows", [])}, doc


def time_us(table, name):
    row = table.get(name)
    return row.get("time_us_median") if row else None


def ratio(a, b):
    return a / b if a and b else None


def fmt(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


def main(work):
    plain1, doc1 = rows(os.path.join(work, "workloads_plain1.json"))
    checked, docc = rows(os.path.join(work, "workloads_checked.json"))
    plain2, _ = rows(os.path.join(work, "workloads_plain2.json"))
    info = doc1.get("info", {})
    print("# Checked mode's cost")
    print()
    print(f"device: {info.get('device', '?')}; {info.get('launches_per_sample', '?')} launches between two events, "
          "medians of the timed rounds; time per launch in µs")
    print()
    print("| workload | unchecked run 1 | checked | unchecked run 2 | checked / unchecked | A/A (run 2 / run 1) "
          "| nvcc twin: checked run / run 1 | target |")
    print("|---|---|---|---|---|---|---|---|")
    for w in WORKLOADS:
        name = f"workload.{w}.ptxgate"
        a, c, b = time_us(plain1, name), time_us(checked, name), time_us(plain2, name)
        base = (a + b) / 2 if a and b else a or b
        nv = ratio(time_us(checked, f"workload.{w}.nvcc"), time_us(plain1, f"workload.{w}.nvcc"))
        print(f"| {w} | {fmt(a, 1)} | {fmt(c, 1)} | {fmt(b, 1)} | {fmt(ratio(c, base))} | {fmt(ratio(b, a))} "
              f"| {fmt(nv)} | ≤ {TARGET.get(w, 1.10):.2f} |")
    for doc, run in ((doc1, "unchecked"), (docc, "checked")):
        for e in doc.get("errors", []):
            print(f"\n{run} run error: {e.get('step')}: {e.get('message')}")
    print()
    print("## A faulty program: checked mode against compute-sanitizer memcheck")
    print()
    print("| run | wall s | kernel median µs | what it said |")
    print("|---|---|---|---|")
    walls = {}
    for name in ("faulty_unchecked", "faulty_checked", "faulty_memcheck", "faulty_memcheck_continue"):
        try:
            wall = float(open(os.path.join(work, name + ".wall")).read().strip())
        except (OSError, ValueError):
            wall = None
        walls[name] = wall
        log = ""
        try:
            log = open(os.path.join(work, name + ".log"), errors="replace").read()
        except OSError:
            pass
        m = re.search(r"time: median ([0-9.]+) us", log)
        said = [line.strip() for line in log.splitlines()
                if "error[PG" in line or "ERROR SUMMARY" in line or "Invalid __global__" in line][:2]
        print(f"| {name} | {fmt(wall, 2)} | {m.group(1) if m else '—'} | {'; '.join(said)[:240]} |")
    print()
    for m in ("faulty_memcheck", "faulty_memcheck_continue"):
        print(f"{m} / faulty_checked (wall): {fmt(ratio(walls.get(m), walls.get('faulty_checked')), 1)}×")


if __name__ == "__main__":
    main(sys.argv[1])
