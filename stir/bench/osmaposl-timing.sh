#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times STIR's OSMAPOSL with two projector pairs, STIR's "Parallelproj" and our "Starproj", each wrapped in the
# "Timed" pair (stir/src/ProjectorByBinPairTimed.cxx), on a Siemens mMR-size sinogram, for 1, 7 and 21 subsets:
# wall time per sub-iteration, the part spent in the projector pair, the rest, one whole iteration; then a markdown
# table (the last thing printed) and the relative L2 difference between the two pairs' final images. With PAIRS
# holding Listmode, also the listmode objective function on listmode data of the same phantom (seconds per
# sub-iteration and iteration, events per second).
#
# Runs from the repository root with a bundle made by stir/bench/make-bundle.sh in .device-stir/ (programs, the
# libraries they need beyond .device/, STIR's scanner templates) and starproj's GPU build in .device/ (scripts/
# device-bundle.sh). In $OUT (default /tmp/out), three files: table.md, summary.txt (each run's per-sub-iteration
# lines and Timed totals) and logs.tar.gz (all logs and .par files); work files in $WORK (default
# /tmp/osmaposl-timing).
#
# The data are made on the spot: a phantom (STIR's generate_image) forward-projected by Starproj onto STIR's
# template, noise-free. Each number of subsets N runs N sub-iterations (one iteration; 3 for 1 subset), Starproj
# first: its run writes the subset sensitivities, which the Parallelproj run then reads (the set-up is not what is
# measured, and a Parallelproj set-up would back-project the whole data once per subset).
#
# Environment (all optional):
#   DATA      span11 (default: examples/Siemens-mMR/template_span11.hs, 837 sinograms x 252 views x 344 bins,
#             72.6 M LORs), span1 (examples/Siemens-mMR/template_span1.hs, the largest template STIR has: 4084
#             sinograms, 354 M LORs), seg2 (recon_test_pack/Siemens_mMR_seg2.hs, 5 segments, 27.3 M LORs), or tiny
#             (seg2's segment 0 cut to 101 bins, for CPU tests)
#   ITERATIONS  iterations per run, default 1 (1 subset: at least 3 sub-iterations)
#   SUBSETS   default "1 7 21"     PAIRS  default "Starproj Parallelproj" (Starproj first: see above); also
#             Objective (the objective function using Starproj, OSMAPOSL's updates on its devices: no projector pair),
#             OSSPS (STIR's OSSPS on that objective function, its updates on the devices: starproj_OSSPS),
#             RayTracing (STIR's default pair, the ray-tracing matrix, on the host's cores), Listmode (the listmode
#             objective function using Starproj on listmode data drawn from the same projection, below), STIROwn
#             (STIR's own OSMAPOSL, run by the bundle's starproj-stir with libstir_starproj preloaded, on the objective
#             function using Starproj: its update on the host; its sub-iterations timed from the moments STIR prints
#             "subiteration #N completed", the first from the end of the objective function's set-up) and Long (the
#             objective function using Starproj for LONG_SUBITERATIONS sub-iterations, default 500, verbosity 1: the
#             resident set and StarPU's GPU memory at the end of each iteration, summed up after the table)
#   EVENTS    Listmode: prompts drawn (Poisson) from the phantom's projection, default 20000000, written as an mMR
#             listmode file of STIR's test-pack format (ECAT8 32-bit) by starproj_make_listmode on the host's cores;
#             the listmode objective function reads it with STIR's reader (span 1, 4084 sinograms, 354 M LORs for the
#             sensitivities)
#   LM_MAX_SEGMENT  Listmode: its "maximum absolute segment number to process", default -1 (all)
#   DEVICES   Starproj's devices key, default gpu      CASE_TIMEOUT  seconds per OSMAPOSL run, default 300
#   VERBOSITY Starproj's verbosity key, default 2 (the times of the per-image steps, in summary.txt)
#   BUDGET    seconds for the whole script, default 560 (a run gets at most what is left, less 20 s for the table;
#             runs that would get under 30 s are skipped)
#   BUNDLE    default .device-stir
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${BUNDLE:-$root/.device-stir}
case $bundle in /*) ;; *) bundle=$root/$bundle ;; esac
out=${OUT:-/tmp/out}
work=${WORK:-/tmp/osmaposl-timing}
data=${DATA:-span11}
subsets=${SUBSETS:-1 7 21}
iterations=${ITERATIONS:-1}
pairs=${PAIRS:-Starproj Parallelproj}
devices=${DEVICES:-gpu}
verbosity=${VERBOSITY:-2}
case_timeout=${CASE_TIMEOUT:-300}
budget=${BUDGET:-560}
events=${EVENTS:-20000000}
lm_max_segment=${LM_MAX_SEGMENT:--1}
started=$(date +%s)
time_left() { # seconds a run may take now
  local left=$((budget - ($(date +%s) - started) - 20))
  [ "$left" -lt "$case_timeout" ] && echo "$left" || echo "$case_timeout"
}
bin=$bundle/bin
mkdir -p "$out"
rm -f "$out/summary.txt"
rm -rf "$work" && mkdir -p "$work" || exit 1
export LD_LIBRARY_PATH="$bundle/lib:$root/.device/lib:$root/.device/build/.libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STARPU_SILENT=1
export STARPU_HOME=${STARPU_HOME:-/tmp/starpu-home}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
log() { printf 'osmaposl-timing: %s\n' "$*"; }
for p in starproj_OSMAPOSL starproj_forward_project generate_image; do
  [ -x "$bin/$p" ] || { log "no $bin/$p (make the bundle: stir/bench/make-bundle.sh)"; exit 1; }
done
long_subiterations=${LONG_SUBITERATIONS:-500}
case " $pairs " in
  *" STIROwn "*)
    for p in OSMAPOSL starproj-stir; do
      [ -x "$bin/$p" ] || { log "no $bin/$p: STIROwn needs STIR's own OSMAPOSL and the launcher (a bundle of a shared STIR)"; exit 1; }
    done
    # STIR writes its progress through stdio buffers, which a pipe fills before they are written: stdbuf makes them
    # line-buffered, so that each line is stamped when STIR prints it
    stdbuf -oL -eL true 2>/dev/null || { log "STIROwn needs coreutils' stdbuf"; exit 1; } ;;
esac
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
log "$(nproc) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS, data $data, subsets $subsets, pairs $pairs"
cd "$work"

# --- the template, the phantom, the data ---------------------------------------------------------------------
case $data in
  span11) src=$bundle/data/template_span11.hs; xy=344 ;;
  span1) src=$bundle/data/template_span1.hs; xy=344 ;;
  seg2) src=$bundle/data/Siemens_mMR_seg2.hs; xy=344 ;;
  tiny) src=$bundle/data/Siemens_mMR_seg2.hs; xy=101 ;;
  *) log "unknown DATA '$data'"; exit 2 ;;
esac
[ -f "$src" ] || { log "no template $src"; exit 1; }
sed -e 's/^name of data file := .*/name of data file := template.s/' "$src" >template.hs
if [ "$data" = tiny ]; then
  sed -i -e 's/^!matrix size \[4\] := .*/!matrix size [4] := 1/' -e 's/^!matrix size \[2\] := .*/!matrix size [2] := { 64}/' \
    -e 's/^minimum ring difference per segment := .*/minimum ring difference per segment := { 0}/' \
    -e 's/^maximum ring difference per segment := .*/maximum ring difference per segment := { 0}/' \
    -e 's/^!matrix size \[1\] := .*/!matrix size [1] := 101/' template.hs
