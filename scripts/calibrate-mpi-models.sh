#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records, on a real machine with the normal (non-simulated) build, the performance models that bench_mpi's
# simulation over SimGrid's SMPI needs (doc/simulation.md, "Several nodes"): one node of the simulated cluster is
# this machine. The task sizes of a rank depend on its share of the views (starproj cuts a call's LORs into about
# 2 tasks per CPU worker), so one process (mpirun -np 1 --bind-to none: every core of the machine, no second rank
# competing for them) runs bench_mpi's jobs once per --subsets count: the OSEM subsets' calls then hold from all
# the views down to one view, the sizes of 1 to 64 ranks (tasks of 1 to 15 half-views on 2 cores). The curve StarPU
# fits through all the sizes (a size^b + c), which it would prefer to the mean measured at a size, is written out as
# NaN: fitted from tasks of one LOR to 31200 LORs it put 1 ms of constant on every Joseph task and overestimated
# the smallest (the tasks of 64 ranks) by half, where each size's measured mean is exact; a size not measured then
# stops the simulation instead of being guessed. Output: OUT/perfmodels/<host>/ with codelets/, bus/ and MACHINE
# (copy it into the repository's perfmodels/); OUT/logs/ with bench_mpi's tables.
# On a GPU node (--devices gpu) the runs are given as RANKSxDEVICES@SUBSETS (--runs): RANKS processes on this machine
# (all on its GPUs), each presenting them as DEVICES devices (SPROJ_DEVICES), bench_mpi --subsets SUBSETS. Each rank
# then runs the task sizes and codelets of one node of a larger cluster: 1x1@272 those of 8 nodes of one GPU at 34
# subsets (a rank's share of a subset is one view either way), 2x8@136 those of 8 nodes of 8 GPUs (one view per rank
# and subset, an eighth of it per device, and the sums across ranks that several ranks of several devices make).
# One CUDA worker per GPU (STARPU_NWORKER_PER_CUDA=1) so that tasks are timed one at a time, as StarPU simulates them.
# usage: scripts/calibrate-mpi-models.sh [--host NAME] [--build DIR] [--scanner small|vision600]
#                                        [--subsets a,b,...] [--repeat N] [--out DIR]
#                                        [--devices cpu|gpu] [--runs RxD@S,...] [--jobs a,b]
#   --host NAME     the name the models are recorded under (STARPU_HOSTNAME; default cpu-<cores>core-mpi)
#   --build DIR     the normal build holding bench/bench_mpi (default build)
#   --scanner       bench_mpi's scanner (default small)
#   --subsets a,b   OSEM subset counts run (default 1,2,4,8,16,32,64)
#   --repeat N      bench_mpi's timed repetitions per run (default 3; each run also warms up once)
#   --out DIR       default /tmp/out
#   --devices       where bench_mpi projects (default cpu; gpu: one CUDA worker per GPU, the runs of --runs)
#   --runs          RANKSxDEVICES@SUBSETS,... (default 1x1@S for each S of --subsets)
#   --jobs          bench_mpi's jobs (default its own: fwdback,osem,reduce)
#   --reduce        bench_mpi's --reduce (default both)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cores=$(nproc 2>/dev/null || echo 1)
host=cpu-${cores}core-mpi
build=$root/build
scanner=small
subsets=1,2,4,8,16,32,64
repeat=3
out=/tmp/out
devices=cpu
runs=
jobs=
reduce=both
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --scanner) scanner=$2; shift 2 ;;
    --subsets) subsets=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --reduce) reduce=$2; shift 2 ;;
    -h|--help) sed -n '3,32p' "$0"; exit 0 ;;
    *) echo "calibrate-mpi-models: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$host" in ''|*/*|*' '*) echo "calibrate-mpi-models: --host needs a name without '/' or spaces" >&2; exit 2 ;; esac
case "$scanner" in small|vision600) ;; *) echo "calibrate-mpi-models: --scanner small or vision600" >&2; exit 2 ;; esac
[[ "$subsets" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  { echo "calibrate-mpi-models: --subsets needs numbers >= 1, e.g. 1,4,16" >&2; exit 2; }
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "calibrate-mpi-models: --repeat needs a number >= 1" >&2; exit 2; }
case "$devices" in cpu|gpu) ;; *) echo "calibrate-mpi-models: --devices cpu or gpu" >&2; exit 2 ;; esac
case "$reduce" in both|allreduce|starpu) ;; *) echo "calibrate-mpi-models: --reduce both, allreduce or starpu" >&2; exit 2 ;; esac
[ -n "$runs" ] || runs=$(echo "$subsets" | sed 's/\([0-9]*\)/1x1@\1/g')
[[ "$runs" =~ ^[1-9][0-9]*x[1-8]@[1-9][0-9]*(,[1-9][0-9]*x[1-8]@[1-9][0-9]*)*$ ]] ||
  { echo "calibrate-mpi-models: --runs needs RANKSxDEVICES@SUBSETS,... (devices 1..8), e.g. 1x1@34,2x8@136" >&2; exit 2; }
[ -z "$jobs" ] || [[ "$jobs" =~ ^[a-z-]+(,[a-z-]+)*$ ]] || { echo "calibrate-mpi-models: --jobs needs a list" >&2; exit 2; }
bench=$build/bench/bench_mpi
[ -x "$bench" ] || { echo "calibrate-mpi-models: no bench/bench_mpi in $build (configure with MPI, make)" >&2; exit 2; }
if grep -q '^#define STARPU_SIMGRID 1' "$build/config.h" 2>/dev/null; then
  echo "calibrate-mpi-models: $build is a simulation build: calibrate with the normal one" >&2; exit 2
fi
command -v mpirun >/dev/null || { echo "calibrate-mpi-models: no mpirun" >&2; exit 2; }
runas=()
[ "$(id -u)" -eq 0 ] && runas=(--allow-run-as-root)

home=$(mktemp -d "${TMPDIR:-/tmp}/starproj-mpi-models.XXXXXX")
trap 'rm -rf "$home"' EXIT
mkdir -p "$out/logs" || exit 1
export STARPU_HOME=$home STARPU_HOSTNAME=$host STARPU_CALIBRATE=1 STARPU_NWORKER_PER_CUDA=1
# ranks sharing this machine: no pinning (each would pin its workers to the same first cores)
export STARPU_WORKERS_NOBIND=1 STARPU_MPI_NOBIND=1
# a loaded machine varies by more than StarPU's default 50% between runs: keep the samples rather than flush them
export STARPU_HISTORY_MAX_ERROR=${STARPU_HISTORY_MAX_ERROR:-200}
t0=$(date +%s)
for run in ${runs//,/ }; do
  np=${run%%x*} dev=${run#*x} s=${run#*@}
  dev=${dev%@*}
  log=$out/logs/bench_mpi-${np}x${dev}-subsets$s.txt
  echo "calibrate-mpi-models: $np ranks of $dev devices, --subsets $s"
  # the ranks share this machine's GPUs and cores; SPROJ_DEVICES presents its GPUs as dev devices in each. Several
  # ranks share the cores too: StarPU's idle CPU workers poll, and ranks each with a worker per core starve the MPI
  # progress (an iteration of 2 ranks on 16 cores took 19 s instead of about 1): a few CPU workers each
  ncpu=
  [ "$np" -gt 1 ] && ncpu=$(( cores / np > 3 ? cores / np - 2 : 1 ))
  env SPROJ_DEVICES="$dev" ${ncpu:+STARPU_NCPU=$ncpu} mpirun "${runas[@]}" --oversubscribe --bind-to none -np "$np" \
    -x STARPU_HOME -x STARPU_HOSTNAME -x STARPU_CALIBRATE -x STARPU_HISTORY_MAX_ERROR -x STARPU_NWORKER_PER_CUDA \
    -x STARPU_WORKERS_NOBIND -x STARPU_MPI_NOBIND -x SPROJ_DEVICES ${ncpu:+-x STARPU_NCPU} "$bench" --scanner "$scanner" \
    --devices "$devices" --reduce "$reduce" --subsets "$s" --repeat "$repeat" ${jobs:+--jobs "$jobs"} >"$log" 2>&1 ||
    { tail -n 20 "$log"; echo "calibrate-mpi-models: bench_mpi ($run) failed" >&2; exit 1; }
done
src=$home/.starpu/sampling
dest=$out/perfmodels/$host
rm -rf "$dest"
mkdir -p "$dest/codelets" "$dest/bus" || exit 1
cp -r "$src/codelets/45" "$dest/codelets/" && cp "$src/bus/$host".* "$dest/bus/" || exit 1
# the non-linear curve's a, b, c (the line after "# a b c") as NaN: StarPU then takes each size's mean
for f in "$dest"/codelets/45/*; do
  awk '{ if (abc) { print "nan\tnan\tnan"; abc = 0; next } if ($0 ~ /^# a[ \t]+b[ \t]+c[ \t]*$/) abc = 1; print }' \
    "$f" >"$f.tmp" && mv "$f.tmp" "$f" || exit 1
done
{
  echo "host name: $host"
  echo "recorded: $(date -u +%Y-%m-%d) by scripts/calibrate-mpi-models.sh --scanner $scanner --devices $devices" \
    "--runs $runs --repeat $repeat --reduce $reduce${jobs:+ --jobs $jobs}"
  echo "program: bench_mpi (the ranks of --runs, STARPU_CALIBRATE=1, one CUDA worker per GPU, STARPU_HISTORY_MAX_ERROR=$STARPU_HISTORY_MAX_ERROR;" \
    "non-linear regressions written as NaN: per-size means)"
  echo "starpu_version: $(pkg-config --modversion starpu-1.4 2>/dev/null || echo unknown)"
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  echo "cores: $cores"
  if [ "$devices" = gpu ] && command -v nvidia-smi >/dev/null; then
    echo "gpus: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sort | uniq -c |
      sed 's/^ *//' | paste -sd';')"
  fi
} >"$dest/MACHINE"
echo "calibrate-mpi-models: $dest ($(( $(date +%s) - t0 )) s)"
