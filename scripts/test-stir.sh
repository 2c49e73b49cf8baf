#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests of the "Starproj" projector pair for STIR (stir/): builds STIR with its "Parallelproj" pair (install-stir.sh,
# skipped when installed), starproj without CUDA (when pkg-config does not find it; brought up to date when this
# script built it), the pair and its programs, then
# compares "Starproj" with "Parallelproj" on STIR's own test-pack scanner template (recon_test_pack's
# template_for_ROOT_scanner.hs, trimmed to 151 tangential positions) and a phantom made by STIR's generate_image:
#   1. forward projection: every viewgram within 1e-5 of the largest value
#   2. back projection: within 1e-5 (relative L2 and max-norm)
#   3. OSMAPOSL, 4 subsets, 2 iterations: images within 1e-4 (relative L2)
#   4. each subset gradient (what an OSMAPOSL sub-iteration computes) projects exactly its subset's LORs
#   5. TOF (the template's 5 TOF positions): forward and back projection as 1 and 2
#   6. the "Timed" pair delegates: OSMAPOSL with Timed(Parallelproj) on one thread gives Parallelproj's image bit for
#      bit; with Timed(Starproj), Starproj's within 1e-5 (StarPU's reductions add in no fixed order: two runs of
#      Starproj alone differ by about 1e-6)
#   7. the objective function "PoissonLogLikelihoodWithLinearModelForMeanAndProjData using Starproj" against STIR's
#      with the Parallelproj pair: sensitivities, gradients, values, Hessian products (starproj_stir_objective)
#   8. OSMAPOSL on that objective function with its updates on starproj's devices: images within 1e-4 of 3., and
#      with subset sensitivities
#   9. OSSPS on that objective function, its updates on starproj's devices, against OSSPS on STIR's with
#      Parallelproj (updates on the host): within 1e-4
#  10. the listmode objective function "PoissonLogLikelihoodWithLinearModelForMeanAndListModeData using Starproj"
#      against the sinogram objective functions on the same events histogrammed by STIR's LmToProjData: STIR's mMR
#      listmode file, and listmode sources made from the projected phantom (non-TOF, TOF): within 1e-5
#  11. listmode OSMAPOSL on it (updates on starproj's devices) against STIR's OSMAPOSL of the histogram: within 1e-4
#  12. against STIR's own listmode OSMAPOSL (ray-tracing matrix): as far as STIR's ray-tracing and Starproj images of
#      the histogram are from each other (1e-3 of that distance)
#  13. bad input to the listmode objective function stops OSMAPOSL with a message, not a crash
#  14. STIR's own programs (OSMAPOSL, OSSPS, forward_project, back_project, lm_to_projdata) with libstir_starproj loaded
#      at start by the installed launcher, starproj-stir: the same results as our programs on the same .par files;
#      the launcher's GLIBC_TUNABLES (glibc's huge pages added, a caller's setting kept, none on request)
#  15. hostile input (a missing or truncated data file, sensitivities of another image size, subsets that do not
#      divide the views, a normalisation of the wrong size for TOF data, a listmode subset without events, devices :=
#      bogus; a data file, an additive term's file or both failing mid-read, which only the set-up's reading threads
#      meet): our programs and STIR's own stop with exit status 1 and a message naming the problem, no image written
#  16. a long run: 500 sub-iterations of OSMAPOSL on the objective function using Starproj; the resident set may
#      grow by at most 1 MiB from the end of iteration 2 to the last
#  17. (unless --no-sanitize) starproj and stir/ under AddressSanitizer and UndefinedBehaviorSanitizer (build-sanitize/
#      as scripts/sanitize.sh makes it, build-stir-sanitize/): OSMAPOSL on the objective functions and the pair, OSSPS,
#      a set-up that fails, STIR's own OSMAPOSL through the launcher: no leak at exit, no error report
#  18. STIR's other PET geometries: arc-corrected cylindrical data (TOF too), the block geometry, the generic geometry
#      (STIR's SAFIR example and its listmode file): 1. to 3. and the objective functions as 7. and 10.; SPECT, images
#      that are not a regular VoxelsOnCartesianGrid, other ProjDataInfo classes and TOF block data refused at set_up
#      with a message naming them (scripts/test-stir-geometries.sh)
#  19. the set-up's fast paths against STIR's own interfaces (starproj_stir_setup_paths): the closed-form LORs bit for
#      bit against get_LOR (non-TOF, TOF, a view offset); projection data read straight from their files against
#      get_segment_by_view (by view and by sinogram, TOF, big-endian, another segment order, an offset and a scale
#      factor; another number type read through STIR's interface; a truncated file stopped with an error); a "From
#      ProjData" normalisation's factors against its undo(); the ECAT8 32-bit list read on every core, event for
#      event against STIR's reader; the objective function with its normalisation and additive term in files;
#      OSMAPOSL with subset sensitivities read from the files it wrote; OSMAPOSL with the end planes of segment 0
#      zeroed; a truncated data file and an unknown number type through starproj_OSMAPOSL
# CPU workers only. Files go to build-stir/tests-run (or --work DIR).
#
# usage: scripts/test-stir.sh --with-stir SRC --with-parallelproj SRC [--prefix DIR] [--starproj-prefix DIR]
#                             [--work DIR] [--no-tof] [--no-sanitize]
#   SRC: source folder or .tar.gz; --prefix: STIR's (default /usr/local/stir); --starproj-prefix: where starproj is
#   or goes (default .local of this checkout)
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
repo=$(pwd)

stir_src=
pp_src=
prefix=/usr/local/stir
sp_prefix=$repo/.local
work=$repo/build-stir/tests-run
tof=yes
sanitize=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --with-stir) stir_src=$2; shift 2 ;;
    --with-parallelproj) pp_src=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --starproj-prefix) sp_prefix=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-tof) tof=no; shift ;;
    --no-sanitize) sanitize=no; shift ;;
    -h|--help) sed -n '3,56p' "$0"; exit 0 ;;
    *) echo "test-stir: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$stir_src" ] && [ -n "$pp_src" ] || { echo "test-stir: --with-stir and --with-parallelproj are required" >&2; exit 2; }
log() { printf 'test-stir: %s\n' "$*"; }
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$caller" "$1" ;; esac; }
stir_src=$(abspath "$stir_src")
pp_src=$(abspath "$pp_src")
work=$(abspath "$work")
sp_prefix=$(abspath "$sp_prefix")
for src in "$stir_src" "$pp_src"; do
  [ -d "$src" ] || [ -f "$src" ] || { log "no such source: $src (a source folder or a .tar.gz)" >&2; exit 1; }