fi
: >template.s
# the phantom (stir/bench/phantom-pars.sh): mMR voxels, 127 planes (64 rings); an off-centre
# elliptic cylinder with a hotter ball inside.
. "$root/stir/bench/phantom-pars.sh"
phantom_pars "$xy" "$devices"
t0=$(date +%s.%N)
"$bin/generate_image" phantom.par >phantom.log 2>&1 || { log "generate_image failed"; tail -n 20 phantom.log; exit 1; }
timeout "$(time_left)" "$bin/starproj_forward_project" prompts phantom.hv template.hs forward.par >forward.log 2>&1 \
  || { log "forward projection failed"; tail -n 20 forward.log; exit 1; }
log "data: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s for the phantom and its projection ($(du -h prompts.s | cut -f1))"
case " $pairs " in
  *" Listmode "*)
    [ -x "$bin/starproj_make_listmode" ] && [ -f "$bundle/data/PET_ACQ_small.l.hdr.STIR" ] \
      || { log "no starproj_make_listmode or listmode header in $bundle (make the bundle again)"; exit 1; }
    t0=$(date +%s.%N)
    timeout "$(time_left)" "$bin/starproj_make_listmode" prompts.hs "$bundle/data/PET_ACQ_small.l.hdr.STIR" events "$events" \
      >make_listmode.log 2>&1 || { log "starproj_make_listmode failed"; tail -n 20 make_listmode.log; exit 1; }
    log "listmode data: $(grep -Eo '[0-9]+ prompts read back' make_listmode.log | cut -d' ' -f1) prompts in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s ($(du -h events.l | cut -f1))"
    ;;
