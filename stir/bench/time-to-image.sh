#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a STIR user waits for, on one GPU machine, in one run: the set-up of the objective functions using Starproj and
# the whole run from the program's start to the image on disk, against STIR's own objective function with its
# Parallelproj pair (libparallelproj's CUDA build) and with its ray-tracing matrix on the host's cores. Prints one table
# last (also $OUT/table.md); logs and .par files in $OUT/logs.tar.gz, each run's lines in $OUT/summary.txt.
#
# STIR's Siemens mMR templates, a phantom (STIR's generate_image) forward-projected by Starproj (noise-free), and a
# normalisation and an additive term of the data's size in files (stir/bench/make_projdata.py), as a .par names them:
#   1. span 11 (72.6 M bins), OSMAPOSL 3 iterations x 21 subsets on the objective function using Starproj (updates
#      on the GPU): sensitivities computed; computed and written to files (1 sub-iteration); read from those files
#      (3 iterations); computed again without glibc's huge pages (STARPROJ_STIR_HUGE_PAGES=0, 1 sub-iteration) -- the
#      set-up of each, the whole run, and the iterations' time (the first and the later ones);
#   2. span 1 (354 M bins, the largest template STIR has): set-up with sensitivities computed, computed and written,
#      and read from those files;
#   3. listmode: EVENTS prompts drawn from the span-11 projection (stir/bench/starproj_make_listmode, STIR's mMR ECAT8
#      32-bit format), the listmode objective function using Starproj, span-1 sensitivities, 21 subsets: set-up;
#   4. the same .par as 1 (sensitivities computed) with STIR's objective function and its Parallelproj pair, on the
#      bundle's libparallelproj.so.2, libparallelproj's CUDA build (STIR calls it through its C API, host arrays in and
#      out, whichever build is loaded): whole run;
#   5. the same with STIR's ray-tracing matrix on the host's cores (OMP_NUM_THREADS = cores): whole run.
# The last two are the longest (about 2 minutes each on one H200 and its 16-core host): they run last, each with
# what is left of BUDGET; a run stopped by its limit is reported as such.
#
# Runs from the repository root with the bundle of stir/bench/make-bundle.sh in .device-stir/ and starproj's CUDA build
# in .device/ (scripts/device-bundle.sh); builds nothing.
#
# Environment (all optional): OUT (default /tmp/out), WORK (default /tmp/time-to-image), BUNDLE (default
# .device-stir), BUDGET (seconds for everything, default 470), EVENTS (default 20000000), STEPS (default "span11 span1
# listmode parallelproj raytracing"; span1viewgrams adds a span-1 run whose subset sensitivities go over the
# subsets' viewgrams, SPROJ_STIR_SENS_CHUNKS=viewgrams), DEVICES (Starproj's devices key, default gpu), ITERATIONS (default 3),
# SUBSETS (default 21), XY (image size across, default 344; smaller for a check on CPU workers).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${BUNDLE:-$root/.device-stir}
case $bundle in /*) ;; *) bundle=$root/$bundle ;; esac
out=${OUT:-/tmp/out}
work=${WORK:-/tmp/time-to-image}
budget=${BUDGET:-470}
events=${EVENTS:-20000000}
steps=" ${STEPS:-span11 span1 listmode parallelproj raytracing} "
devices=${DEVICES:-gpu}
iterations=${ITERATIONS:-3}
subsets=${SUBSETS:-21}
xy=${XY:-344}
started=$(date +%s)
bin=$bundle/bin
mkdir -p "$out"
rm -f "$out/summary.txt" "$out/table.md"
rm -rf "$work" && mkdir -p "$work" || exit 1
export LD_LIBRARY_PATH="$bundle/lib:$root/.device/lib:$root/.device/build/.libs:$root/.device/parallelproj/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STARPU_SILENT=1
export STARPU_HOME=${STARPU_HOME:-/tmp/starpu-home}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
log() { printf 'time-to-image: %s\n' "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
left() { echo $((budget - ($(date +%s) - started) - 15)); }
for p in starproj_OSMAPOSL starproj_forward_project starproj_make_listmode generate_image; do
  [ -x "$bin/$p" ] || { log "no $bin/$p (make the bundle: stir/bench/make-bundle.sh)"; exit 1; }
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
# the libparallelproj STIR's Parallelproj pair calls: the bundle's, libparallelproj's CUDA build (make-bundle.sh)
pp=$(ldd "$bin/starproj_OSMAPOSL" | awk '$1 == "libparallelproj.so.2" { print $3 }')
log "libparallelproj: ${pp:-not found}, CUDA $(python3 -c "import ctypes, sys; print('enabled' if ctypes.CDLL(sys.argv[1]).parallelproj_cuda_enabled() else 'not enabled')" "$pp" 2>/dev/null || echo unknown)"
log "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), OMP_NUM_THREADS=$OMP_NUM_THREADS, steps:$steps"
log "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown), GLIBC_TUNABLES=${GLIBC_TUNABLES:-}"
cd "$work" || exit 1
: >cases.tsv

# --- data ----------------------------------------------------------------------------------------------------------
# the template with its data file renamed; the phantom (an off-centre elliptic cylinder with a hotter ball, mMR voxels)
template() { # span: template_<span>.hs naming prompts_<span>.s
  sed -e "s/^name of data file := .*/name of data file := prompts_$1.s/" "$bundle/data/template_$1.hs" >"template_$1.hs"
}
. "$root/stir/bench/phantom-pars.sh"
phantom_pars "$xy" "$devices"
"$bin/generate_image" phantom.par >phantom.log 2>&1 || { log "generate_image failed"; tail -n 20 phantom.log; exit 1; }
data() { # span: the projected phantom, a normalisation (factors 1 / [0.8, 1.2)) and an additive term
  local t0; t0=$(now)
  [ "$(left)" -ge 30 ] || { log "data $1: skipped (the budget of $budget s is spent)"; return 1; }
  template "$1"
  : >"prompts_$1.s"
  timeout "$(left)" "$bin/starproj_forward_project" "prompts_$1" phantom.hv "template_$1.hs" forward.par >"forward_$1.log" 2>&1 ||
    { log "forward projection ($1) failed"; tail -n 20 "forward_$1.log"; return 1; }
  python3 "$root/stir/bench/make_projdata.py" "template_$1.hs" "norm_$1" 0.8 1.2 >/dev/null &&
    python3 "$root/stir/bench/make_projdata.py" "template_$1.hs" "additive_$1" 0 0.5 >/dev/null || return 1
  log "data $1: $(since "$t0") s for the projection ($(du -h "prompts_$1.s" | cut -f1)), normalisation and additive term"
}

