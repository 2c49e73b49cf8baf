#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI's simulated run (doc/simulation.md): installs StarPU over SimGrid when missing (scripts/install-deps.sh
# --with-simgrid; skipped when its prefix holds a matching build), builds starproj against it in build-sim, then runs
# a handful of tiny configurations on simulated machines recorded in perfmodels/ at scale tiny: CPU workers on every
# such folder recorded without a GPU, and, for every folder recorded on a GPU, its node and the 2, 4 and 8-GPU nodes
# scripts/simulated-platform.py derives from it; then 1 to 8 made-up GPUs (the CPU models sped up) so that the
# GPU path runs before a GPU machine is recorded. Also checks that a bad --simulate is refused. About 6 s on 2 cores
# once starproj is built over SimGrid (StarPU over SimGrid: about 7 minutes on 2 loaded cores, once per machine).
# usage: scripts/test-simulation.sh [--simgrid-prefix DIR]   (default /usr/local/starpu-simgrid)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
sgprefix=/usr/local/starpu-simgrid
[ "${1:-}" = --simgrid-prefix ] && sgprefix=$2
jobs=$(nproc 2>/dev/null || echo 2)
fail() { echo "test-simulation: FAILED: $*"; exit 1; }

t0=$(date +%s)
bash scripts/install-deps.sh --with-simgrid="$sgprefix" || fail "install-deps.sh --with-simgrid"
echo "test-simulation: StarPU over SimGrid ready ($(( $(date +%s) - t0 )) s)"
[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || fail autogen
mkdir -p build-sim
(cd build-sim && { [ -f Makefile ] || ../configure -q --with-simgrid="$sgprefix" >/dev/null; } &&
  make -s -j"$jobs" >/dev/null 2>build-sim.log) || { tail -n 20 build-sim/build-sim.log; fail "the simulation build"; }
grep -q '^#define STARPU_SIMGRID 1' "$sgprefix/include/starpu/1.4/starpu_config.h" || fail "$sgprefix is not over SimGrid"
bench=$root/build-sim/starproj-bench
out=$(mktemp -d "${TMPDIR:-/tmp}/starproj-sim.XXXXXX")
trap 'rm -rf "$out"' EXIT

# bad input: exit status 2 and a message, never a crash
for bad in "$out/missing" "$root/doc" "$root/README.md"; do
  "$bench" --simulate "$bad" --scale tiny >/dev/null 2>"$out/bad.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ -s "$out/bad.err" ] || fail "--simulate $bad: exit status $rc (expected 2 and a message)"
done
"$bench" --scale tiny >/dev/null 2>&1
[ $? -eq 2 ] || fail "a simulation build without --simulate should exit 2"

runs=0
# one matrix: the platform, the worker sets, a name for the output
simulate() {
  local platform=$1 sets=$2 name=$3
  local t=$(date +%s)
  if ! "$bench" --simulate "$platform" --scale tiny --workloads fwd-whole,back-whole,osem,tof-lm --workers "$sets" \
       --scheds dmda,lws --repeats 1 --warmups 0 --timeout 300 --output "$out/$name" >"$out/$name.log" 2>&1; then
    tail -n 15 "$out/$name.log"
    cat "$out/$name"/logs/*.log 2>/dev/null | grep -v INFO | tail -n 10
    fail "simulated $name"
  fi
  runs=$((runs + 1))
  echo "== $name ($(( $(date +%s) - t )) s): simulated makespans, median s =="
  awk -F, 'NR > 1 { printf "   %-12s %-8s %-6s %s\n", $2, $3, $4, $8 }' "$out/$name/summary.csv"
}
for dir in perfmodels/*/; do
  dir=${dir%/}
  [ -f "$dir/MACHINE" ] || continue
  ls "$dir"/bus/*.platform.v4.xml >/dev/null 2>&1 || continue
  name=$(basename "$dir")
  # bench_mpi's models (several nodes over SMPI) are scripts/test-smpi.sh's
  if grep -q '^program: bench_mpi' "$dir/MACHINE"; then
    echo "== $name: bench_mpi's models, simulated by scripts/test-smpi.sh =="
    continue
  fi
  # the models cover the task sizes of the scale they were recorded at: CI simulates the tiny ones only
  scale=$(awk -F'\t' 'NR == 2 { print $3 }' "$dir/measured.tsv" 2>/dev/null)
  if [ "$scale" != tiny ]; then
    echo "== $name: recorded at scale ${scale:-unknown}, not simulated here (tiny only) =="
    continue
  fi
  gpus=$(sed -n 's/^\([0-9]*\) # Number of CUDA nodes/\1/p' "$dir"/bus/*.config | head -n 1)
  if [ "${gpus:-0}" -eq 0 ]; then
    simulate "$dir" cpu "$name"
    continue
  fi
  # a GPU machine's models are calibrated for the GPU sets only
  simulate "$dir" gpu "$name"
  for n in 2 4 8; do
    python3 scripts/simulated-platform.py --from "$dir" --gpus "$n" --host "ci-$n" --out "$out/ci-$n" >/dev/null ||
      fail "simulated-platform.py --gpus $n from $dir"
    simulate "$out/ci-$n" gpu "$name-$n-gpus"
  done
done
[ "$runs" -gt 0 ] || fail "no platform folder in perfmodels/"
# the GPU path of the simulation on made-up GPUs (the CPU's models / 20), whether or not a GPU machine is recorded
cpu=perfmodels/cpu-2core-tiny
if [ -d "$cpu" ]; then
  for n in 1 2 4 8; do
    python3 scripts/simulated-platform.py --from "$cpu" --gpus "$n" --test-gpus-from-cpu 20 --host "test-$n" \
      --out "$out/test-$n" >/dev/null || fail "simulated-platform.py --test-gpus-from-cpu --gpus $n"
    simulate "$out/test-$n" gpu "made-up-$n-gpus"
  done
fi
# several CUDA workers per GPU as a correction of the models (--hidden): every recorded CUDA mean of the codelet 99 us
# less, the others untouched, the MACHINE saying so; a codelet without a model, a malformed value and one that would
# take half a task's time or more are refused
src=perfmodels/h200-1gpu-full
if [ -d "$src" ]; then
  python3 scripts/simulated-platform.py --from "$src" --gpus 1 --hidden starproj_joseph3d_back=99 --host hid \
    --out "$out/hid" >/dev/null || fail "simulated-platform.py --hidden"
  python3 - "$src" "$out/hid" <<'PY' || fail "--hidden: the means are not 99 us less"
import glob, sys
def means(folder, symbol):
    f = glob.glob(f"{folder}/codelets/*/{symbol}.*")[0]
    text = open(f).read()
    text = text[text.find("# Model for cuda0_impl0"):]
    return [float(l.split()[3]) for l in text.split("\n")[1:] if len(l.split()) == 8 and not l.startswith("#")
            and int(l.split()[7]) > 0]
for sym, less in (("starproj_joseph3d_back", 99.0), ("starproj_joseph3d_fwd", 0.0)):
    a, b = means(sys.argv[1], sym), means(sys.argv[2], sym)
    assert a and len(a) == len(b) and all(abs(x - y - less) < 1e-3 for x, y in zip(a, b)), sym
PY
  grep -q '^correction for several CUDA workers per GPU .*starproj_joseph3d_back: 99 us less' "$out/hid/MACHINE" ||
    fail "--hidden: not in MACHINE"
  for bad in starproj_nothing=5 starproj_joseph3d_back=-1 starproj_joseph3d_back=abc starproj_joseph3d_fwd=100; do
    if python3 scripts/simulated-platform.py --from "$src" --gpus 1 --hidden "$bad" --out "$out/hid-bad" \
      >/dev/null 2>&1; then fail "--hidden $bad was accepted"; fi
  done
  echo "== --hidden: models corrected as asked, bad values refused =="
fi
echo "test-simulation: $runs simulated matrices passed ($(( $(date +%s) - t0 )) s in all)"