esac

# --- the reconstructions -------------------------------------------------------------------------------------
osmaposl_par() { # pair N sub-iterations
  local pair=$1 n=$2 subiters=$3 keys recompute=1 objective=PoissonLogLikelihoodWithLinearModelForMeanAndProjData
  local projectors
  case $pair in
    Starproj) keys="devices := $devices
      verbosity := $verbosity" ;; # 1: one line (workers, GPUs, scheduler); 2: also the steps' times
    Parallelproj) keys="verbosity := 0" ;;
    *) keys= ;;
  esac
  projectors="projector pair type := Timed
  Timed Projector Pair Parameters :=
    projector pair type := $pair
      Projector Pair Using $pair Parameters :=
      $keys
      End Projector Pair Using $pair Parameters :=
  End Timed Projector Pair Parameters :="
  case $pair in
    Objective|OSSPS|STIROwn|Long) # starproj's objective function: no projector pair, the updates on the devices
      # (STIROwn: STIR's update on the host; at least verbosity 1, whose line ends the set-up; Long: verbosity 1, the
      # memory at the end of each iteration without verbosity 2's step reports)
      local v=$verbosity
      [ "$pair" = STIROwn ] && [ "$v" -lt 1 ] && v=1
      [ "$pair" = Long ] && v=1
      objective="PoissonLogLikelihoodWithLinearModelForMeanAndProjData using Starproj"
      projectors="devices := $devices
verbosity := $v" ;;
    RayTracing) # STIR's default CPU pair: the ray-tracing matrix, its symmetries, on the host's cores
      projectors="projector pair type := Timed
  Timed Projector Pair Parameters :=
    projector pair type := Matrix
      Projector Pair Using Matrix Parameters :=
        Matrix type := Ray Tracing
        Ray tracing matrix parameters :=
        End Ray tracing matrix parameters :=
      End Projector Pair Using Matrix Parameters :=
  End Timed Projector Pair Parameters :=" ;;
  esac
  if [ "$pair" = Listmode ]; then # the listmode objective function: its own sensitivities (the listmode's bins)
    objective="PoissonLogLikelihoodWithLinearModelForMeanAndListModeData using Starproj"
    cat <<PAR
OSMAPOSLParameters :=
objective function type := $objective
$objective Parameters :=
list mode filename := events.l.hdr
maximum absolute segment number to process := $lm_max_segment
devices := $devices
verbosity := $((verbosity > 1 ? verbosity : 1))
zoom := 1
xy output image size (in pixels) := $xy
recompute sensitivity := 1
use subset sensitivities := 1
end $objective Parameters :=
output filename prefix := recon_${pair}_${n}
number of subsets := $n
start at subset := 0
number of subiterations := $subiters
save estimates at subiteration intervals := $subiters
END :=
PAR
    return
  fi
  [ -f "sens_${n}_0.hv" ] && recompute=0
  local method=OSMAPOSL extra=
  [ "$pair" = OSSPS ] && method=OSSPS extra="relaxation parameter := 1"
  cat <<PAR
