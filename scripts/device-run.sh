#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on a GPU machine from the repository root with .device/ carried (see scripts/device-bundle.sh): the test
# programs, the demo and the non-TOF benchmark. Logs go to $OUT (or /tmp/out).
# usage: scripts/device-run.sh [tests] [recon] [main-job] [bench-recon] [demo] [bench] [bench-tof] [bench-any] [sweep]
#   (default: tests demo bench bench-tof; TESTS_ONLY="check_a check_b" limits the tests step to those programs)
#   bench-any: bench_nontof and bench_tof with projections on CPU cores and GPUs (sproj_set_devices(SPROJ_DEVICE_ANY))
#   sweep:     the segment-viewgram jobs under several StarPU settings
#   seg:       the segment-viewgram jobs with merged calls (default) and without (--no-merge)
#   cpu:       CPU workers only (16), views 0-7: the SIMD lanes against the scalar code (SPROJ_CPU_ISA)
#   mpi:       bench_mpi, 1 rank with every GPU against one rank per GPU (unpacks .device/debs when there is no
#              mpirun)
#   harness:   starproj-bench at full scale on the GPUs, the main policies ($HARNESS_SECONDS, default 300)
#   memlimit:  the one-request jobs under STARPU_LIMIT_CUDA_MEM = each of $MEMLIMIT_MBS (default 100 150 200 300)
#   python:    the Python binding, built here with this machine's python3 ($PYTHON) against .device (headers in
#              .device/include): its versions, pytest python/tests (the CuPy test runs where CuPy sees a GPU),
#              bench_calls.py on CPU workers and on the GPU, bench_recon.py with NumPy and with CuPy arrays
#              (default: vision600 scanner, max ring difference 4, 34 subsets x 3 iterations; $RECON_ARGS replaces
#              that), bench_pp_calls.py (the parallelproj module's per-call cost against C) and, on a GPU,
#              bench_parallelproj_core.py (its six calls with CuPy arrays against libparallelproj's CUDA library in
#              .device/parallelproj: device-bundle.sh --with-parallelproj; $PP_BENCH_ARGS replaces its sizes); logs
#              in $OUT/python, a summary table last. Without a GPU: CPU workers, CuPy parts skipped. PY_ONLY_PP=1:
#              the parallelproj module's test file and benchmarks only
#   ab:        bench_tof and the one-request non-TOF jobs, first with the library in .device/base (an older build
#              copied there by hand: cp -L .device/build/.libs/libstarproj.so.0 .device/base/), then with this one
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.device/lib:$root/.device/build/.libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STARPU_HOME=${STARPU_HOME:-/tmp/starpu-home}
export STARPU_SILENT=1
cd "$root/.device/build"
steps=${*:-tests demo bench bench-tof}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -4
for step in $steps; do
  case $step in
    tests)
      # TESTS_ONLY="check_a check_b": those test programs only
      for t in ${TESTS_ONLY:-$(cd tests && ls check_* | grep -vE '\.(o|log|trs)$')}; do
        timeout 300 "./tests/$t" >"$out/$t.log" 2>&1
        echo "$t: exit $? $(grep -hE 'Checks:|SKIPPED' "$out/$t.log" | tr '\n' ' ')"
        grep -hE '^(CPU vs|CUDA adj|residency|whole-set|ball|batch|TOF|listmode|sum over|blur|non-TOF|MLEM|OSEM|layouts|lanes|check_inputs|arrays homed|  forward max)' "$out/$t.log"
        grep -hE ':[FE]:' "$out/$t.log" | head -5
      done ;;
    recon)
      for args in "" "--tof" "--listmode --tof"; do
        timeout 200 ./starproj-recon $args --output /tmp/recon-out >"$out/recon.log" 2>&1
        echo "starproj-recon $args: exit $?"; grep -E '^(iteration [0-9]+/|reconstruction:|relative|sensitivities)' "$out/recon.log"
      done ;;
    main-job)
      # the main job at full scale: the benchmark scanner, 2 iterations x 34 subsets, TOF sinogram, TOF listmode and
      # non-TOF, each with its phases' times and peak host memory (its closing line)
      n=0
      for args in "--tof" "--tof --listmode" ""; do
        n=$((n + 1))
        timeout 200 ./starproj-recon --scanner vision600 $args --iterations 2 --subsets 34 --output /tmp/main-job \
          >"$out/main-job-$n.log" 2>&1
        echo "starproj-recon --scanner vision600 $args: exit $?"
        grep -E '^(simulated|sensitivities|iteration|reconstruction|relative|listmode|starproj-recon: times)' \
          "$out/main-job-$n.log"
        rm -rf /tmp/main-job
      done ;;
    bench-recon)
      for args in "" "--tof"; do
        timeout 280 ./bench/bench_recon $args >"$out/bench_recon.log" 2>&1
        echo "bench_recon $args: exit $?"; grep -E '^(\||setup)' "$out/bench_recon.log"; grep -E 'failed' "$out/bench_recon.log"
      done ;;
    demo)
      timeout 120 ./examples/demo >"$out/demo.log" 2>&1
      echo "demo: exit $?"; grep -vE '^CPU [0-9]+ +0 +0$' "$out/demo.log" | tail -n 16 ;;
    bench)
      timeout 400 ./bench/bench_nontof >"$out/bench.log" 2>"$out/bench.err"; echo "bench: exit $?"
      grep -v '^$' "$out/bench.log" | tail -n 17; tail -n 2 "$out/bench.err" ;;
    bench-tof)
      timeout 400 ./bench/bench_tof >"$out/bench_tof.log" 2>"$out/bench_tof.err"; echo "bench_tof: exit $?"
      grep -v '^$' "$out/bench_tof.log" | tail -n 12; tail -n 2 "$out/bench_tof.err" ;;
    bench-any)
      timeout 400 ./bench/bench_nontof --devices any >"$out/bench_any.log" 2>"$out/bench_any.err"
      echo "bench --devices any: exit $?"; grep -E '^(fwd|back) ' "$out/bench_any.log"; tail -n 2 "$out/bench_any.err"
      timeout 300 ./bench/bench_tof --devices any >"$out/bench_tof_any.log" 2>"$out/bench_tof_any.err"
      echo "bench_tof --devices any: exit $?"; grep -E '^TOF ' "$out/bench_tof_any.log"; tail -n 2 "$out/bench_tof_any.err" ;;
    python)
      py=${PYTHON:-python3}
      pyout=$out/python
      mkdir -p "$pyout"
      {
        "$py" -c 'import sys; print("python", sys.version.split()[0], sys.executable)'
        "$py" -c 'import numpy; print("numpy", numpy.__version__)'
        "$py" -c 'import cupy; print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(),
          "devices", cupy.cuda.runtime.getDeviceCount())'
        "$py" -c 'import pytest, setuptools; print("pytest", pytest.__version__, "setuptools", setuptools.__version__)'
        echo "cc: $(cc --version | head -n 1)"
      } 2>&1 | tee "$pyout/versions.log"
      # a Python built elsewhere may name a compiler this machine lacks: then cc builds the extension
      pycc=$("$py" -c 'import sysconfig; print((sysconfig.get_config_var("CC") or "cc").split()[0])')
      command -v "$pycc" >/dev/null 2>&1 || export CC=cc LDSHARED="cc -shared"
      devs=cpu recon_dev=cpu
      if nvidia-smi -L >/dev/null 2>&1; then devs="cpu gpu" recon_dev=gpu; fi
      # no pkg-config and no installed starproj here: the extension takes the directories from STARPROJ_*_DIRS
      # (python/setup.py); the linker wants unversioned names, which only the build tree has for libstarproj
      links=/tmp/starproj-links site=/tmp/starproj-pysite
      rm -rf "$links" "$site" "$root/python/build"
      mkdir -p "$links"
      ln -s "$root/.device/build/.libs/libstarproj.so.0" "$links/libstarproj.so"
      ln -s "$root/.device/build/.libs/libstarproj-io.so.0" "$links/libstarproj-io.so"
      ln -s "$root/.device/lib/libstarpu-1.4.so.9" "$links/libstarpu-1.4.so"
      if [ ! -f "$root/.device/include/starpu/1.4/starpu.h" ]; then
        echo "python: .device/include has no StarPU headers; run scripts/device-bundle.sh again"; continue
      fi
      (cd "$root" && env STARPROJ_INCLUDE_DIRS="$root/include:$root/.device/include/starpu/1.4:$root/.device/include/cuda" \
        STARPROJ_LIB_DIRS="$links" timeout 180 "$py" -m pip install --no-build-isolation --no-deps --no-index \
        --disable-pip-version-check --target "$site" ./python) >"$pyout/build.log" 2>&1
      echo "python: extension build: exit $?"; grep -iE 'error|warning' "$pyout/build.log" | head -n 10
      export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
      # run from /tmp so that `import starproj` is the built package, not the python/ source folder
      # PY_ONLY_PP=1: the parallelproj module's tests and benchmarks only (the whole step can outlast one command)
      tests=$root/python/tests
      [ -n "${PY_ONLY_PP:-}" ] && tests=$root/python/tests/test_parallelproj_core.py
      (cd /tmp && timeout 150 "$py" -m pytest -v -rs -p no:cacheprovider "$tests") >"$pyout/pytest.log" 2>&1
      echo "pytest python/tests: exit $?"; tail -n 1 "$pyout/pytest.log"
      grep -E 'test_cupy|SKIPPED|FAILED|Error' "$pyout/pytest.log" | head -n 12
      # the libraries libstarproj needs are found at run time (LD_LIBRARY_PATH), not necessarily by the linker
      cc -O2 -o /tmp/fwd_calls "$root/python/bench/fwd_calls.c" -I"$root/include" -L"$links" -lstarproj \
        -Wl,--allow-shlib-undefined
      for dev in $([ -z "${PY_ONLY_PP:-}" ] && echo "$devs"); do
        (cd /tmp && timeout 100 "$py" "$root/python/bench/bench_calls.py" --devices "$dev" --rounds 3 --reps 5 \
          --c-exe /tmp/fwd_calls) >"$pyout/bench_calls_$dev.log" 2>&1
        echo "bench_calls.py --devices $dev: exit $?"; tail -n 4 "$pyout/bench_calls_$dev.log"
      done
      if [ -z "${PY_ONLY_PP:-}" ]; then
        # shellcheck disable=SC2086
        (cd /tmp && timeout 200 "$py" "$root/python/bench/bench_recon.py" --devices "$recon_dev" \
          ${RECON_ARGS:---scanner vision600 --max-ring-difference 4 --subsets 34 --iterations 3}) \
          >"$pyout/bench_recon.log" 2>&1
        echo "bench_recon.py: exit $?"; grep -vE '^\s*$|^\[starpu' "$pyout/bench_recon.log" | tail -n 9
      fi
      # starproj.parallelproj_core: its per-call cost against the same one-shot calls from C (CPU workers), and its
      # six calls with CuPy arrays against libparallelproj's CUDA library (.device/parallelproj, from
      # device-bundle.sh --with-parallelproj; without it starproj's times alone); $PP_BENCH_ARGS replaces the sizes
      cc -O2 -o /tmp/pp_calls "$root/python/bench/pp_calls.c" -I"$root/include" -L"$links" -lstarproj \
        -Wl,--allow-shlib-undefined
      (cd /tmp && timeout 150 "$py" "$root/python/bench/bench_pp_calls.py" --rounds 3 --reps 5 --c-exe /tmp/pp_calls) \
        >"$pyout/bench_pp_calls.log" 2>&1
      echo "bench_pp_calls.py: exit $?"; grep -E '^\||calls a pass' "$pyout/bench_pp_calls.log"
      if [ "$recon_dev" = gpu ]; then
        pplib=$root/.device/parallelproj/lib/libparallelproj.so.2
        ppargs=()
        [ -f "$pplib" ] && ppargs=(--pp-lib "$pplib")
        # shellcheck disable=SC2086
        (cd /tmp && timeout 300 "$py" "$root/python/bench/bench_parallelproj_core.py" "${ppargs[@]}" \
          ${PP_BENCH_ARGS:-}) >"$pyout/bench_parallelproj_core.log" 2>&1
        echo "bench_parallelproj_core.py: exit $?"; grep -E '^\||^GPU|LORs' "$pyout/bench_parallelproj_core.log"
        grep -E 'Error|Traceback' "$pyout/bench_parallelproj_core.log" | head -n 5
      fi
      echo "== python summary"
      echo "| what | result |"
      echo "|---|---|"
      echo "| versions | $(grep -hE '^(python|numpy|cupy) ' "$pyout/versions.log" | cut -d' ' -f1,2 | paste -sd' ') |"
      echo "| pytest | $(tail -n 1 "$pyout/pytest.log") |"
      echo "| CuPy test | $(grep -oE 'test_cupy_arrays_registered_on_their_gpu [A-Z]+' "$pyout/pytest.log" | head -n 1) |"
      for dev in $devs; do
        echo "| per-LOR time, binding / C, $dev | $(grep -E '^binding / C' "$pyout/bench_calls_$dev.log") |"
      done
      grep -E '^\| (numpy|cupy) ' "$pyout/bench_recon.log" | awk -F'|' '{print "| recon " $2 "(total s) |" $8 "|"}'
      echo "| recon cupy vs numpy | $(grep -E '^relative difference' "$pyout/bench_recon.log") |" ;;
    ab)
      for lib in base build/.libs; do
        echo "== library .device/$lib"
        env LD_LIBRARY_PATH="$root/.device/$lib:$LD_LIBRARY_PATH" STARPU_HOME="/tmp/starpu-ab-${lib%%/*}" \
          timeout 250 ./bench/bench_tof >"$out/ab_tof_${lib%%/*}.log" 2>&1
        grep -E '^TOF ' "$out/ab_tof_${lib%%/*}.log"
        env LD_LIBRARY_PATH="$root/.device/$lib:$LD_LIBRARY_PATH" STARPU_HOME="/tmp/starpu-ab-${lib%%/*}" \
          timeout 250 ./bench/bench_nontof --only none >"$out/ab_nontof_${lib%%/*}.log" 2>&1
        grep -E '^(fwd|back) ' "$out/ab_nontof_${lib%%/*}.log"
      done ;;
    seg)
      for v in "" "--no-merge"; do
        timeout 150 ./bench/bench_nontof --only seg --repeats 3 $v >"$out/seg.log" 2>&1
        echo "bench_nontof --only seg $v: exit $?"; grep -E '^(fwd|back) ' "$out/seg.log"
      done ;;
    cpu)
      for isa in default scalar; do
        env SPROJ_CPU_ISA=$([ $isa = default ] || echo $isa) STARPU_NCUDA=0 STARPU_NCPU=16 \
          timeout 200 ./bench/bench_cpu --views 8 --repeats 3 >"$out/cpu_$isa.log" 2>&1
        echo "bench_cpu --views 8 ($isa): exit $?"; grep -vE '^\s*$' "$out/cpu_$isa.log" | tail -n 6
      done ;;
    mpi)
      if ! command -v mpirun >/dev/null 2>&1 && ls "$root"/.device/debs/*.deb >/dev/null 2>&1; then
        for f in "$root"/.device/debs/*.deb; do dpkg -x "$f" /; done
        ldconfig
      fi
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
      ngpu=$(nvidia-smi -L | wc -l)
      timeout 200 mpirun -np 1 --bind-to none ./bench/bench_mpi --scanner vision600 --devices gpu --reduce both \
        --repeat 3 >"$out/mpi_1.log" 2>&1
      echo "bench_mpi, 1 rank x $ngpu GPUs: exit $?"; grep -vE '^\s*$|^\[starpu' "$out/mpi_1.log" | tail -n 12
      timeout 200 mpirun -np "$ngpu" --bind-to none -x STARPU_NCPU=3 -x LD_LIBRARY_PATH sh -c \
        'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec ./bench/bench_mpi --scanner vision600 --devices gpu --reduce both --repeat 3' \
        >"$out/mpi_n.log" 2>&1
      echo "bench_mpi, $ngpu ranks x 1 GPU: exit $?"; grep -vE '^\s*$|^\[starpu' "$out/mpi_n.log" | tail -n 12 ;;
    harness)
      timeout "${HARNESS_SECONDS:-300}" ./starproj-bench --scale full \
        --workloads "${HARNESS_WORKLOADS:-fwd-whole,back-whole,fwd-segvg,tof-sino,tof-lm,osem}" --scheds default,eager,lws,dmda,dmdas \
        --workers gpu --repeats 2 --warmups 1 --calibration-runs 1 --output /tmp/harness >"$out/harness.log" 2>&1
      echo "starproj-bench: exit $?"; tail -n 3 "$out/harness.log"
      (cd /tmp/harness && tar czf "$out/harness.tgz" --exclude homes .) ;;
    memlimit)
      # the one-request jobs under GPU memory limits ($MEMLIMIT_MBS, default "100 150 200 300"), output line by line,
      # so that a run stopped by the timeout still shows how far it got
      for mb in ${MEMLIMIT_MBS:-100 150 200 300}; do
        env STARPU_LIMIT_CUDA_MEM="$mb" timeout 90 stdbuf -oL ./bench/bench_nontof --only none --repeats 1 \
          --warmups 1 >"$out/memlimit_$mb.log" 2>&1
        echo "bench_nontof under STARPU_LIMIT_CUDA_MEM=$mb: exit $?"
        grep -E '^# checksums|^(fwd|back) 1' "$out/memlimit_$mb.log"
      done ;;
    sweep)
      for cfg in "STARPU_NCPU=15" "STARPU_NCPU=0"; do
        echo "== $cfg"
        env $cfg timeout 200 ./bench/bench_nontof --only seg --repeats 3 >"$out/sweep.log" 2>&1
        grep -E '^(fwd|back) ' "$out/sweep.log"
      done ;;
  esac
done
