/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_internal.h: what libstarproj-mpi's files share (not installed): the communicator and distribution objects,
 * the agreement every collective call starts with (comm.c), and the sum of images across ranks (reduce.c). */
#ifndef SPROJ_MPI_INTERNAL_H
#define SPROJ_MPI_INTERNAL_H

#include <stdint.h>
#include <mpi.h>
#include <starpu.h>
#include "../core/shared.h"
#include "starproj_mpi.h"
#include "collectives.h"

/* the most parts of an image a rank's devices sum across ranks at once (one per device) */
#define SPROJ_MPI_MAX_PARTS 64

struct sproj_mpi_comm {
  MPI_Comm comm;         /* this library's collectives: agreements, allreduce, gather */
  MPI_Comm starpu_comm;  /* StarPU-MPI's traffic, apart from the caller's and ours */
  struct sproj_coll coll; /* the collectives' state (collectives.c) over comm */
  int rank, size;
  int owns_mpi, owns_sproj;
  int reduce;            /* SPROJ_MPI_REDUCE_ALLREDUCE or _STARPU */
  int64_t bytes_sent;
  sproj_image *scratch;  /* sproj_mpi_back's per-rank image, kept for the next call of the same geometry */
  int64_t scratch_tag;   /* its StarPU-MPI tag (-1: none yet) */
};

struct sproj_mpi_dist {
  sproj_mpi_comm *comm;
  int num_chunks;
  int64_t *first;        /* global first LOR of each chunk (num_chunks + 1 entries) */
  int *owner;
  int64_t *rank_lors;    /* LORs of each rank */
  int num_local;
  int *local;            /* global chunk of each local chunk */
  int64_t *local_first;  /* start of each local chunk in the local LOR set (num_local + 1 entries) */
};

/* ---- comm.c ---- */
/* Every collective step starts with one MPI_Allreduce (MIN) of {status, failing rank, -stop}: all ranks learn the most
 * negative status, the lowest rank that failed, and whether any rank asked to stop. A rank that fails locally makes
 * exactly one more agreement and returns; the others meet it in their next agreement, wherever they are, because
 * until then every rank has made the same sequence of collective calls. */
struct agreement {
  int status, failed_rank, stop;
};
void comm_agree(sproj_mpi_comm *c, int status, int stop, struct agreement *out);
/* Agrees on this rank's status; returns the common one, with a message naming the failing rank where it differs. */
int comm_agree_status(const char *func, sproj_mpi_comm *c, int status);
/* The communicator a collective call agrees through: the one given, else the process's one (NULL: none). */
sproj_mpi_comm *comm_for(sproj_mpi_comm *c);
/* Drops sproj_mpi_back's image (after the tasks using it) and its tag. */
void comm_scratch_free(sproj_mpi_comm *c);

/* ---- reduce.c ---- */
/* Makes each of the n parts (on every rank) the sum over ranks of the ranks' values of it, with the communicator's
 * method. tags[i] is parts[i]'s StarPU-MPI tag, -1 until the StarPU-MPI method registers it. */
int comm_sum_parts(sproj_mpi_comm *c, const starpu_data_handle_t *parts, int n, int64_t *const *tags);

#endif