done

# --- dependencies ----------------------------------------------------------------------------------------
bash scripts/install-stir.sh --with-stir "$stir_src" --with-parallelproj "$pp_src" --prefix "$prefix" --shared
export PKG_CONFIG_PATH="$sp_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if ! pkg-config --exists starproj; then
  log "building starproj (without CUDA) into $sp_prefix"
  mkdir -p build-stir/starproj
  (./autogen.sh && cd build-stir/starproj && ../../configure -q --without-cuda --prefix="$sp_prefix" &&
    make -s -j"$(nproc)" && make -s install) >build-stir/starproj.log 2>&1 || { tail -n 30 build-stir/starproj.log; exit 1; }
elif [ -f build-stir/starproj/Makefile ]; then
  # a starproj this script built before: brought up to date with the checkout (make rebuilds what changed)
  (cd build-stir/starproj && make -s -j"$(nproc)" && make -s install) >build-stir/starproj.log 2>&1 ||
    { tail -n 30 build-stir/starproj.log; exit 1; }
fi

# --- the pair and its programs ---------------------------------------------------------------------------
log "building stir/ (the Starproj pair, programs, test helpers)"
mkdir -p build-stir
rm -f build-stir/CMakeCache.txt # the prefixes of this run, not those a cache remembers
blog=build-stir/build.log
cmake -S stir -B build-stir -DCMAKE_PREFIX_PATH="$prefix;$sp_prefix" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1 \
  || { tail -n 30 "$blog"; exit 1; }
cmake --build build-stir -j "$(nproc)" >>"$blog" 2>&1 || { grep -E 'error|Error' "$blog" | head -n 30; exit 1; }
bin=$repo/build-stir
export PATH="$prefix/bin:$PATH"
# no LD_LIBRARY_PATH: the programs find STIR's, starproj's and the pair's libraries through their run paths
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}

# --- test data -------------------------------------------------------------------------------------------
rm -rf "$work" && mkdir -p "$work"
cp stir/tests/*.par "$work/"
cd "$work"
template=recon_test_pack/template_for_ROOT_scanner.hs
# STIR's test-pack listmode file (Siemens mMR, ECAT8 32-bit, 0.6 s of data) for the listmode objective function
lm_files="recon_test_pack/PET_ACQ_small.l.hdr.STIR recon_test_pack/small_listmode_file.l"
if [ -d "$stir_src" ]; then
  cp "$stir_src/$template" root_template.hs
  for f in $lm_files; do cp "$stir_src/$f" .; done
else
  tar -xzf "$stir_src" --strip-components=1 "STIR/$template" $(for f in $lm_files; do printf 'STIR/%s ' "$f"; done)
  cp "$template" root_template.hs
  for f in $lm_files; do cp "$f" .; done
fi
# 151 of the 501 tangential positions keep the test small (608832 LORs); the header of the non-TOF template drops
# the timing-position axis
sed -e 's/^!matrix size \[1\] := 501/!matrix size [1] := 151/' -e 's/^name of data file := .*/name of data file := template_tof.s/' \
  root_template.hs >template_tof.hs
sed -e 's/^number of dimensions := 5/number of dimensions := 4/' -e '/timing positions/d' -e '/^!matrix size \[5\]/d' \
  -e 's/^name of data file := .*/name of data file := template.s/' template_tof.hs >template.hs
: >template.s
: >template_tof.s

failures=0
check() { # name command...
  local name=$1; shift
  local t0; t0=$(date +%s)
  if "$@" >"$name.log" 2>&1; then
    log "PASS $name ($(( $(date +%s) - t0 )) s): $(tail -n 1 "$name.log")"
  else
    log "FAIL $name (log: $work/$name.log)"; tail -n 15 "$name.log"; failures=$((failures + 1))
  fi
}
run() { # name command... (a step the checks need)
  local name=$1; shift
  local t0; t0=$(date +%s)
  "$@" >"$name.log" 2>&1 || { log "FAILED to run $name (log: $work/$name.log)"; tail -n 20 "$name.log"; exit 1; }
  log "ran $name ($(( $(date +%s) - t0 )) s)"
}

run phantom generate_image phantom.par
# 1. forward projection
run fwd_Parallelproj forward_project fwd_Parallelproj phantom.hv template.hs forward_Parallelproj.par
run fwd_Starproj "$bin/starproj_forward_project" fwd_Starproj phantom.hv template.hs forward_Starproj.par
check forward "$bin/starproj_stir_compare" proj fwd_Parallelproj.hs fwd_Starproj.hs 1e-5
# 2. back projection of the projected phantom
run back_Parallelproj back_project back_Parallelproj fwd_Parallelproj.hs phantom.hv back_Parallelproj.par
run back_Starproj "$bin/starproj_back_project" back_Starproj fwd_Parallelproj.hs phantom.hv back_Starproj.par
check back "$bin/starproj_stir_compare" image-max back_Parallelproj.hv back_Starproj.hv 1e-5
# 3. OSMAPOSL on the projected phantom (noise-free)
cp fwd_Parallelproj.hs prompts.hs && sed -i 's/^name of data file := .*/name of data file := fwd_Parallelproj.s/' prompts.hs
run OSMAPOSL_Parallelproj OSMAPOSL OSMAPOSL_Parallelproj.par
run OSMAPOSL_Starproj "$bin/starproj_OSMAPOSL" OSMAPOSL_Starproj.par
check OSMAPOSL "$bin/starproj_stir_compare" image recon_Parallelproj_8.hv recon_Starproj_8.hv 1e-4
# 4. LORs of the subsets
check subset_lors "$bin/starproj_stir_subset_lors" OSMAPOSL_Starproj.par
# 5. TOF
if [ "$tof" = yes ]; then
  run fwd_tof_Parallelproj forward_project fwd_tof_Parallelproj phantom.hv template_tof.hs forward_Parallelproj.par
  run fwd_tof_Starproj "$bin/starproj_forward_project" fwd_tof_Starproj phantom.hv template_tof.hs forward_Starproj.par
  check forward_tof "$bin/starproj_stir_compare" proj fwd_tof_Parallelproj.hs fwd_tof_Starproj.hs 1e-5
  run back_tof_Parallelproj back_project back_tof_Parallelproj fwd_tof_Parallelproj.hs phantom.hv back_Parallelproj.par
  run back_tof_Starproj "$bin/starproj_back_project" back_tof_Starproj fwd_tof_Parallelproj.hs phantom.hv back_Starproj.par
  check back_tof "$bin/starproj_stir_compare" image-max back_tof_Parallelproj.hv back_tof_Starproj.hv 1e-5
