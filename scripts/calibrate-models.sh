#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records, on a real machine and with the normal (non-simulated) build, what a simulation of that machine needs
# (doc/simulation.md): StarPU's performance models of every codelet the harness's workloads run, at the sizes they
# run, and its bus calibration (bandwidths, latencies, the SimGrid platform file); and the measured makespans of
# those workloads, to set the simulated ones against. Each workload runs in starproj-bench's per-configuration
# process (--child), first --calibration-runs times with STARPU_CALIBRATE=1 for each of --splits (its requests cut
# into tasks as on that many GPUs, SPROJ_SPLIT_GPUS: the task sizes a simulation of that many GPUs runs, measured
# on the GPU there is), then --repeats timed runs with the models fixed, all in one fresh STARPU_HOME under the
# machine name --host. Each scale gets its own STARPU_HOME and folder, <host>-<scale>: StarPU fits one curve through
# all the sizes a codelet ran at, and prefers it to the mean measured at a size, so sizes a thousand times apart
# (tiny and full) would bend it.
# Output in OUT (default $OUT, else /tmp/out): perfmodels/<host>-<scale>/ with codelets/, bus/, measured.tsv (one
# line per timed run) and MACHINE (copy them into the repository's perfmodels/); logs/ (each run's records and
# messages, and measured-<scale>.tsv). When OUT is $OUT (the GPU machine's folder that comes back, at most 8 files a
# call) both are packed, also when the script stops early: OUT/perfmodels.tar.gz (unpack it in the repository's
# root: perfmodels/<host>-<scale>/...) and OUT/calibration-logs.tar.gz (logs/...), and the loose folders removed.
# usage: scripts/calibrate-models.sh [--host NAME] [--build DIR] [--scales a,b] [--workers SET] [--splits a,b]
#                                    [--devices a,b] [--workloads a,b] [--scheds x,y] [--calibration-runs N]
#                                    [--repeats N] [--out DIR] [--pack | --no-pack]
#   --host NAME    the name the models are recorded under (STARPU_HOSTNAME; default: this machine's hostname)
#   --build DIR    the build holding starproj-bench (default .device/build when present, else build)
#   --scales a,b   the harness's scales (default full,tiny: tiny for CI's simulated run); --workers SET its worker
#                  set (default gpu:w1, one CUDA worker per GPU as StarPU simulates them; cpu on a machine without
#                  GPUs); with gpu:w1, starproj's default of 4 workers per GPU (set gpu) is calibrated (the sums of
#                  per-worker images) and measured too, to set the simulation against what users run
#   --splits a,b   GPU counts whose task sizes are calibrated (default 1,2,4,8 with GPUs; none on CPU workers)
#   --devices a,b  device counts calibrated besides (SPROJ_DEVICES: the GPUs there are presented as that many
#                  devices, so that work the devices own, an OS-EM's shares and the *-owned workloads' chunks, runs the
#                  task sizes and the codelets, slabs included, of that many GPUs; default none)
#   --workloads    default fwd-whole,back-whole,tof-sino,tof-lm,osem (the whole-set jobs, TOF, OSEM)
#   --scheds       policies measured (default dmda: starproj's choice with GPUs); the models are shared
#   --calibration-runs N  runs with STARPU_CALIBRATE=1 per workload, split and policy (default 10: StarPU trusts a
#                  task size's model after 10 measurements); --repeats N timed ones (default 5)
#   --pack         pack OUT's perfmodels/ and logs/ into the two archives above whatever OUT is; --no-pack keeps
#                  them loose (the default when OUT is not $OUT)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
host=$(hostname)
build=
scales=full,tiny
splits=
devices=
workers=
wls=fwd-whole,back-whole,tof-sino,tof-lm,osem
scheds=dmda
calib=10
repeats=5
out=${OUT:-/tmp/out}
pack=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --scales) scales=$2; shift 2 ;;
    --splits) splits=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --workloads) wls=$2; shift 2 ;;
    --scheds) scheds=$2; shift 2 ;;
    --calibration-runs) calib=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --pack) pack=yes; shift ;;
    --no-pack) pack=no; shift ;;
    -h|--help) sed -n '3,36p' "$0"; exit 0 ;;
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

