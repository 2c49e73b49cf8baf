/* SPDX-License-Identifier: Apache-2.0 */
/* comm.c: libstarproj-mpi's communicator (StarPU-MPI over starproj, one per process), the agreement every collective
 * call starts with, and the caller's collectives (barrier, allreduce). */
#include "config.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <starpu_mpi.h>
#include "mpi_internal.h"

/* StarPU-MPI keeps one state per process: one communicator at a time. Collective calls given a NULL communicator
 * still agree on their failure through it, so that no rank waits for one that returned. */
static sproj_mpi_comm *the_comm;

/* ---- agreement (how it works: mpi_internal.h) ---------------------------------------------------------------- */
void comm_agree(sproj_mpi_comm *c, int status, int stop, struct agreement *out)
{
  int res[3] = {status, status != SPROJ_OK ? c->rank : INT_MAX, -(stop != 0)};
  if (sproj_coll_allreduce(&c->coll, res, 3, SPROJ_MPI_INT, SPROJ_MPI_MIN) != SPROJ_OK)
    res[0] = SPROJ_ERR_STARPU, res[1] = c->rank;
  out->status = res[0];
  out->failed_rank = res[1];
  out->stop = -res[2];
}

int comm_agree_status(const char *func, sproj_mpi_comm *c, int status)
{
  struct agreement a;
  comm_agree(c, status, 0, &a);
  if (a.status == status)
    return status;
  if (status == SPROJ_OK)
    return sproj_fail(a.status, func, "rank %d failed: %s", a.failed_rank, sproj_strerror(a.status));
  char own[256];
  snprintf(own, sizeof own, "%s", sproj_last_error());
  return sproj_fail(a.status, func, "rank %d failed: %s (here: %s)", a.failed_rank, sproj_strerror(a.status), own);
}

sproj_mpi_comm *comm_for(sproj_mpi_comm *c)
{
  return c ? c : the_comm;
}

/* ---- communicator ------------------------------------------------------------------------------------------- */
#ifdef STARPU_SIMGRID
/* Over SimGrid's SMPI (StarPU-MPI in simulation) a rank is set up before the program runs: StarPU's main calls
 * MPI_Init_thread in the rank's first actor, starts the program's main (renamed starpu_main by starpu.h) in an actor
 * of its own, and keeps the first actor for its progression, which finalises MPI at starpu_mpi_shutdown. SMPI counts
 * only that first actor as an MPI process, so the program's thread may call no MPI at all (the layer's collectives
 * go through StarPU-MPI, collectives.c), and StarPU-MPI simulates MPI_COMM_WORLD only. starpu_mpi_init_comm merely
 * waits for the progression, which starts once StarPU is initialised: starproj first, then StarPU-MPI, then the
 * agreement (a rank whose starproj fails to start cannot take part: the others would wait for it, so it says why
 * and the simulation is to be stopped). */
static int comm_create_simulated(sproj_mpi_comm **comm, MPI_Comm mpi_comm, const struct sproj_config *cfg)
{
  if (!comm)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  if (mpi_comm != MPI_COMM_WORLD)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "over SimGrid's SMPI StarPU-MPI simulates MPI_COMM_WORLD only");
  if (the_comm)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "a communicator exists already (one per process)");
  sproj_mpi_comm *c = calloc(1, sizeof *c);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  c->comm = c->starpu_comm = MPI_COMM_WORLD;
  c->scratch_tag = -1;
  c->reduce = SPROJ_MPI_REDUCE_ALLREDUCE; /* as on a machine (below) */
  int status = SPROJ_OK;
  if (!sproj_is_initialized()) {
    status = sproj_init(cfg);
    c->owns_sproj = status == SPROJ_OK;
  }
  int ret = status == SPROJ_OK ? starpu_mpi_init_comm(NULL, NULL, 0, MPI_COMM_WORLD) : 0;
  if (status == SPROJ_OK && ret != 0)
    status = SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_mpi_init_comm failed (%d)", ret);
  int64_t tag = status == SPROJ_OK ? starpu_mpi_tags_allocate(SPROJ_COLL_TAGS) : -1;
  if (status == SPROJ_OK && tag < 0)
    status = SPROJ_FAIL(SPROJ_ERR_STARPU, "no StarPU-MPI tags left for the collectives");
  if (status != SPROJ_OK) {
    if (c->owns_sproj)
      sproj_shutdown();
    free(c);
    return status;
  }
  starpu_mpi_comm_rank(MPI_COMM_WORLD, &c->rank);
  starpu_mpi_comm_size(MPI_COMM_WORLD, &c->size);
  c->coll = (struct sproj_coll){MPI_COMM_WORLD, c->rank, c->size, tag, 0};
  the_comm = c;
  if ((status = comm_agree_status(__func__, c, SPROJ_OK))) {
    the_comm = NULL;
    starpu_mpi_tags_free(tag);
    starpu_mpi_shutdown_comm(MPI_COMM_WORLD);
    if (c->owns_sproj)
      sproj_shutdown();
    free(c);
    return status;
  }
  *comm = c;
  return SPROJ_OK;
}
#endif

