#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The "Starproj" classes on STIR's other PET geometries, against STIR's Parallelproj pair on the same data and image
# (part 18 of scripts/test-stir.sh, which sources this file after its own checks; it can also run alone on the work
# folder of an earlier test-stir.sh run, see below):
#   arc-corrected cylindrical data (ProjDataInfoCylindricalArcCorr: the test-pack template, arc-corrected; TOF too),
#   the block geometry (ProjDataInfoBlocksOnCylindricalNoArcCorr: stir/tests/blocks_template.hs, 12 flat blocks),
#   the generic geometry (ProjDataInfoGenericNoArcCorr: STIR's SAFIR example, a crystal map, and its listmode file
#   read by STIR's SAFIR reader).
# For each: forward and back projection (1e-5), OSMAPOSL with the Starproj pair and with the objective function using
# Starproj against OSMAPOSL with Parallelproj (1e-4, relative L2), the objective function using Starproj against STIR's
# with Parallelproj and the listmode objective function using Starproj against both sinogram objective functions on
# the events histogrammed (1e-5); on the SAFIR file also listmode OSMAPOSL against OSMAPOSL of its histogram (1e-4).
# Then what stays refused (SPECT, images that are not VoxelsOnCartesianGrid with a regular range, other ProjDataInfo
# classes, TOF on the block geometry) is refused at set_up with a message naming it.
#
# alone: scripts/test-stir-geometries.sh --with-stir SRC [--work DIR] [--no-tof] [--only "PARTS"]
#   DIR: test-stir.sh's work folder, default build-stir/tests-run; its build-stir programs and STIR in /usr/local/stir
#   or --prefix DIR; PARTS: some of arc blocks generic refused