fi

# 6. the Timed pair
sed 's/^output filename prefix := .*/output filename prefix := recon_Parallelproj_1thread/' OSMAPOSL_Parallelproj.par \
  >OSMAPOSL_Parallelproj_1thread.par
run OSMAPOSL_Parallelproj_1thread env OMP_NUM_THREADS=1 "$bin/starproj_OSMAPOSL" OSMAPOSL_Parallelproj_1thread.par
run OSMAPOSL_Timed_Parallelproj env OMP_NUM_THREADS=1 "$bin/starproj_OSMAPOSL" OSMAPOSL_Timed_Parallelproj.par
check timed_parallelproj "$bin/starproj_stir_compare" image recon_Parallelproj_1thread_8.hv recon_Timed_Parallelproj_8.hv 0
run OSMAPOSL_Timed_Starproj "$bin/starproj_OSMAPOSL" OSMAPOSL_Timed_Starproj.par
check timed_starproj "$bin/starproj_stir_compare" image recon_Starproj_8.hv recon_Timed_Starproj_8.hv 1e-5
# each sub-iteration printed its time and the Timed pair its totals
check timed_report grep -E '^Timed projectors: +forward +[1-9]' OSMAPOSL_Timed_Starproj.log
check subiteration_report grep -c 'starproj_OSMAPOSL: sub-iteration 8: update' OSMAPOSL_Timed_Starproj.log

# 7. the objective function using Starproj against STIR's with its Parallelproj pair: sensitivities, gradients,
# values and Hessian products (1e-5, STIR's quotient and small-value rules followed), with and without a
# normalisation and an additive sinogram; TOF on one subset (STIR's TOF Hessian products are not comparable)
check objective "$bin/starproj_stir_objective" fwd_Parallelproj.hs phantom.hv 4 1e-5
check objective_norm_additive "$bin/starproj_stir_objective" fwd_Parallelproj.hs phantom.hv 4 1e-5 --norm-and-additive
# 8. OSMAPOSL on that objective function, its updates on starproj's devices, against STIR's with Parallelproj
run OSMAPOSL_Objective "$bin/starproj_OSMAPOSL" OSMAPOSL_Objective.par
check OSMAPOSL_objective "$bin/starproj_stir_compare" image recon_Parallelproj_8.hv recon_Objective_8.hv 1e-4
check updates_on_devices grep -E "^starproj_OSMAPOSL: updates on starproj's devices: 8, on the host: 0" OSMAPOSL_Objective.log
# the same with subset sensitivities (the update then divides by starproj's own, resident, subset sensitivities)
for p in Parallelproj Objective; do
  sed -e 's/^recompute sensitivity := 1/recompute sensitivity := 1\nuse subset sensitivities := 1/' \
    -e "s/^output filename prefix := .*/output filename prefix := recon_${p}_subsets/" "OSMAPOSL_$p.par" >"OSMAPOSL_${p}_subsets.par"
done
run OSMAPOSL_Parallelproj_subsets OSMAPOSL OSMAPOSL_Parallelproj_subsets.par
run OSMAPOSL_Objective_subsets "$bin/starproj_OSMAPOSL" OSMAPOSL_Objective_subsets.par
check OSMAPOSL_objective_subsets "$bin/starproj_stir_compare" image recon_Parallelproj_subsets_8.hv \
  recon_Objective_subsets_8.hv 1e-4
# 9. OSSPS (its surrogates from the objective function's approximate Hessian) on both objective functions
run OSSPS_Parallelproj "$bin/starproj_OSSPS" OSSPS_Parallelproj.par
run OSSPS_Objective "$bin/starproj_OSSPS" OSSPS_Objective.par
check OSSPS_objective "$bin/starproj_stir_compare" image ossps_Parallelproj_8.hv ossps_Objective_8.hv 1e-4
check ossps_updates_on_devices grep -E "^starproj_OSSPS: updates on starproj's devices: 8, on the host: 0" OSSPS_Objective.log
check ossps_parallelproj_on_host grep -E "^starproj_OSSPS: updates on starproj's devices: 0, on the host: 8" \
  OSSPS_Parallelproj.log
if [ "$tof" = yes ]; then
  check objective_tof "$bin/starproj_stir_objective" fwd_tof_Parallelproj.hs phantom.hv 4 1e-5 --check-subsets 1
fi

# 10. the listmode objective function using Starproj against the sinogram objective functions on the same events
# histogrammed by STIR's LmToProjData (sensitivities, gradients, Hessian products 1e-5; values 1e-5): STIR's mMR
# listmode file (segments -1 .. 1, 8019 prompts; subsets 0 and 1 of 4) with a normalisation and an additive sinogram,
# against the one using Starproj; a listmode source made from the projected phantom (200000 prompts, with delayeds and
# time marks to skip; subset 0 of 4), against it and STIR's own with Parallelproj; TOF (STIR's test data have no TOF
# listmode file this STIR reads: the same source made from the TOF projection; subset 0 of 4) with a normalisation and
# an additive term in files (read straight from them), against the one using Starproj
run mmr_phantom generate_image mmr_phantom.par
check lm_objective_mmr "$bin/starproj_stir_lm_objective" PET_ACQ_small.l.hdr.STIR mmr_phantom.hv 4 1e-5 --max-segment 1 \
  --norm-and-additive --check-subsets 2
check lm_objective_stir "$bin/starproj_stir_lm_objective" synthetic:fwd_Parallelproj.hs:200000 phantom.hv 4 1e-5 \
  --stir-sinogram --check-subsets 1
if [ "$tof" = yes ]; then
  check lm_objective_tof "$bin/starproj_stir_lm_objective" synthetic:fwd_tof_Parallelproj.hs:200000 phantom.hv 4 1e-5 \
    --norm-and-additive --in-files --check-subsets 1
