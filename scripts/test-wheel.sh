#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the wheel scripts/build-wheel.sh built as a user gets it, with each interpreter given: installs it into a fresh
# virtual environment that holds nothing but pip, the wheel and what it pulls in, and what the tests need (numpy,
# pytest, petsird), then, in an environment emptied of everything but PATH=/usr/bin:/bin and a fresh HOME (no
# LD_LIBRARY_PATH, PYTHONPATH, PKG_CONFIG_PATH or STARPU_* variable):
#   1. ldd on the extension and on every library of the wheel: each dependency must resolve into the wheel's own
#      starproj.libs/, into the nvidia-cuda-runtime wheel's folder (the CUDA runtime, for a wheel built with CUDA) or
#      to the base system's C and C++ runtime in /lib or /usr/lib; anything in /usr/local (where install-deps.sh puts
#      StarPU), in the build tree or not found fails;
#   2. a start of the runtime on every device the machine has, whose loaded StarPU, hwloc, starproj and CUDA runtime
#      (read from /proc/self/maps) must all be the wheel's or its dependency's;
#   3. python/tests with pytest, run from a copy of the tests outside python/, so `import starproj` can only find
#      the installed package.
# Then
#   4. the wheel's tag must be cp311-abi3 and its Requires-Python >=3.11, and with each interpreter the wheel is not for
#      (--refuse, or with --all-pythons a CPython 3.10 found here) pip must refuse to install it and its package,
#      unpacked onto sys.path, must refuse to import with an ImportError that says which interpreters it needs.
# Prints, last, a line per interpreter: what was tested with it and pytest's summary.
# usage: scripts/test-wheel.sh [--python PY]... [--all-pythons] [--refuse PY]... [WHEEL]
#   WHEEL: default the one wheel in build/wheel; PY: an interpreter to test with (default python3); --all-pythons:
#   python3 and every interpreter scripts/install-pythons.sh provides (run it first to build the missing ones)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pythons=()
refuse=()
all=
wheel=
die() { echo "test-wheel: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --python) [ $# -ge 2 ] && [ -n "$2" ] || die "--python needs a value"; pythons+=("$2"); shift 2 ;;
    --python=*) pythons+=("${1#--python=}"); shift ;;
    --refuse) [ $# -ge 2 ] && [ -n "$2" ] || die "--refuse needs a value"; refuse+=("$2"); shift 2 ;;
    --refuse=*) refuse+=("${1#--refuse=}"); shift ;;
    --all-pythons) all=1; shift ;;
    -h|--help) sed -n '3,25p' "$0"; exit 0 ;;
    -*) die "unknown option '$1'" ;;
    *) [ -z "$wheel" ] || die "one wheel at a time"; wheel=$1; shift ;;
  esac
done
if [ -z "$wheel" ]; then
  shopt -s nullglob
  wheels=(build/wheel/starproj-*.whl)
  shopt -u nullglob
  [ ${#wheels[@]} -eq 1 ] ||
    die "expected one wheel in build/wheel, found ${#wheels[@]}: run scripts/build-wheel.sh or name it"
  wheel=${wheels[0]}
fi
[ -f "$wheel" ] || die "no wheel $wheel"
case "$wheel" in *.whl) ;; *) die "$wheel is not a .whl" ;; esac
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
log() { printf 'test-wheel: %s\n' "$*"; }
if [ -n "$all" ]; then
  pythons=(python3 "${pythons[@]}")
  while IFS= read -r py; do pythons+=("$py"); done < <(bash scripts/install-pythons.sh --list)
  # an interpreter the wheel is not for, where this machine has one (pyenv's 3.10 on the project's machines)
  for cand in "$(command -v python3.10 2>/dev/null || true)" "${PYENV_ROOT:-${HOME:-/root}/.pyenv}"/versions/3.10.*/bin/python3.10; do
    if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import venv, zipfile' 2>/dev/null; then
      refuse+=("$cand"); break
    fi
  done
