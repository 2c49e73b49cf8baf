#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The wheel on a GPU machine (Python with CuPy, torch and numpy; no network; builds nothing): installs the wheel of
# BUNDLE (scripts/gpu-bundle.sh) and its CUDA runtime's wheel with pip --no-deps into a folder of their own, then
#   1. checks that the extension and its libraries load from there (ldd: no StarPU of the system's),
#   2. python/tests with pytest from a copy outside python/ (the CuPy and torch CUDA tests run there),
#   3. python/examples/torch_unrolled_osem.py on the GPU,
#   4. python/bench/gpu_check.py: CuPy arrays in place on GPU 0 against the CPU workers, parallelproj_core's six
#      calls against libparallelproj's CUDA module (BUNDLE/parallelproj), torch CUDA tensors through the autograd
#      operators, and last the per-call table (NumPy and CuPy, starproj against libparallelproj).
# Logs go to $OUT (default build/gpu-check-out). Exits non-zero if a step failed. The steps' time limits add up to
# under 10 minutes (200 s, 90 s, 280 s).
# usage: scripts/gpu-check.sh [--python PY] [--lors N] BUNDLE
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=python3
lors=1000000
bundle=
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python=$2; shift 2 ;;
    --lors) lors=$2; shift 2 ;;
    -h|--help) sed -n '3,13p' "$0"; exit 0 ;;
    *) bundle=$1; shift ;;
  esac
done
[ -n "$bundle" ] && [ -d "$bundle" ] || { echo "gpu-check: usage: scripts/gpu-check.sh BUNDLE" >&2; exit 2; }
bundle=$(cd "$bundle" && pwd)
# (steps below run from other folders)
case "$python" in */*) python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python") ;; esac
out=${OUT:-$root/build/gpu-check-out}
mkdir -p "$out"
log() { printf 'gpu-check: %s\n' "$*" | tee -a "$out/summary.log"; }
status=0

target=$(mktemp -d)/site
"$python" -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$target" \
  "$bundle"/starproj-*.whl "$bundle"/nvidia_cuda_runtime-*.whl || { log "pip could not install the wheel"; exit 1; }
export PYTHONPATH=$target
log "$(cd "$bundle" && ls starproj-*.whl) installed with pip --no-deps into $target ($("$python" -V))"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu-check: GPU: /' |
  tee -a "$out/summary.log"

# 1. the libraries: the wheel's own, the CUDA runtime's wheel, the base system
if ldd "$target"/starproj/*.so "$target"/starproj.libs/*.so* | tee "$out/ldd.log" | grep -E 'not found|/usr/local/lib/libstarpu'; then
  log "1. FAILED: a library of the wheel resolves outside it (above)"; status=1
else
  log "1. ldd: every library resolves into the wheel, the CUDA runtime's wheel or the base system"
fi

# 2. the tests, from a copy outside python/
run=$(mktemp -d)
cp -r python/tests python/examples "$run/"
if "$python" -c 'import pytest' 2>/dev/null; then
  (cd "$run" && timeout 200 "$python" -m pytest -q -rs -p no:cacheprovider tests) >"$out/pytest.log" 2>&1
  rc=$?
  log "2. pytest: $(tail -n 1 "$out/pytest.log") (exit $rc)"
  grep -E '^(FAILED|ERROR)|SKIPPED' "$out/pytest.log" | head -n 20 | sed 's/^/gpu-check:   /'
  [ "$rc" -eq 0 ] || status=1
else
  log "2. FAILED: this Python has no pytest (install its wheel into the same folder)"; status=1
fi

# 3. the example on the GPU
timeout 90 "$python" python/examples/torch_unrolled_osem.py --device cuda --epochs 6 >"$out/example.log" 2>&1
rc=$?
log "3. torch_unrolled_osem.py --device cuda: exit $rc; $(tail -n 2 "$out/example.log" | tr '\n' ' ')"
[ "$rc" -eq 0 ] || status=1

# 4. the checks, then the table (last)
pp=()
compgen -G "$bundle/parallelproj/parallelproj_core*.so" >/dev/null && pp=(--pp-module-dir "$bundle/parallelproj")
PYTHONUNBUFFERED=1 timeout 280 "$python" python/bench/gpu_check.py "${pp[@]}" --lors "$lors" 2>&1 |
  tee "$out/gpu_check.log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || { status=1; log "4. gpu_check.py: exit $rc"; }
exit "$status"
