"""Reads callgrind_annotate --inclusive=yes output and prints each loop_* function's inclusive
instructions per iteration, and the same minus loop_raw's (bench/launch_callgrind.sh)."""
import re
import sys

text = open(sys.argv[1]).read()
n = int(sys.argv[2])
label = sys.argv[3]
cost = {}
for line in text.splitlines():
    m = re.match(r"\s*([\d,]+) .*?\b(loop_[a-z_]+)\b", line)
    if m and m.group(2) not in cost:
        cost[m.group(2)] = int(m.group(1).replace(",", "")) / n
raw = cost.get("loop_raw", 0.0)
for name in ("loop_raw", "loop_kernel_launch", "loop_new_grid"):
    if name in cost:
        print(f"{label:9s} {name:19s} {cost[name]:8.0f} instructions/launch, ptxgate adds {cost[name] - raw:7.0f}")