int sproj_mpi_comm_create(sproj_mpi_comm **comm, MPI_Comm mpi_comm, const struct sproj_config *cfg)
{
#ifdef STARPU_SIMGRID
  return comm_create_simulated(comm, mpi_comm, cfg);
#else
  if (mpi_comm == MPI_COMM_NULL)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "mpi_comm is MPI_COMM_NULL");
  int initialized = 0, provided = MPI_THREAD_SINGLE, owns_mpi = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "MPI_Init_thread failed");
    owns_mpi = 1;
  } else {
    MPI_Query_thread(&provided);
  }
  sproj_mpi_comm *c = calloc(1, sizeof *c);
  int status = SPROJ_OK;
  if (!c) {
    /* still take part in the agreement, through a communicator of our own */
    struct sproj_mpi_comm tmp = {0};
    MPI_Comm_dup(mpi_comm, &tmp.comm);
    MPI_Comm_rank(tmp.comm, &tmp.rank);
    MPI_Comm_size(tmp.comm, &tmp.size);
    tmp.coll = (struct sproj_coll){tmp.comm, tmp.rank, tmp.size, 0, 0};
    comm_agree_status(__func__, &tmp, SPROJ_ERR_NOMEM);
    MPI_Comm_free(&tmp.comm);
    if (owns_mpi)
      MPI_Finalize();
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  MPI_Comm_dup(mpi_comm, &c->comm);
  MPI_Comm_rank(c->comm, &c->rank);
  MPI_Comm_size(c->comm, &c->size);
  c->coll = (struct sproj_coll){c->comm, c->rank, c->size, 0, 0};
  c->owns_mpi = owns_mpi;
  c->scratch_tag = -1;
  /* The reduction in use when none is chosen: an MPI_Allreduce, measured faster than StarPU-MPI's reduction for a
   * 215x215x71 image on 2 and 4 ranks (doc/scaling-model.md): StarPU-MPI sums at rank 0 and sends the sum from
   * there, so rank 0's link carries 2 (P-1) images where a ring allreduce carries 2 (P-1)/P per rank, and each of its
   * transfers waits for the progress thread and the task that makes the data available. */
  c->reduce = SPROJ_MPI_REDUCE_ALLREDUCE;
  if (!comm)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  else if (provided < MPI_THREAD_MULTIPLE)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "MPI provides thread level %d, the layer needs MPI_THREAD_MULTIPLE (%d): "
                        "initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)", provided,
                        MPI_THREAD_MULTIPLE);
  else if (the_comm)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "a communicator exists already (one per process)");
  if (status == SPROJ_OK && !sproj_is_initialized()) {
    status = sproj_init(cfg);
    c->owns_sproj = status == SPROJ_OK;
  }
  status = comm_agree_status(__func__, c, status);
  int mpi_started = 0, dup_done = 0;
  if (status == SPROJ_OK) {
    MPI_Comm_dup(mpi_comm, &c->starpu_comm);
    dup_done = 1;
    int ret = starpu_mpi_init_comm(NULL, NULL, 0, c->starpu_comm);
    mpi_started = ret == 0;
    status = comm_agree_status(__func__, c, ret == 0 ? SPROJ_OK
                                               : SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_mpi_init_comm failed (%d)", ret));
  }
  if (status != SPROJ_OK) {
    if (mpi_started)
      starpu_mpi_shutdown_comm(c->starpu_comm);
    if (dup_done)
      MPI_Comm_free(&c->starpu_comm);
    if (c->owns_sproj)
      sproj_shutdown();
    MPI_Comm_free(&c->comm);
    free(c);
    if (owns_mpi)
      MPI_Finalize();
    return status;
  }
  the_comm = c;
  *comm = c;
  return SPROJ_OK;
#endif
}

void comm_scratch_free(sproj_mpi_comm *c)
{
  if (!c->scratch)
    return;
  sproj_image_drop(c->scratch);
  c->scratch = NULL;
  if (c->scratch_tag >= 0)
    starpu_mpi_tags_free(c->scratch_tag);
  c->scratch_tag = -1;
}

