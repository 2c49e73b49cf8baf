/* SPDX-License-Identifier: Apache-2.0 */
/* reduce.c: summing an image, or the parts of one, across the ranks: MPI's allreduce on the host, or StarPU-MPI's
 * reduction and broadcast inside the task graph (sproj_mpi_set_reduce). */
#include "config.h"
#include <limits.h>
#include <stdlib.h>
#include <mpi.h>
#include <starpu_mpi.h>
#include "mpi_internal.h"

/* MPI_Allreduce on the host of n parts (a process's image, or its devices' slabs of one image), once the back
 * projections into them have finished: each brought to the host and cut into pieces MPI can count (INT_MAX floats;
 * a vector of up to 2^32 - 1 floats makes at most 3), all summed by one call of the collectives (MPI's allreduces in
 * flight together), each released. */
#define PIECES_PER_PART 3
static int reduce_allreduce(sproj_mpi_comm *c, const starpu_data_handle_t *parts, int n)
{
  float *v[SPROJ_MPI_MAX_PARTS], *piece[PIECES_PER_PART * SPROJ_MPI_MAX_PARTS] = {NULL};
  int held[SPROJ_MPI_MAX_PARTS], counts[PIECES_PER_PART * SPROJ_MPI_MAX_PARTS] = {0}, pieces = 0, ok = 1;
  for (int i = 0; i < n; i++) {
    uint32_t nx = starpu_vector_get_nx(parts[i]);
    held[i] = starpu_data_acquire_on_node(parts[i], STARPU_MAIN_RAM, STARPU_RW) == 0;
    /* a part this rank cannot reach still takes part, with zeros, so that the others finish */
    v[i] = held[i] ? (float *)starpu_vector_get_local_ptr(parts[i]) : calloc((size_t)nx + 1, sizeof(float));
    ok = ok && held[i] && v[i];
    for (uint32_t done = 0; done < nx;) {
      uint32_t left = nx - done;
      int count = left > (uint32_t)INT_MAX ? INT_MAX : (int)left;
      piece[pieces] = v[i] ? v[i] + done : NULL;
      counts[pieces++] = v[i] ? count : 0;
      done += (uint32_t)count;
    }
    c->bytes_sent += 2 * (int64_t)(c->size - 1) * (int64_t)nx * (int64_t)sizeof(float) / c->size;
  }
  int reduced = sproj_coll_sum_parts(&c->coll, piece, counts, pieces) == SPROJ_OK;
  for (int i = 0; i < n; i++) {
    if (held[i])
      starpu_data_release_on_node(parts[i], STARPU_MAIN_RAM);
    else
      free(v[i]);
  }
  return ok && reduced ? SPROJ_OK : SPROJ_ERR_STARPU;
}

/* StarPU-MPI: the image is MPI data owned by rank 0 (registered on first use with two new tags, *tag < 0: the
 * reduction's and the broadcast's), every rank is declared a contributor of a STARPU_REDUX access, StarPU-MPI sums the
 * contributions into rank 0 with the image's reduction codelet in a binary tree (log2 P levels; its default, a flat
 * tree, brings P - 1 images into rank 0's link), and the sum goes back out from rank 0 down a binomial tree (rank r
 * receives it from r less its highest set bit and passes it on to r + 2^k for every 2^k above that bit: log2 P levels
 * instead of P - 1 sends from rank 0). All of it is submitted into the task graph; each rank sends one image in the
 * reduction (but rank 0) and one per child in the broadcast, 2 (P - 1) images in all as before. The sum goes out by
 * plain detached sends rather than starpu_mpi_get_data_on_all_nodes_detached: that one records the copies in
 * StarPU-MPI's cache, and clearing the cache at the next reduction would invalidate the next contribution along with
 * the stale copy. */
static int reduce_starpu(sproj_mpi_comm *c, starpu_data_handle_t h, int64_t *tag)
{
  if (*tag < 0) {
    int64_t t = starpu_mpi_tags_allocate(2);
    if (t < 0)
      return SPROJ_ERR_STARPU;
    starpu_mpi_data_register_comm(h, t, 0, c->starpu_comm);
    *tag = t;
  }
  /* The back projections were submitted by starproj's submission layer (starpu_task_insert, each rank its own
   * tasks), so StarPU-MPI has not seen them: record for every rank what starpu_mpi_task_insert records for a task
   * that rank executed with a STARPU_REDUX access, the contributors the reduction then sums. */
  struct starpu_data_descr descr = {h, STARPU_REDUX};
  for (int r = 0; r < c->size; r++) {
    struct starpu_mpi_task_exchange_params params = {.do_execute = r == c->rank, .xrank = r, .priority = 0};
    if (starpu_mpi_task_exchange_data_after_execution(c->starpu_comm, &descr, 1, params) != 0)
      return SPROJ_ERR_STARPU;
  }
  if (starpu_mpi_redux_data_tree(c->starpu_comm, h, 2) != 0)
    return SPROJ_ERR_STARPU;
  int64_t bytes = (int64_t)starpu_vector_get_nx(h) * (int64_t)sizeof(float), btag = *tag + 1;
  /* bit: the highest power of two in the rank; top < 30 keeps 2 << top an int */
  int top = 0;
  while (top < 30 && (2 << top) <= c->rank)
    top++;
  int bit = c->rank ? 1 << top : 0;
  if (c->rank) {
    if (starpu_mpi_irecv_detached(h, c->rank - bit, btag, c->starpu_comm, NULL, NULL) != 0)
      return SPROJ_ERR_STARPU;
    c->bytes_sent += bytes; /* its part of the reduction */
  }
  for (int64_t m = bit ? 2 * (int64_t)bit : 1; c->rank + m < c->size; m *= 2) {
#ifdef STARPU_SIMGRID
    /* synchronous over SMPI: data that arrive before their receive is posted can wait there forever (the layer's
     * collectives, collectives.c) */
    if (starpu_mpi_issend_detached(h, c->rank + (int)m, btag, c->starpu_comm, NULL, NULL) != 0)
#else
    if (starpu_mpi_isend_detached(h, c->rank + (int)m, btag, c->starpu_comm, NULL, NULL) != 0)
#endif
      return SPROJ_ERR_STARPU;
    c->bytes_sent += bytes;
  }
  return SPROJ_OK;
}

int comm_sum_parts(sproj_mpi_comm *c, const starpu_data_handle_t *parts, int n, int64_t *const *tags)
{
  /* one rank holds the sum already: no trip through the host (1 rank x several GPUs stays as fast as one process) */
  if (c->size == 1)
    return SPROJ_OK;
  if (c->reduce != SPROJ_MPI_REDUCE_STARPU)
    return reduce_allreduce(c, parts, n);
  int status = SPROJ_OK;
  for (int i = 0; i < n && !status; i++)
    status = reduce_starpu(c, parts[i], tags[i]);
  return status;
}
