#!/usr/bin/env bash
# Runs on a GPU machine from the repository root with .device/ carried (see scripts/device-bundle.sh): the test
# programs, the demo and the non-TOF benchmark (default workers, then GPU only). Logs go to $OUT (or /tmp/out).
# usage: scripts/device-run.sh [tests] [demo] [bench] [bench-gpu] [sweep]   (default: the first four)
#   sweep: the segment-viewgram jobs under several worker / scheduler settings
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.device/lib:$root/.device/build/.libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STARPU_HOME=${STARPU_HOME:-/tmp/starpu-home}
export STARPU_SILENT=1
cd "$root/.device/build"
steps=${*:-tests demo bench bench-gpu}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -4
for step in $steps; do
  case $step in
    tests)
      for t in check_api check_fwd check_adjoint check_chunks check_cuda; do
        timeout 300 "./tests/$t" >"$out/$t.log" 2>&1
        echo "$t: exit $? $(grep -hE 'Checks:|SKIPPED' "$out/$t.log" | tr '\n' ' ')"
        grep -hE '^(CPU vs|CUDA adj|residency|whole-set|ball)' "$out/$t.log"
        grep -hE ':[FE]:' "$out/$t.log" | head -5
      done ;;
    demo)
      timeout 120 ./examples/demo >"$out/demo.log" 2>&1; echo "demo: exit $?"; tail -n 22 "$out/demo.log" ;;
    bench)
      timeout 400 ./examples/bench_nontof >"$out/bench.log" 2>"$out/bench.err"; echo "bench: exit $?"
      grep -v '^$' "$out/bench.log" | tail -n 14; tail -n 3 "$out/bench.err" ;;
    bench-gpu)
      STARPU_NCPU=0 timeout 300 ./examples/bench_nontof >"$out/bench_gpu.log" 2>"$out/bench_gpu.err"
      echo "bench (STARPU_NCPU=0): exit $?"; grep -v '^$' "$out/bench_gpu.log" | tail -n 14; tail -n 3 "$out/bench_gpu.err" ;;
    sweep)
      for cfg in "STARPU_NCPU=0 STARPU_NWORKER_PER_CUDA=1" "STARPU_NCPU=0 STARPU_NWORKER_PER_CUDA=4" \
                 "STARPU_NCPU=0 STARPU_NWORKER_PER_CUDA=8" "STARPU_NWORKER_PER_CUDA=4" \
                 "STARPU_NWORKER_PER_CUDA=4 STARPU_SCHED=dmdas"; do
        echo "== $cfg"
        env $cfg timeout 200 ./examples/bench_nontof --only seg --repeats 3 >"$out/sweep.log" 2>&1
        grep -E '^(fwd|back) ' "$out/sweep.log"
      done ;;
  esac
done
