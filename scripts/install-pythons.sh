#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Provides the CPython interpreters the wheel is tested with beyond the system's own (Debian 12: 3.11): 3.12, 3.13 and
# 3.14. An interpreter of that version already on the machine (on PATH, or a pyenv version: CPython with the GIL,
# ssl, zlib, ctypes and venv) is used as it is; the others are built, each once per machine, into DIR/3.X (kept: a
# later run finds them and builds nothing; --build builds every version asked for there). The sources are the
# upstream tarballs (the .orig.tar.xz) of Ubuntu's source packages python3.12 (noble), python3.13 (questing) and
# python3.14 (resolute), built as CPython's own configure builds them, without Ubuntu's patches, without PGO or LTO
# and without the test modules: interpreters to test a wheel with, not to ship. apt reads the suites' signed source
# indexes, with the key that signs Ubuntu's archive taken from Debian's own package of it (ubuntu-keyring, fetched from
# Debian's archive, which apt checks against Debian's key); each tarball must have the size and hash that the index
# gives it, so nothing unsigned is used.
# Each interpreter's venv module brings pip (the wheel CPython bundles); nothing is installed into DIR/3.X afterwards.
#
# usage: scripts/install-pythons.sh [--prefix DIR] [--jobs N] [--build] [--list] [VERSION...]
#   VERSION  3.12, 3.13 or 3.14 (default: all three)
#   --prefix DIR  where the interpreters go (default /usr/local/starproj-python)
#   --build       build into DIR/3.X even where the machine has an interpreter of that version
#   --list        build nothing: print the interpreters that would be used, one path a line, on standard output
# Prints, last, one line per interpreter: "install-pythons: python3.X  PATH  (Python 3.X.Y; built here | found)".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

prefix=/usr/local/starproj-python
jobs=$(nproc 2>/dev/null || echo 2)
list_only=
build_all=
versions=()
die() { echo "install-pythons: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] && [ -n "$2" ] || die "--prefix needs a folder"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; [ -n "$prefix" ] || die "--prefix needs a folder"; shift ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a number"; jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#--jobs=}; shift ;;
    --list) list_only=1; shift ;;
    --build) build_all=1; shift ;;
    -h|--help) sed -n '3,21p' "$0"; exit 0 ;;
    3.12|3.13|3.14) versions+=("$1"); shift ;;
    *) die "unknown argument '$1' (versions: 3.12 3.13 3.14; --help lists the options)" ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || versions=(3.12 3.13 3.14)
case "$prefix" in /*) ;; *) prefix=$root/$prefix ;; esac
prefix=${prefix%/}

deps_name=install-pythons
# shellcheck source=scripts/lib-deps.sh
source "$root/scripts/lib-deps.sh"

# the Ubuntu suite whose source package python3.X is taken from
suite_of() {
  case "$1" in
    3.12) echo noble ;;
    3.13) echo questing ;;
    3.14) echo resolute ;;
  esac
}

# the recipe of a build: a change here rebuilds (the stamp holds it)
recipe="configure --disable-test-modules --without-ensurepip --with-system-expat; make altinstall"

# what pip, venv and the tests need of an interpreter
modules='import ssl, zlib, ctypes, bz2, lzma, venv, ensurepip'
present() {
  local v=$1 py=$prefix/$1/bin/python$1
  [ -x "$py" ] && [ "$(sed -n 1p "$prefix/$v/.starproj-python" 2>/dev/null)" = "$recipe" ] &&
    "$py" -c "$modules" 2>/dev/null
}

# An interpreter of version $1 found on the machine (PATH, pyenv's versions), as the path of its executable: CPython
# of that version, with the GIL (the wheel is abi3) and the modules above; nothing where there is none.
found() {
  local v=$1 cand
  local pyenv_root=${PYENV_ROOT:-${HOME:-/root}/.pyenv}
  for cand in "$(command -v "python$v" 2>/dev/null || true)" /usr/bin/python"$v" /usr/local/bin/python"$v" \
      "$pyenv_root"/versions/"$v".*/bin/python"$v"; do
    [ -n "$cand" ] && [ -x "$cand" ] || continue
    # (a pyenv shim of a version not selected fails here, as it should)
    "$cand" -c "import sys, sysconfig; $modules