geometries_main() {
  local tarball=$1
  # --- data: STIR's SAFIR example (generic geometry, its crystal map and listmode file) and SPECT header ---------
  local safir=examples/SAFIR_genericScanner
  local files="$safir/muppet.hs $safir/DualRingPrototype_crystal_map.txt $safir/coincidencesLM.clm.safir
    $safir/listmode_input_SAFIR.par recon_test_pack/SPECT_test_Interfile_header.hs"
  if [ -d "$tarball" ]; then
    for f in $files; do cp "$tarball/$f" .; done
  else
    tar -xzf "$tarball" --strip-components=1 $(for f in $files; do printf 'STIR/%s ' "$f"; done)
    for f in $files; do cp "$f" .; done
  fi
  : >SPECT_test_Interfile_header.s
  # the two other ways SPECT data show, each alone: views over 180 degrees on a non-circular orbit, and on a circle
  local radii
  radii=$(seq -s, 150 1 269)
  sed -e 's/^!extent of rotation := .*/!extent of rotation := 180/' -e 's/^orbit := .*/orbit := Non-circular/' \
    -e "s/^Radius := .*/Radii := {$radii}/" SPECT_test_Interfile_header.hs >SPECT_noncircular.hs
  sed -e 's/^!extent of rotation := .*/!extent of rotation := 180/' SPECT_test_Interfile_header.hs >SPECT_half.hs
  # arc-corrected: the test-pack template with STIR's arc-correction flag (the same bins, s sampled uniformly); its TOF
  # template cut to segments -1 .. 1 (TOF projections on CPU workers are the slow part; the oblique segments' TOF
  # ends are checked as long as one oblique segment is)
  sed -e 's/^applied corrections := .*/applied corrections := {arc correction}/' \
    -e 's/^name of data file := .*/name of data file := arc_template.s/' template.hs >arc_template.hs
  sed -e 's/^applied corrections := .*/applied corrections := {arc correction}/' \
    -e 's/^!matrix size \[4\] := .*/!matrix size [4] := 3/' -e 's/^!matrix size \[2\] := .*/!matrix size [2] := { 3,4,3}/' \
    -e 's/^minimum ring difference per segment := .*/minimum ring difference per segment := { -1,0,1}/' \
    -e 's/^maximum ring difference per segment := .*/maximum ring difference per segment := { -1,0,1}/' \
    -e 's/^name of data file := .*/name of data file := arc_template_tof.s/' template_tof.hs >arc_template_tof.hs
  : >arc_template.s
  : >arc_template_tof.s
  cp "$repo/stir/tests/blocks_template.hs" . && : >blocks_template.s
  # generic: the SAFIR prototype's template cut to segments -1 .. 1 and 101 of its 160 tangential positions (418140
  # LORs); its listmode file read into that template
  sed -e 's/^!matrix size \[4\] := .*/!matrix size [4] := 3/' \
    -e 's/^!matrix size \[2\] := .*/!matrix size [2] := { 15,16,15}/' \
    -e 's/^!matrix size \[1\] := .*/!matrix size [1] := 101/' \
    -e 's/^minimum ring difference per segment := .*/minimum ring difference per segment := { -1,0,1}/' \
    -e 's/^maximum ring difference per segment := .*/maximum ring difference per segment := { -1,0,1}/' \
    -e 's/^name of data file := .*/name of data file := generic_template.s/' muppet.hs >generic_template.hs
  : >generic_template.s
  sed 's/^\( *template projection data filename *:=\).*/\1 generic_template.hs/' listmode_input_SAFIR.par >generic_listmode.par
  run small_phantom generate_image small_phantom.par

  # OSMAPOSL's subsets divide the views: 252 of the test-pack template in 4, the SAFIR prototype's 90 in 3
  if geometries_want arc; then
    geometries_one arc arc_template phantom 101 1 4
    if [ "$tof" = yes ]; then geometries_tof arc; fi
  fi
  if geometries_want blocks; then geometries_one blocks blocks_template small_phantom 55 0.5 3; fi
  if geometries_want generic; then
    geometries_one generic generic_template small_phantom 55 0.5 3 no-synthetic-listmode
    # the generic geometry's own listmode data: STIR's SAFIR reader on its example file
    check lm_objective_generic_safir "$bin/starproj_stir_lm_objective" generic_listmode.par small_phantom.hv 2 1e-5 \
      --stir-sinogram --norm-and-additive
    # listmode OSMAPOSL on it (updates on starproj's devices) against STIR's OSMAPOSL of its histogram with Parallelproj
    run lm_to_projdata_generic "$bin/starproj_stir_lm_to_projdata" lm_to_projdata_generic.par
    run OSMAPOSL_LM_generic_Starproj "$bin/starproj_OSMAPOSL" OSMAPOSL_LM_generic_Starproj.par
    run OSMAPOSL_histogram_generic_Parallelproj OSMAPOSL OSMAPOSL_histogram_generic_Parallelproj.par
    check OSMAPOSL_listmode_generic "$bin/starproj_stir_compare" image histogram_generic_Parallelproj_3.hv \
      lm_generic_Starproj_3.hv 1e-4
    check lm_generic_updates_on_devices grep -E "^starproj_OSMAPOSL: updates on starproj's devices: 3, on the host: 0" \
      OSMAPOSL_LM_generic_Starproj.log
  fi
  # refused at set_up, each with a message naming it
  if geometries_want refused; then
    check refused "$bin/starproj_stir_refused" SPECT_test_Interfile_header.hs SPECT_noncircular.hs SPECT_half.hs \
      template.hs blocks_template.hs PET_ACQ_small.l.hdr.STIR phantom.hv
  fi
}

# geometries_want PART: PART is among those asked for (all of arc, blocks, generic, refused unless --only said otherwise)
geometries_want() {
  case " ${geometries_only:-arc blocks generic refused} " in *" $1 "*) return 0 ;; *) return 1 ;; esac
}

