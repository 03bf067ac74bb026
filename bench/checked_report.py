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
    checked1, docc = rows(os.path.join(work, "workloads_checked1.json"))
    checked2, docc2 = rows(os.path.join(work, "workloads_checked2.json"))
    plain2, doc2 = rows(os.path.join(work, "workloads_plain2.json"))
    info = doc1.get("info", {})
    print("# Checked mode's cost")
    print()
    print(f"device: {info.get('device', '?')}; {info.get('launches_per_sample', '?')} launches between two events, "
          "variants interleaved in alternating order, medians of the timed rounds; time per launch in µs; four "
          "processes in the order unchecked, checked, checked, unchecked")
    print()
    print("| workload | unchecked 1 | checked 1 | checked 2 | unchecked 2 | checked / unchecked "
          "| A/A unchecked (2 / 1) | A/A checked (2 / 1) | nvcc twin (checked runs / unchecked runs) | target |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    def mean(*xs):
        xs = [x for x in xs if x]
        return sum(xs) / len(xs) if xs else None

    for w in WORKLOADS:
        name = f"workload.{w}.ptxgate"
        a, c1, c2, b = (time_us(t, name) for t in (plain1, checked1, checked2, plain2))
        twin = f"workload.{w}.nvcc"
        nv = ratio(mean(time_us(checked1, twin), time_us(checked2, twin)), mean(time_us(plain1, twin), time_us(plain2, twin)))
        print(f"| {w} | {fmt(a, 1)} | {fmt(c1, 1)} | {fmt(c2, 1)} | {fmt(b, 1)} | {fmt(ratio(mean(c1, c2), mean(a, b)))} "
              f"| {fmt(ratio(b, a))} | {fmt(ratio(c2, c1))} | {fmt(nv)} | ≤ {TARGET.get(w, 1.10):.2f} |")
    for doc, run in ((doc1, "unchecked 1"), (docc, "checked 1"), (docc2, "checked 2"), (doc2, "unchecked 2")):
        for e in doc.get("errors", []):
            print(f"\n{run} run error: {e.get('step')}: {e.get('message')}")
    print()
    print("## A faulty GPU program: checked mode against compute-sanitizer memcheck")
    print()
    print("bench/checked_faulty.cpp: the smoother's matrix built and its vector initialised on the device, then "
          "thousands of launches and one synchronisation; whole-program wall time of each process, in the order run")
    print()
    print("| run | exit | wall s | what it said |")
    print("|---|---|---|---|")
    walls = {}
    for name in ("faulty_checked", "faulty_memcheck_continue", "faulty_checked_2", "faulty_unchecked",
                 "faulty_memcheck"):
        def read(ext):
            try:
                return open(os.path.join(work, name + ext), errors="replace").read().strip()
            except OSError:
                return ""
        try:
            walls[name] = float(read(".wall"))
        except ValueError:
            walls[name] = None
        log = read(".log")
        said = [line.strip() for line in log.splitlines()
                if line.startswith("checked_faulty:") or "error[PG" in line or "ERROR SUMMARY" in line][:3]
        print(f"| {name} | {read('.rc') or '—'} | {fmt(walls[name], 2)} | {'; '.join(said)[:400]} |")
    print()
    checked = [walls.get("faulty_checked"), walls.get("faulty_checked_2")]
    mean_checked = sum(checked) / 2 if all(checked) else None
    print(f"A/A control, checked 2 / checked 1 (wall): {fmt(ratio(checked[1], checked[0]))}")
    print(f"memcheck (--destroy-on-device-error kernel, runs to the end) / checked (mean of two), wall: "
          f"{fmt(ratio(walls.get('faulty_memcheck_continue'), mean_checked), 1)}× (target ≥ 20×)")
    print(f"memcheck (default: stops at the first error) / checked, wall: "
          f"{fmt(ratio(walls.get('faulty_memcheck'), mean_checked), 1)}×")
    try:
        unchecked_rc = open(os.path.join(work, "faulty_unchecked.rc")).read().strip()
    except OSError:
        unchecked_rc = ""
    if unchecked_rc == "0":
        print(f"checked / unchecked, wall: {fmt(ratio(mean_checked, walls.get('faulty_unchecked')))}")
    else:
        print(f"unchecked: exit {unchecked_rc or '?'} (it did not run to the end: no checked / unchecked ratio)")


if __name__ == "__main__":
    main(sys.argv[1])
