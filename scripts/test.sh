#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds starproj and runs its tests (the C library's Check programs, then the Python
# binding's pytest suite); prints every test program's own Check summary, pytest's summary and a closing total.
# usage: scripts/test.sh [--prefix DIR] [--with-parallelproj SRC]   (DIR: where StarPU goes, default /usr/local;
#   SRC: libparallelproj's source, a folder or a .tar.gz, whose Python module the binding's tests compare with;
#   without the option, $STARPROJ_PARALLELPROJ_SRC when set, so that CI runs the command as the README writes it)
set -uo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
prefix_args=()
python_args=()
if [ -n "${STARPROJ_PARALLELPROJ_SRC:-}" ]; then
  src=$STARPROJ_PARALLELPROJ_SRC; case "$src" in /*) ;; *) src=$caller/$src ;; esac
  python_args=(--with-parallelproj "$src")
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix_args=(--prefix "$2"); shift 2 ;;
    --prefix=*) prefix_args=("$1"); shift ;;
    --with-parallelproj)
      src=$2; case "$src" in /*) ;; *) src=$caller/$src ;; esac
      python_args=(--with-parallelproj "$src"); shift 2 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bash scripts/install-deps.sh "${prefix_args[@]}" || exit 1
bash scripts/build.sh "${prefix_args[@]}" || exit 1
prefix=/usr/local
[ "${prefix_args[0]:-}" = --prefix ] && prefix=${prefix_args[1]}
case "${prefix_args[0]:-}" in --prefix=*) prefix=${prefix_args[0]#--prefix=} ;; esac
# the tree's own libraries first: LD_LIBRARY_PATH outranks the programs' RUNPATH, and a starproj installed in the
# prefix (where StarPU is) would otherwise shadow the one just built
export LD_LIBRARY_PATH="$PWD/build/.libs:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

cd build
make -s -j"$(nproc 2>/dev/null || echo 2)" check >/dev/null 2>&1
status=$?

echo "== starproj tests: each program's own summary =="
checks=0 failures=0 errors=0 programs=0 skipped=0
for trs in tests/*.trs; do
  prog=${trs%.trs}
  result=$(sed -n 's/^:test-result: //p' "$trs")
  printf '%-22s %s\n' "$prog" "$result"
  if [ "$result" = SKIP ]; then
    skipped=$((skipped + 1))
    grep -h 'SKIPPED' "$prog.log" | sed 's/^/    /'
    continue
  fi
  programs=$((programs + 1))
  while read -r line; do
    echo "    $line"
    set -- $(echo "$line" | sed -E 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/')
    checks=$((checks + $1)) failures=$((failures + $2)) errors=$((errors + $3))
  done < <(grep -oE '[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$prog.log")
  if [ "$result" != PASS ]; then
    echo "    --- $prog.log ---"
    sed 's/^/    /' "$prog.log"
  fi
done
cd ..
# the Python binding (python/): built against this build's library, tested with pytest
echo "== Python binding (python/tests, pytest) =="
bash scripts/test-python.sh "${prefix_args[@]}" "${python_args[@]}"
pystatus=$?
echo "== total: $checks checks, $failures failures, $errors errors in $programs test programs; $skipped skipped;" \
  "Python tests $([ $pystatus -eq 0 ] && echo passed || echo FAILED) =="
if [ $status -ne 0 ] || [ $failures -ne 0 ] || [ $errors -ne 0 ] || [ $programs -eq 0 ] || [ $pystatus -ne 0 ]; then
  echo "== tests FAILED =="
  exit 1
fi
echo "== tests passed =="
