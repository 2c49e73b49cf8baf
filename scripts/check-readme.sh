#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the commands of README.md's quick start (the first ```sh block under "## Quick start") exactly as written,
# one after the other from the repository root, then checks that the main job (scripts/recon.sh) wrote its files
# and that `git status --porcelain` of the clone shows nothing the commands left behind.
# usage: scripts/check-readme.sh [--list] [--skip COMMAND]...
#   --list          print the commands and run nothing
#   --skip COMMAND  a command of the block (as written, without its comment) that an earlier step ran; it must be
#                   in the block, and is reported and not run again
set -uo pipefail
cd "$(dirname "$0")/.."
# where starproj-recon writes by default, and what the README says it writes there
out=starproj-recon-out
outputs=(recon.nii phantom.nii recon.png phantom.png sinogram_view0.png)

list=0
skips=()
while [ $# -gt 0 ]; do
  case "$1" in
    --list) list=1; shift ;;
    --skip) [ $# -ge 2 ] || { echo "check-readme.sh: --skip needs a command" >&2; exit 2; }
            skips+=("$2"); shift 2 ;;
    -h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-readme.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done

# the block: the first ```sh fence after the quick start's heading, to its closing fence
mapfile -t block < <(awk '
  /^## Quick start/ { inside = 1; next }
  inside && /^## / { exit }
  inside && !fence && /^```sh[[:space:]]*$/ { fence = 1; next }
  fence && /^```[[:space:]]*$/ { exit }
  fence { print }
' README.md)
commands=()
for line in "${block[@]}"; do
  trimmed=${line#"${line%%[![:space:]]*}"}
  [ -z "$trimmed" ] || [ "${trimmed:0:1}" = "#" ] || commands+=("$line")
done
if [ ${#commands[@]} -eq 0 ]; then
  echo "check-readme.sh: no commands found in README.md's quick start (a \`\`\`sh block under '## Quick start')" >&2
  exit 1
fi
# a command without its trailing comment, to compare with --skip
bare() { local c=${1%%#*}; c=${c%"${c##*[![:space:]]}"}; printf '%s' "$c"; }
for s in "${skips[@]}"; do
  found=0
  for c in "${commands[@]}"; do [ "$(bare "$c")" = "$s" ] && found=1; done
  if [ $found -eq 0 ]; then
    echo "check-readme.sh: --skip '$s' is not a command of README.md's quick start" >&2
    exit 1
  fi
done
if [ $list -eq 1 ]; then
  printf '%s\n' "${commands[@]}"
  exit 0
fi

if ! before=$(git status --porcelain 2>&1); then
  echo "check-readme.sh: git status failed (the check runs in a git clone): $before" >&2
  exit 1
fi
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
sleep 1 # files written from now on are newer than the stamp, even on file systems with 1 s resolution
status=0
ran_main=0
for c in "${commands[@]}"; do
  skip=0
  for s in "${skips[@]}"; do [ "$(bare "$c")" = "$s" ] && skip=1; done
  if [ $skip -eq 1 ]; then
    echo "== check-readme: not run again (an earlier step ran it): $c"
    continue
  fi
  echo "== check-readme: $c"
  start=$SECONDS
  bash -c "$c" </dev/null
  rc=$?
  echo "== check-readme: exit status $rc after $((SECONDS - start)) s: $c"
  [ $rc -eq 0 ] || status=1
  case " $(bare "$c") " in *"scripts/recon.sh "*) ran_main=1 ;; esac
done

if [ $ran_main -eq 1 ]; then
  for f in "${outputs[@]}"; do
    if [ ! -s "$out/$f" ]; then
      echo "check-readme: the main job did not write $out/$f"
      status=1
    elif [ -z "$(find "$out/$f" -newer "$stamp")" ]; then
      echo "check-readme: $out/$f is older than this run"
      status=1
    fi
  done
  [ $status -ne 0 ] || echo "== check-readme: the main job wrote ${outputs[*]} into $out/"
fi

after=$(git status --porcelain)
new=$(comm -13 <(printf '%s\n' "$before" | sort) <(printf '%s\n' "$after" | sort) | sed '/^$/d')
if [ -n "$new" ]; then
  echo "check-readme: after the quick start, git status shows what was not there before:"
  printf '%s\n' "$new" | sed 's/^/    /'
  status=1
fi
if printf '%s\n' "$after" | grep -q " $out/\?\$"; then
  echo "check-readme: git status shows the main job's output folder $out/ (it must be ignored)"
  status=1
fi
if [ $status -eq 0 ]; then
  echo "== check-readme: the quick start ran as written; git status shows nothing new =="
else
  echo "== check-readme: FAILED =="
fi
exit $status