${method}Parameters :=
objective function type := $objective
$objective Parameters :=
input file := prompts.hs
zero end planes of segment 0 := 0
$projectors
xy output image size (in pixels) := $xy
recompute sensitivity := $recompute
use subset sensitivities := 1
subset sensitivity filenames := sens_${n}_{}.hv
end $objective Parameters :=
output filename prefix := recon_${pair}_${n}
number of subsets := $n
start at subset := 0
number of subiterations := $subiters
save estimates at subiteration intervals := $subiters
$extra
END :=
PAR
}
# STIR's own OSMAPOSL prints no times: its lines are stamped as they come (bash's EPOCHREALTIME), and each
# sub-iteration's time is taken from one "subiteration #N completed" to the next (the first from the end of the
# objective function's set-up), written as starproj_OSMAPOSL's lines so that the table reads them alike
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }
stir_own_times() { # stamped log -> the log with "OSMAPOSL (STIR's own): sub-iteration N: ..." lines
  awk '{ t = $1; sub(/^[^ ]+ /, ""); print }
    / using Starproj: [0-9]+ LORs x / { last = t }
    / subiteration #[0-9]+ completed/ {
      n = $0; sub(/.*subiteration #/, "", n); sub(/ .*/, "", n)
      if (last != "") printf "OSMAPOSL (STIR'"'"'s own): sub-iteration %d: update %.6f s, in projectors 0.000000 s, end of sub-iteration 0.000000 s (forward projector 0.000000 s, back projector 0.000000 s)\n", n, t - last
      last = t }' "$1"
}
for n in $subsets; do
  subiters=$((n * iterations))
  [ "$n" -eq 1 ] && subiters=$((iterations > 3 ? iterations : 3))
  for pair in $pairs; do
    runs=$subiters
    [ "$pair" = Long ] && runs=$long_subiterations
    osmaposl_par "$pair" "$n" "$runs" >"OSMAPOSL_${pair}_${n}.par"
    limit=$(time_left)
    if [ "$limit" -lt 30 ]; then
      log "$pair, $n subsets: skipped (the budget of $budget s is spent)"
      continue
    fi
    t0=$(date +%s.%N)
    program=starproj_OSMAPOSL
    [ "$pair" = OSSPS ] && program=starproj_OSSPS
    if [ "$pair" = STIROwn ]; then
      timeout "$limit" stdbuf -oL -eL "$bin/starproj-stir" "$bin/OSMAPOSL" "OSMAPOSL_${pair}_${n}.par" 2>&1 \
        | stamp >"OSMAPOSL_${pair}_${n}.stamped.log"
      rc=${PIPESTATUS[0]}
      stir_own_times "OSMAPOSL_${pair}_${n}.stamped.log" >"OSMAPOSL_${pair}_${n}.log"
    else
      timeout "$limit" "$bin/$program" "OSMAPOSL_${pair}_${n}.par" >"OSMAPOSL_${pair}_${n}.log" 2>&1
      rc=$?
    fi
    log "$pair, $n subsets, $runs sub-iterations: exit $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
    { echo "== $pair, $n subsets (exit $rc)"
      grep -E "^starproj_(OSMAPOSL|OSSPS): sub-iteration|^starproj_(OSMAPOSL|OSSPS): updates|^OSMAPOSL \(STIR's own\): |Timed projectors:|^Total Wall|Starproj: |using Starproj: | memory: " \
        "OSMAPOSL_${pair}_${n}.log" \
        | sed 's/^INFO: //'
    } >>"$out/summary.txt"
    [ "$rc" -eq 0 ] || grep -E 'ERROR|error|what\(\)' "OSMAPOSL_${pair}_${n}.log" | head -n 5
  done
done

# --- the table -------------------------------------------------------------------------------------------------
tar -czf "$out/logs.tar.gz" -- *.log *.par template.hs events.l.hdr 2>/dev/null
log "$(( $(date +%s) - started )) s in all"
echo
python3 "$root/stir/bench/osmaposl_timing_table.py" "$work" "$pairs" "$subsets" | tee "$out/table.md"