# --- the runs --------------------------------------------------------------------------------------------------------
# sinogram .par: name objective (starproj|Parallelproj|RayTracing) span sensitivities (compute|write|read) sub-iterations
sino_par() {
  local name=$1 kind=$2 span=$3 sens=$4 subiters=$5 objective=PoissonLogLikelihoodWithLinearModelForMeanAndProjData
  local keys recompute=1 files=
  case $kind in
    starproj) objective="$objective using Starproj"
      keys="devices := $devices
verbosity := 2" ;; # 1: the set-up's steps when it ends, then with the sensitivities' hand-over to STIR
      # (its fetch and its add, once the last subset's is handed over); 2: also every call's steps when the run ends
    Parallelproj) keys="projector pair type := Parallelproj
  Projector Pair Using Parallelproj Parameters :=
    verbosity := 0
  End Projector Pair Using Parallelproj Parameters :=" ;;
    RayTracing) keys="projector pair type := Matrix
  Projector Pair Using Matrix Parameters :=
    Matrix type := Ray Tracing
    Ray tracing matrix parameters :=
    End Ray tracing matrix parameters :=
  End Projector Pair Using Matrix Parameters :=" ;;
  esac
  case $sens in
    write) files="subset sensitivity filenames := sens_${span}_{}.hv" ;;
    read) recompute=0 files="subset sensitivity filenames := sens_${span}_{}.hv" ;;
  esac
  cat <<PAR
OSMAPOSLParameters :=
objective function type := $objective
$objective Parameters :=
input file := prompts_$span.hs
additive sinogram := additive_$span.hs
Bin Normalisation type := From ProjData
  Bin Normalisation From ProjData :=
    normalisation projdata filename := norm_$span.hs
  End Bin Normalisation From ProjData:=
