#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets simulated makespans against measured ones (doc/simulation.md): for each workload, scale, worker set and policy
# of a platform folder's measured.tsv (written by scripts/calibrate-models.sh on the real machine), runs the same
# configuration with `starproj-bench --simulate` on that platform and prints one line per configuration: the
# measured median (and min), the simulated makespan, and their difference relative to the measured median.
# usage: scripts/validate-simulation.sh PLATFORM [--build DIR] [--scales a,b] [--out DIR] [--tolerance PCT]
#   PLATFORM     a platform folder with measured.tsv (e.g. perfmodels/h200-1gpu)
#   --build DIR  the simulation build (configure --with-simgrid; default build-sim)
#   --scales     only these scales of measured.tsv (default: all of them)
#   --tolerance  the exit status is 1 when a difference exceeds PCT percent (default: report only)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || { sed -n '3,12p' "$0"; exit 2; }
platform=$1; shift
build=$root/build-sim
scales=
out=${TMPDIR:-/tmp}/starproj-validate
tol=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --scales) scales=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tolerance) tol=$2; shift 2 ;;
    *) echo "validate-simulation: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
measured=$platform/measured.tsv
[ -f "$measured" ] || { echo "validate-simulation: no measured.tsv in $platform (scripts/calibrate-models.sh writes it)" >&2; exit 2; }
[ -x "$build/starproj-bench" ] || { echo "validate-simulation: no starproj-bench in $build (configure --with-simgrid there)" >&2; exit 2; }
mkdir -p "$out" || exit 1
table=$out/validation.tsv
printf 'workload\tscale\tworkers\tsched\tmeasured_median_s\tmeasured_min_s\tsimulated_s\tdiff_pct\n' >"$table"
# one simulated matrix per scale, worker set and policy, with the workloads measured there
keys=$(awk -F'\t' 'NR > 1 { print $3 "\t" $4 "\t" $5 }' "$measured" | sort -u)
status=0
while IFS=$'\t' read -r scale workers sched; do
  [ -n "$scale" ] || continue
  if [ -n "$scales" ] && ! printf '%s\n' ${scales//,/ } | grep -qx "$scale"; then continue; fi
  wls=$(awk -F'\t' -v s="$scale" -v k="$workers" -v p="$sched" 'NR > 1 && $3 == s && $4 == k && $5 == p { print $2 }' \
        "$measured" | awk '!seen[$0]++' | paste -sd, -)
  dir=$out/sim-$scale-$workers-$sched
  rm -rf "$dir"
  "$build/starproj-bench" --simulate "$platform" --scale "$scale" --workers "$workers" --scheds "$sched" \
    --workloads "$wls" --repeats 1 --warmups 0 --output "$dir" >"$dir.log" 2>&1 || status=1
  for wl in ${wls//,/ }; do
    stats=$(awk -F'\t' -v w="$wl" -v s="$scale" -v k="$workers" -v p="$sched" \
              'NR > 1 && $2 == w && $3 == s && $4 == k && $5 == p { print $7 }' "$measured" | sort -g |
            awk '{ v[NR] = $1 } END { if (NR) printf "%s\t%s", v[int((NR + 1) / 2)], v[1] }')
    sim=$(awk -F, -v w="$wl" -v k="$workers" -v p="$sched" '$2 == w && $3 == k && $4 == p { print $8 }' \
          "$dir/summary.csv" 2>/dev/null)
    med=${stats%%$'\t'*}
    min=${stats##*$'\t'}
    diff=$(awk -v m="$med" -v s="$sim" 'BEGIN { if (m > 0 && s != "" && s == s + 0) printf "%+.1f", 100 * (s - m) / m; else print "n/a" }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "$scale" "$workers" "$sched" "$med" "$min" "${sim:-failed}" "$diff" >>"$table"
    if [ -n "$tol" ]; then
      awk -v d="$diff" -v t="$tol" 'BEGIN { exit !(d == "n/a" || d > t || d < -t) }' && status=1
    fi
  done
done <<<"$keys"
echo "simulated ($(basename "$platform"), $(sed -n 's/^host name: //p' "$platform/MACHINE" 2>/dev/null)) against measured makespans, seconds:"
column -t -s $'\t' "$table" 2>/dev/null || cat "$table"
echo "validate-simulation: table in $table, simulations in $out/sim-*"
exit $status
