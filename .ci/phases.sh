#!/usr/bin/env bash
# make run's phases, each timed: LABEL COMMAND pairs run in order, and a
# failure stops the rest; at the end, or at the failure, a table gives
# each phase's wall time. RTTLAB_T0 and RTTLAB_T1 (date +%s.%N when make
# started and when its recipe began) add the Go toolchain's phase and the
# host set-up's (packages, the engine, with rttlab's binary built beside
# them) that ran before this script.
set -uo pipefail

now() { date +%s.%N; }
labels=() secs=()
add() { labels+=("$1"); secs+=("$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", b - a }')"); }

start=$(now)
if [ -n "${RTTLAB_T0:-}" ] && [ -n "${RTTLAB_T1:-}" ]; then
  add "Go toolchain" "$RTTLAB_T0" "$RTTLAB_T1"
  add "host set-up and rttlab binary" "$RTTLAB_T1" "$start"
fi

table() {
  local total=0 i
  echo
  echo "make run, time per phase:"
  for i in "${!labels[@]}"; do
    printf '  %-34s %5d s\n' "${labels[$i]}" "${secs[$i]}"
    total=$((total + secs[i]))
  done
  printf '  %-34s %5d s (%d min %02d s)\n' "total" "$total" $((total / 60)) $((total % 60))
}

rc=0
while [ $# -ge 2 ]; do
  label=$1 command=$2
  shift 2
  t=$(now)
  sh -c "$command"
  rc=$?
  add "$label" "$t" "$(now)"
  [ $rc -eq 0 ] || { labels[-1]="${labels[-1]} (failed)"; break; }
done
table
exit $rc
