# Sourced by the before/after scripts (bench/launch_ab.sh, bench/workloads_ab.sh, bench/validate_ab.sh):
# runs one benchmark from two sides, ROUNDS times, alternating which goes first (odd rounds before
# then after, even rounds after then before), so that drift on the GPU machine hits both alike.
# `ab_rounds ROUNDS BEFORE AFTER NAME RUN [again]` calls `RUN SIDE ROUND DIR` (SIDE before or after,
# DIR the side's BEFORE or AFTER) for each, prints "NAME: SIDE round R exit RC", and returns 1 when
# any call failed. With `again`, an A/A control: the after side runs a second time each round as
# side `again` (DIR AFTER), first in even rounds and last in odd ones (before, after, again; again,
# after, before).
ab_rounds() {
  local rounds=$1 before=$2 after=$3 name=$4 run=$5 again=${6:-} status=0 r side dir rc
  local -a order
  for ((r = 1; r <= rounds; r++)); do
    if [[ $again == again ]]; then
      if ((r % 2)); then order=(before after again); else order=(again after before); fi
    elif ((r % 2)); then
      order=(before after)
    else
      order=(after before)
    fi
    for side in "${order[@]}"; do
      dir=$after; [ "$side" = before ] && dir=$before
      "$run" "$side" "$r" "$dir"
      rc=$?
      echo "$name: $side round $r exit $rc"
      ((rc == 0)) || status=1
    done
  done
  return $status
}