fi
# 11. listmode OSMAPOSL (7 subsets, 1 iteration) with the listmode objective function using Starproj, updates on its
# devices, against STIR's OSMAPOSL of the histogram (STIR's lm_to_projdata) with STIR's objective function and the
# Starproj pair: 1e-4; the mMR file's segment 0 (2740 prompts), which keeps 11. and 12. short
run lm_to_projdata "$bin/starproj_stir_lm_to_projdata" lm_to_projdata.par
run OSMAPOSL_LM_Starproj "$bin/starproj_OSMAPOSL" OSMAPOSL_LM_Starproj.par
run OSMAPOSL_histogram_Starproj "$bin/starproj_OSMAPOSL" OSMAPOSL_histogram_Starproj.par
check OSMAPOSL_listmode "$bin/starproj_stir_compare" image histogram_Starproj_7.hv lm_Starproj_7.hv 1e-4
check lm_updates_on_devices grep -E "^starproj_OSMAPOSL: updates on starproj's devices: 7, on the host: 0" OSMAPOSL_LM_Starproj.log
# 12. against STIR's own listmode OSMAPOSL (its ray-tracing matrix), one subset (STIR's listmode subsets follow its
# matrix's symmetries), one iteration: the images differ as much as STIR's OSMAPOSL of the histogram with the ray-tracing
# matrix differs from that with the Starproj pair (the projectors' difference; 1e-3 of it), and STIR's listmode image
# is its histogram's (1e-4)
for p in LM_Starproj LM_RayTracing histogram_RayTracing histogram_Starproj; do
  sed -e 's/^number of subsets := 7/number of subsets := 1/' -e 's/^number of subiterations := 7/number of subiterations := 1/' \
    -e 's/^save estimates at subiteration intervals := 7/save estimates at subiteration intervals := 1/' \
    -e 's/^output filename prefix := \(.*\)/output filename prefix := \1_1subset/' "OSMAPOSL_$p.par" >"OSMAPOSL_${p}_1subset.par"
done
run OSMAPOSL_LM_Starproj_1subset "$bin/starproj_OSMAPOSL" OSMAPOSL_LM_Starproj_1subset.par
run OSMAPOSL_LM_RayTracing_1subset OSMAPOSL OSMAPOSL_LM_RayTracing_1subset.par
run OSMAPOSL_histogram_RayTracing_1subset OSMAPOSL OSMAPOSL_histogram_RayTracing_1subset.par
run OSMAPOSL_histogram_Starproj_1subset "$bin/starproj_OSMAPOSL" OSMAPOSL_histogram_Starproj_1subset.par
check stir_listmode_consistency "$bin/starproj_stir_compare" image histogram_RayTracing_1subset_1.hv \
  lm_RayTracing_1subset_1.hv 1e-4
check OSMAPOSL_listmode_stir "$bin/starproj_stir_compare" image-as-far lm_RayTracing_1subset_1.hv \
  lm_Starproj_1subset_1.hv histogram_RayTracing_1subset_1.hv histogram_Starproj_1subset_1.hv 1e-3
# 13. bad input to the listmode objective function stops starproj_OSMAPOSL with exit status 1 and the reason (a missing
# file, a segment range the data lack, a time frame they lack, subsets without events), never with a crash
lm_bad_input() { # name, expected message, sed expressions applied to OSMAPOSL_LM_Starproj.par
  local name=$1 expect=$2 rc=0; shift 2
  sed "$@" OSMAPOSL_LM_Starproj.par >"bad_$name.par"
  "$bin/starproj_OSMAPOSL" "bad_$name.par" >"bad_$name.log" 2>&1 || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "$expect" "bad_$name.log"; then
    echo "bad_$name.par: exit status $rc (1 expected), '$expect' $(grep -c "$expect" "bad_$name.log") times in bad_$name.log"
    return 1
  fi
}
lm_bad_inputs() {
  lm_bad_input file "Error opening file missing.l.hdr" -e 's/^list mode filename := .*/list mode filename := missing.l.hdr/' &&
    lm_bad_input segments "maximum segment number to process" \
      -e 's/^maximum absolute segment number to process := 0/maximum absolute segment number to process := 61/' &&
    lm_bad_input frame "time frame number 2 outside 1 .. 1" -e 's/^list mode filename := .*/&\ntime frame number := 2/' &&
    lm_bad_input events "of 7 has no events" -e 's/^list mode filename := .*/&\nnum_events_to_use := 1/' &&
    echo "4 bad inputs: exit status 1 with their reasons"
}
check lm_bad_input lm_bad_inputs

