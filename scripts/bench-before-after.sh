#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench_nontof, bench_tof and bench_recon from two builds on one machine, each build's programs with its own
# libstarproj, in the order before, after (before, after, after, before with --abba), and prints a table of both:
# every job's time from each build and their ratio. Checks first that each folder holds its programs and that they
# load its libstarproj, and afterwards that both builds computed the same forward projections (bench_nontof's and
# bench_tof's checksums of the forward values). Builds nothing; logs go to $OUT/before-after (or /tmp/out/...).
#
# usage: scripts/bench-before-after.sh stage BEFORE_BUILD AFTER_BUILD
#          copies the three programs and libstarproj.so.0 of two build folders (e.g. .device/build as
#          scripts/device-bundle.sh makes it) into .device/ba/before and .device/ba/after: with .device/lib, what a
#          GPU machine needs (about 2 MB a build for CUDA sm_90)
#        scripts/bench-before-after.sh [--before DIR] [--after DIR] [--abba] [--small] [nontof] [tof] [recon]
#          runs the named benchmarks (default all three) from DIR/bench with DIR/.libs first on the library path
#          (default .device/ba/before and .device/ba/after; .device/lib holds StarPU and the other libraries);
#          --small: the small geometries, to try it on a development machine
# Each program runs with its defaults (bench_recon with --no-host, non-TOF then --tof), 600 s at most a run;
# $BA_NONTOF_ARGS, $BA_TOF_ARGS and $BA_RECON_ARGS are added to their arguments. The steps can be run one at a time
# (each prints its table): nontof, tof, recon.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
programs="bench_nontof bench_tof bench_recon"

if [ "${1:-}" = stage ]; then
  [ $# -eq 3 ] || { echo "usage: scripts/bench-before-after.sh stage BEFORE_BUILD AFTER_BUILD" >&2; exit 2; }
  for side in before after; do
    src=$2
    [ $side = after ] && src=$3
    dst=$root/.device/ba/$side
    for p in $programs; do
      [ -x "$src/bench/$p" ] || { echo "bench-before-after: $src/bench/$p is missing (a build folder?)" >&2; exit 1; }
    done
    if [ ! -f "$src/.libs/libstarproj.so.0" ]; then
      echo "bench-before-after: $src/.libs/libstarproj.so.0 is missing" >&2
      exit 1
    fi
    rm -rf "$dst" && mkdir -p "$dst/bench" "$dst/.libs" || exit 1
    for p in $programs; do cp -L "$src/bench/$p" "$dst/bench/" || exit 1; done
    cp -L "$src/.libs/libstarproj.so.0" "$dst/.libs/" || exit 1
    echo "bench-before-after: $side <- $src ($(du -sh "$dst" | cut -f1))"
  done
  exit 0
fi

before=$root/.device/ba/before after=$root/.device/ba/after abba=0 small=0 steps=()
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --abba) abba=1; shift ;;
    --small) small=1; shift ;;
    nontof|tof|recon) steps+=("$1"); shift ;;
    *) echo "bench-before-after: unknown argument '$1' (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(nontof tof recon)
out=${OUT:-/tmp/out}/before-after
mkdir -p "$out" || exit 1
export STARPU_SILENT=1

# ---- checks: each side's programs, and that they load that side's library ----
fail=0
for side in before after; do
  dir=$before
  [ $side = after ] && dir=$after
  for p in $programs; do
    [ -x "$dir/bench/$p" ] || { echo "bench-before-after: $side: $dir/bench/$p is missing" >&2; fail=1; }
  done
  lib=$(env LD_LIBRARY_PATH="$dir/.libs:$root/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ldd "$dir/bench/bench_nontof" 2>/dev/null | sed -n 's/.*libstarproj\.so\.0 => \([^ ]*\).*/\1/p')
  if [ "$(readlink -f "$lib" 2>/dev/null)" != "$(readlink -f "$dir/.libs/libstarproj.so.0" 2>/dev/null)" ]; then
    echo "bench-before-after: $side: bench_nontof loads '${lib:-no libstarproj}', not $dir/.libs/libstarproj.so.0" >&2
    fail=1
  fi
done
[ $fail = 0 ] || exit 1
if cmp -s "$before/.libs/libstarproj.so.0" "$after/.libs/libstarproj.so.0"; then
  echo "bench-before-after: warning: both sides hold the same libstarproj.so.0"
fi
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, -)
echo "bench-before-after: $(hostname), ${device:-no GPU}, $(nproc) cores; before: $before, after: $after"