sys.exit(not (sys.implementation.name == 'cpython' and '%d.%d' % sys.version_info[:2] == '$v'
              and not sysconfig.get_config_var('Py_GIL_DISABLED')))" 2>/dev/null || continue
    "$cand" -c 'import sys; print(sys.executable)'
    return 0
  done
  return 0
}

# the interpreter used for version $1 (built here, else found), or nothing
interpreter() {
  if present "$1"; then echo "$prefix/$1/bin/python$1"; elif [ -z "$build_all" ]; then found "$1"; fi
}

report() {
  local v py how
  for v in "${versions[@]}"; do
    py=$(interpreter "$v")
    if [ -z "$py" ]; then log "python$v  none"; continue; fi
    case "$py" in "$prefix"/*) how="built here from Ubuntu's source package" ;; *) how="found on this machine" ;; esac
    log "python$v  $py  ($("$py" -V 2>&1); $how)"
  done
}
if [ -n "$list_only" ]; then
  for v in "${versions[@]}"; do interpreter "$v"; done
  exit 0
fi

todo=()
for v in "${versions[@]}"; do
  [ -n "$(interpreter "$v")" ] || todo+=("$v")
done
if [ ${#todo[@]} -eq 0 ]; then
  report
  exit 0
fi

for tool in gcc make apt-get dpkg-deb xz curl; do
  command -v "$tool" >/dev/null 2>&1 || { log "no $tool: run scripts/install-deps.sh first"; exit 1; }
done
# what CPython's modules need to build (ssl and zlib for pip, ctypes for the tests, bz2 and lzma for archives)
packages=(libssl-dev libffi-dev zlib1g-dev libbz2-dev liblzma-dev libsqlite3-dev uuid-dev libreadline-dev
  libncurses-dev libexpat1-dev xz-utils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  quiet "${SUDO[@]}" apt-get update -q
  quiet env DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t_all=$SECONDS

# --- Ubuntu's archive key, from Debian's archive --------------------------------------------------------------
# An apt configuration of its own (nothing of the system's changes): Debian 12's binary index of trixie, to fetch the
# package ubuntu-keyring, whose hash apt checks against that index, which Debian's key signs.
deb=$work/debian-apt
mkdir -p "$deb/lists/partial" "$deb/cache/archives/partial" "$deb/parts" "$work/keyring"
printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main\n' \
  >"$deb/sources.list"
deb_opts=(-o "Dir::Etc::SourceList=$deb/sources.list" -o "Dir::Etc::SourceParts=$deb/parts"
  -o "Dir::State::Lists=$deb/lists" -o "Dir::Cache=$deb/cache" -o "Dir::State::status=/dev/null"
  -o APT::Architecture=amd64 -o APT::Sandbox::User=root)
log "fetching Debian's ubuntu-keyring (the key of Ubuntu's archive)"
quiet apt-get "${deb_opts[@]}" update -q
(cd "$work/keyring" && quiet apt-get "${deb_opts[@]}" download -q ubuntu-keyring)
quiet dpkg-deb -x "$(ls "$work"/keyring/ubuntu-keyring_*.deb)" "$work/keyring/root"
key=$work/keyring/root/usr/share/keyrings/ubuntu-archive-keyring.gpg
[ -s "$key" ] || { log "ubuntu-keyring holds no ubuntu-archive-keyring.gpg"; exit 1; }

# --- the source packages' indexes, of the suites needed --------------------------------------------------------
ubu=$work/ubuntu-apt
mkdir -p "$ubu/lists/partial" "$ubu/cache/archives/partial" "$ubu/parts"
: >"$ubu/sources.list"
for v in "${todo[@]}"; do
  printf 'deb-src [signed-by=%s] http://archive.ubuntu.com/ubuntu %s main\n' "$key" "$(suite_of "$v")" \
    >>"$ubu/sources.list"
done
apt_opts=(-o "Dir::Etc::SourceList=$ubu/sources.list" -o "Dir::Etc::SourceParts=$ubu/parts"
  -o "Dir::State::Lists=$ubu/lists" -o "Dir::Cache=$ubu/cache" -o APT::Sandbox::User=root)
log "reading Ubuntu's source indexes ($(for v in "${todo[@]}"; do suite_of "$v"; done | tr '\n' ' ' | sed 's/ $//'))"
quiet apt-get "${apt_opts[@]}" update -q

# --- each interpreter -----------------------------------------------------------------------------------------
for v in "${todo[@]}"; do
  t0=$SECONDS
  deps_newest_source "python$v" "$v"
  src_version=$newest_version
  upstream=${src_version%%-*}
  dl=$work/src-$v
  mkdir -p "$dl"
  log "fetching python$v $src_version's upstream tarball ($(suite_of "$v")) from Ubuntu's archive"
  # only the upstream tarball is used: fetched alone, and checked against the size and hash that the suite's signed
  # index gives it (what apt-get source would check; the packaging's other files are not needed)
  line=$(apt-get "${apt_opts[@]}" source -q --print-uris "python$v=$src_version" 2>/dev/null |
    grep "^'[^']*/python${v}_${upstream}\.orig\.tar\.[a-z0-9]*' " | head -n 1)
  [ -n "$line" ] || { log "apt names no upstream tarball of python$v $src_version"; exit 1; }
  read -r url name size hash <<<"$line"
  url=${url//\'/}
  orig=$dl/$name
  quiet curl -fsSL --retry 3 -o "$orig" "$url"
  algo=${hash%%:*}
  case "$algo" in SHA512) sum=sha512sum ;; SHA256) sum=sha256sum ;; *) log "unknown hash $algo"; exit 1 ;; esac
  if [ "$(stat -c %s "$orig")" != "$size" ] || [ "$("$sum" "$orig" | cut -d' ' -f1)" != "${hash#*:}" ]; then
    log "$name does not match the size and $algo hash of Ubuntu's signed index"; exit 1
  fi
  tar -xf "$orig" -C "$dl"
  srcdir=$(find "$dl" -maxdepth 1 -type d -name 'Python-*' | head -n 1)
  [ -n "$srcdir" ] && [ -x "$srcdir/configure" ] || { log "the tarball of python$v holds no Python-*/configure"; exit 1; }
  t1=$SECONDS
  log "building Python $upstream into $prefix/$v (no PGO, no test modules)"
  rm -rf "${prefix:?}/$v"
  mkdir -p "$prefix/$v" 2>/dev/null || "${SUDO[@]}" mkdir -p "$prefix/$v"
  # a static libpython (configure's default): the interpreter needs no run path or LD_LIBRARY_PATH
  (cd "$srcdir" && quiet ./configure -q --prefix="$prefix/$v" --disable-test-modules --without-ensurepip \
    --with-system-expat)
  (cd "$srcdir" && quiet make -s -j"$jobs")
  t2=$SECONDS
  if [ -w "$prefix/$v" ]; then
    (cd "$srcdir" && quiet make -s altinstall)
  else
    (cd "$srcdir" && quiet "${SUDO[@]}" make -s altinstall)
  fi
  py=$prefix/$v/bin/python$v
  "$py" -c "$modules" ||
    { log "python$v was built without a module pip or the tests need"; exit 1; }
  printf '%s\n%s\n' "$recipe" "$src_version" >"$prefix/$v/.starproj-python"
  rm -rf "$dl"
  log "python$v built: fetch $((t1 - t0)) s, configure and make $((t2 - t1)) s, install $((SECONDS - t2)) s"
done
log "done in $((SECONDS - t_all)) s"
report