fi
[ ${#pythons[@]} -gt 0 ] || pythons=(python3)
# each interpreter once (python3 may be one of the others), by the executable it runs
declare -A seen=()
unique=()
for py in "${pythons[@]}"; do
  command -v "$py" >/dev/null 2>&1 || die "no Python '$py'"
  exe=$("$py" -c 'import os, sys; print(os.path.realpath(sys.executable))')
  [ -n "${seen[$exe]:-}" ] || { seen[$exe]=1; unique+=("$py"); }
done
pythons=("${unique[@]}")
summary=()

# test_one PY: steps 1 - 3 with interpreter PY, in build/wheel-test/pyX.Y
test_one() {
python=$1
ver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
work=$root/build/wheel-test/py$ver
rm -rf "$work"
mkdir -p "$work/home" "$work/run"
venv=$work/venv
log "fresh virtual environment $venv ($("$python" -V))"
"$python" -m venv "$venv"
# petsird: the PETSIRD example and its test are written against this version's API (as scripts/test-python.sh)
"$venv/bin/pip" install -q --disable-pip-version-check "$wheel" numpy pytest petsird==0.12.0
"$venv/bin/pip" list --disable-pip-version-check 2>/dev/null | sed -n '3,$p' |
  awk '{printf "%s %s, ", $1, $2} END {print ""}' | sed 's/^/test-wheel: installed: /; s/, $//'

# the environment of every check below
clean=(env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8)
site=$("${clean[@]}" "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
[ -d "$site/starproj.libs" ] || die "the installed wheel has no $site/starproj.libs"

# --- 1. ldd ---------------------------------------------------------------------------------------------------------
# the base system: what every manylinux platform provides (auditwheel's policy) among what the wheel needs
base='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|libstdc\+\+\.so\.6'
base+='|ld-linux-x86-64\.so\.2|linux-vdso\.so\.1)$'
bad=0
check_ldd() {
  local file=$1 line name path where
  while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    [ -n "$line" ] || continue
    case "$line" in
      *" => not found"*) name=${line%% *}; path="not found" ;;
      *" => "*) name=${line%% =>*}; path=${line#*=> }; path=${path% (*} ;;
      *) name=$(basename "${line%% (*}"); path=${line%% (*} ;;
    esac
    # $ORIGIN/.. as the run paths give it, resolved (symbolic links kept: the paths are judged as the loader sees them)
    case "$path" in /*) path=$(realpath -s -m "$path") ;; esac
    case "$path" in
      "$site"/starproj.libs/*) where="the wheel" ;;
      "$site"/nvidia/*) where="nvidia-cuda-runtime" ;;
      /usr/local/*|"$root"/build/wheel-deps/*|"$root"/build/wheel-build/*|"$root"/python/*|"not found") where="" ;;
      *) if [[ $name =~ $base ]] &&
            [[ $path == /lib/* || $path == /usr/lib/* || $path == /lib64/* || $path == linux-vdso* ]]; then
           where="base system"
         else
           where=""
         fi ;;
    esac
    if [ -n "$where" ]; then
      printf '    %-34s %-16s %s\n' "$name" "$where" "${path#"$site"/}"
    else
      printf '    %-34s %-16s %s   <-- not allowed\n' "$name" "NOT ALLOWED" "$path"
      bad=$((bad + 1))
    fi
  done < <("${clean[@]}" ldd "$file")
}
log "1. ldd (site-packages: $site)"
for f in "$site"/starproj/*.so "$site"/starproj.libs/*.so*; do
  echo "  ${f#"$site"/}"
  check_ldd "$f"
done
[ "$bad" -eq 0 ] || { log "FAILED: $bad dependencies resolve outside the wheel and the base system"; exit 1; }

# --- 2. the runtime on this machine's devices, and what it loaded ----------------------------------------------------
log "2. starting the runtime (devices='any')"
set +e
(cd "$work/run" && "${clean[@]}" "$venv/bin/python" - "$site" 2>"$work/runtime.err" <<'EOF'
import os, sys
site = sys.argv[1]
import starproj as sp
assert os.path.dirname(sp.__file__) == os.path.join(site, "starproj"), sp.__file__
sp.init(devices="any")
print("test-wheel:   starproj %s, %d CPU workers, %d GPUs, scheduler %s" % (sp.version, sp.num_cpu_workers(),
      sp.num_gpus(), sp.scheduler_name()))
with open("/proc/self/maps") as maps:
    loaded = sorted({l.split(None, 5)[5].strip() for l in maps if len(l.split(None, 5)) == 6 and ".so" in l})
sp.shutdown()
ours = [p for p in loaded if any(k in os.path.basename(p) for k in ("starpu", "starproj", "hwloc", "cudart"))]
for p in ours:
    print("test-wheel:   loaded %s" % os.path.relpath(p, site))
wrong = [p for p in ours if not (p.startswith(os.path.join(site, "starproj.libs") + "/")
                                 or p.startswith(os.path.join(site, "starproj") + "/")
                                 or p.startswith(os.path.join(site, "nvidia") + "/"))]
if wrong:
    sys.exit("test-wheel: FAILED: loaded from outside the wheel: %s" % ", ".join(wrong))
EOF
)
status=$?
set -e
sed 's/^/test-wheel:   (stderr) /' "$work/runtime.err"
[ "$status" -eq 0 ] || { log "FAILED: the runtime did not start from the wheel (exit $status)"; exit 1; }
# StarPU warns about folders it was told to read from that do not exist: the wheel names none
if grep -q 'does not exist' "$work/runtime.err"; then
  log "FAILED: StarPU looks for a folder that does not exist where the wheel is installed"; exit 1
fi
if [ -d "$work/home/.starpu" ]; then
  log "  StarPU's performance models went to \$HOME/.starpu ($(find "$work/home/.starpu" -type f | wc -l) files)"
fi

# --- 3. the tests ---------------------------------------------------------------------------------------------------
# a copy of the tests (and of the example test_petsird.py runs) in a folder without the package's sources
cp -r python/tests python/examples "$work/run/"
rm -rf "$work/run/tests/__pycache__" "$work/run/examples/__pycache__"
log "3. python/tests with pytest (from $work/run)"
set +e
(cd "$work/run" && "${clean[@]}" "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests) >"$work/pytest.log" 2>&1
status=$?
set -e
tail -n 1 "$work/pytest.log" | sed 's/^/test-wheel:   /'
if [ "$status" -ne 0 ]; then
  log "FAILED (pytest exit $status); full output in $work/pytest.log"
  tail -n 60 "$work/pytest.log"
  exit "$status"
fi
log "passed with $("$python" -V 2>&1)"
summary+=("$(printf '%-46s %s' "$(cd "$work" && "$venv/bin/python" -c 'import sys; print("%s (%s)" % (sys.version.split()[0], sys._base_executable))')" "$(tail -n 1 "$work/pytest.log")")")
}


for py in "${pythons[@]}"; do
  test_one "$py"
done

# --- 4. interpreters the wheel is not for ---------------------------------------------------------------------------
# what pip reads: the tag (CPython 3.11's stable ABI: 3.11 and later) and Requires-Python
meta=$("${pythons[0]}" - "$wheel" <<'EOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
read = lambda suffix: [z.read(n).decode() for n in z.namelist() if n.endswith(suffix)][0]
tags = [l.split(": ", 1)[1] for l in read(".dist-info/WHEEL").splitlines() if l.startswith("Tag: ")]
req = [l.split(": ", 1)[1] for l in read(".dist-info/METADATA").splitlines() if l.startswith("Requires-Python: ")]
print(" ".join(tags), "|", " ".join(req))
EOF
)
case "$meta" in
  "cp311-abi3-manylinux_2_34_x86_64 | >=3.11") log "4. the wheel's tag and Requires-Python: $meta" ;;
  *) log "FAILED: the wheel's tag and Requires-Python are '$meta', not 'cp311-abi3-manylinux_2_34_x86_64 | >=3.11'"
     exit 1 ;;
esac
for py in "${refuse[@]}"; do
  command -v "$py" >/dev/null 2>&1 || die "no Python '$py'"
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  work=$root/build/wheel-test/refuse-py$ver
  rm -rf "$work"
  mkdir -p "$work/unpacked"
  log "4. $("$py" -V 2>&1) ($py): the wheel must be refused"
  "$py" -m venv "$work/venv"
  if "$work/venv/bin/pip" install -q --disable-pip-version-check --no-deps "$wheel" >"$work/pip.log" 2>&1; then
    log "FAILED: pip installed the wheel into $("$py" -V 2>&1)"; exit 1
  fi
  log "  pip refused it: $(grep -m1 -iE 'not a supported wheel|requires a different python|error' "$work/pip.log")"
  # the package on sys.path anyway (a copy made by hand): its import must say what it needs, before the extension
  "$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$work/unpacked"
  set +e
  msg=$(cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" PYTHONPATH="$work/unpacked" "$py" -c 'import starproj' 2>&1)
  status=$?
  set -e
  if [ "$status" -eq 0 ] || ! grep -q 'ImportError: starproj needs CPython 3.11 or newer' <<<"$msg"; then
    log "FAILED: importing the package into $("$py" -V 2>&1) gave: $(tail -n 1 <<<"$msg")"; exit 1
  fi
  log "  import refused: $(tail -n 1 <<<"$msg")"
  summary+=("$(printf '%-46s %s' "$("$py" -c 'import sys; print(sys.version.split()[0])') ($py)" "refused (pip and import), as it must")")
done

log "the wheel $(basename "$wheel"):"
for line in "${summary[@]}"; do log "  $line"; done
