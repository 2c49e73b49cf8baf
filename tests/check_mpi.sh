#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check_mpi.sh: tests/check_mpi under mpirun with 1, 2 and 4 ranks (oversubscribed, one CPU worker per rank), and 2
# ranks of 2 and of 4 devices, each
# under a timeout so that a hang fails instead of waiting; skips (exit 77) when the distributed layer was not built.
prog=tests/check_mpi
if [ ! -x "$prog" ]; then
  echo "check_mpi.sh: no $prog: the distributed layer was not built (configure found no StarPU-MPI or MPI)"
  exit 77
fi
mpirun=${MPIRUN:-mpirun}
if ! command -v "$mpirun" >/dev/null 2>&1; then
  echo "check_mpi.sh: no MPI launcher ($mpirun)"
  exit 77
fi
# mpirun refuses root unless told; CI containers run as root
if [ "$(id -u)" = 0 ]; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
# One CPU worker per rank, no GPU, and no pinning: every rank's StarPU would pin its worker (and its MPI thread) to
# the first cores, all ranks on the same ones. Shared memory without CMA single copy, which containers often forbid;
# ranks that wait in MPI yield their core to the others (oversubscribed).
STARPU_NCPU=1 STARPU_NCUDA=0 STARPU_WORKERS_NOBIND=1 STARPU_MPI_NOBIND=1 STARPU_SILENT=1
OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_mpi_yield_when_idle=1
export STARPU_NCPU STARPU_NCUDA STARPU_WORKERS_NOBIND STARPU_MPI_NOBIND STARPU_SILENT
export OMPI_MCA_btl_vader_single_copy_mechanism OMPI_MCA_btl_base_warn_component_unused OMPI_MCA_mpi_yield_when_idle
# Under AddressSanitizer (scripts/sanitize.sh): OpenMPI and its plug-ins are built without frame pointers, so only
# the slow unwinder reaches the OpenMPI frames that scripts/lsan.supp names in what they keep until exit.
if [ -n "${ASAN_OPTIONS:-}" ]; then
  ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
  export ASAN_OPTIONS
fi
# each run's bound on a hang: 100 s, 250 s under the sanitizers (whose slow unwinder above makes a run of 4 ranks take
# about a minute on 2 cores while the rest of the suite runs beside it)
limit=100
[ -n "${ASAN_OPTIONS:-}" ] && limit=250
status=0
# ranks of one device each, then 2 ranks of 2 and of 4 devices (SPROJ_DEVICES: stand-ins sharing the rank's worker),
# whose OSEM sums each device's slab across the ranks (the halving's one step further)
for run in 1x1 2x1 4x1 2x2 2x4; do
  np=${run%x*} devices=${run#*x}
  echo "check_mpi.sh: SPROJ_DEVICES=$devices $mpirun -np $np $prog"
  t0=$(date +%s)
  SPROJ_DEVICES=$devices timeout -k 5 "$limit" "$mpirun" --oversubscribe --bind-to none -np "$np" "$prog"
  rc=$?
  echo "check_mpi.sh: $np ranks of $devices devices: exit $rc after $(( $(date +%s) - t0 )) s"
  if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && echo "check_mpi.sh: $np ranks of $devices devices: timed out after $limit s"
    echo "check_mpi.sh: $np ranks of $devices devices failed (exit $rc)"
    status=1
  fi
done
exit $status
