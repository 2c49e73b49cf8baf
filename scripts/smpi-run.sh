#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench_mpi simulated on N nodes (doc/simulation.md, "Several nodes"): StarPU-MPI over SimGrid's SMPI, each rank
# a node recorded in a perfmodels/ folder (its cores, and its tasks' times from the models), the nodes joined by a
# cluster network: each node's full-duplex link of the given bandwidth and latency to a non-blocking switch. The
# program is the SMPI build's bench/bench_mpi (configured as in scripts/test-smpi.sh); bench_mpi's table goes to
# stdout, SimGrid's and StarPU's messages to the log (--log, else shown only on failure). Exit status: bench_mpi's
# (2: bad arguments).
# usage: scripts/smpi-run.sh --nodes N --models DIR [--bandwidth BW] [--latency LAT] [--build DIR] [--prefix DIR]
#                            [--log FILE] [-- bench_mpi arguments]
#   --nodes N       simulated nodes, one rank each (1..1024)
#   --models DIR    a folder of perfmodels/ recorded for bench_mpi (scripts/calibrate-mpi-models.sh), or a node derived
#                   by scripts/simulated-platform.py from such a recording, or from another with --fit-sizes (its GPUs
#                   and their links as that script states; sizes not measured are taken from its lines)
#   --bandwidth BW  each node's link, and the switch's per transfer (SimGrid units; default 25GBps: InfiniBand HDR,
#                   200 Gb/s, as doc/scaling-model.md assumes)
#   --latency LAT   each link's latency (default 2us)
#   --build DIR     the SMPI build (default build-smpi); --prefix DIR its StarPU (default /usr/local/starpu-smpi)
#   --factors F     smpi (default): SMPI's size-dependent bandwidth and latency factors on every link, the node's own
#                   (host to GPU, GPU to GPU) included; none: every link at its bandwidth and latency, as the
#                   single-node simulation (starproj-bench --simulate) runs a node's links
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nodes=
models=
bw=25GBps
lat=2us
build=$root/build-smpi
prefix=/usr/local/starpu-smpi
logfile=
factors=smpi
die() { echo "smpi-run: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=${2:-}; shift 2 || die "--nodes needs a value" ;;
    --models) models=${2:-}; shift 2 || die "--models needs a value" ;;
    --bandwidth) bw=${2:-}; shift 2 || die "--bandwidth needs a value" ;;
    --latency) lat=${2:-}; shift 2 || die "--latency needs a value" ;;
    --build) build=${2:-}; shift 2 || die "--build needs a value" ;;
    --prefix) prefix=${2:-}; shift 2 || die "--prefix needs a value" ;;
    --log) logfile=${2:-}; shift 2 || die "--log needs a value" ;;
    --factors) factors=${2:-}; shift 2 || die "--factors needs a value" ;;
    --) shift; break ;;
    -h|--help) sed -n '3,21p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (bench_mpi's go after --)" ;;
  esac
done
[[ "$nodes" =~ ^[1-9][0-9]*$ ]] && [ "$nodes" -le 1024 ] || die "--nodes needs a number in 1..1024"
[[ "$bw" =~ ^[0-9]+(\.[0-9]+)?[kMGT]?[Bb]ps$ ]] || die "--bandwidth needs a SimGrid bandwidth such as 12.5GBps"
[[ "$lat" =~ ^[0-9]+(\.[0-9]+)?(s|ms|us|ns)$ ]] || die "--latency needs a SimGrid time such as 1us"
[ -n "$models" ] && [ -d "$models" ] || die "--models needs a folder of perfmodels/"
case "$factors" in smpi|none) ;; *) die "--factors needs smpi or none" ;; esac
models=$(cd "$models" && pwd)
# a derived node names its host in MACHINE; a recorded one is named by its folder
host=$(sed -n 's/^host name: //p' "$models/MACHINE" 2>/dev/null | head -n 1)
[ -n "$host" ] || host=$(basename "$models")
[ -f "$models/bus/$host.platform.v4.xml" ] || die "$models has no bus/$host.platform.v4.xml (not a recorded machine)"
grep -q '^\(source \)\?program: bench_mpi' "$models/MACHINE" 2>/dev/null ||
  grep -q '^line through the measured sizes (--fit-sizes' "$models/MACHINE" 2>/dev/null ||
  die "$models was neither recorded for bench_mpi (scripts/calibrate-mpi-models.sh), nor derived from such a recording, nor derived with --fit-sizes"
smpirun=$prefix/bin/starpu_smpirun
[ -x "$smpirun" ] || die "no starpu_smpirun in $prefix/bin (scripts/install-deps.sh --with-smpi)"
bench=$build/bench/bench_mpi
[ -x "$bench" ] || die "no bench/bench_mpi in $build (scripts/test-smpi.sh builds it)"
command -v xsltproc >/dev/null || die "starpu_smpirun needs xsltproc (Debian's xsltproc)"

work=$(mktemp -d "${TMPDIR:-/tmp}/starproj-smpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
# the cluster: node0 .. node<N-1>, the names the host file lists; starpu_smpirun adds each rank's StarPU node
cat >"$work/cluster.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="cluster-zone" routing="Full">
  <cluster id="cluster" prefix="node" suffix="" radical="0-$((nodes - 1))" speed="1Gf" bw="$bw" lat="$lat"
           bb_bw="$bw" bb_lat="$lat" bb_sharing_policy="FATPIPE"/>
</zone>
</platform>
EOF
for ((i = 0; i < nodes; i++)); do echo "node$i"; done >"$work/hosts"
# starpu_smpirun joins each node's platform into the cluster with StarPU's stylesheet, which knows the recorded
# form (platform version 4, an AS); a derived node's (version 4.1, a zone) is given to it in that form
if ! grep -q '^program: bench_mpi' "$models/MACHINE"; then
  mkdir -p "$work/models/bus"
  ln -s "$models/codelets" "$work/models/codelets"
  for f in "$models"/bus/"$host".*; do ln -s "$f" "$work/models/bus/"; done
  rm "$work/models/bus/$host.platform.v4.xml"
  sed -e 's|^<platform version="4.1">| <platform version="4">|' -e 's|<zone id="AS0" routing="Full">|<AS  id="AS0"  routing="Full">|' \
      -e 's|</zone>|</AS>|' -e '/^<!--.*-->$/d' "$models/bus/$host.platform.v4.xml" >"$work/models/bus/$host.platform.v4.xml"
  models=$work/models
fi
[ -n "$logfile" ] || logfile=$work/smpi.log
plain=
[ "$factors" = none ] && plain=1
# one model serves every GPU of a node, as in starproj-bench's simulations; a task size measured fewer than 10 times
# (StarPU's minimum to trust it) is used as measured: a recording of a few repetitions holds some (bench_mpi's
# one-LOR back projection of its reduce job), and the simulation would stop there
STARPU_PERF_MODEL_HOMOGENEOUS_CUDA=1 STARPU_CALIBRATE_MINIMUM=${STARPU_CALIBRATE_MINIMUM:-1} \
  STARPU_PERF_MODEL_DIR=$models STARPU_HOSTNAME=$host \
  "$smpirun" -platform "$work/cluster.xml" -hostfile "$work/hosts" -np "$nodes" "$bench" "$@" \
  ${plain:+"--cfg=smpi/bw-factor:0:1" "--cfg=smpi/lat-factor:0:1"} 2>"$logfile"
rc=$?
if [ "$rc" -ne 0 ] && [ "$logfile" = "$work/smpi.log" ]; then
  grep -v '^  ->' "$logfile" | tail -n 25 >&2
fi
exit "$rc"
