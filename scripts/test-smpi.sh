#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The check of the simulated cluster (doc/simulation.md, "Several nodes"): installs StarPU over SimGrid's SMPI when
# missing (scripts/install-deps.sh --with-smpi; skipped when its prefix holds a matching build), builds bench_mpi
# against it in build-smpi (smpicc, static, configure in cross mode: its programs run under smpirun only), checks
# that bad arguments end the simulation with status 2, then runs bench_mpi (small scanner, both reductions, one
# repetition) on 2 simulated nodes of perfmodels/cpu-2core-mpi, and its reduction job alone on 3 and 4 (the task
# sizes of the other jobs are recorded for rank counts that divide the 64 views only), and checks the tables: every
# job, a positive makespan, forward + back = forward and back, the bytes each reduction sends (which also checks the
# layer's collectives over StarPU-MPI on an even and an odd number of ranks: the totals are their sums), and the sums
# themselves (bench_mpi's check of the layer's allreduce: the ring on 3 ranks, recursive halving and doubling on 4);
# then one TOF OSEM iteration on 2 simulated nodes of 2 H200 (derived from perfmodels/h200-1gpu-tof-full), whose ranks sum each
# device's slab across the nodes. About a minute once StarPU is built.
# usage: scripts/test-smpi.sh [--smpi-prefix DIR]   (default /usr/local/starpu-smpi)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=/usr/local/starpu-smpi
case "${1:-}" in
  --smpi-prefix) prefix=${2:-}; [ -n "$prefix" ] || { echo "test-smpi: --smpi-prefix needs a folder" >&2; exit 2; } ;;
  "") ;;
  *) echo "test-smpi: unknown argument '$1'" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)
fail() { echo "test-smpi: FAILED: $*"; exit 1; }

t0=$(date +%s)
bash scripts/install-deps.sh --with-smpi="$prefix" || fail "install-deps.sh --with-smpi"
echo "test-smpi: StarPU over SMPI ready ($(( $(date +%s) - t0 )) s)"
[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || fail autogen
build=$(sh build-aux/config.guess) || fail "config.guess"
# another spelling of the same machine: configure then builds for it without running what it builds
host=$(echo "$build" | sed 's/-[^-]*-linux/-linux/')
[ "$host" != "$build" ] || fail "no cross spelling of $build"
mkdir -p build-smpi
t=$(date +%s)
(cd build-smpi && { [ -f Makefile ] || ../configure -q --build="$build" --host="$host" --with-simgrid="$prefix" \
    CC=smpicc --enable-static --disable-shared --enable-mpi=yes --enable-io=no MPI_CFLAGS=" " MPI_LIBS=-lm \
    >build-smpi.log 2>&1; } && make -s -j"$jobs" bench/bench_mpi >>build-smpi.log 2>&1) ||
  { tail -n 20 build-smpi/build-smpi.log; fail "the SMPI build"; }
grep -q '^#define STARPU_SIMGRID 1' build-smpi/config.h 2>/dev/null ||
  grep -q '^#define STARPU_SIMGRID 1' "$prefix/include/starpu/1.4/starpu_config.h" || fail "$prefix is not over SimGrid"
echo "test-smpi: build-smpi ready ($(( $(date +%s) - t )) s)"

out=$(mktemp -d "${TMPDIR:-/tmp}/starproj-smpi-test.XXXXXX")
trap 'rm -rf "$out"' EXIT
models=perfmodels/cpu-2core-mpi
run() { scripts/smpi-run.sh --prefix "$prefix" --build "$root/build-smpi" --models "$models" "$@"; }

# bad arguments: status 2, from the runner and from bench_mpi inside the simulation
run --nodes 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--nodes 0: expected status 2"
scripts/smpi-run.sh --nodes 2 --models perfmodels/cpu-2core-small >/dev/null 2>&1
[ $? -eq 2 ] || fail "a folder not recorded for bench_mpi: expected status 2"
run --nodes 2 --log "$out/bad.log" -- --scanner nope >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "bench_mpi --scanner nope: status $rc, expected 2"
grep -q "unknown scanner 'nope'" "$out/bad.log" || fail "bench_mpi --scanner nope: no message"

# the image is 64x64x16 floats: 262144 bytes
image=262144
for n in 2 3 4; do
  t=$(date +%s)
  if [ "$n" -eq 2 ]; then jobs=fwdback,osem,reduce rows=10; else jobs=reduce rows=2; fi
  run --nodes "$n" --log "$out/run$n.log" -- --scanner small --devices cpu --reduce both --repeat 1 --jobs "$jobs" \
    >"$out/run$n.txt" ||
    { grep -v '^  ->' "$out/run$n.log" | tail -n 20; fail "bench_mpi on $n simulated nodes"; }
  echo "== $n simulated nodes ($(( $(date +%s) - t )) s): simulated makespans, s; bytes sent =="
  awk '!/^#/ && NR > 3 { printf "   %-10s %-10s %10s %14s\n", $1, $2, $4, $7 }' "$out/run$n.txt"
  # a ring allreduce: 2 (P-1)/P images per rank (integer division per rank, as the layer counts);
  # StarPU-MPI: each rank but 0 sends its image to 0, and 0 one to each
  ring=$(( n * (2 * (n - 1) * image / n) ))
  starpu=$(( 2 * (n - 1) * image ))
  awk -v n="$n" -v ring="$ring" -v starpu="$starpu" -v rows="$rows" '
    !/^#/ && $3 == n {
      seen++; t[$1 "/" $2] = $4
      if ($4 + 0 <= 0) { print "a makespan <= 0: " $0; bad = 1 }
      want = $1 == "fwd" ? 0 : $1 == "osem_iter" ? 4 * ($2 == "starpu" ? starpu : ring) : ($2 == "starpu" ? starpu : ring)
      if ($7 != want) { print "bytes " $7 ", expected " want ": " $0; bad = 1 }
    }
    END {
      if (seen != rows) { print seen " rows, expected " rows; bad = 1 }
      for (m in t) if (m ~ /^fwd\+back\//) {
        split(m, k, "/"); d = t[m] - t["back/" k[2]] - t["fwd/-"]
        if (d > 2e-4 || d < -2e-4) { print "fwd+back differs from fwd and back by " d " s (" k[2] ")"; bad = 1 }
      }
      exit bad }' "$out/run$n.txt" || fail "bench_mpi's table on $n nodes"
  # the sums themselves (a simulation runs no kernels: the layer's allreduce of an image's worth, rank r adding r + 1
  # times small integers; the ring on 3 nodes, recursive halving and doubling on 2 and 4)
  grep -q "^# allreduce of 65536 floats over $n ranks: 0 wrong on all ranks together\$" "$out/run$n.txt" ||
    fail "bench_mpi's allreduce on $n nodes: $(grep '^# allreduce' "$out/run$n.txt")"
