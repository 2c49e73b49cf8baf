#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_bench.sh: starproj-bench at its tiny scale with three policies on CPU workers writes the documented CSV and
# JSON columns with consistent values (busy time within the makespan, no negative byte counts, the same checksums
# under every policy) and min / median / max per configuration, and rejects bad options with a message and exit
# status 2 before StarPU starts. Its defaults at tiny scale end (five policies) and compare 'default' with lws, two
# names of one policy; the comparison itself is checked on made-up ranges; more than 8 policies split the charts.
# Hardening: an --output holding shell syntax runs nothing (no shell anywhere), an output place that cannot be
# written exits 2, and no failure nor SIGTERM/SIGINT leaves its $TMPDIR/starproj-bench-* folder. Every run is under
# timeout: a hang fails.
set -u
prog=./starproj-bench
[ -x "$prog" ] || { echo "check_bench: $prog not built"; exit 99; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/starproj-bench-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

# bad options: exit 2, a message naming the problem, no output folder
expect_usage() {
  local out="$dir/bad" msg
  msg=$(timeout 60 "$prog" --output "$out" "$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -ne 2 ]; then ko "'$*' exited $rc, expected 2"; return; fi
  if [ -z "$msg" ]; then ko "'$*' printed no message"; return; fi
  if [ -e "$out" ]; then ko "'$*' created the output folder"; return; fi
  ok
}
expect_usage --no-such-option
expect_usage --scale huge
expect_usage --repeats 0
expect_usage --repeats 2x
expect_usage --repeats
expect_usage --workloads nonesuch
expect_usage --scheds no-such-policy
expect_usage --workers cpu:w2
expect_usage --workers quantum
expect_usage stray-argument
# --simulate: refused by a normal build, and by a simulation build when the platform is missing
expect_usage --simulate "$dir/no-such-platform"
expect_usage --simulate
# --trace needs a StarPU built with FxT: without it, a message and exit 2
if timeout 60 "$prog" --list 2>/dev/null | grep -q 'trace: unavailable'; then expect_usage --trace; fi

# the whole message for each bad option: exit 2 before StarPU starts (a TMPDIR that does not exist would stop the
# driver with another message and status at its first step, the temporary folder of the probe), in seconds
expect_message() {
  local want=$1 out="$dir/bad" msg rc
  shift
  msg=$(TMPDIR="$dir/no-such-tmp" timeout 10 "$prog" --output "$out" "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 2 ]; then ko "'$*' exited $rc, expected 2: $msg"
  elif ! printf '%s' "$msg" | grep -qF -- "$want"; then ko "'$*': message '$msg', expected '$want'"
  elif [ -e "$out" ]; then ko "'$*' created the output folder"
  else ok; fi
}
expect_message "--output needs a value" --output
expect_message "--scheds needs a value" --scheds
expect_message "--output needs a value, not '--trace'" --output --trace
expect_message "--workers needs a value, not ''" --workers ''
expect_message "--scheds: unknown policy 'no-such-policy'" --scheds eager,no-such-policy
expect_message "--scheds has an empty name in 'eager,,lws'" --scheds eager,,lws
expect_message "--workloads has an empty name in ','" --workloads ,
expect_message "--workers has an empty name in 'cpu,'" --workers cpu,
expect_message "--workloads: unknown workload 'nonesuch'" --workloads fwd-whole,nonesuch
expect_message "--workers: unknown worker set 'quantum'" --workers cpu,quantum
expect_message "--repeats needs a whole number in 1..1000, not 'nan'" --repeats nan
expect_message "--timeout needs a whole number in 1..86400, not 'inf'" --timeout inf
expect_message "--warmups needs a whole number in 0..100, not '101'" --warmups 101
expect_message "--threads needs a whole number in 1..256, not '0'" --threads 0
expect_message "--scale needs tiny, small or full, not 'huge'" --scale huge
expect_message "unknown option '--no-such-option'" --no-such-option
expect_message "unexpected argument 'stray'" stray
expect_message "--scheds: 'all' stands alone" --scheds eager,all
expect_message "--test-spread needs AMIN,AMAX,BMIN,BMAX" --test-spread 2,1,3,4
expect_message "--test-spread needs AMIN,AMAX,BMIN,BMAX" --test-spread 1,2,3

# the same-policy comparison on made-up [min, max] ranges (a real run's spread is not deterministic): apart when they
# do not overlap, quiet when they do, touching ends counting as overlap; before StarPU starts
spread_case() {
  local want=$1 msg rc
  shift
  msg=$(TMPDIR="$dir/no-such-tmp" timeout 10 "$prog" --test-spread "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ]; then ko "--test-spread $*: exit $rc: $msg"
  elif ! printf '%s' "$msg" | grep -q "^$want"; then ko "--test-spread $*: '$msg', expected '$want'"
  else ok; fi
}
spread_case "same policy apart: .*\\[1, 2\\] s and \\[3, 4\\] s do not overlap" 1,2,3,4
spread_case "same policy apart: .*\\[3, 4\\] s and \\[1, 2\\] s do not overlap" 3,4,1,2
spread_case "same policy within spread" 1,3,2,4
spread_case "same policy within spread" 1,2,2,3
spread_case "same policy within spread" 0.5,0.5,0.1,0.9

if timeout 60 "$prog" --help | grep -q '^usage: starproj-bench'; then ok; else ko "--help"; fi
if timeout 60 "$prog" --list | grep -q '^  fwd-whole'; then ok; else ko "--list shows no workloads"; fi
if timeout 60 "$prog" --list | grep -q ' eager'; then ok; else ko "--list shows no policies"; fi

# a run: tiny scale, CPU workers, eager / lws / dmda (dmda calibrates first), 2 repeats
out="$dir/run"
log=$(timeout 600 "$prog" --scale tiny --workers cpu --scheds eager,lws,dmda --repeats 2 --warmups 1 \
      --calibration-runs 2 --output "$out" 2>&1); rc=$?
if [ $rc -ne 0 ]; then ko "tiny run exited $rc: $log"; fi
echo "$log" | grep -q '^\[ *1/' && ok || ko "no progress lines"
for f in results.csv results.jsonl workers.csv transfers.csv; do [ -s "$out/$f" ] && ok || ko "$f missing"; done

# the documented columns, in order (doc/bench-format.md)
cols="host,cpu_model,gpu_model,starpu_version,scale,workload,policy,policy_resolved,worker_set,phase,repeat,status,\
ncpu_workers,ncuda_workers,ngpus,makespan_s,submit_s,busy_cpu_s,busy_gpu_s,max_worker_busy_s,mean_utilisation,\
sleeping_s,tasks_cpu,tasks_gpu,bytes_moved,bytes_h2d,bytes_d2h,bytes_d2d,peak_gpu_mem_bytes,checksum_a,checksum_b,\
checksum_tol,check,done_s"
[ "$(head -n 1 "$out/results.csv")" = "$cols" ] && ok || ko "results.csv header: $(head -n 1 "$out/results.csv")"
[ "$(head -n 1 "$out/workers.csv")" = "scale,workload,policy,worker_set,phase,repeat,worker,name,kind,executing_s,\
idle_s,sleeping_s,waiting_s,total_s,tasks" ] && ok || ko "workers.csv header"
[ "$(head -n 1 "$out/transfers.csv")" = "scale,workload,policy,worker_set,phase,repeat,src_node,src_kind,dst_node,\
dst_kind,bytes,transfers" ] && ok || ko "transfers.csv header"

# 14 workloads x 3 policies x 2 repeats measured, dmda's 2 calibration runs per workload (memlimit is skipped without
# GPUs: one record per policy); every record has every column
awk -F, -v n=34 'NR > 1 && NF != n { bad++ } END { exit bad > 0 }' "$out/results.csv" && ok || ko "rows of the wrong width"
measured=$(awk -F, '$10 == "measure" && $12 == "ok"' "$out/results.csv" | wc -l)
[ "$measured" -eq 78 ] && ok || ko "$measured measured records, expected 13 workloads x 3 policies x 2 repeats = 78"
calib=$(awk -F, '$10 == "calibrate" && $12 == "ok"' "$out/results.csv" | wc -l)
[ "$calib" -eq 26 ] && ok || ko "$calib calibration records, expected 13 x 2 = 26"
skipped=$(awk -F, '$12 ~ /^skipped/' "$out/results.csv" | wc -l)
[ "$skipped" -eq 3 ] && ok || ko "$skipped skipped records, expected 3 (memlimit without GPUs)"
failed=$(awk -F, 'NR > 1 && $12 != "ok" && $12 !~ /^skipped/' "$out/results.csv" | wc -l)
[ "$failed" -eq 0 ] && ok || ko "$failed records did not run"

# values: makespan > 0, submission within the makespan, tasks done between the two, every worker's busy time within the makespan (1 ms of slack:
# StarPU's profiling clock is read apart from ours), utilisation in [0, 1], byte counts >= 0, no GPU memory without
# GPUs, 2 CPU workers at most (the machine's cores), tasks executed
awk -F, 'NR > 1 && $12 == "ok" {
  if (!($16 > 0) || $17 > $16 + 1e-3 || $20 > $16 + 1e-3 || $21 < 0 || $21 > 1.01) { print "times: " $0; bad++ }
  if ($34 < $17 - 1e-3 || $34 > $16 + 1e-3) { print "done_s outside submit_s .. makespan_s: " $0; bad++ }
  if ($25 < 0 || $26 < 0 || $27 < 0 || $28 < 0 || $29 != 0) { print "bytes: " $0; bad++ }
  if ($13 < 1 || $14 != 0 || $23 < 1) { print "workers: " $0; bad++ }
} END { exit bad > 0 }' "$out/results.csv" && ok || ko "inconsistent values in results.csv"
# per worker: executing time within its record's makespan (joined on scale .. repeat)
awk -F, 'FNR == 1 { next } NR == FNR { if ($12 == "ok") m[$5","$6","$7","$9","$10","$11] = $16; next }
  { k = $1","$2","$3","$4","$5","$6; if (!(k in m) || $10 < 0 || $10 > m[k] + 1e-3 || $11 < 0 || $12 < 0 || $15 < 0) { print; bad++ } }
  END { exit bad > 0 }' "$out/results.csv" "$out/workers.csv" && ok || ko "a worker busy beyond its makespan"
# the same checksums under every policy: within the record's own tolerance of the first policy's
awk -F, 'NR > 1 && $12 == "ok" {
  w = $6
  if (!(w in a)) { a[w] = $30; b[w] = $31; next }
  ta = $32 * (a[w] < 0 ? -a[w] : a[w]); tb = $32 * (b[w] < 0 ? -b[w] : b[w])
  da = $30 - a[w]; db = $31 - b[w]
  if (da < 0) da = -da
  if (db < 0) db = -db
  if (da > ta || db > tb || $33 == "MISMATCH") { print "checksum: " $0; bad++ }
} END { exit bad > 0 }' "$out/results.csv" && ok || ko "checksums differ between policies"
# forward workloads checksum their values, back workloads their image: neither is 0
awk -F, 'NR > 1 && $12 == "ok" && (($6 ~ /^fwd/ && $30 == 0) || ($6 ~ /^back/ && $31 == 0)) { bad++ }
  END { exit bad > 0 }' "$out/results.csv" && ok || ko "a zero checksum"

# JSON lines: one object per CSV record, each with every column and the worker and transfer arrays
[ "$(wc -l < "$out/results.jsonl")" -eq "$(($(wc -l < "$out/results.csv") - 1))" ] && ok || ko "JSON and CSV differ in records"
missing=0
for c in ${cols//,/ } workers transfers; do
  n=$(grep -c "\"$c\":" "$out/results.jsonl")
  [ "$n" -eq "$(wc -l < "$out/results.jsonl")" ] || { missing=1; echo "JSON key $c in $n lines"; }
done
[ $missing -eq 0 ] && ok || ko "JSON keys missing"
if command -v python3 >/dev/null; then
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["status"] != "ok" or (r["makespan_s"] > 0 and len(r["workers"]) == r["ncpu_workers"] + r["ncuda_workers"])
' "$out/results.jsonl" && ok || ko "results.jsonl does not parse as JSON lines"
fi

# charts, or the message that says why not
if command -v gnuplot >/dev/null; then
  [ -s "$out/makespan_cpu.png" ] && [ -s "$out/utilisation_cpu.png" ] && [ -s "$out/bytes_cpu.png" ] && ok || ko "charts missing"
  # three policies fit one chart per metric
  n=$(ls "$out" | grep -c '\.png$')
  [ "$n" -eq 3 ] && ok || ko "3 policies: $n charts, expected 3"
else
  echo "$log" | grep -q 'charts skipped: gnuplot' && ok || ko "no message about the skipped charts"
fi

# min / median / max per configuration: summary.csv (a row per configuration that ran, min <= median <= max), the
# stdout table's columns, the .dat files' three columns per policy, error bars in the script
[ "$(head -n 1 "$out/summary.csv")" = "scale,workload,worker_set,policy,policy_resolved,repeats,makespan_min_s,\
makespan_median_s,makespan_max_s,utilisation_min,utilisation_median,utilisation_max,bytes_moved_min,\
bytes_moved_median,bytes_moved_max,apart_from" ] && ok || ko "summary.csv header: $(head -n 1 "$out/summary.csv")"
rows=$(($(wc -l < "$out/summary.csv") - 1))
[ "$rows" -eq 39 ] && ok || ko "summary.csv: $rows rows, expected 13 workloads x 3 policies = 39"
awk -F, 'NR > 1 && !($7 <= $8 && $8 <= $9 && $10 <= $11 && $11 <= $12 && $13 <= $14 && $14 <= $15 && $6 == 2) {
  print; bad++ } END { exit bad > 0 }' "$out/summary.csv" && ok || ko "summary.csv: min > median or median > max"
table='^workload +set +policy +resolved +n +min_s +median_s +max_s'
echo "$log" | grep -Eq "$table" && ok || ko "no min/median/max table"
echo "$log" | grep -q '^fwd-whole  *cpu  *eager  *eager  *2 ' && ok || ko "the table has no row of fwd-whole / eager"
[ "$(head -n 1 "$out/makespan_cpu.dat")" = "workload eager eager_min eager_max lws lws_min lws_max dmda dmda_min \
dmda_max" ] && ok || ko "makespan_cpu.dat header: $(head -n 1 "$out/makespan_cpu.dat")"
grep -q '^set style histogram errorbars' "$out/charts.gp" && ok || ko "charts.gp draws no error bars"
# each name its own policy: nothing to compare, said so
echo "$log" | grep -q '^same policy under two names: none in this run' && ok || ko "no line about same-policy pairs"

# the defaults at tiny scale (the five default policies): a bound against hangs, not a speed test (they take about
# 75 s on two loaded cores); the same-policy comparison of 'default' and the policy starproj picks (lws on CPU
# workers). With GPUs the default worker sets are many more: there the CPU set alone, the policies still defaults.
out="$dir/defaults"
sets=()
timeout 60 "$prog" --list | grep -q '^worker sets on this machine (0 GPUs)' || sets=(--workers cpu)
# (a sanitizer build runs several times slower: the bound grows with Check's timeout multiplier, as sanitize.sh sets it)
limit=$((300 * ${CK_TIMEOUT_MULTIPLIER:-1}))
log=$(timeout "$limit" "$prog" --scale tiny ${sets[@]+"${sets[@]}"} --output "$out" 2>&1); rc=$?
if [ $rc -eq 124 ]; then ko "the defaults at tiny scale did not end within $limit s"
elif [ $rc -ne 0 ]; then ko "the defaults at tiny scale exited $rc: $(echo "$log" | tail -n 5)"
else ok; fi
echo "$log" | grep -q '^starproj-bench: 70 configurations (14 workloads x 1 worker sets x 5 policies)' \
  && ok || ko "the defaults are not 5 policies: $(echo "$log" | head -n 1)"
echo "$log" | grep -Eq "$table" && ok || ko "defaults: no min/median/max table"
echo "$log" | grep -Eq '^same policy under two names \(default = [a-z]+\): 13 workload pairs compared, [0-9]+ apart' \
  && ok || ko "defaults: no comparison of default with its policy: $(echo "$log" | grep '^same policy')"
# as many 'apart' lines as the count says, and each pair apart flags both its rows of summary.csv (apart_from)
napart=$(echo "$log" | sed -n 's/^same policy under two names.* compared, \([0-9]*\) apart.*/\1/p')
[ "$(echo "$log" | grep -c '^same policy apart: ')" -eq "${napart:--1}" ] && ok \
  || ko "defaults: apart lines and count differ"
[ "$(awk -F, 'NR > 1 && $16 != ""' "$out/summary.csv" | wc -l)" -eq $((2 * ${napart:-0})) ] && ok \
  || ko "defaults: summary.csv's apart_from differs from the lines"
# a log axis exactly when the makespan medians span more than a factor 30
if command -v gnuplot >/dev/null; then
  want=$(awk 'NR > 1 { for (i = 2; i <= NF; i += 3) if ($i != "?") {
      if (lo == "" || $i < lo) lo = $i
      if ($i > hi) hi = $i } }
    END { print (lo > 0 && hi > 30 * lo) ? "log" : "linear" }' "$out/makespan_cpu.dat")
  got=$(awk '/^set logscale y/ { a = "log" } /^unset logscale y/ { a = "linear" }
    /^set output .makespan_cpu/ { print a; exit }' "$out/charts.gp")
  [ "$want" = "$got" ] && ok || ko "makespan_cpu: a $got axis, expected $want"
fi

# more policies than fit one chart (8): split over two, of 5 and 4, so that the number of charts grows with the
# policies
if command -v gnuplot >/dev/null; then
  out="$dir/split"
  log=$(timeout 300 "$prog" --scale tiny --workers cpu --workloads fwd-whole --repeats 1 --warmups 0 --output "$out" \
        --scheds default,eager,prio,random,ws,lws,modular-eager,modular-prio,modular-random 2>&1); rc=$?
  [ $rc -eq 0 ] && ok || ko "9 policies: exit $rc: $(echo "$log" | tail -n 3)"
  charts=$(ls "$out" | grep '\.png$' | tr '\n' ' ')
  [ "$charts" = "bytes_cpu_p1of2.png bytes_cpu_p2of2.png makespan_cpu_p1of2.png makespan_cpu_p2of2.png \
utilisation_cpu_p1of2.png utilisation_cpu_p2of2.png " ] && ok || ko "9 policies: charts $charts, expected 2 per metric"
  grep -q "set title 'makespan, worker set cpu, scale tiny, policies 6-9 of 9" "$out/charts.gp" && ok \
    || ko "9 policies: the second chart is not policies 6-9"
  [ "$(grep -c ' title columnheader' "$out/charts.gp")" -eq 27 ] && ok || ko "9 policies: not 9 bars per metric"
fi

# --output with shell syntax and --keep-homes (copied without a shell): no file INJECTED anywhere, the run works there
# and the kept STARPU_HOME holds the bus calibration
abs_prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
inj=$(mktemp -d "$dir/inj.XXXXXX")
inj_out="q'; touch INJECTED; echo '"
log=$(cd "$inj" && timeout 120 "$abs_prog" --keep-homes --output "$inj_out" --scale tiny --workers cpu --scheds eager \
      --workloads fwd-whole --repeats 1 --warmups 0 2>&1); rc=$?
if [ -n "$(find "$inj" "$PWD" -maxdepth 2 -name INJECTED)" ]; then ko "--output ran a shell command: INJECTED exists"
elif [ $rc -ne 0 ]; then ko "--output with quotes exited $rc: $log"
elif [ ! -s "$inj/$inj_out/results.csv" ]; then ko "--output with quotes: no results.csv in '$inj_out'"
elif [ -z "$(ls -A "$inj/$inj_out/homes/fwd-whole_cpu_eager/.starpu/sampling/bus" 2>/dev/null)" ]; then
  ko "--keep-homes kept no bus calibration"
else ok; fi

# an output place that cannot be written: exit 2 before any work, a message naming --output and the place, no
# temporary folder left in a private TMPDIR; a failure after the temporary folder exists (StarPU without workers)
# and SIGTERM or SIGINT in the middle of a run remove it too
ptmp=$(mktemp -d "$dir/tmp.XXXXXX")
leftover() { ls -A "$ptmp" | grep -q '^starproj-bench-'; }
: > "$dir/plainfile"
expect_bad_output() {
  local msg rc
  msg=$(TMPDIR=$ptmp timeout 60 "$prog" --scale tiny --workers cpu --output "$1" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 2 ]; then ko "--output '$1' exited $rc, expected 2: $msg"
  elif ! printf '%s' "$msg" | grep -qF -- "--output '$1'"; then ko "--output '$1': the message does not name it: $msg"
  elif leftover; then ko "--output '$1' left a temporary folder: $(ls "$ptmp")"
  else ok; fi
}
expect_bad_output "$dir/plainfile"
expect_bad_output "$dir/plainfile/sub"
if [ "$(id -u)" -ne 0 ]; then # root writes into a folder without write permission
  mkdir "$dir/readonly" && chmod 555 "$dir/readonly" && expect_bad_output "$dir/readonly"
fi
msg=$(TMPDIR=$ptmp STARPU_NCPU=0 STARPU_NCUDA=0 STARPU_NOPENCL=0 timeout 60 "$prog" --scale tiny --workers cpu \
      --output "$dir/noworkers" 2>&1 >/dev/null); rc=$?
if [ $rc -ne 1 ]; then ko "StarPU without workers: exit $rc, expected 1: $msg"
elif ! printf '%s' "$msg" | grep -q 'could not start'; then ko "StarPU without workers: message '$msg'"
elif leftover; then ko "StarPU without workers: a temporary folder left: $(ls "$ptmp")"
elif [ -e "$dir/noworkers" ]; then ko "StarPU without workers: the output folder it made was left"
else ok; fi
# a signal to the driver alone in the middle of a run (timeout --foreground passes it to the driver only, as 'kill PID'
# would; SIGINT too, which the driver catches even where a script's background job ignores it)
interrupt_case() {
  local sig=$1 out="$dir/sig$1" pid rc started=0
  TMPDIR=$ptmp timeout --foreground 120 "$prog" --scale tiny --workers cpu --scheds eager,lws --repeats 1 --warmups 0 \
    --output "$out" >"$out.log" 2>&1 & pid=$!
  for _ in $(seq 300); do grep -q '^\[ *1/' "$out.log" && break; sleep 0.1; done
  leftover && started=1
  kill -"$sig" $pid; wait $pid; rc=$?
  if [ $started -ne 1 ]; then ko "SIG$sig: no temporary folder while running (TMPDIR not used?)"
  elif [ $rc -ne 130 ]; then ko "SIG$sig: exit $rc, expected 130: $(tail -n 3 "$out.log")"
  elif leftover; then ko "SIG$sig: a temporary folder left: $(ls "$ptmp")"
  elif ! grep -q 'interrupted during configuration' "$out.log"; then ko "SIG$sig: no message: $(cat "$out.log")"
  elif [ ! -s "$out/results.csv" ]; then ko "SIG$sig: the records of what ran were not kept"
  else ok; fi
}
interrupt_case TERM
interrupt_case INT

# the workloads where devices own their shares, over 2 devices of CPU workers (SPROJ_DEVICES): the forward values
# equal those of the plain workloads bit for bit, the back projections within their tolerance; named ones only (the
# defaults above ran none of them); osem-tof runs
out="$dir/owned"
pairs="fwd-whole:fwd-owned tof-sino:tof-sino-owned tof-lm:tof-lm-owned"
log=$(SPROJ_DEVICES=2 timeout 300 "$prog" --scale tiny --workers cpu --scheds eager --repeats 1 --warmups 0 \
      --workloads fwd-whole,fwd-owned,tof-sino,tof-sino-owned,tof-lm,tof-lm-owned,osem-tof --output "$out" 2>&1); rc=$?
if [ $rc -ne 0 ]; then ko "owned workloads exited $rc: $(echo "$log" | tail -n 5)"
else
  for p in $pairs; do
    awk -F, -v a="${p%%:*}" -v b="${p##*:}" 'NR > 1 && $10 == "measure" && $12 == "ok" { ca[$6] = $30; cb[$6] = $31; t = $32 }
      END { d = cb[a] - cb[b]; if (d < 0) d = -d; m = cb[a] < 0 ? -cb[a] : cb[a]
            exit !((a in ca) && (b in ca) && ca[a] == ca[b] && ca[a] != 0 && d <= t * m) }' "$out/results.csv" \
      && ok || ko "owned workload ${p##*:} disagrees with ${p%%:*}: $(grep -E ",(${p%%:*}|${p##*:})," "$out/results.csv")"
  done
  grep -q ',osem-tof,eager,eager,cpu,measure,0,ok,' "$out/results.csv" && ok || ko "osem-tof did not run"
fi
if timeout 60 "$prog" --list | grep -q '^  fwd-owned .*(only when named)'; then ok; else ko "--list does not mark fwd-owned"; fi

echo "check_bench: $pass passed, $fail failed"
[ $fail -eq 0 ]
