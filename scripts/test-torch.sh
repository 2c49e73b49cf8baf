#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the wheel with PyTorch, in a fresh virtual environment of its own: the wheel, numpy, pytest and torch from PyPI
# (its Linux wheel, which brings NVIDIA's CUDA libraries as wheels: about 2.6 GB to download, kept in pip's cache, so
# that later runs on the machine download nothing), then, from a copy of the tests outside python/,
#   1. python/tests/test_torch.py: tensors in place through starproj's calls and parallelproj_core, the autograd
#      operators (dot-product test, gradients against explicit back projections, gradcheck), the refusals;
#   2. python/examples/torch_unrolled_osem.py, a few epochs (on the GPU where torch sees one, else on the CPU).
# Prints what each part took (install, tests, example) and pytest's summary.
# usage: scripts/test-torch.sh [--python PY] [--torch VERSION] [WHEEL]
#   PY: default a Python 3.12 of scripts/install-pythons.sh (the GPU machines' version), else python3;
#   VERSION: default 2.11.0 (the GPU machines' torch); WHEEL: default the one wheel in build/wheel
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=
torch_version=2.11.0
wheel=
die() { echo "test-torch: $*" >&2; exit 2; }
log() { printf 'test-torch: %s\n' "$*"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --python) [ $# -ge 2 ] && [ -n "$2" ] || die "--python needs a value"; python=$2; shift 2 ;;
    --torch) [ $# -ge 2 ] && [ -n "$2" ] || die "--torch needs a version"; torch_version=$2; shift 2 ;;
    -h|--help) sed -n '3,13p' "$0"; exit 0 ;;
    -*) die "unknown option '$1'" ;;
    *) [ -z "$wheel" ] || die "one wheel at a time"; wheel=$1; shift ;;
  esac
done
if [ -z "$wheel" ]; then
  shopt -s nullglob
  wheels=(build/wheel/starproj-*.whl)
  shopt -u nullglob
  [ ${#wheels[@]} -eq 1 ] || die "expected one wheel in build/wheel, found ${#wheels[@]}: run scripts/build-wheel.sh"
  wheel=${wheels[0]}
fi
[ -f "$wheel" ] || die "no wheel $wheel"
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
[ -n "$python" ] || python=$(bash scripts/install-pythons.sh --list 3.12 | head -n 1)
[ -n "$python" ] || python=python3
command -v "$python" >/dev/null 2>&1 || die "no Python '$python'"

work=$root/build/torch-test
rm -rf "$work"
mkdir -p "$work/run" "$work/home"
# torch's venv takes about 6 GB and pip's cache up to 2.6 GB more on a first install: say so before pip runs out of
# it
need_gb=9
free_kb=$(df -Pk "$work" | awk 'NR == 2 {print $4}')
if [ -n "$free_kb" ] && [ "$free_kb" -lt $((need_gb * 1024 * 1024)) ]; then
  die "$(df -Ph "$work" | awk 'NR == 2 {print $4}') free on the file system of $work; torch's virtual environment and \
pip's cache need about $need_gb GB: free some space (an older build/ folder, pip's cache) and run again"
fi
t0=$SECONDS
log "fresh virtual environment $work/venv ($("$python" -V)); pip installs torch==$torch_version, the wheel, numpy, pytest"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check --no-compile "$wheel" numpy pytest "torch==$torch_version" \
  >"$work/pip.log" 2>&1 || { tail -n 20 "$work/pip.log"; die "pip failed (full output in $work/pip.log)"; }
t_install=$((SECONDS - t0))
log "installed in $t_install s: $("$work/venv/bin/pip" list --disable-pip-version-check 2>/dev/null |
  grep -iE '^(torch|starproj|numpy|nvidia-cuda-runtime) ' | awk '{printf "%s %s, ", $1, $2}' | sed 's/, $//'); $(du -sh "$work/venv" | cut -f1)"

cp -r python/tests python/examples "$work/run/"
clean=(env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8)
device=$("${clean[@]}" "$work/venv/bin/python" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
t1=$SECONDS
set +e
(cd "$work/run" && "${clean[@]}" "$work/venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests/test_torch.py) \
  >"$work/pytest.log" 2>&1
status=$?
set -e
t_tests=$((SECONDS - t1))
log "1. tests/test_torch.py ($t_tests s): $(tail -n 1 "$work/pytest.log")"
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/pytest.log"
  die "the torch tests failed (pytest exit $status); full output in $work/pytest.log"
fi
t2=$SECONDS
set +e
(cd "$work/run" && "${clean[@]}" "$work/venv/bin/python" examples/torch_unrolled_osem.py --device "$device" \
  --epochs 6) >"$work/example.log" 2>&1
status=$?
set -e
t_example=$((SECONDS - t2))
sed 's/^/test-torch:   /' "$work/example.log" | tail -n 3
[ "$status" -eq 0 ] || die "the example failed (exit $status); output in $work/example.log"
log "2. examples/torch_unrolled_osem.py --device $device ($t_example s): passed"
log "times: install $t_install s, tests $t_tests s, example $t_example s, all $((SECONDS - t0)) s"