# one run: program, side, round; its stdout in $out/<program>-<side>-<round>.log (and its stderr .err)
run() {
  local prog=$1 side=$2 round=$3 dir=$before args=() program=$1
  [ "$side" = after ] && dir=$after
  [ "$prog" = bench_recon_tof ] && program=bench_recon
  case $prog in
    bench_nontof) [ $small = 1 ] && args+=(--small); read -ra extra <<<"${BA_NONTOF_ARGS:-}" ;;
    bench_tof) [ $small = 1 ] && args+=(--small); read -ra extra <<<"${BA_TOF_ARGS:-}" ;;
    bench_recon*) args+=(--no-host); [ $small = 1 ] && args+=(--scanner small)
      [ "$prog" = bench_recon_tof ] && args+=(--tof); read -ra extra <<<"${BA_RECON_ARGS:-}" ;;
  esac
  local log=$out/$prog-$side-$round
  local t0=$SECONDS
  env LD_LIBRARY_PATH="$dir/.libs:$root/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    STARPU_HOME="/tmp/starpu-ba-$side" timeout 600 "$dir/bench/$program" "${args[@]}" "${extra[@]}" \
    >"$log.log" 2>"$log.err"
  local rc=$?
  echo "bench-before-after: $program${args[*]:+ ${args[*]}}${extra[*]:+ ${extra[*]}} ($side, round $round): exit $rc," \
    "$((SECONDS - t0)) s"
  [ $rc = 0 ] || { tail -n 3 "$log.err"; return 1; }
}

# job name <TAB> seconds, from one log: the job tables of bench_nontof (name in 28 columns, "done s" the 6th number)
# and bench_tof (30 columns, the 2nd), the markdown table of bench_recon (its seconds column)
jobs() {
  case $1 in
    bench_nontof) awk 'f && /^#/ {exit}
                    f && NF {split(substr($0, 29), a, " "); n = substr($0, 1, 28); sub(/ +$/, "", n); print n "\t" a[6]}
                    /^job \(median/ {f = 1}' "$2" ;;
    bench_tof) awk 'f && /^#/ {exit} f && NF {split(substr($0, 31), a, " "); n = substr($0, 1, 30); sub(/ +$/, "", n);
                 print n "\t" a[2]} /^job \(median/ {f = 1}' "$2" ;;
    bench_recon*) awk -F'|' '/^\| / && $3 ~ /[0-9]/ && $2 !~ /share of/ {n = $2; gsub(/^ +| +$/, "", n);
                    split($3, a, " "); print n "\t" a[1]}' "$2" ;;
  esac
}

# the forward checksums a log prints (bench_nontof: the forward values' sum; bench_tof: the hashes of the forward
# values): equal logs, equal forward projections
forward_sums() {
  case $1 in
    bench_nontof) sed -n 's/^# checksums: forward values \([^,]*\),.*/\1/p' "$2" ;;
    bench_tof) sed -n 's/^# checksums: sinogram forward \([0-9a-f]*\) .*listmode forward \([0-9a-f]*\).*/\1 \2/p' \
                 "$2" ;;
  esac
}

status=0
list=()
for s in "${steps[@]}"; do
  case $s in
    nontof) list+=(bench_nontof) ;;
    tof) list+=(bench_tof) ;;
    recon) list+=(bench_recon bench_recon_tof) ;;
  esac
done
for prog in "${list[@]}"; do
  order="before:1 after:1"
  [ $abba = 1 ] && order="before:1 after:1 after:2 before:2"
  for o in $order; do run "$prog" "${o%:*}" "${o#*:}" || status=1; done
done

# ---- the same forward projections from both builds ----
for prog in bench_nontof bench_tof; do
  if [ ! -f "$out/$prog-before-1.log" ] || [ ! -f "$out/$prog-after-1.log" ]; then continue; fi
  a=$(forward_sums $prog "$out/$prog-before-1.log") b=$(forward_sums $prog "$out/$prog-after-1.log")
  if [ -n "$a" ] && [ "$a" = "$b" ]; then
    echo "bench-before-after: $prog forward checksums: the same ($a)"
  else
    echo "bench-before-after: $prog forward checksums DIFFER: before '${a:-none}', after '${b:-none}'"
    status=1
  fi
done

# ---- the table: each job's seconds (the mean of its rounds), before and after ----
echo
echo "| program | job | before s | after s | after / before |"
echo "| --- | --- | ---: | ---: | ---: |"
for prog in "${list[@]}"; do
  for side in before after; do
    for f in "$out/$prog-$side"-*.log; do [ -f "$f" ] && jobs "$prog" "$f"; done | awk -F'\t' -v side=$side '
      {s[$1] += $2; n[$1]++; if (!($1 in seen)) {seen[$1] = 1; order[++k] = $1}}
      END {for (i = 1; i <= k; i++) printf "%s\t%d\t%s\t%.4f\n", side, i, order[i], s[order[i]] / n[order[i]]}'
  done | awk -F'\t' -v prog="${prog/bench_recon_tof/bench_recon --tof}" '
    $1 == "before" {b[$3] = $4; if (!($3 in seen)) {seen[$3] = 1; order[++k] = $3}}
    $1 == "after" {a[$3] = $4; if (!($3 in seen)) {seen[$3] = 1; order[++k] = $3}}
    END {for (i = 1; i <= k; i++) {j = order[i]
           r = (j in a && j in b && b[j] > 0) ? sprintf("%.3f", a[j] / b[j]) : "-"
           printf "| %s | %s | %s | %s | %s |\n", prog, j, (j in b) ? b[j] : "-", (j in a) ? a[j] : "-", r}}'
done
exit $status
