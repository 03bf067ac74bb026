"""Reads callgrind_annotate --inclusive=yes output and prints each loop_* function's inclusive
instructions per iteration, and the same minus its raw loop's (loop_raw for launches, loop_raw_graph
for graph replays, loop_raw_group and loop_raw_single for collectives): what ptxgate adds. With a
cache simulation (bench/launch_callgrind.sh or bench/nccl_callgrind.sh cache),
also the L1 data misses (reads + writes) per iteration and the same minus the raw loop's: the cache
lines ptxgate touches once the driver's own work has evicted them."""
import re
import sys

text = open(sys.argv[1]).read()
n = int(sys.argv[2])
label = sys.argv[3]
events = []
for line in text.splitlines():
    if line.startswith("Events shown:"):
        events = line.split(":", 1)[1].split()
        break
cost = {}
for line in text.splitlines():
    m = re.match(r"\s*((?:[\d,]+(?: \([\s\d.]+%\))?\s+)+).*?\b(loop_[a-z_]+)\b", line)
    if m and m.group(2) not in cost:
        numbers = [int(x.replace(",", "")) for x in re.findall(r"([\d,]+)(?: \([\s\d.]+%\))?\s", m.group(1))]
        cost[m.group(2)] = {e: v / n for e, v in zip(events or ["Ir"], numbers)}


def d1_misses(c):
    return c.get("D1mr", 0.0) + c.get("D1mw", 0.0)


for name, raw in (("loop_raw", "loop_raw"), ("loop_kernel_launch", "loop_raw"), ("loop_guarded", "loop_raw"),
                  ("loop_new_grid", "loop_raw"),
                  ("loop_raw_graph", "loop_raw_graph"), ("loop_graph_replay", "loop_raw_graph"),
                  ("loop_raw_group", "loop_raw_group"), ("loop_ptxgate_group", "loop_raw_group"),
                  ("loop_raw_single", "loop_raw_single"), ("loop_ptxgate_single", "loop_raw_single")):
    if name not in cost:
        continue
    c, r = cost[name], cost.get(raw, {})
    line = (f"{label:9s} {name:19s} {c['Ir']:8.0f} instructions/iteration, ptxgate adds "
            f"{c['Ir'] - r.get('Ir', 0.0):7.0f}")
    if "D1mr" in c:
        line += f"; L1D misses {d1_misses(c):6.1f}/iteration, ptxgate adds {d1_misses(c) - d1_misses(r):5.1f}"
    print(line)