# 14. STIR's own programs with libstir_starproj loaded at start. STIR's libraries are shared, so the registrations the
# library makes when it is loaded go into the registries STIR's programs read; the launcher installed with stir/
# (cmake --install) preloads the library it finds in ../lib. STIR's OSMAPOSL on the objective function using Starproj
# (its update on the host) against starproj_OSMAPOSL's image (updates on the devices), and on the Starproj pair; OSSPS
# on the objective function; forward_project (bit for bit: no reductions) and back_project with the pair; STIR's
# lm_to_projdata, which uses no projector (its one per-bin call into a normalisation, get_bin_efficiency, is not
# implemented by STIR's only normalisation that projects), gives starproj_stir_lm_to_projdata's histogram bit for bit.
cmake --install "$repo/build-stir" --prefix "$work/install" >install.log 2>&1 || { tail -n 20 install.log; exit 1; }
launcher=$work/install/bin/starproj-stir
own() { # name output-prefix .par: the .par with its output prefix replaced
  sed "s/^output filename prefix := .*/output filename prefix := $2/" "$3" >"$1.par"
}
own OSMAPOSL_stir_Objective recon_stir_Objective OSMAPOSL_Objective.par
run OSMAPOSL_stir_Objective "$launcher" OSMAPOSL OSMAPOSL_stir_Objective.par
check stir_OSMAPOSL_objective "$bin/starproj_stir_compare" image recon_Objective_8.hv recon_stir_Objective_8.hv 1e-5
own OSMAPOSL_stir_Starproj recon_stir_Starproj OSMAPOSL_Starproj.par
run OSMAPOSL_stir_Starproj "$launcher" OSMAPOSL OSMAPOSL_stir_Starproj.par
check stir_OSMAPOSL_pair "$bin/starproj_stir_compare" image recon_Starproj_8.hv recon_stir_Starproj_8.hv 1e-5
own OSSPS_stir_Objective ossps_stir_Objective OSSPS_Objective.par
run OSSPS_stir_Objective "$launcher" OSSPS OSSPS_stir_Objective.par
check stir_OSSPS_objective "$bin/starproj_stir_compare" image ossps_Objective_8.hv ossps_stir_Objective_8.hv 1e-5
run fwd_stir_Starproj "$launcher" forward_project fwd_stir_Starproj phantom.hv template.hs forward_Starproj.par
check stir_forward_project "$bin/starproj_stir_compare" proj fwd_Starproj.hs fwd_stir_Starproj.hs 0
run back_stir_Starproj "$launcher" back_project back_stir_Starproj fwd_Parallelproj.hs phantom.hv back_Starproj.par
check stir_back_project "$bin/starproj_stir_compare" image-max back_Starproj.hv back_stir_Starproj.hv 1e-5
own lm_to_projdata_stir lm_stir_histogram lm_to_projdata.par
run lm_to_projdata_stir "$launcher" lm_to_projdata lm_to_projdata_stir.par
same_files() { cmp "$1" "$2" && echo "$1 and $2: the same bytes"; }
check stir_lm_to_projdata same_files lm_histogram_f1g1d0b0.s lm_stir_histogram_f1g1d0b0.s
# the launcher adds glibc's huge pages to GLIBC_TUNABLES, keeps a caller's own setting of them, and leaves them out
# with STARPROJ_STIR_HUGE_PAGES=0
launcher_tunables() {
  local got want case
  for case in "glibc.malloc.hugetlb=1|env -u GLIBC_TUNABLES" "glibc.malloc.check=0:glibc.malloc.hugetlb=1|env GLIBC_TUNABLES=glibc.malloc.check=0" \
    "glibc.malloc.hugetlb=0|env GLIBC_TUNABLES=glibc.malloc.hugetlb=0" "|env -u GLIBC_TUNABLES STARPROJ_STIR_HUGE_PAGES=0"; do
    want=${case%%|*}
    got=$(${case#*|} "$launcher" printenv GLIBC_TUNABLES || true)
    [ "$got" = "$want" ] || { echo "${case#*|}: GLIBC_TUNABLES '$got', '$want' expected"; return 1; }
  done
  echo "GLIBC_TUNABLES as expected in 4 cases"
}
check launcher_tunables launcher_tunables

# 15. hostile input: our programs and STIR's own (through the launcher, whose library turns STIR's uncaught errors into
# exit status 1) stop with exit status 1, never a signal, with a message naming the problem, and write no image
hostile_run() { # case expected-message [env VAR=value...] program...: the program fails as it should (output prefix
  local case=$1 expect=$2 rc=0 log name a; shift 2 # out_<case>); the log is named after the program
  name=$1
  for a in "$@"; do case "$a" in env | *=*) ;; *) name=$a; break ;; esac; done
  log=hostile_$case.$(basename "$name").log
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 1 ]; then
    echo "$case, $*: exit status $rc, 1 expected$([ "$rc" -gt 128 ] && printf ' (signal %d)' $((rc - 128)))"
    return 1
  fi
  grep -qF -- "$expect" "$log" || { echo "$case, $*: no '$expect' in $log"; return 1; }
  if ls "out_$case"[._]* >/dev/null 2>&1; then echo "$case, $*: wrote $(ls "out_$case"[._]*)"; return 1; fi
  echo "$case, $(basename "$name"): exit status 1, '$expect', nothing written"
}
hostile() { # case expected-message template.par sed-expressions...: both programs on the template's .par changed so
  local case=$1 expect=$2 template=$3; shift 3
  sed -e "s/^output filename prefix := .*/output filename prefix := out_$case/" "$@" "$template" >"hostile_$case.par"
  hostile_run "$case" "$expect" "${failing[@]}" "$bin/starproj_OSMAPOSL" "hostile_$case.par" &&
    hostile_run "$case" "$expect" "${failing[@]}" "$launcher" OSMAPOSL "hostile_$case.par"
}
failing=() # env and its settings before each program (the failing reads below)
# the projected phantom cut short; an image of 51 x 51 voxels where the .par's is 101 x 101 (one file, and one per
# subset); a normalisation for TOF data with 101 tangential positions where the data have 151
head -c 1000000 fwd_Parallelproj.s >truncated.s
sed 's/^name of data file := .*/name of data file := truncated.s/' prompts.hs >truncated.hs
sed -e 's/^output filename := .*/output filename := sens_51/' \
  -e 's/^\([XY] output image size (in pixels)\) := .*/\1 := 51/' phantom.par >sens_51.par
run sens_51 generate_image sens_51.par
for k in 0 1 2 3; do cp sens_51.hv "sens_51_$k.hv"; done
sed -e 's/^!matrix size \[1\] := 151/!matrix size [1] := 101/' \
  -e 's/^name of data file := .*/name of data file := norm_tof_101.s/' template_tof.hs >norm_tof_101.hs
: >norm_tof_101.s
# the keys each case puts into a .par of the checks above (sed's replacement text: \n starts a line)
sens_one='recompute sensitivity := 0\nuse subset sensitivities := 0\nsensitivity filename := sens_51.hv'
sens_subsets='recompute sensitivity := 0\nuse subset sensitivities := 1\nsubset sensitivity filenames := sens_51_{}.hv'
norm_tof='input file := fwd_tof_Parallelproj.hs\nBin Normalisation type := From ProjData\nBin Normalisation From ProjData'
norm_tof+=' :=\nnormalisation projdata filename := norm_tof_101.hs\nEnd Bin Normalisation From ProjData:='
size_message="sensitivity and target should have the same characteristics"
devices_message="'devices' must be gpu, cpu or any, not 'bogus'"
check hostile_missing_data hostile missing "Error opening file missing.hs" OSMAPOSL_Objective.par \
  -e 's/^input file := .*/input file := missing.hs/'
check hostile_truncated_data hostile truncated "the input file 'truncated.hs' cannot be read to its end" \
  OSMAPOSL_Objective.par -e 's/^input file := .*/input file := truncated.hs/'
check hostile_sensitivity_size hostile sensitivity "$size_message" OSMAPOSL_Objective.par \
  -e "s/^recompute sensitivity := 1/$sens_one/"
check hostile_subset_sensitivity_size hostile subset_sensitivity "$size_message" OSMAPOSL_Objective.par \
  -e "s/^recompute sensitivity := 1/$sens_subsets/"
check hostile_subsets hostile subsets "the 252 views do not divide into 5 subsets of equal size" \
  OSMAPOSL_Objective.par -e 's/^number of subsets := .*/number of subsets := 5/'