zero end planes of segment 0 := 0
$keys
xy output image size (in pixels) := $xy
recompute sensitivity := $recompute
use subset sensitivities := 1
$files
end $objective Parameters :=
output filename prefix := $name
number of subsets := $subsets
start at subset := 0
number of subiterations := $subiters
save estimates at subiteration intervals := $subiters
END :=
PAR
}
lm_par() { # name sub-iterations
  local objective="PoissonLogLikelihoodWithLinearModelForMeanAndListModeData using Starproj"
  cat <<PAR
OSMAPOSLParameters :=
objective function type := $objective
$objective Parameters :=
list mode filename := events.l.hdr
devices := $devices
verbosity := 1
zoom := 1
xy output image size (in pixels) := $xy
recompute sensitivity := 1
use subset sensitivities := 1
end $objective Parameters :=
output filename prefix := $1
number of subsets := $subsets
start at subset := 0
number of subiterations := $2
save estimates at subiteration intervals := $2
END :=
PAR
}
# run name what [env...]: starproj_OSMAPOSL on name.par (written before) with what is left of the budget; one line of
# cases.tsv (name, what, exit status, start, end: the system clock) for the table
run() {
  local name=$1 what=$2 limit; shift 2
  limit=$(left)
  if [ "$limit" -lt 20 ]; then
    log "$name: skipped (the budget of $budget s is spent)"
    printf '%s\t%s\tskipped\t0\t0\n' "$name" "$what" >>cases.tsv
    return
  fi
  local t0 t1 rc
  t0=$(now)
  env "$@" timeout "$limit" "$bin/starproj_OSMAPOSL" "$name.par" >"$name.log" 2>&1
  rc=$?
  t1=$(now)
  [ "$rc" -eq 124 ] && rc="stopped after $limit s"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$what" "$rc" "$t0" "$t1" >>cases.tsv
  log "$name ($what): exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
  { echo "== $name: $what (exit $rc)"
    grep -E 'starproj_OSMAPOSL: (first update|sub-iteration)|steps, seconds|prompts of|Total Wall|ERROR' "$name.log" | sed 's/^INFO: //'
  } >>"$out/summary.txt"
}
all=$((iterations * subsets))
if [[ $steps == *" span11 "* ]] && data span11; then
  sino_par span11_computed starproj span11 compute "$all" >span11_computed.par
  sino_par span11_written starproj span11 write 1 >span11_written.par
  sino_par span11_read starproj span11 read "$all" >span11_read.par
  run span11_computed "span 11, objective function using Starproj, sensitivities computed"
  run span11_written "span 11, objective function using Starproj, sensitivities computed and written"
  run span11_read "span 11, objective function using Starproj, sensitivities read"
  # the programs run themselves again with glibc's huge pages where the kernel gives them on request
  # (starproj_use_huge_pages): the first run's set-up without them (one sub-iteration)
  sino_par span11_small_pages starproj span11 compute 1 >span11_small_pages.par
  run span11_small_pages "span 11, sensitivities computed, without huge pages (STARPROJ_STIR_HUGE_PAGES=0)" \
    STARPROJ_STIR_HUGE_PAGES=0
fi
if [[ $steps == *" span1 "* ]] && data span1; then
  sino_par span1_computed starproj span1 compute 1 >span1_computed.par
  sino_par span1_written starproj span1 write 1 >span1_written.par
  sino_par span1_read starproj span1 read 1 >span1_read.par
  run span1_computed "span 1, objective function using Starproj, sensitivities computed"
  run span1_written "span 1, objective function using Starproj, sensitivities computed and written"
  run span1_read "span 1, objective function using Starproj, sensitivities read"
  if [[ $steps == *" span1viewgrams "* ]]; then
    sino_par span1_viewgrams starproj span1 compute 1 >span1_viewgrams.par
    run span1_viewgrams "span 1, objective function using Starproj, sensitivities computed over the subsets' viewgrams" \
      SPROJ_STIR_SENS_CHUNKS=viewgrams
  fi
  rm -f prompts_span1.s norm_span1.s additive_span1.s sens_span1_*.v
fi
if [[ $steps == *" listmode "* ]] && [ -f prompts_span11.hs ] && [ "$(left)" -ge 30 ]; then
  t0=$(now)
  timeout "$(left)" "$bin/starproj_make_listmode" prompts_span11.hs "$bundle/data/PET_ACQ_small.l.hdr.STIR" events "$events" \
    >make_listmode.log 2>&1 && {
    log "listmode data: $(grep -Eo '[0-9]+ prompts read back' make_listmode.log | cut -d' ' -f1) prompts in $(since "$t0") s"
    lm_par listmode 1 >listmode.par
    run listmode "listmode, $events prompts, span-1 sensitivities, objective function using Starproj"
  } || { log "starproj_make_listmode failed"; tail -n 10 make_listmode.log; }
fi
if [[ $steps == *" parallelproj "* ]] && [ -f prompts_span11.hs ]; then
  sino_par span11_parallelproj Parallelproj span11 compute "$all" >span11_parallelproj.par
  run span11_parallelproj "span 11, STIR's objective function, Parallelproj pair (libparallelproj's CUDA build)"
fi
if [[ $steps == *" raytracing "* ]] && [ -f prompts_span11.hs ]; then
  sino_par span11_raytracing RayTracing span11 compute "$all" >span11_raytracing.par
  run span11_raytracing "span 11, STIR's objective function, ray-tracing matrix on $OMP_NUM_THREADS threads"
fi

# --- the table ---------------------------------------------------------------------------------------------------------
if [ -x "$bin/starproj_stir_compare" ]; then
  for other in span11_read span11_parallelproj span11_raytracing; do
    [ -f "${other}_$all.hv" ] && [ -f "span11_computed_$all.hv" ] &&
      "$bin/starproj_stir_compare" image "span11_computed_$all.hv" "${other}_$all.hv" 1 2>/dev/null | tail -n 1 |
        sed "s/^/images: span11_computed against $other: /" >>images.txt
  done
fi
tar -czf "$out/logs.tar.gz" -- *.log *.par cases.tsv 2>/dev/null
log "$(($(date +%s) - started)) s in all"
echo
python3 "$root/stir/bench/time_to_image_table.py" "$work" "$subsets" "$iterations" | tee "$out/table.md"
