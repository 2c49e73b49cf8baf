#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_exports.sh: every library exports exactly what a header declares. Each function or variable a built
# libstarproj*.so defines in its dynamic symbol table (nm -D --defined-only) must be declared, with SPROJ_API, in a
# public header (include/*.h) or, with SPROJ_SHARED, in src/core/shared.h (what libstarproj gives its sibling
# libraries); and every SPROJ_API declaration must be exported by some library. Prints the offenders.
set -u
srcdir=${srcdir:-.}
libs=()
for l in .libs/libstarproj.so .libs/libstarproj-io.so .libs/libstarproj-mpi.so; do
  [ -f "$l" ] && libs+=("$l")
done
[ ${#libs[@]} -gt 0 ] || { echo "check_exports: no libstarproj*.so in .libs (built with --disable-shared?)"; exit 77; }
command -v nm >/dev/null || { echo "check_exports: nm not found"; exit 77; }
declared=$(mktemp) exported=$(mktemp)
trap 'rm -f "$declared" "$exported"' EXIT
# the names after SPROJ_API / SPROJ_SHARED up to the opening parenthesis
sed -n 's/^SPROJ_\(API\|SHARED\) [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\2/p' "$srcdir"/include/*.h \
  "$srcdir"/src/core/shared.h | sort -u >"$declared"
status=0
for l in "${libs[@]}"; do
  # defined text (T), data (D, B, R) and weak symbols; not the linker's own (_init, _fini, __bss_start, ...)
  nm -D --defined-only "$l" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | sed 's/@.*//' |
    grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u >"$exported"
  extra=$(comm -13 "$declared" "$exported")
  n=$(wc -l <"$exported")
  if [ -n "$extra" ]; then
    echo "FAIL: $(basename "$l") exports symbols that no header declares:"
    echo "$extra" | sed 's/^/  /'
    status=1
  else
    echo "ok: $(basename "$l") exports $n symbols, each declared in a header"
  fi
  cat "$exported" >>"$exported.all"
done
api=$(sed -n 's/^SPROJ_API [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$srcdir"/include/*.h | sort -u)
missing=$(comm -23 <(echo "$api") <(sort -u "$exported.all"))
rm -f "$exported.all"
# the MPI header's calls are exported only where the distributed layer was built
if [ ! -f .libs/libstarproj-mpi.so ]; then
  missing=$(echo "$missing" | grep -v '^sproj_mpi_' || true)
fi
if [ ! -f .libs/libstarproj-io.so ]; then
  io=$(sed -n 's/^SPROJ_API [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$srcdir"/include/starproj_io.h)
  missing=$(comm -23 <(echo "$missing" | sort -u) <(echo "$io" | sort -u))
fi
if [ -n "$missing" ]; then
  echo "FAIL: declared with SPROJ_API but exported by no library:"
  echo "$missing" | sed 's/^/  /'
  status=1
fi
[ $status -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $status
