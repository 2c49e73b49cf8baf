#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_programs.sh: starproj-recon rejects bad options and unreadable input with a message and a non-zero exit,
# leaving no output files; a short run writes the NIfTI and PNG files it names, a saved sinogram reads back in, and a
# listmode run orders its events when asked; the TOF and non-TOF benchmarks reject bad options too. Refusals come
# before StarPU starts: bad options and sizes beyond starproj's limits or the machine's memory (exit 2), inputs that
# are not the run's data (exit 1); a run that fails later removes the output folder it made.
set -u
prog=./starproj-recon
[ -x "$prog" ] || { echo "check_programs: $prog not built"; exit 99; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/starproj-programs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

# A refused run: exit status $1, a message matching $2 (a grep pattern; '' for any message), no output folder, and
# StarPU never started (no "devices:" line). Every run has a time limit, so that a hang or a huge allocation fails
# the case instead of the suite.
expect_refusal() {
  local want=$1 pattern=$2 out="$dir/bad" msg rc
  shift 2
  msg=$(timeout 60 "$prog" --output "$out" "$@" 2>&1 >"$dir/stdout"); rc=$?
  if [ $rc -ne "$want" ]; then ko "'$*' exited $rc, expected $want: $msg"; rm -rf "$out"; return; fi
  if [ -z "$msg" ]; then ko "'$*' printed no message"; return; fi
  if [ -n "$pattern" ] && ! echo "$msg" | grep -q -- "$pattern"; then ko "'$*': '$msg' does not say '$pattern'"; return; fi
  if [ -e "$out" ]; then ko "'$*' created the output folder"; rm -rf "$out"; return; fi
  if grep -q '^devices:' "$dir/stdout"; then ko "'$*' started StarPU before refusing"; return; fi
  ok
}
# bad options: exit 2, a message naming the problem, nothing written
expect_usage() { expect_refusal 2 '' "$@"; }
expect_usage --no-such-option
expect_usage --iterations 0
expect_usage --iterations 3x
expect_usage --subsets ""
expect_usage --scanner nonesuch
expect_usage --image 64x64
expect_usage --fwhm -1
expect_usage --devices foo
expect_usage --counts 1e99
expect_usage stray-argument
expect_usage --input a --input-listmode b
expect_usage --mult m
expect_usage --order-events
# the simulation's options with read data: refused and named (they used to be ignored without a word)
expect_refusal 2 "^starproj-recon: --counts, --background, --seed and --noise-free apply to the simulation only, not to the data of --input$" \
  --input base --counts 5 --noise-free --seed 3 --background 7
expect_refusal 2 "^starproj-recon: --save-data applies to the simulation only, not to the data of --input-listmode" \
  --input-listmode base --save-data
expect_refusal 2 "^starproj-recon: --background and --seed apply to the simulation only, not to the data of --input-listmode" \
  --seed 2 --input-listmode base --tof --background 0
expect_refusal 2 "^starproj-recon: --noise-free applies to the simulation only" --input-listmode base --noise-free
expect_refusal 2 "^starproj-recon: --listmode goes with a simulation or --input-listmode" --input base --listmode
# a missing value (the option last) is named as such, not as an unknown option
expect_refusal 2 '^starproj-recon: --iterations needs a value' --iterations
expect_refusal 2 '^starproj-recon: --scanner needs a value' --scanner
# empty fields are not skipped
expect_refusal 2 "image needs N0xN1xN2" --image 64xx64x16
expect_refusal 2 "image needs N0xN1xN2" --image 64x64x16x
expect_refusal 2 "fwhm needs MM" --fwhm 1xx2x3
expect_refusal 2 "fwhm needs MM" --fwhm nan
# schedulers StarPU does not know, more subsets than the sinogram has views, a blur wider than the resolution
# model reaches: refused before StarPU starts
expect_refusal 2 "--sched: sproj_scheduler_check: unknown scheduler 'nonexistent'; StarPU knows: .*lws" --sched nonexistent
expect_refusal 2 "--sched: sproj_scheduler_check: unknown scheduler ''" --sched ''
expect_refusal 2 "subsets 65: the small scanner's sinogram has 64 views" --subsets 65
expect_refusal 2 "the resolution model would reach 1274 voxels" --fwhm 10 --voxel-size 0.01
# sizes: images of 2^32 voxels (an int product overflowed to 0 and a 1-byte buffer was filled) refused at once,
# naming the size and starproj's limit; listmode counts bounded by the memory their events need
expect_refusal 2 "4096x4096x256 is 4294967296 voxels, more than starproj's limit of 4294967295" --image 4096x4096x256
expect_refusal 2 "2048x2048x1024 is 4294967296 voxels" --image 2048x2048x1024
expect_refusal 2 "this run needs about .* GiB of memory (.*listmode events .*), more than the .* GiB of this" \
  --listmode --counts 1e12

# --help: exit 0, the usage text
if timeout 60 "$prog" --help | grep -q '^usage: starproj-recon'; then ok; else ko "--help"; fi

# unreadable input: exit 1, a message, no image written
out="$dir/unreadable"
msg=$(timeout 60 "$prog" --input "$dir/missing" --output "$out" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && [ -n "$msg" ] && [ ! -e "$out/recon.nii" ]; then ok; else ko "missing input: exit $rc, '$msg'"; fi
printf 'format = nonsense\n' > "$dir/garbage.hdr"; : > "$dir/garbage.raw"
msg=$(timeout 60 "$prog" --input "$dir/garbage" --output "$out" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && [ -n "$msg" ] && [ ! -e "$out/recon.nii" ]; then ok; else ko "corrupt input: exit $rc, '$msg'"; fi

# a short run: the files it names exist, the NIfTI image has its 352-byte header and 64x64x16 floats
out="$dir/run"
log=$(timeout 300 "$prog" --iterations 1 --subsets 4 --counts 1e6 --save-data --output "$out" 2>&1); rc=$?
if [ $rc -ne 0 ]; then ko "short run exited $rc: $log"; else
  for f in recon.nii recon.png phantom.nii phantom.png sinogram_view0.png counts.hdr counts.raw mult.hdr add.hdr; do
    [ -s "$out/$f" ] || ko "short run: $f missing"
  done
  size=$(stat -c %s "$out/recon.nii")
  [ "$size" -eq $((352 + 4 * 64 * 64 * 16)) ] && ok || ko "recon.nii has $size bytes"
  echo "$log" | grep -q "wrote $out/recon.nii" && ok || ko "the run does not say where recon.nii is"
  ls "$out" | grep -q '\.tmp' && ko "temporary files left in $out" || ok
  # the saved data reads back: reconstructing it from the files gives a finite image
  log2=$(timeout 300 "$prog" --iterations 1 --subsets 4 --input "$out/counts" --mult "$out/mult" --add "$out/add" \
         --output "$dir/again" 2>&1); rc=$?
  if [ $rc -eq 0 ] && [ -s "$dir/again/recon.nii" ]; then ok; else ko "reading the saved sinogram: exit $rc: $log2"; fi
fi
# listmode with the events of each chunk ordered: the run says so and writes its image
out="$dir/lm"
log=$(timeout 300 "$prog" --listmode --tof --order-events --iterations 1 --subsets 2 --counts 2e5 --save-data \
      --output "$out" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -s "$out/recon.nii" ] && echo "$log" | grep -q "in the order of sproj_lors_order"; then ok
else ko "listmode run with --order-events: exit $rc: $log"; fi

# inputs that are not this run's data: exit 1 before StarPU starts, a message saying what is wrong, no folder
saved="$dir/run/counts"
if [ -s "$saved.hdr" ] && [ -s "$saved.raw" ]; then
  # a header naming data (sed: the same header with one line changed)
  variant() { sed "$2; s/^data_file = .*/data_file = $1.raw/" "$3.hdr" > "$dir/$1.hdr"; }
  # a folder where a file is wanted is named as a folder (the reader saw "a file of 4096 bytes")
  mkdir "$dir/folder.raw"; variant folder 's/^x/x/' "$saved"
  expect_refusal 1 "'$dir/folder.raw' is a folder, not a regular file" --input "$dir/folder"
  expect_refusal 1 "'$dir/run' is a folder; --input takes BASE" --input "$dir/run"
  # the same number of values with permuted axes, or from another scanner: refused, not reconstructed
  cp "$saved.raw" "$dir/perm.raw"; variant perm 's/^axes = .*/axes = view radial plane/; s/^shape = .*/shape = 64 65 64/' "$saved"
  expect_refusal 1 "perm.hdr has the axes view 64, radial 65, plane 64; the small scanner's sinogram has view 64, plane 64, radial 65" \
    --input "$dir/perm"
  # ... also when the data is 2 GiB (a sparse file): refused from the header, before the data is read (the peak
  # memory stays far below the 2 GiB reading it takes)
  truncate -s 2G "$dir/big.raw"; variant big 's/^axes = .*/axes = a b/; s/^shape = .*/shape = 1 536870912/' "$saved"
  expect_refusal 1 "big.hdr has the axes a 1, b 536870912; the small scanner's sinogram has view 64, plane 64" \
    --input "$dir/big"
  if /usr/bin/time -f %M -o "$dir/big.rss" true 2>/dev/null; then
    timeout 60 /usr/bin/time -f %M -o "$dir/big.rss" "$prog" --input "$dir/big" --output "$dir/bad" >/dev/null 2>&1
    rss=$(tail -n 1 "$dir/big.rss")
    [ "$rss" -lt 1048576 ] && ok || ko "refusing a 2 GiB --input of the wrong axes took $rss KiB: its data was read"
  fi
  rm -f "$dir/big.raw"
  cp "$saved.raw" "$dir/v600.raw"; variant v600 's/^scanner = .*/scanner = vision600/' "$saved"
  expect_refusal 1 "v600.hdr is data of the vision600 scanner, this run's is small" --input "$dir/v600" --scanner small
  expect_refusal 1 "v600.hdr is data of the vision600 scanner, this run's is small" --input "$saved" --mult "$dir/v600"
  # without --scanner, the scanner the header names is used, and the run says so (here it then finds the shape wrong)
  expect_refusal 1 "the vision600 scanner's sinogram has view 272, plane 1296, radial 415" --input "$dir/v600"
  grep -q "^starproj-recon: the vision600 scanner, as $dir/v600.hdr names it" "$dir/stdout" && ok ||
    ko "the scanner taken from v600.hdr is not said: $(cat "$dir/stdout")"
  # a NaN count is found when read, not reported by the reconstruction as a coordinate
  { printf '\x00\x00\xc0\x7f'; tail -c +5 "$saved.raw"; } > "$dir/nan.raw"; variant nan 's/^x/x/' "$saved"
  expect_refusal 1 "nan holds .*nan at element 0; counts must be finite and >= 0" --input "$dir/nan"
else ko "no saved sinogram to check the input checks with"; fi
events="$dir/lm/events"
if [ -s "$events.hdr" ] && [ -s "$events.raw" ]; then
  cp "$events.raw" "$dir/lmv.raw"; variant lmv 's/^scanner = .*/scanner = vision600/' "$events"
  expect_refusal 1 "lmv.hdr is data of the vision600 scanner, this run's is small" --input-listmode "$dir/lmv" \
    --scanner small --tof
  cp "$events.raw" "$dir/lmn.raw"; variant lmn 's/^num_lors = .*/num_lors = 300000/' "$events"
  expect_refusal 1 "lmn numbers 300000 LORs, the small scanner has 266240" --input-listmode "$dir/lmn" --tof
  expect_refusal 1 "lmn numbers 300000 LORs" --input-listmode "$dir/lmn" --tof --scanner small
else ko "no saved events to check the listmode input checks with"; fi

# a run that fails after making its output folder (more subsets than the events it drew) takes the folder away;
# a folder that was there before stays, with what was in it
out="$dir/late"
late_run() {
  timeout 300 "$prog" --listmode --counts 1 --background 0 --subsets 50 --iterations 1 --output "$out" 2>&1 >/dev/null
}
msg=$(late_run); rc=$?
if [ $rc -eq 1 ] && echo "$msg" | grep -qE "50 subsets but only|no listmode events" && [ ! -e "$out" ]; then ok
else ko "late failure: exit $rc, '$msg', output folder $([ -e "$out" ] && echo left || echo removed)"; fi
mkdir "$out" && echo mine > "$out/mine"
msg=$(late_run); rc=$?
if [ $rc -eq 1 ] && [ "$(cat "$out/mine" 2>/dev/null)" = mine ]; then ok
else ko "late failure in an existing folder: exit $rc, '$msg', $(ls "$out" 2>&1)"; fi

# the benchmark programs reject bad options the same way (exit 2 and a message) before doing any work
for bench in ./bench/bench_tof ./bench/bench_nontof; do
  [ -x "$bench" ] || { ko "$bench not built"; continue; }
  for args in "--devices foo" "--repeats 0" "--no-such-option" "stray"; do
    # shellcheck disable=SC2086 # each args string is several words on purpose
    msg=$(timeout 60 "$bench" $args 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 2 ] && [ -n "$msg" ]; then ok; else ko "$bench $args: exit $rc, '$msg'"; fi
  done
done

# previews: with gnuplot, labelled PNGs (RGB, 1500 pixels wide) and no "previews:" note; without it (not on PATH,
# or failing), the plain greyscale PNGs of libstarproj-io and a line saying why; either way no temporary folder
# is left in the output folder. The NIfTI image's dims are starproj's axes in order (64 64 16).
png_width() { od -An -tu1 -j16 -N4 "$1" | awk '{print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4}'; }
png_colour() { od -An -tu1 -j25 -N1 "$1" | tr -d ' '; }
if [ -s "$dir/run/recon.nii" ]; then
  dims=$(od -An -td2 -j40 -N8 "$dir/run/recon.nii" | xargs)
  [ "$dims" = "3 64 64 16" ] && ok || ko "recon.nii has dim '$dims', expected '3 64 64 16' (axes 0, 1, 2 as i, j, k)"
fi
if command -v gnuplot >/dev/null && [ -s "$dir/run/recon.png" ]; then
  w=$(png_width "$dir/run/recon.png") c=$(png_colour "$dir/run/recon.png")
  [ "$w" -eq 1500 ] && [ "$c" -ne 0 ] && ok || ko "recon.png is not gnuplot's (width $w, colour type $c)"
  [ "$(png_colour "$dir/run/sinogram_view0.png")" -ne 0 ] && ok || ko "sinogram_view0.png is not gnuplot's"
fi
mkdir -p "$dir/nobin" "$dir/failbin"
printf '#!/bin/sh\necho "no terminal today" >&2\nexit 3\n' > "$dir/failbin/gnuplot"; chmod +x "$dir/failbin/gnuplot"
for bin in nobin failbin; do
  out="$dir/previews-$bin"
  log=$(timeout 300 env PATH="$dir/$bin" "$prog" --iterations 1 --subsets 4 --counts 1e6 --output "$out" 2>&1); rc=$?
  case $bin in nobin) why="gnuplot is not installed" ;; *) why="gnuplot failed (exit status 3: no terminal today)" ;; esac
  if [ $rc -ne 0 ]; then ko "run without a working gnuplot ($bin) exited $rc: $log"; continue; fi
  echo "$log" | grep -qF "previews: $why; written with libpng instead" && ok || ko "$bin: the fallback is not said: $log"
  for f in recon.png phantom.png sinogram_view0.png; do
    [ -s "$out/$f" ] && [ "$(png_colour "$out/$f")" -eq 0 ] && ok || ko "$bin: $f missing or not greyscale"
  done
  ls -A "$out" | grep -q '^\.starproj-recon-preview' && ko "$bin: the temporary folder is left in $out" || ok
done

# the main job's phases: timed on a closing line with the peak memory, progress lines into a pipe (line-buffered:
# the first lines are there before the run ends), --quiet prints nothing; three voxel sizes; --fwhm blurs the
# simulation as the model assumes and says so
log=$(timeout 300 "$prog" --iterations 1 --subsets 4 --counts 1e6 --voxel-size 2x2.5x3 --image 64x48x12 --fwhm 4 \
  --output "$dir/phases" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || ko "a run with --voxel-size 2x2.5x3 --fwhm 4 exited $rc: $log"
echo "$log" | grep -q 'image 64x48x12 of 2x2.5x3 mm' && ok || ko "the three voxel sizes are not named: $log"
echo "$log" | grep -q 'simulated: the phantom blurred by the resolution model (FWHM 4 x 4 x 4 mm)' && ok ||
  ko "--fwhm's blur of the simulation is not said: $log"
echo "$log" | grep -qE '^starproj-recon: times: .*simulation [0-9.]+ s.*iterations [0-9.]+ s.*; peak host memory' && ok ||
  ko "no closing line with the phases' times: $log"
echo "$log" | grep -qE '^estimate: host memory about [0-9.]+ GB .*an iteration about' && ok ||
  ko "no estimate before the long phases: $log"
# (stdout only: errors still go to stderr, where a sanitizer build also writes its own summary)
quiet=$(timeout 300 "$prog" --quiet --iterations 1 --subsets 4 --counts 1e6 --output "$dir/quiet" 2>/dev/null)
[ -z "$quiet" ] && ok || ko "--quiet printed: $quiet"
expect_refusal 2 "voxel-size needs MM or MMxMMxMM" --voxel-size 2x2
# --input without --mult / --add says what it assumes
if [ -s "$dir/run/counts.hdr" ]; then
  log=$(timeout 300 "$prog" --input "$dir/run/counts" --iterations 1 --subsets 4 --output "$dir/assume" 2>&1)
  echo "$log" | grep -q 'assuming m = 1 (no attenuation or normalisation) and a = 0 (no randoms or scatter)' && ok ||
    ko "--input without --mult/--add does not say what it assumes: $log"
fi

# SIGTERM in the middle of a run: it ends by the signal and takes away the output folder it made, with what it wrote
out="$dir/killed"
timeout 300 "$prog" --iterations 200 --subsets 8 --output "$out" >"$dir/killed.log" 2>&1 &
pid=$!
for i in $(seq 1 200); do grep -q '^iteration 1/' "$dir/killed.log" && break; sleep 0.1; done
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 143 ] && ok || ko "SIGTERM: exit status $rc, expected 143 (the signal)"
[ -e "$out" ] && ko "SIGTERM left the output folder: $(ls -A "$out" | tr '\n' ' ')" || ok

# SIGTERM in the instant a file is renamed into place (a preloaded shim raises it there: random kills almost never
# hit that instant). Before a raw header's rename neither its temporary nor its new data may stay (they did:
# .counts.hdr.tmp-<pid>-<n> and counts.raw), after it the new files go with the folder the run made, like all it
# wrote. In a folder that was there before, the pairs written completely stay, and nothing else is added.
shim="$PWD/tests/.libs/rename_signal.so"
interrupted() {
  env RENAME_SIGNAL_AT="$1" LD_PRELOAD="$shim" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    timeout 300 "$prog" --iterations 1 --subsets 2 --counts 1e5 --save-data --output "$out" >/dev/null 2>&1
}
if [ -f "$shim" ]; then
  out="$dir/renamed"
  for at in before:mult.hdr before:counts.hdr after:counts.hdr after:recon.nii; do
    interrupted $at; rc=$?
    [ $rc -eq 143 ] && [ ! -e "$out" ] && ok ||
      ko "SIGTERM $at's rename: exit status $rc (143 expected), left: $(ls -A "$out" 2>/dev/null | tr '\n' ' ')"
    rm -rf "$out"
  done
  mkdir "$out" && echo mine > "$out/mine"
  interrupted before:counts.hdr; rc=$?
  left=$(LC_ALL=C ls -A "$out" | tr '\n' ' ')
  [ $rc -eq 143 ] && [ "$left" = "add.hdr add.raw mine mult.hdr mult.raw " ] && ok ||
    ko "SIGTERM before counts.hdr's rename in an existing folder: exit status $rc, left: $left"
else
  echo "check_programs: $shim not built (no shared libraries?): renames not interrupted"
fi

echo "check_programs: $pass passed, $fail failed"
[ $fail -eq 0 ]
