#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records, on a real machine and with the normal (non-simulated) build, what a simulation of that machine needs
# (doc/simulation.md): StarPU's performance models of every codelet the harness's workloads run, at the sizes they
# run, and its bus calibration (bandwidths, latencies, the SimGrid platform file); and the measured makespans of
# those workloads, to set the simulated ones against. Each workload runs in starproj-bench's per-configuration
# process (--child), first --calibration-runs times with STARPU_CALIBRATE=1, then --repeats timed runs with the
# models fixed, all in one fresh STARPU_HOME under the machine name --host.
# Output in OUT (default $OUT, else /tmp/out): perfmodels/<host>/{codelets,bus}/ (copy it into the repository's
# perfmodels/), measured.tsv (one line per timed run), logs/.
# usage: scripts/calibrate-models.sh [--host NAME] [--build DIR] [--scale tiny|small|full] [--workers SET]
#                                    [--workloads a,b] [--scheds x,y] [--calibration-runs N] [--repeats N] [--out DIR]
#   --host NAME    the name the models are recorded under (STARPU_HOSTNAME; default: this machine's hostname)
#   --build DIR    the build holding starproj-bench (default .device/build when present, else build)
#   --scale S      the harness's scale (default full); --workers SET its worker set (default gpu; cpu on a machine
#                  without GPUs)
#   --workloads    default fwd-whole,back-whole,tof-sino,tof-lm,osem (the whole-set jobs, TOF, OSEM)
#   --scheds       policies measured (default dmda: starproj's choice with GPUs); the models are shared
#   --calibration-runs N  runs with STARPU_CALIBRATE=1 per workload and policy (default 6); --repeats N timed ones (default 5)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
host=$(hostname)
build=
scale=full
workers=
wls=fwd-whole,back-whole,tof-sino,tof-lm,osem
scheds=dmda
calib=6
repeats=5
out=${OUT:-/tmp/out}
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --workloads) wls=$2; shift 2 ;;
    --scheds) scheds=$2; shift 2 ;;
    --calibration-runs) calib=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '3,21p' "$0"; exit 0 ;;
    *) echo "calibrate-models: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$host" in ''|*/*|*' '*) echo "calibrate-models: --host needs a name without '/' or spaces" >&2; exit 2 ;; esac
if [ -z "$build" ]; then
  if [ -x "$root/.device/build/starproj-bench" ]; then build=$root/.device/build; else build=$root/build; fi
fi
bench=$build/starproj-bench
[ -x "$bench" ] || { echo "calibrate-models: no starproj-bench in $build (build starproj first, or --build DIR)" >&2; exit 2; }
if grep -q '^#define STARPU_SIMGRID 1' "$build/config.h" 2>/dev/null; then
  echo "calibrate-models: $build is a simulation build: calibrate with the normal one" >&2; exit 2
fi
# the GPU machine's bundle (scripts/device-bundle.sh) carries the libraries a bare machine lacks
[ -d "$root/.device/lib" ] && export LD_LIBRARY_PATH="$root/.device/lib:$build/.libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

mkdir -p "$out/logs" || exit 1
home=$(mktemp -d "${TMPDIR:-/tmp}/starproj-calibrate.XXXXXX")
trap 'rm -rf "$home"' EXIT
export STARPU_HOME=$home STARPU_HOSTNAME=$host STARPU_SILENT=1
# one model for all GPUs of a kind: the simulated machines have more GPUs than the one calibrated on
export STARPU_PERF_MODEL_HOMOGENEOUS_CUDA=1
unset STARPU_NCPU STARPU_NCUDA STARPU_NWORKER_PER_CUDA STARPU_LIMIT_CUDA_MEM STARPU_PERF_MODEL_DIR

gpus=0
command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ -n "$workers" ] || { [ "$gpus" -gt 0 ] && workers=gpu || workers=cpu; }
case "$workers" in
  cpu) export STARPU_NCUDA=0 ;;
  gpu*) export STARPU_NCPU=0 ;;
  all) ;;
  *) echo "calibrate-models: --workers takes cpu, gpu or all" >&2; exit 2 ;;
esac

echo "calibrate-models: host name $host, scale $scale, workers $workers, $gpus GPUs; $(date -u '+%F %T') UTC"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -8
measured=$out/measured.tsv
printf 'host\tworkload\tscale\tworkers\tsched\trepeat\tmakespan_s\n' >"$measured"
t_all=$(date +%s)
for sched in ${scheds//,/ }; do
  export STARPU_SCHED=$sched
  for wl in ${wls//,/ }; do
    t0=$(date +%s)
    log=$out/logs/$wl-$sched
    STARPU_CALIBRATE=1 timeout 600 "$bench" --child "$wl" --scale "$scale" --workers "$workers" --phase calibrate \
      --repeats "$calib" --warmups 0 --timeout 600 >"$log-calibrate.rec" 2>"$log-calibrate.log"
    rc=$?
    STARPU_CALIBRATE=0 timeout 600 "$bench" --child "$wl" --scale "$scale" --workers "$workers" --phase measure \
      --repeats "$repeats" --warmups 1 --timeout 600 >"$log-measure.rec" 2>"$log-measure.log"
    rc2=$?
    # REC lines: key=value fields; the makespan of each timed run
    awk -F'\t' -v h="$host" -v w="$wl" -v s="$scale" -v k="$workers" -v p="$sched" '
      $1 == "REC" { r = ""; m = ""
        for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "repeat") r = kv[2]; if (kv[1] == "makespan_s") m = kv[2] }
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h, w, s, k, p, r, m }' "$log-measure.rec" >>"$measured"
    med=$(awk -F'\t' -v w="$wl" -v p="$sched" '$2 == w && $5 == p { print $7 }' "$measured" | sort -g |
          awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
    echo "$wl ($sched): calibration exit $rc, measure exit $rc2, median makespan ${med:-none} s ($(( $(date +%s) - t0 )) s)"
    [ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] || tail -n 3 "$log-calibrate.log" "$log-measure.log"
  done
done

dest=$out/perfmodels/$host
rm -rf "$dest"
mkdir -p "$dest"
sampling=$home/.starpu/sampling
if [ ! -d "$sampling/bus" ] || [ ! -d "$sampling/codelets" ]; then
  echo "calibrate-models: StarPU left no models in $sampling" >&2; exit 1
fi
cp -r "$sampling/codelets" "$sampling/bus" "$dest/"
{
  echo "host name: $host"
  echo "recorded: $(date -u '+%F') by scripts/calibrate-models.sh --scale $scale --workers $workers --workloads $wls --scheds $scheds --calibration-runs $calib --repeats $repeats"
  grep -hom1 'starpu_version=[^[:space:]]*' "$out"/logs/*-measure.rec 2>/dev/null | head -n 1 | sed 's/=/: /' 
  grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: /cpu: /'
  echo "cores: $(nproc)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2 | head -n 1 | sed 's/^/cuda: /'
} >"$dest/MACHINE"
echo "calibrate-models: models and bus files in $dest, measured makespans in $measured ($(( $(date +%s) - t_all )) s)"
ls "$dest/codelets/"* "$dest/bus" | head -40