if [ "$pack" = auto ]; then
  pack=no
  [ -n "${OUT:-}" ] && [ "$(cd "$out" 2>/dev/null && pwd -P)" = "$(cd "$OUT" 2>/dev/null && pwd -P)" ] && pack=yes
fi
mkdir -p "$out/logs" || exit 1
out=$(cd "$out" && pwd)
homes=$(mktemp -d "${TMPDIR:-/tmp}/starproj-calibrate.XXXXXX")
# OUT's perfmodels/ and logs/ as two archives (two files for a runner that collects OUT), whatever happened
finish() {
  local rc=$?
  rm -rf "$homes"
  if [ "$pack" = yes ]; then
    if [ -d "$out/perfmodels" ]; then
      tar -C "$out" -czf "$out/perfmodels.tar.gz" perfmodels && rm -rf "$out/perfmodels" || rc=1
    fi
    if [ -d "$out/logs" ]; then
      tar -C "$out" -czf "$out/calibration-logs.tar.gz" logs && rm -rf "$out/logs" || rc=1
    fi
    echo "calibrate-models: packed into $out: $(cd "$out" && ls -- *.tar.gz 2>/dev/null | paste -sd' ' -)"
  fi
  exit $rc
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
export STARPU_SILENT=1
# one model for all GPUs of a kind: the simulated machines have more GPUs than the one calibrated on
export STARPU_PERF_MODEL_HOMOGENEOUS_CUDA=1
unset STARPU_NCPU STARPU_NCUDA STARPU_NWORKER_PER_CUDA STARPU_LIMIT_CUDA_MEM STARPU_PERF_MODEL_DIR SPROJ_SPLIT_GPUS \
  SPROJ_DEVICES

gpus=0
command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ -n "$workers" ] || { [ "$gpus" -gt 0 ] && workers=gpu:w1 || workers=cpu; }
also=
[ "$workers" = gpu:w1 ] && also=gpu
# the environment of a worker set (as starproj-bench's driver sets it)
set_env() {
  unset STARPU_NCPU STARPU_NCUDA STARPU_NWORKER_PER_CUDA
  case "$1" in
    cpu) export STARPU_NCUDA=0 ;;
    gpu|gpu:w[0-9]*) export STARPU_NCPU=0 ;;
    all|all:w[0-9]*) ;;
    *) echo "calibrate-models: --workers takes cpu, gpu, all, gpu:wK or all:wK" >&2; exit 2 ;;
  esac
  case "$1" in *:w*) export STARPU_NWORKER_PER_CUDA=${1#*:w} ;; esac
}
set_env "$workers"
[ -n "$splits" ] || { [ "$workers" = cpu ] && splits=0 || splits=1,2,4,8; }

