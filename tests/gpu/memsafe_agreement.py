#!/usr/bin/env python3
"""The memory-safety analysis against the hardware: every case of tests/golden/memsafe, run unchecked.

    memsafe_agreement.py prepare PTXGATE_CLI CASES_DIR WORK_DIR     (here: needs the CLI, no GPU)
    memsafe_agreement.py device WORK_DIR OUT_DIR                    (GPU machine: compute-sanitizer)

`prepare` reads each case's RUN line (`ptxgate check FILE --kernel K --grid .. --block .. --arg ..`),
writes the kernel's PTX and a launch description for tests/gpu/raw_launch.py, and records ptxgate's
verdict (`check --format json`: out-of-bounds, proven, not proven, races). `device` launches each case
through the raw driver — nothing of ptxgate validates it — plainly and under compute-sanitizer
(memcheck; racecheck for the race cases), in parallel, and compares:

- a launch ptxgate proves out of bounds in global or local memory must be reported by memcheck;
  one out of bounds in shared memory must be reported by memcheck unless the bad bytes stay inside the
  block's shared window (memcheck sees the window, not the arrays: then it is listed, not failed);
- a launch whose every access ptxgate proves in bounds must be memcheck-clean;
- a proven race must be reported by racecheck; one out of bounds of a local array is listed (memcheck sees
  the thread's local window, not the arrays);
- a launch ptxgate cannot decide is listed with what the hardware said.

Writes OUT_DIR/memsafe_agreement.md; exits 1 when the two disagree (naming the cases).
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_line(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*//\s*RUN:\s*(.*)", line)
            if m:
                return shlex.split(m.group(1))
    raise SystemExit(f"{path}: no RUN line")


def prepare(cli, cases_dir, work):
    os.makedirs(work, exist_ok=True)
    names = []
    for file in sorted(os.listdir(cases_dir)):
        if not file.endswith(".pg"):
            continue
        name = file[:-3]
        words = run_line(os.path.join(cases_dir, file))
        assert words[0] == "ptxgate" and words[1] == "check" and words[2] == "%s", (file, words)
        opts = words[3:]
        kernel, grid, block, shared, args = None, "1", "1", 0, {}
        i = 0
        while i < len(opts):
            o = opts[i]
            if o in ("--kernel", "--grid", "--block", "--shared-bytes", "--arg"):
                v = opts[i + 1]
                i += 2
                if o == "--kernel":
                    kernel = v
                elif o == "--grid":
                    grid = v
                elif o == "--block":
                    block = v
                elif o == "--shared-bytes":
                    shared = int(v)
                else:
                    k, _, spec = v.partition("=")
                    args[k] = spec
            else:
                i += 1
        src = os.path.join(cases_dir, file)
        ptx = os.path.join(work, name + ".ptx")
        subprocess.run([cli, "emit", src, "-o", ptx], check=True)
        meta = json.loads(subprocess.run([cli, "emit", src, "--emit", "meta"], check=True,
                                         capture_output=True, text=True).stdout)
        k = next(x for x in meta["kernels"] if x["name"] == kernel)
        if k.get("hidden_grid_barrier_param"):
            raise SystemExit(f"{file}: a kernel with a grid barrier cannot be launched raw")
        params = [{"name": p["name"], "kind": "buffer" if p["kind"] == "buffer" else "scalar",
                   "type": p["type"], "spec": args[p["name"]]} for p in k["params"]]
        dims = lambda s: [int(x) for x in s.split(",")] + [1] * (3 - len(s.split(",")))
        verdict = subprocess.run([cli, "check", src] + opts + ["--format", "json"],
                                 capture_output=True, text=True)
        doc = json.loads(verdict.stdout)
        memory = next((kk.get("memory") for kk in doc.get("kernels", [doc]) if kk.get("memory")), None) \
            if isinstance(doc, dict) else None
        if memory is None:
            memory = find_memory(doc)
        case = {"ptx": name + ".ptx", "kernel": kernel, "grid": dims(grid), "block": dims(block),
                "shared_bytes": shared, "params": params,
                "static_shared_bytes": k.get("static_shared_bytes", 0),
                "verdict": {"exit": verdict.returncode, "memory": memory}}
        with open(os.path.join(work, name + ".json"), "w") as f:
            json.dump(case, f, indent=1)
        names.append(name)
    with open(os.path.join(work, "cases.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    print(f"prepared {len(names)} cases in {work}")


def find_memory(doc):
    if isinstance(doc, dict):
        if "memory" in doc and isinstance(doc["memory"], dict):
            return doc["memory"]
        for v in doc.values():
            m = find_memory(v)
            if m is not None:
                return m
    elif isinstance(doc, list):
        for v in doc:
            m = find_memory(v)
            if m is not None:
                return m
    return None


def sanitize(work, name, tool):
    case = os.path.join(work, name + ".json")
    plain = subprocess.run([sys.executable, os.path.join(HERE, "raw_launch.py"), case],
                           capture_output=True, text=True, timeout=120)
    # memcheck: a padding after every allocation, so that bytes past one buffer's end are not another
    # buffer's (which memcheck would count as valid).
    extra = ["--racecheck-report", "hazard"] if tool == "racecheck" else ["--padding", "4096"]
    t0 = time.time()
    san = subprocess.run(["compute-sanitizer", "--tool", tool, "--print-limit", "4"] + extra +
                         [sys.executable, os.path.join(HERE, "raw_launch.py"), case],
                         capture_output=True, text=True, timeout=300)
    seconds = time.time() - t0
    text = san.stdout + san.stderr
    m = re.search(r"(?:ERROR SUMMARY|RACECHECK SUMMARY):\s*(\d+)\s+(?:error|hazard)", text)
    count = int(m.group(1)) if m else -1
    first = next((l.strip("= ").strip() for l in text.splitlines()
                  if re.search(r"Invalid __\w+__|Out of bounds|hazard detected|Race reported", l)), "")
    plain_text = (plain.stdout + plain.stderr).strip().splitlines()
    return {"name": name, "tool": tool, "errors": count, "first": first,
            "plain": plain_text[-1] if plain_text else f"exit {plain.returncode}",
            "seconds": seconds, "log": text[-3000:]}


def device(work, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(work, "cases.txt")) as f:
        names = [l.strip() for l in f if l.strip()]
    cases = {}
    for n in names:
        with open(os.path.join(work, n + ".json")) as f:
            cases[n] = json.load(f)
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=int(os.environ.get("MEMSAFE_JOBS", "8"))) as pool:
        for n in names:
            tool = "racecheck" if n.startswith("fail_race") else "memcheck"
            jobs.append(pool.submit(sanitize, work, n, tool))
        results = {j.result()["name"]: j.result() for j in jobs}

    rows, disagree, listed = [], [], []
    for n in names:
        r, mem = results[n], cases[n]["verdict"]["memory"] or {}
        oob = [f for f in mem.get("findings", []) if f.get("outcome") == "out_of_bounds"]
        races = mem.get("races", [])
        all_proven = mem.get("sites", 0) > 0 and mem.get("proven", 0) + mem.get("unreachable", 0) == mem.get("sites", 0)
        if r["errors"] < 0:
            status = "NO SANITIZER SUMMARY"
            disagree.append(n)
        elif races:
            status = "agree" if r["errors"] > 0 else "DISAGREE (race not seen by racecheck)"
        elif oob:
            spaces = {f.get("space", "global") for f in oob}
            if r["errors"] > 0:
                status = "agree"
            elif spaces == {"shared"}:
                status = "listed: out of bounds of its shared array, inside the block's shared window (memcheck cannot see it)"
                listed.append(n)
            elif spaces == {"local"}:
                status = "listed: out of bounds of its local array, inside the thread's local memory (memcheck cannot see it)"
                listed.append(n)
            else:
                status = "DISAGREE (memcheck clean)"
        elif all_proven:
            status = "agree" if r["errors"] == 0 else "DISAGREE (proven in bounds, memcheck reports)"
        else:
            status = f"listed: not decided statically; memcheck {r['errors']} errors"
            listed.append(n)
        if status.startswith("DISAGREE") and n not in disagree:
            disagree.append(n)
        verdict = (f"{len(oob)} out of bounds" if oob else f"{len(races)} races" if races
                   else "all proven" if all_proven else
                   f"{mem.get('unproven', 0)} not proven of {mem.get('sites', 0)}")
        rows.append(f"| {n} | {verdict} | {r['tool']} {r['errors']} | {r['plain']} | {status} |")
    faulted = sum(1 for n in names if "CUDA_ERROR" in results[n]["plain"] or "raw_launch: ok" not in results[n]["plain"])
    lines = ["# The memory-safety analysis against compute-sanitizer (tests/golden/memsafe, run unchecked)", "",
             f"{len(names)} cases; {len(names) - len(disagree) - len(listed)} agree, {len(listed)} listed, "
             f"{len(disagree)} disagree. Run plainly (no sanitizer), {faulted} of them returned an error from the driver.",
             "", "| case | ptxgate (offline) | sanitizer errors | plain run | agreement |", "|---|---|---|---|---|"] + rows
    if disagree:
        lines += ["", "## Disagreements"] + [f"### {n}\n```\n{results[n]['log']}\n```" for n in disagree]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "memsafe_agreement.md"), "w") as f:
        f.write(text)
    print(text)
    if disagree:
        print("memsafe agreement FAILED: " + ", ".join(disagree))
        return 1
    return 0


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "prepare":
        return prepare(*sys.argv[2:])
    if len(sys.argv) == 4 and sys.argv[1] == "device":
        return device(*sys.argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main() or 0)
