#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_programs.sh: starproj-recon rejects bad options and unreadable input with a message and a non-zero exit,
# leaving no output files; a short run writes the NIfTI and PNG files it names, a saved sinogram reads back in, and a
# listmode run orders its events when asked; the TOF and non-TOF benchmarks reject bad options too.
set -u
prog=./starproj-recon
[ -x "$prog" ] || { echo "check_programs: $prog not built"; exit 99; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/starproj-programs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

# bad options: exit 2, a message naming the problem, nothing written
expect_usage() {
  local out="$dir/bad" msg
  msg=$("$prog" --output "$out" "$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -ne 2 ]; then ko "'$*' exited $rc, expected 2"; return; fi
  if [ -z "$msg" ]; then ko "'$*' printed no message"; return; fi
  if [ -e "$out" ]; then ko "'$*' created the output folder"; return; fi
  ok
}
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

# --help: exit 0, the usage text
if "$prog" --help | grep -q '^usage: starproj-recon'; then ok; else ko "--help"; fi

# unreadable input: exit 1, a message, no image written
out="$dir/unreadable"
msg=$("$prog" --input "$dir/missing" --output "$out" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && [ -n "$msg" ] && [ ! -e "$out/recon.nii" ]; then ok; else ko "missing input: exit $rc, '$msg'"; fi
printf 'format = nonsense\n' > "$dir/garbage.hdr"; : > "$dir/garbage.raw"
msg=$("$prog" --input "$dir/garbage" --output "$out" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && [ -n "$msg" ] && [ ! -e "$out/recon.nii" ]; then ok; else ko "corrupt input: exit $rc, '$msg'"; fi

# a short run: the files it names exist, the NIfTI image has its 352-byte header and 64x64x16 floats
out="$dir/run"
log=$("$prog" --iterations 1 --subsets 4 --counts 1e6 --save-data --output "$out" 2>&1); rc=$?
if [ $rc -ne 0 ]; then ko "short run exited $rc: $log"; else
  for f in recon.nii recon.png phantom.nii phantom.png sinogram_view0.png counts.hdr counts.raw mult.hdr add.hdr; do
    [ -s "$out/$f" ] || ko "short run: $f missing"
  done
  size=$(stat -c %s "$out/recon.nii")
  [ "$size" -eq $((352 + 4 * 64 * 64 * 16)) ] && ok || ko "recon.nii has $size bytes"
  echo "$log" | grep -q "wrote $out/recon.nii" && ok || ko "the run does not say where recon.nii is"
  ls "$out" | grep -q '\.tmp' && ko "temporary files left in $out" || ok
  # the saved data reads back: reconstructing it from the files gives a finite image
  log2=$("$prog" --iterations 1 --subsets 4 --input "$out/counts" --mult "$out/mult" --add "$out/add" \
         --output "$dir/again" 2>&1); rc=$?
  if [ $rc -eq 0 ] && [ -s "$dir/again/recon.nii" ]; then ok; else ko "reading the saved sinogram: exit $rc: $log2"; fi
fi
# listmode with the events of each chunk ordered: the run says so and writes its image
out="$dir/lm"
log=$("$prog" --listmode --tof --order-events --iterations 1 --subsets 2 --counts 2e5 --output "$out" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -s "$out/recon.nii" ] && echo "$log" | grep -q "in the order of sproj_lors_order"; then ok
else ko "listmode run with --order-events: exit $rc: $log"; fi

# the benchmark programs reject bad options the same way (exit 2 and a message) before doing any work
for bench in ./bench/bench_tof ./bench/bench_nontof; do
  [ -x "$bench" ] || { ko "$bench not built"; continue; }
  for args in "--devices foo" "--repeats 0" "--no-such-option" "stray"; do
    # shellcheck disable=SC2086 # each args string is several words on purpose
    msg=$("$bench" $args 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 2 ] && [ -n "$msg" ]; then ok; else ko "$bench $args: exit $rc, '$msg'"; fi
  done
done

echo "check_programs: $pass passed, $fail failed"
[ $fail -eq 0 ]