int sproj_mpi_comm_destroy(sproj_mpi_comm *comm)
{
  if (!comm)
    return SPROJ_OK;
  comm_scratch_free(comm);
  int status = SPROJ_OK, live = sproj_live_objects();
  if (comm->owns_sproj && live > 0)
    status = SPROJ_FAIL(SPROJ_ERR_BUSY, "%d starproj objects are still registered", live);
  if ((status = comm_agree_status(__func__, comm, status)))
    return status;
#ifdef STARPU_SIMGRID
  starpu_mpi_tags_free(comm->coll.tag); /* StarPU-MPI finalises MPI itself there (comm_create_simulated) */
#endif
  starpu_mpi_shutdown_comm(comm->starpu_comm);
  if (comm->owns_sproj)
    sproj_shutdown();
#ifndef STARPU_SIMGRID
  MPI_Comm_free(&comm->starpu_comm);
  MPI_Comm_free(&comm->comm);
  if (comm->owns_mpi)
    MPI_Finalize();
#endif
  if (the_comm == comm)
    the_comm = NULL;
  free(comm);
  return SPROJ_OK;
}

int sproj_mpi_comm_rank(const sproj_mpi_comm *comm, int *rank)
{
  if (!comm || !rank)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm and rank must not be NULL");
  *rank = comm->rank;
  return SPROJ_OK;
}

int sproj_mpi_comm_size(const sproj_mpi_comm *comm, int *size)
{
  if (!comm || !size)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm and size must not be NULL");
  *size = comm->size;
  return SPROJ_OK;
}

int sproj_mpi_set_reduce(sproj_mpi_comm *comm, int method)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm is NULL and no communicator exists");
  int status = SPROJ_OK;
  if (!comm)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  else if (method < SPROJ_MPI_REDUCE_DEFAULT || method > SPROJ_MPI_REDUCE_STARPU)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown reduction method %d", method);
  if ((status = comm_agree_status(__func__, c, status)))
    return status;
  int m = method == SPROJ_MPI_REDUCE_DEFAULT ? SPROJ_MPI_REDUCE_ALLREDUCE : method, res[2] = {m, -m};
  if (sproj_coll_allreduce(&c->coll, res, 2, SPROJ_MPI_INT, SPROJ_MPI_MIN) != SPROJ_OK)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "the ranks' agreement on the method failed");
  if (res[0] != -res[1])
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the ranks chose different reduction methods");
  c->reduce = m;
  return SPROJ_OK;
}

int sproj_mpi_get_reduce(const sproj_mpi_comm *comm, int *method)
{
  if (!comm || !method)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm and method must not be NULL");
  *method = comm->reduce;
  return SPROJ_OK;
}

int sproj_mpi_bytes_sent(const sproj_mpi_comm *comm, int64_t *bytes)
{
  if (!comm || !bytes)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm and bytes must not be NULL");
  *bytes = comm->bytes_sent;
  return SPROJ_OK;
}

int sproj_mpi_bytes_reset(sproj_mpi_comm *comm)
{
  if (!comm)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  comm->bytes_sent = 0;
  return SPROJ_OK;
}

/* ---- the caller's collectives ------------------------------------------------------------------------------ */
int sproj_mpi_barrier(sproj_mpi_comm *comm)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm is NULL and no communicator exists");
  int status = comm ? SPROJ_OK : SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  if ((status = comm_agree_status(__func__, c, status)))
    return status;
  return sproj_coll_barrier(&c->coll) == SPROJ_OK ? SPROJ_OK : SPROJ_FAIL(SPROJ_ERR_STARPU, "the barrier failed");
}

int sproj_mpi_allreduce(sproj_mpi_comm *comm, void *values, int count, int type, int op)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm is NULL and no communicator exists");
  int status = SPROJ_OK;
  if (!comm || (!values && count > 0))
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "comm and values must not be NULL");
  else if (count < 0)
    status = SPROJ_FAIL(SPROJ_ERR_DIMS, "count = %d", count);
  else if (type < SPROJ_MPI_INT || type > SPROJ_MPI_DOUBLE)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown type %d", type);
  else if (op < SPROJ_MPI_SUM || op > SPROJ_MPI_MAX)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown operation %d", op);
  if ((status = comm_agree_status(__func__, c, status)))
    return status;
  /* the same count, type and op everywhere (as min and -max), else the ranks' messages would not match */
  int64_t key = ((int64_t)count * 8 + type) * 4 + op, range[2] = {key, -key};
  if (sproj_coll_allreduce(&c->coll, range, 2, SPROJ_MPI_INT64, SPROJ_MPI_MIN) != SPROJ_OK)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "the ranks' check of their arguments failed");
  if (range[0] != -range[1])
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the ranks passed different counts, types or operations");
  if (sproj_coll_allreduce(&c->coll, values, count, type, op) != SPROJ_OK)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "the allreduce failed");
  return SPROJ_OK;
}
