# Sourced by the before/after scripts (bench/launch_ab.sh, bench/workloads_ab.sh): runs one benchmark
# from two bundles alternating, before then after, ROUNDS times, so that drift on the GPU machine hits
# both alike. `ab_rounds ROUNDS BEFORE AFTER NAME RUN` calls `RUN SIDE ROUND BUNDLE` (SIDE before or
# after) for each, prints "NAME: SIDE round R exit RC", and returns 1 when any call failed.
ab_rounds() {
  local rounds=$1 before=$2 after=$3 name=$4 run=$5 status=0 r side dir rc
  for ((r = 1; r <= rounds; r++)); do
    for side in before after; do
      dir=$before; [ "$side" = after ] && dir=$after
      "$run" "$side" "$r" "$dir"
      rc=$?
      echo "$name: $side round $r exit $rc"
      ((rc == 0)) || status=1
    done
  done
  return $status
}