done
# nodes of GPUs: 2 nodes of 2 H200 derived from the TOF recording (its lines over task sizes, the GPU links assumed),
# one TOF OSEM iteration of the benchmark scanner: each rank's 2 devices own their shares, and each device's slab
# (half the image) is summed across the ranks, so the bytes are one image's ring per rank and subset (the layer
# counts 2 (P-1)/P of each slab per rank); the run must end with a positive makespan
t=$(date +%s)
python3 scripts/simulated-platform.py --from perfmodels/h200-1gpu-tof-full --gpus 2 --fit-sizes --fill-unmeasured \
  --out "$out/h200-tof-2gpu" >/dev/null || fail "simulated-platform.py (2 H200 from the TOF recording)"
models=$out/h200-tof-2gpu
STARPU_SCHED=dmda run --nodes 2 --factors none --log "$out/gpu.log" -- --scanner vision600 --devices gpu --reduce allreduce \
  --repeat 1 --jobs osem-tof >"$out/gpu.txt" ||
  { grep -v '^  ->' "$out/gpu.log" | tail -n 20; fail "TOF OSEM on 2 simulated nodes of 2 H200"; }
echo "== 2 simulated nodes of 2 H200 ($(( $(date +%s) - t )) s): simulated makespan, s; bytes sent =="
awk '!/^#/ && NR > 3 { printf "   %-10s %-10s %10s %14s\n", $1, $2, $4, $7 }' "$out/gpu.txt"
grep -q '^# per rank .* 2 GPUs (2 devices), projections on gpu' "$out/gpu.txt" || fail "the ranks did not run 2 GPUs each"
# 215 x 215 x 71 voxels in 2 slabs (1640987 and 1640988 voxels): per slab and rank 2 (2-1)/2 x 4 bytes per voxel
awk '!/^#/ && $1 == "osemtof_it" { found = 1; if ($4 + 0 <= 0 || $7 != 34 * 2 * (1640987 + 1640988) * 4) bad = 1 }
     END { exit !found || bad }' "$out/gpu.txt" || { cat "$out/gpu.txt"; fail "TOF OSEM's table on 2 nodes of 2 H200"; }
echo "test-smpi: passed ($(( $(date +%s) - t0 )) s)"