if [ "$tof" = yes ]; then
  check hostile_tof_normalisation hostile tof_normalisation "BinNormalisationFromProjData: incompatible projection data" \
    OSMAPOSL_Objective.par -e "s/^input file := .*/$norm_tof/"
fi
check hostile_listmode_events hostile listmode_events "of 7 has no events" OSMAPOSL_LM_Starproj.par \
  -e 's/^list mode filename := .*/&\nnum_events_to_use := 1/'
check hostile_devices hostile devices "$devices_message" OSMAPOSL_Objective.par -e 's/^devices := .*/devices := bogus/'
# files that pass every check made before reading (they exist, they are long enough, their last viewgram reads) and
# fail in the middle: read() fails on bytes 1000000 - 1099999 of the data file, of the additive term's file (a copy of
# the data) or of both (stir/tests/fail_read.c, preloaded), which lie in segment 0. The objective function reads the two
# on threads of their own; each error must come back as the program's, the data's first when both fail.
cp fwd_Parallelproj.s additive.s
sed 's/^name of data file := .*/name of data file := additive.s/' prompts.hs >additive.hs
bad_read() { # case expected-message files (':' between them)
  local case=$1 expect=$2
  failing=(env "LD_PRELOAD=$bin/libstarproj_fail_read.so" "STARPROJ_TEST_FAIL_READ=$3" STARPROJ_TEST_FAIL_READ_AFTER=1000000
           STARPROJ_TEST_FAIL_READ_UNTIL=1100000)
  hostile "$case" "$expect" OSMAPOSL_Objective.par -e 's/^input file := .*/&\nadditive sinogram := additive.hs/'
  local status=$?
  failing=()
  return $status
}
check hostile_read_data bad_read read_data "the input file prompts.hs: reading segment 0 failed" fwd_Parallelproj.s
check hostile_read_additive bad_read read_additive "the additive sinogram additive.hs: reading segment 0 failed" additive.s
check hostile_read_both bad_read read_both "stopped: Starproj: the input file prompts.hs: reading segment 0 failed" \
  fwd_Parallelproj.s:additive.s
# the pair's devices, in STIR's forward_project
sed 's/^devices := .*/devices := bogus/' forward_Starproj.par >hostile_forward_devices.par
check hostile_forward_devices hostile_run forward_devices "$devices_message" \
  "$launcher" forward_project out_forward_devices phantom.hv template.hs hostile_forward_devices.par

# 16. a long run: 500 sub-iterations (125 iterations of 4 subsets) of starproj_OSMAPOSL on the objective function using
# Starproj (segment 0: 152208 LORs), its updates on the devices; with verbosity 1 it prints at the end of every
# iteration the process's resident set and StarPU's memory on each GPU (none here). The resident set may grow by at
# most 1 MiB from the end of iteration 2 to the end of the last (2 KiB per sub-iteration: a leaked image of this size
# per sub-iteration would add 140 MiB); measured here 0.05 MiB.
sed -e 's/^output filename prefix := .*/output filename prefix := long/' \
  -e 's/^number of subiterations := .*/number of subiterations := 500/' \
  -e 's/^save estimates at subiteration intervals := .*/save estimates at subiteration intervals := 500/' \
  -e 's/^devices := cpu/devices := cpu\nverbosity := 1\nmaximum absolute segment number to process := 0/' \
  OSMAPOSL_Objective.par >OSMAPOSL_long.par
run OSMAPOSL_long "$bin/starproj_OSMAPOSL" OSMAPOSL_long.par
long_run_memory() { # log bound-MiB: the resident set at the end of iteration 2 and of the last
  awk -v bound="$2" '/iteration [0-9]+ \(sub-iteration [0-9]+\) memory: host resident set/ {
      for (i = 1; i <= NF; i++) { if ($i == "iteration") it = $(i + 1); if ($i == "set") rss = $(i + 1) }
      n++; if (it == 2) second = rss; last = rss; last_it = it }
    END {
      if (n != 125 || second == "") { printf "%d memory lines (125 expected)\n", n; exit 1 }
      printf "resident set %.2f MiB after iteration 2, %.2f MiB after iteration %d: %+.2f MiB (bound %s MiB)\n",
        second, last, last_it, last - second, bound
      exit (last - second > bound) }' "$1"
}
check long_run_memory long_run_memory OSMAPOSL_long.log 1
check long_run_updates grep -E "^starproj_OSMAPOSL: updates on starproj's devices: 500, on the host: 0" OSMAPOSL_long.log

# 17. nothing leaked at exit, nothing undefined: starproj as scripts/sanitize.sh builds it (ASan + UBSan, no CUDA, in
# build-sanitize/) and stir/ compiled and linked with the same sanitizers against it (build-stir-sanitize/, the library
# and the programs run here; STIR's libraries are not instrumented, but their allocations go through ASan's too).
# StarPU's and hwloc's leaks at exit are theirs (scripts/lsan.supp), as in sanitize.sh.
if [ "$sanitize" = yes ]; then
  sbuild=$repo/build-stir-sanitize
  log "building starproj (scripts/sanitize.sh --build-only) and stir/ under ASan and UBSan in $sbuild"
  t0=$(date +%s)
  mkdir -p "$sbuild/pkgconfig" "$sbuild/no-hwloc-plugins"
  bash "$repo/scripts/sanitize.sh" --build-only >"$sbuild/starproj.log" 2>&1 ||
    { tail -n 30 "$sbuild/starproj.log"; exit 1; }
  # a pkg-config file of its own for the uninstalled build (headers from include/, the library from build-sanitize/)
  cat >"$sbuild/pkgconfig/starproj.pc" <<PC