# geometries_one NAME TEMPLATE PHANTOM XY_SIZE ZOOM SUBSETS [no-synthetic-listmode]: the checks of one geometry (the
# image of OSMAPOSL: XY_SIZE voxels across at ZOOM; OSMAPOSL: 2 iterations of SUBSETS subsets; the listmode objective
# function on events drawn from the projection unless the geometry has listmode data of its own)
geometries_one() {
  local g=$1 template=$2 phantom=$3 xy=$4 zoom=$5 subsets=$6 synthetic=${7:-}
  local last=$((2 * subsets))
  run "fwd_${g}_Parallelproj" forward_project "fwd_${g}_Parallelproj" "$phantom.hv" "$template.hs" forward_Parallelproj.par
  run "fwd_${g}_Starproj" "$bin/starproj_forward_project" "fwd_${g}_Starproj" "$phantom.hv" "$template.hs" forward_Starproj.par
  check "forward_$g" "$bin/starproj_stir_compare" proj "fwd_${g}_Parallelproj.hs" "fwd_${g}_Starproj.hs" 1e-5
  run "back_${g}_Parallelproj" back_project "back_${g}_Parallelproj" "fwd_${g}_Parallelproj.hs" "$phantom.hv" back_Parallelproj.par
  run "back_${g}_Starproj" "$bin/starproj_back_project" "back_${g}_Starproj" "fwd_${g}_Parallelproj.hs" "$phantom.hv" back_Starproj.par
  check "back_$g" "$bin/starproj_stir_compare" image-max "back_${g}_Parallelproj.hv" "back_${g}_Starproj.hv" 1e-5
  # OSMAPOSL (2 iterations) on the projected phantom: the Starproj pair and the objective function using Starproj
  # (updates on its devices) against the Parallelproj pair
  local p
  for p in Parallelproj Starproj Objective; do
    sed -e "s/^input file := .*/input file := fwd_${g}_Parallelproj.hs/" \
      -e "s/^xy output image size (in pixels) := .*/xy output image size (in pixels) := $xy\nzoom := $zoom/" \
      -e "s/^number of subsets := .*/number of subsets := $subsets/" \
      -e "s/^number of subiterations := .*/number of subiterations := $last/" \
      -e "s/^save estimates at subiteration intervals := .*/save estimates at subiteration intervals := $last/" \
      -e "s/^output filename prefix := recon_/output filename prefix := recon_${g}_/" "OSMAPOSL_$p.par" >"OSMAPOSL_${g}_$p.par"
  done
  run "OSMAPOSL_${g}_Parallelproj" OSMAPOSL "OSMAPOSL_${g}_Parallelproj.par"
  run "OSMAPOSL_${g}_Starproj" "$bin/starproj_OSMAPOSL" "OSMAPOSL_${g}_Starproj.par"
  run "OSMAPOSL_${g}_Objective" "$bin/starproj_OSMAPOSL" "OSMAPOSL_${g}_Objective.par"
  check "OSMAPOSL_$g" "$bin/starproj_stir_compare" image "recon_${g}_Parallelproj_$last.hv" "recon_${g}_Starproj_$last.hv" 1e-4
  check "OSMAPOSL_objective_$g" "$bin/starproj_stir_compare" image "recon_${g}_Parallelproj_$last.hv" \
    "recon_${g}_Objective_$last.hv" 1e-4
  # the objective functions (2 subsets, the first compared): using Starproj against STIR's with Parallelproj (with a
  # normalisation and an additive sinogram), and the listmode one on events drawn from the projection against both
  check "objective_$g" "$bin/starproj_stir_objective" "fwd_${g}_Parallelproj.hs" "$phantom.hv" 2 1e-5 \
    --norm-and-additive --check-subsets 1
  if [ "$synthetic" != no-synthetic-listmode ]; then
    check "lm_objective_$g" "$bin/starproj_stir_lm_objective" "synthetic:fwd_${g}_Parallelproj.hs:100000" "$phantom.hv" \
      2 1e-5 --stir-sinogram --check-subsets 1
  fi
}

