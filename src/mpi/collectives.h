/* SPDX-License-Identifier: Apache-2.0 */
/* collectives.h: the few collective operations libstarproj-mpi makes itself (barrier, allreduce, gather): MPI's on a
 * machine; over SimGrid's SMPI, where only StarPU-MPI's progression may call MPI, built from StarPU-MPI's
 * point-to-point calls. */
#ifndef SPROJ_MPI_COLLECTIVES_H
#define SPROJ_MPI_COLLECTIVES_H

#include <stdint.h>
#include <mpi.h>
#include "starproj_mpi.h"

/* The ranks a collective runs over. */
struct sproj_coll {
  MPI_Comm comm;  /* over SMPI: MPI_COMM_WORLD, the only communicator StarPU-MPI simulates */
  int rank, size;
  int64_t tag;    /* over SMPI: the first of SPROJ_COLL_TAGS StarPU-MPI tags reserved for the collectives */
  int seq;        /* over SMPI: collectives made so far (which tags the next uses) */
};

/* StarPU-MPI tags a communicator reserves for its collectives over SMPI: one per step of a collective (a ring
 * allreduce takes 2 (P-1) steps, so it is used up to 1025 ranks), for 512 collectives in turn, so that a tag comes
 * back only long after its messages were received */
#define SPROJ_COLL_STEPS 2048
#define SPROJ_COLL_TAGS (512 * SPROJ_COLL_STEPS)

/* Each returns SPROJ_OK, or SPROJ_ERR_STARPU / SPROJ_ERR_NOMEM / SPROJ_ERR_INVALID (type or op). */
int sproj_coll_barrier(struct sproj_coll *k);
/* values (count elements of type, enum sproj_mpi_type) becomes, on every rank, the element-wise op (enum
 * sproj_mpi_op) over the ranks' values */
int sproj_coll_allreduce(struct sproj_coll *k, void *values, int count, int type, int op);
/* parts[i] (counts[i] floats, i < n) each becomes, on every rank, its sum over the ranks: MPI's non-blocking
 * allreduces, all in flight at once, on a machine; over SMPI one allreduce of the parts packed together */
int sproj_coll_sum_parts(struct sproj_coll *k, float *const *parts, const int *counts, int n);
/* the ranks' float arrays (mine: counts[rank] of them) put at displs[r] of all on root, or on every rank (root -1) */
int sproj_coll_gatherv(struct sproj_coll *k, const float *mine, float *all, const int *counts, const int *displs,
                       int root);

#endif