includedir=$repo/include
libdir=$repo/build-sanitize/.libs
Name: starproj
Description: starproj under ASan and UBSan in build-sanitize
Version: 0.1.0
Requires: starpu-1.4
Cflags: -I\${includedir}
Libs: -L\${libdir} -lstarproj
PC
  san="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer"
  rm -f "$sbuild/CMakeCache.txt"
  PKG_CONFIG_PATH="$sbuild/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" cmake -S "$repo/stir" -B "$sbuild" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTARPROJ_STIR_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="$san" -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
    >"$sbuild/build.log" 2>&1 || { tail -n 30 "$sbuild/build.log"; exit 1; }
  cmake --build "$sbuild" -j "$(nproc)" --target starproj_OSMAPOSL starproj_OSSPS >>"$sbuild/build.log" 2>&1 ||
    { grep -E 'error|Error' "$sbuild/build.log" | head -n 30; exit 1; }
  log "built in $(( $(date +%s) - t0 )) s"
  # sanitized name expected-exit-status program...: runs it under the sanitizers; fails on a report or another status
  sanitized() {
    local name=$1 expect=$2 rc=0 slog; shift 2
    slog=$name.sanitized.log
    env HWLOC_PLUGINS_PATH="$sbuild/no-hwloc-plugins" ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
      LSAN_OPTIONS="suppressions=$repo/scripts/lsan.supp" UBSAN_OPTIONS=print_stacktrace=1 "$@" >"$slog" 2>&1 || rc=$?
    if grep -qE 'runtime error:|ERROR: (Address|Leak)Sanitizer' "$slog"; then
      grep -E -A15 'runtime error:|ERROR: (Address|Leak)Sanitizer' "$slog" | head -n 40; return 1
    fi
    [ "$rc" -eq "$expect" ] || { echo "$name: exit status $rc, $expect expected"; tail -n 5 "$slog"; return 1; }
    echo "$name: exit status $rc, no sanitizer report"
  }
  # the runs of 14. on segment 0 (152208 LORs), which keeps the slower set-up under the sanitizers short
  san_par() { # name output-prefix .par
    own "$1" "$2" "$3"
    sed -i 's/^input file := .*/&\nmaximum absolute segment number to process := 0/' "$1.par"
  }
  for p in Objective Starproj; do
    san_par "OSMAPOSL_san_$p" "san_$p" "OSMAPOSL_$p.par"
    check "sanitized_OSMAPOSL_$p" sanitized "OSMAPOSL_san_$p" 0 "$sbuild/starproj_OSMAPOSL" "OSMAPOSL_san_$p.par"
  done
  own OSMAPOSL_san_LM_Starproj san_LM_Starproj OSMAPOSL_LM_Starproj_1subset.par # one subset: one sensitivity
  check sanitized_OSMAPOSL_LM_Starproj sanitized OSMAPOSL_san_LM_Starproj 0 "$sbuild/starproj_OSMAPOSL" \
    OSMAPOSL_san_LM_Starproj.par
  san_par OSSPS_san_Objective ossps_san OSSPS_Objective.par
  check sanitized_OSSPS sanitized OSSPS_san 0 "$sbuild/starproj_OSSPS" OSSPS_san_Objective.par
  # a set-up that fails half-way (after the LORs): exit status 1, and what it had made freed
  if [ "$tof" = yes ]; then
    check sanitized_failed_set_up sanitized failed_set_up 1 "$sbuild/starproj_OSMAPOSL" hostile_tof_normalisation.par
  fi
  # STIR's own OSMAPOSL (not instrumented) through the launcher of this build, the sanitizers' runtimes (those the
  # sanitized programs link) loaded first
  runtimes=$(ldd "$sbuild/starproj_OSMAPOSL" | awk '$1 ~ /^lib(asan|ubsan)\.so/ { print $3 }' | paste -sd: -)
  san_par OSMAPOSL_san_stir san_stir OSMAPOSL_Objective.par
  check sanitized_stir_OSMAPOSL sanitized OSMAPOSL_san_stir 0 env LD_PRELOAD="$runtimes" "$sbuild/starproj-stir" \
    OSMAPOSL OSMAPOSL_san_stir.par
fi

# 18. STIR's other PET geometries (arc-corrected cylindrical, blocks, generic) against Parallelproj, and what stays
# refused at set_up (scripts/test-stir-geometries.sh)
. "$repo/scripts/test-stir-geometries.sh"
geometries_main "$stir_src"

# 19. the set-up's fast paths (starproj_stir_setup_paths; each check prints what it compared)
paths=$bin/starproj_stir_setup_paths
check setup_lors "$paths" lors template.hs
check setup_lors_tof "$paths" lors template_tof.hs reversed
sed 's/^\( *View offset (degrees) *:=\).*/\1 3.7/' template.hs >template_offset.hs
check setup_lors_view_offset "$paths" lors template_offset.hs
# the projected phantom's file as it is, and its header changed: by sinogram (its bytes read in the other order: both
# readers see the same values), big-endian, segments in another order, an offset and a scale factor; unsigned shorts
# (STIR's interface), a truncated copy
by_sinogram() { sed -e 's/^matrix axis label \[3\] := view/matrix axis label [3] := AXIAL/' \
  -e 's/^matrix axis label \[2\] := axial coordinate/matrix axis label [2] := view/' \
  -e 's/^matrix axis label \[3\] := AXIAL/matrix axis label [3] := axial coordinate/' \
  -e 's/^!matrix size \[3\] := 252/!matrix size [3] := { 1,2,3,4,3,2,1}/' \
  -e 's/^!matrix size \[2\] := { 1,2,3,4,3,2,1}/!matrix size [2] := 252/' "$1"; }
by_sinogram fwd_Parallelproj.hs >read_sinogram.hs
sed 's/LITTLEENDIAN/BIGENDIAN/' fwd_Parallelproj.hs >read_big.hs
sed -e 's/^minimum ring difference per segment := .*/minimum ring difference per segment := { 0,-1,1,-2,2,-3,3}/' \
  -e 's/^maximum ring difference per segment := .*/maximum ring difference per segment := { 0,-1,1,-2,2,-3,3}/' \
  -e 's/^!matrix size \[2\] := .*/!matrix size [2] := { 4,3,3,2,2,1,1}/' fwd_Parallelproj.hs >read_sequence.hs
sed 's/^name of data file := .*/&\ndata offset in bytes[1] := 1000\nimage scaling factor[1] := 2.5/' fwd_Parallelproj.hs >read_offset.hs
sed -e 's/^!number format := float/!number format := unsigned integer/' \
  -e 's/^!number of bytes per pixel := 4/!number of bytes per pixel := 2/' fwd_Parallelproj.hs >read_shorts.hs
head -c 2000000 fwd_Parallelproj.s >read_truncated.s
sed 's/^name of data file := .*/name of data file := read_truncated.s/' fwd_Parallelproj.hs >read_truncated.hs
check setup_read "$paths" read fwd_Parallelproj.hs direct
check setup_read_sinogram "$paths" read read_sinogram.hs direct
check setup_read_big_endian "$paths" read read_big.hs direct
check setup_read_segment_order "$paths" read read_sequence.hs direct
check setup_read_offset_scale "$paths" read read_offset.hs direct
check setup_read_shorts "$paths" read read_shorts.hs fallback
check setup_read_truncated "$paths" read read_truncated.hs truncated
if [ "$tof" = yes ]; then
  check setup_read_tof "$paths" read fwd_tof_Parallelproj.hs direct
  by_sinogram fwd_tof_Parallelproj.hs >read_tof_sinogram.hs
  check setup_read_tof_sinogram "$paths" read read_tof_sinogram.hs direct
