#!/usr/bin/env python3
"""bench/report.py's verdicts on issue 29's targets 4 and 5, from made-up parts (no GPU, no benchmark run).

Target 5 (ptxas on ptxgate's PTX <= on the twin's): a lower ratio passes, a higher one misses, and one above 1 by
less than its A/A control's distance from 1 is a tie. Target 4 (<= 2.1x per doubling): a missing size is "not
measured", never a pass.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def row(name, median):
    return {"name": name, "unit": "ms", "median": median, "p10": median, "p90": median, "min": median,
            "max": median, "samples": 7}


def main():
    rows = []
    # (kernel, ptxgate's PTX, the twin's, the twin's again)
    for k, pg, twin, again in (("saxpy", 10.0, 11.0, 11.0), ("copy", 10.1, 10.0, 10.2), ("bfs", 12.0, 10.0, 10.1),
                               ("sgemm", 10.5, 10.0, 9.6)):
        rows += [row(f"compile_cmp.ptxas_pg_cpu.{k}", pg), row(f"compile_cmp.ptxas_twin_cpu.{k}", twin),
                 row(f"compile_cmp.ptxas_twin_again_cpu.{k}", again)]
    rows += [row("compile_cmp.ptx_cpu.generated_250", 100.0), row("compile_cmp.ptx_cpu.generated_500", 205.0),
             row("compile_cmp.ptx_cpu.generated_1000", 440.0)]
    with tempfile.TemporaryDirectory() as work:
        parts, out = os.path.join(work, "parts"), os.path.join(work, "out")
        os.makedirs(parts)
        json.dump({"part": "compile_compare", "rows": rows}, open(os.path.join(parts, "compile_compare.json"), "w"))
        run = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "--parts", parts, "--out", out],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            return 1
        verdicts = {(v["measurement"], v["baseline"]): v for v in json.load(open(os.path.join(out, "bench_results.json")))["comparisons"]}
    want = {
        ("compile_cmp.ptxas_pg_cpu.saxpy", "compile_cmp.ptxas_twin_cpu.saxpy"): "pass",
        ("compile_cmp.ptxas_pg_cpu.copy", "compile_cmp.ptxas_twin_cpu.copy"): "tie (within the A/A control)",
        ("compile_cmp.ptxas_pg_cpu.bfs", "compile_cmp.ptxas_twin_cpu.bfs"): "miss",
        ("compile_cmp.ptxas_pg_cpu.sgemm", "compile_cmp.ptxas_twin_cpu.sgemm"): "miss",  # 1.05 against an A/A of 0.96
        ("compile_cmp.ptxas_twin_again_cpu.bfs", "compile_cmp.ptxas_twin_cpu.bfs"): "info",
        ("compile_cmp.ptxas_pg_cpu.softmax", "compile_cmp.ptxas_twin_cpu.softmax"): "not measured",
        ("compile_cmp.ptx_cpu.generated_500", "compile_cmp.ptx_cpu.generated_250"): "pass",
        ("compile_cmp.ptx_cpu.generated_1000", "compile_cmp.ptx_cpu.generated_500"): "miss",
        ("compile_cmp.ptx_cpu.generated_2000", "compile_cmp.ptx_cpu.generated_1000"): "not measured",
    }
    failed = 0
    for key, status in want.items():
        got = verdicts.get(key, {}).get("status")
        if got != status:
            print(f"FAIL: {key[0]} / {key[1]}: status {got!r}, expected {status!r}")
            failed += 1
    ratio = verdicts[("compile_cmp.ptxas_pg_cpu.bfs", "compile_cmp.ptxas_twin_cpu.bfs")]["ratio"]
    if abs(ratio - 1.2) > 1e-9:
        print(f"FAIL: bfs's ratio {ratio}, expected 1.2 (ptxgate's / the twin's)")
        failed += 1
    print(f"report targets: {len(want) + 1 - failed} of {len(want) + 1} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
