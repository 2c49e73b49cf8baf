#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Draws starproj's structure from a built tree into doc/architecture/ (graphviz .dot files and their SVGs), or checks
# it (doc/architecture.md): the file-level call graph comes from the libraries' object files (nm: file A -> file B when
# A's object needs a symbol B's object defines), the include graph from the sources' quoted includes.
#
# usage: scripts/architecture.sh [--check] [--build DIR] [--root DIR] [--out DIR] [--no-svg]
#   (none)        redraw doc/architecture/*.dot and *.svg from build/ (build it first: scripts/build.sh)
#   --check       write nothing; fail, naming the files and symbols, when a folder of src/ has a circle among its files,
#                 a folder calls or includes against the layers, a file of src/ has over 900 lines, or the committed
#                 .dot files differ from the code's (then run this script without --check and commit the figures)
#   --build DIR   the built tree (default ROOT/build)
#   --root DIR    the source tree (default this script's); with --out, to draw another version of starproj
#   --out DIR     where the figures go (default ROOT/doc/architecture)
#   --no-svg      the .dot files only
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=no
for a in "$@"; do
  case "$a" in
    --check) check=yes ;;
    -h|--help) sed -n '3,16p' "$0"; exit 0 ;;
  esac
done
need=(python3 nm)
[ "$check" = no ] && [[ " $* " != *" --no-svg "* ]] && need+=(dot)
for tool in "${need[@]}"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "architecture: $tool not found (scripts/install-deps.sh installs it: Debian's python3, binutils, graphviz)" >&2
    exit 1
  fi
done
exec python3 "$here/architecture.py" "$@"