fi
check setup_norm "$paths" norm fwd_Parallelproj.hs
check setup_listmode "$paths" listmode PET_ACQ_small.l.hdr.STIR
check setup_listmode_segment1 "$paths" listmode PET_ACQ_small.l.hdr.STIR 1
check objective_norm_additive_files "$bin/starproj_stir_objective" fwd_Parallelproj.hs phantom.hv 4 1e-5 \
  --norm-and-additive --in-files --check-subsets 1
# two inputs from one stream: the set-up reads them in turn, not at the same time (the same values as STIR's)
for which in norm-additive additive-data; do
  check "objective_shared_source_$which" "$bin/starproj_stir_objective" fwd_Parallelproj.hs phantom.hv 4 1e-5 \
    --norm-and-additive --in-files --shared-source "$which" --check-subsets 1
done
# OSMAPOSL with subset sensitivities computed and written, then read from those files (starproj takes them as its own)
sed -e 's/^recompute sensitivity := 1/recompute sensitivity := 1\nuse subset sensitivities := 1\nsubset sensitivity filenames := sens_{}.hv/' \
  -e 's/^output filename prefix := .*/output filename prefix := recon_sens_written/' OSMAPOSL_Objective.par >OSMAPOSL_sens_written.par
sed -e 's/^recompute sensitivity := 1/recompute sensitivity := 0/' -e 's/^devices := cpu/&\nverbosity := 1/' \
  -e 's/^output filename prefix := .*/output filename prefix := recon_sens_read/' OSMAPOSL_sens_written.par >OSMAPOSL_sens_read.par
run OSMAPOSL_sens_written "$bin/starproj_OSMAPOSL" OSMAPOSL_sens_written.par
run OSMAPOSL_sens_read "$bin/starproj_OSMAPOSL" OSMAPOSL_sens_read.par
check sensitivities_read "$bin/starproj_stir_compare" image recon_sens_written_8.hv recon_sens_read_8.hv 1e-5
check sensitivities_read_parallelproj "$bin/starproj_stir_compare" image recon_Parallelproj_subsets_8.hv \
  recon_sens_read_8.hv 1e-4
check sensitivities_not_computed grep -o 'set_up: sensitivities read by STIR, copied [0-9.]*' OSMAPOSL_sens_read.log
# the subset sensitivities over the subsets' own viewgrams (SPROJ_STIR_SENS_CHUNKS=viewgrams) instead of one chunk per
# view: the same image as the default's; an unknown value is refused at set-up, naming it, and writes no image
sed 's/^output filename prefix := .*/output filename prefix := recon_sens_viewgrams/' OSMAPOSL_sens_written.par |
  grep -v '^subset sensitivity filenames' >OSMAPOSL_sens_viewgrams.par
run OSMAPOSL_sens_viewgrams env SPROJ_STIR_SENS_CHUNKS=viewgrams "$bin/starproj_OSMAPOSL" OSMAPOSL_sens_viewgrams.par
check sensitivities_viewgrams "$bin/starproj_stir_compare" image recon_sens_written_8.hv recon_sens_viewgrams_8.hv 1e-5
sed 's/^output filename prefix := .*/output filename prefix := recon_sens_bogus/' OSMAPOSL_sens_viewgrams.par \
  >OSMAPOSL_sens_bogus.par
sens_chunks_refused() {
  ! SPROJ_STIR_SENS_CHUNKS=bogus "$bin/starproj_OSMAPOSL" OSMAPOSL_sens_bogus.par >sens_bogus.out 2>&1 &&
    grep -q "SPROJ_STIR_SENS_CHUNKS is 'bogus'" sens_bogus.out && ! ls recon_sens_bogus_* >/dev/null 2>&1 &&
    echo "refused at set-up with the value named, no image written"
}
check sensitivities_chunks_refused sens_chunks_refused
# STIR's "zero end planes of segment 0" takes those bins out of the model (counts, factors and additive term): the
# objective function using Starproj against STIR's with Parallelproj, 4 subsets, 2 iterations
for p in Parallelproj Objective; do
  sed -e 's/^zero end planes of segment 0 := 0/zero end planes of segment 0 := 1/' \
    -e "s/^output filename prefix := .*/output filename prefix := zero_end_planes_$p/" "OSMAPOSL_$p.par" >"zero_end_planes_$p.par"
done
run OSMAPOSL_zero_end_planes_Parallelproj OSMAPOSL zero_end_planes_Parallelproj.par
run OSMAPOSL_zero_end_planes_Objective "$bin/starproj_OSMAPOSL" zero_end_planes_Objective.par
check OSMAPOSL_zero_end_planes "$bin/starproj_stir_compare" image zero_end_planes_Parallelproj_8.hv \
  zero_end_planes_Objective_8.hv 1e-4
# bad input to the fast paths through starproj_OSMAPOSL: a truncated data file stops with a message naming it; data
# of another number type (unsigned shorts) go through STIR's interface and reconstruct
setup_bad_inputs() {
  local rc=0
  sed 's/^input file := .*/input file := read_truncated.hs/' OSMAPOSL_Objective.par >bad_truncated.par
  "$bin/starproj_OSMAPOSL" bad_truncated.par >bad_truncated.log 2>&1 || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "the input file 'read_truncated.hs' cannot be read to its end" bad_truncated.log; then
    echo "bad_truncated.par: exit status $rc (1 expected) and no message naming the file (bad_truncated.log)"
    return 1
  fi
  sed -e 's/^input file := .*/input file := read_shorts.hs/' -e 's/^output filename prefix := .*/output filename prefix := recon_shorts/' \
    OSMAPOSL_Objective.par >shorts.par
  "$bin/starproj_OSMAPOSL" shorts.par >shorts.log 2>&1 || { echo "shorts.par: exit status $? (shorts.log)"; return 1; }
  echo "a truncated file: exit status 1 and the file named; shorts read through STIR's interface"
}
check setup_bad_input setup_bad_inputs

if [ "$failures" -gt 0 ]; then
  log "$failures check(s) failed"
  exit 1
fi
log "all checks passed"