echo "calibrate-models: host name $host, scales $scales, workers $workers, splits $splits, devices ${devices:-none}, $gpus GPUs; $(date -u '+%F %T') UTC"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -8
# copies what StarPU recorded for one scale ($1) under the name $2, with the measured makespans ($3)
save() {
  local dest=$out/perfmodels/$2 sampling=$STARPU_HOME/.starpu/sampling
  rm -rf "$dest"
  mkdir -p "$dest"
  if [ ! -d "$sampling/bus" ] || [ ! -d "$sampling/codelets" ]; then
    echo "calibrate-models: StarPU left no models in $sampling" >&2
    return 1
  fi
  cp -r "$sampling/codelets" "$sampling/bus" "$dest/"
  cp "$3" "$dest/measured.tsv"
  {
    echo "host name: $2"
    echo "recorded: $(date -u '+%F') by scripts/calibrate-models.sh --scales $1 --workers $workers --splits $splits${devices:+ --devices $devices} --workloads $wls --scheds $scheds --calibration-runs $calib --repeats $repeats"
    grep -hom1 'starpu_version=[^[:space:]]*' "$out"/logs/*-"$1"-*-measure-*.rec 2>/dev/null | head -n 1 | sed 's/=/: /'
    grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: /cpu: /'
    echo "cores: $(nproc)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    [ "$gpus" -gt 0 ] && command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2 | head -n 1 | sed 's/^/cuda: /'
  } >"$dest/MACHINE"
  echo "calibrate-models: $dest: $(ls "$dest"/codelets/*/ | wc -l) models, bus files of $(ls "$dest"/bus/*.config)"
}

t_all=$(date +%s)
for scale in ${scales//,/ }; do
  name=$host-$scale
  export STARPU_HOME=$homes/$scale STARPU_HOSTNAME=$name
  mkdir -p "$STARPU_HOME"
  measured=$out/logs/measured-$scale.tsv
  printf 'host\tworkload\tscale\tworkers\tsched\trepeat\tmakespan_s\n' >"$measured"
  for sched in ${scheds//,/ }; do
    export STARPU_SCHED=$sched
    for wl in ${wls//,/ }; do
      t0=$(date +%s)
      log=$out/logs/$wl-$scale-$sched
      rc=0
      for split in ${splits//,/ }; do
        # 0: the machine's own cut
        if [ "$split" = 0 ]; then unset SPROJ_SPLIT_GPUS; else export SPROJ_SPLIT_GPUS=$split; fi
        STARPU_CALIBRATE=1 timeout 600 "$bench" --child "$wl" --scale "$scale" --workers "$workers" --phase calibrate \
          --repeats "$calib" --warmups 0 --timeout 600 >"$log-calibrate-$split.rec" 2>"$log-calibrate-$split.log" ||
          { rc=$?; tail -n 3 "$log-calibrate-$split.log"; }
      done
      unset SPROJ_SPLIT_GPUS
      for dev in ${devices//,/ }; do
        SPROJ_DEVICES=$dev STARPU_CALIBRATE=1 timeout 600 "$bench" --child "$wl" --scale "$scale" --workers "$workers" \
          --phase calibrate --repeats "$calib" --warmups 0 --timeout 600 >"$log-calibrate-d$dev.rec" \
          2>"$log-calibrate-d$dev.log" || { rc=$?; tail -n 3 "$log-calibrate-d$dev.log"; }
      done
      # with several CUDA workers per GPU, back projections sum per-worker images (image_zero, image_add): one
      # worker alone never runs them, and simulations of several GPUs do
      if [ -n "$also" ]; then
        set_env "$also"
        STARPU_CALIBRATE=1 timeout 600 "$bench" --child "$wl" --scale "$scale" --workers "$also" --phase calibrate \
          --repeats "$calib" --warmups 0 --timeout 600 >"$log-calibrate-$also.rec" 2>"$log-calibrate-$also.log" ||
          { rc=$?; tail -n 3 "$log-calibrate-$also.log"; }
        set_env "$workers"
      fi
      rc2=0
      for set in $workers $also; do
        set_env "$set"
        tag=${set//:/}
        STARPU_CALIBRATE=0 timeout 600 "$bench" --child "$wl" --scale "$scale" --workers "$set" --phase measure \
          --repeats "$repeats" --warmups 1 --timeout 600 >"$log-measure-$tag.rec" 2>"$log-measure-$tag.log" ||
          { rc2=$?; tail -n 3 "$log-measure-$tag.log"; }
        # REC lines: key=value fields; the makespan of each timed run
        awk -F'\t' -v h="$name" -v w="$wl" -v s="$scale" -v k="$set" -v p="$sched" '
          $1 == "REC" { r = ""; m = ""
            for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "repeat") r = kv[2]; if (kv[1] == "makespan_s") m = kv[2] }
            printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h, w, s, k, p, r, m }' "$log-measure-$tag.rec" >>"$measured"
      done
      set_env "$workers"
      med=$(awk -F'\t' -v w="$wl" -v k="$workers" -v p="$sched" '$2 == w && $4 == k && $5 == p { print $7 }' "$measured" |
            sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
      echo "$wl $scale ($sched): calibration exit $rc, measure exit $rc2, median makespan ${med:-none} s ($(( $(date +%s) - t0 )) s)"
    done
  done
  save "$scale" "$name" "$measured"
done
echo "calibrate-models: $(( $(date +%s) - t_all )) s in all; folders in $out/perfmodels$([ "$pack" = yes ] && echo ', packed on exit')"