# geometries_tof NAME: TOF forward and back projection on NAME's TOF template (the objective functions' TOF code is
# the cylindrical template's, test-stir.sh's objective_tof and lm_objective_tof: what differs here is the LORs)
geometries_tof() {
  local g=$1
  run "fwd_tof_${g}_Parallelproj" forward_project "fwd_tof_${g}_Parallelproj" phantom.hv "${g}_template_tof.hs" forward_Parallelproj.par
  run "fwd_tof_${g}_Starproj" "$bin/starproj_forward_project" "fwd_tof_${g}_Starproj" phantom.hv "${g}_template_tof.hs" forward_Starproj.par
  check "forward_tof_$g" "$bin/starproj_stir_compare" proj "fwd_tof_${g}_Parallelproj.hs" "fwd_tof_${g}_Starproj.hs" 1e-5
  run "back_tof_${g}_Parallelproj" back_project "back_tof_${g}_Parallelproj" "fwd_tof_${g}_Parallelproj.hs" phantom.hv back_Parallelproj.par
  run "back_tof_${g}_Starproj" "$bin/starproj_back_project" "back_tof_${g}_Starproj" "fwd_tof_${g}_Parallelproj.hs" phantom.hv back_Starproj.par
  check "back_tof_$g" "$bin/starproj_stir_compare" image-max "back_tof_${g}_Parallelproj.hv" "back_tof_${g}_Starproj.hv" 1e-5
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # alone, on the work folder of an earlier test-stir.sh run
  set -euo pipefail
  caller=$(pwd)
  cd "$(dirname "$0")/.."
  repo=$(pwd)
  stir_src= prefix=/usr/local/stir work=$repo/build-stir/tests-run tof=yes
  while [ $# -gt 0 ]; do
    case "$1" in
      --with-stir) stir_src=$2; shift 2 ;;
      --prefix) prefix=$2; shift 2 ;;
      --work) work=$2; shift 2 ;;
      --no-tof) tof=no; shift ;;
      --only) geometries_only=$2; shift 2 ;;
      -h|--help) sed -n '3,19p' "$0"; exit 0 ;;
      *) echo "test-stir-geometries: unknown argument '$1'" >&2; exit 2 ;;
    esac
  done
  [ -n "$stir_src" ] || { echo "test-stir-geometries: --with-stir is required" >&2; exit 2; }
  case "$stir_src" in /*) ;; *) stir_src=$caller/$stir_src ;; esac
  case "$work" in /*) ;; *) work=$caller/$work ;; esac
  [ -f "$work/template.hs" ] || { echo "test-stir-geometries: $work is not a test-stir.sh work folder" >&2; exit 1; }
  bin=$repo/build-stir
  export PATH="$prefix/bin:$PATH"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
  cp stir/tests/*.par "$work/"
  cd "$work"
  log() { printf 'test-stir-geometries: %s\n' "$*"; }
  failures=0
  check() {
    local name=$1; shift
    local t0; t0=$(date +%s)
    if "$@" >"$name.log" 2>&1; then
      log "PASS $name ($(( $(date +%s) - t0 )) s): $(tail -n 1 "$name.log")"
    else
      log "FAIL $name (log: $work/$name.log)"; tail -n 15 "$name.log"; failures=$((failures + 1))
    fi
  }
  run() {
    local name=$1; shift
    local t0; t0=$(date +%s)
    "$@" >"$name.log" 2>&1 || { log "FAILED to run $name (log: $work/$name.log)"; tail -n 20 "$name.log"; exit 1; }
    log "ran $name ($(( $(date +%s) - t0 )) s)"
  }
  t_start=$(date +%s)
  geometries_main "$stir_src"
  log "$(( $(date +%s) - t_start )) s"
  if [ "$failures" -gt 0 ]; then log "$failures check(s) failed"; exit 1; fi
  log "all checks passed"
fi
