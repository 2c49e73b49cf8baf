/* SPDX-License-Identifier: Apache-2.0 */
/* distributed.c: libstarproj-mpi: the communicator (StarPU-MPI over starproj), distribution of LOR chunks to ranks,
 * forward and reduced back projection, gathering projections, and OSEM across ranks through recon.c's hook. */
#include "config.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <starpu_mpi.h>
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

/* StarPU-MPI keeps one state per process: one communicator at a time. Collective calls given a NULL communicator
 * still agree on their failure through it, so that no rank waits for one that returned. */
static sproj_mpi_comm *the_comm;

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

struct sproj_mpi_recon {
  sproj_mpi_comm *comm;
  sproj_recon *r;
  const char *func;      /* the call in progress, for messages */
  int agreed_failure;    /* this call has made its last agreement, which reported a failure */
  int agreed_status;     /* the status it reported */
  starpu_data_handle_t *tagged; /* what the reconstruction summed across ranks (images, devices' parts) ... */
  int64_t *tags;                /* ... and their tags (freed with it) */
  int ntags, cap_tags;
  sproj_recon_callback callback;
  void *user;
};

/* ---- agreement ---------------------------------------------------------------------------------------------- */
/* Every collective step starts with one MPI_Allreduce (MIN) of {status, failing rank, -stop}: all ranks learn the most
 * negative status, the lowest rank that failed, and whether any rank asked to stop. A rank that fails locally makes
 * exactly one more agreement and returns; the others meet it in their next agreement, wherever they are, because
 * until then every rank has made the same sequence of collective calls. */
struct agreement {
  int status, failed_rank, stop;
};

static void agree(sproj_mpi_comm *c, int status, int stop, struct agreement *out)
{
  int res[3] = {status, status != SPROJ_OK ? c->rank : INT_MAX, -(stop != 0)};
  if (sproj_coll_allreduce(&c->coll, res, 3, SPROJ_MPI_INT, SPROJ_MPI_MIN) != SPROJ_OK)
    res[0] = SPROJ_ERR_STARPU, res[1] = c->rank;
  out->status = res[0];
  out->failed_rank = res[1];
  out->stop = -res[2];
}

/* Agrees on this rank's status; returns the common one, with a message naming the failing rank where it differs. */
static int agree_status(const char *func, sproj_mpi_comm *c, int status)
{
  struct agreement a;
  agree(c, status, 0, &a);
  if (a.status == status)
    return status;
  if (status == SPROJ_OK)
    return sproj_fail(a.status, func, "rank %d failed: %s", a.failed_rank, sproj_strerror(a.status));
  char own[256];
  snprintf(own, sizeof own, "%s", sproj_last_error());
  return sproj_fail(a.status, func, "rank %d failed: %s (here: %s)", a.failed_rank, sproj_strerror(a.status), own);
}

/* The communicator a collective call agrees through: the one given, else the process's one (NULL: none). */
static sproj_mpi_comm *comm_for(sproj_mpi_comm *c)
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
  if ((status = agree_status(__func__, c, SPROJ_OK))) {
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
    agree_status(__func__, &tmp, SPROJ_ERR_NOMEM);
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
  status = agree_status(__func__, c, status);
  int mpi_started = 0, dup_done = 0;
  if (status == SPROJ_OK) {
    MPI_Comm_dup(mpi_comm, &c->starpu_comm);
    dup_done = 1;
    int ret = starpu_mpi_init_comm(NULL, NULL, 0, c->starpu_comm);
    mpi_started = ret == 0;
    status = agree_status(__func__, c, ret == 0 ? SPROJ_OK
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

/* Drops sproj_mpi_back's image (after the tasks using it) and its tag. */
static void scratch_free(sproj_mpi_comm *c)
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
  scratch_free(comm);
  int status = SPROJ_OK, live = sproj_live_objects();
  if (comm->owns_sproj && live > 0)
    status = SPROJ_FAIL(SPROJ_ERR_BUSY, "%d starproj objects are still registered", live);
  if ((status = agree_status(__func__, comm, status)))
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
  if ((status = agree_status(__func__, c, status)))
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
  if ((status = agree_status(__func__, c, status)))
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
  if ((status = agree_status(__func__, c, status)))
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

/* ---- summing an image across ranks -------------------------------------------------------------------------- */
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

/* Makes each of the n parts (on every rank) the sum over ranks of the ranks' values of it, with the communicator's
 * method. tags[i] is parts[i]'s StarPU-MPI tag, -1 until the StarPU-MPI method registers it. */
static int reduce_parts(sproj_mpi_comm *c, const starpu_data_handle_t *parts, int n, int64_t *const *tags)
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

/* ---- distributions ------------------------------------------------------------------------------------------ */
static void dist_free(sproj_mpi_dist *d)
{
  if (!d)
    return;
  free(d->first);
  free(d->owner);
  free(d->rank_lors);
  free(d->local);
  free(d->local_first);
  free(d);
}

/* A 63-bit FNV-1a hash of an array, to check that every rank passed the same one. */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t bytes)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; i++)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

int sproj_mpi_dist_create(sproj_mpi_dist **dist, sproj_mpi_comm *comm, int num_chunks, const int64_t *chunk_lors,
                          int layout, const int *owner)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "comm is NULL and no communicator exists");
  int status = SPROJ_OK;
  sproj_mpi_dist *d = NULL;
  int64_t total = 0;
  if (!dist || !comm || !chunk_lors)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "dist, comm and chunk_lors must not be NULL");
  else if (num_chunks < 1)
    status = SPROJ_FAIL(SPROJ_ERR_DIMS, "num_chunks = %d: there must be at least one chunk", num_chunks);
  else if (!owner && layout != SPROJ_MPI_BLOCKS && layout != SPROJ_MPI_CYCLIC)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown layout %d", layout);
  for (int k = 0; status == SPROJ_OK && k < num_chunks; k++) {
    if (chunk_lors[k] == 0)
      status = SPROJ_FAIL(SPROJ_ERR_EMPTY, "chunk %d has no LOR", k);
    else if (chunk_lors[k] < 0)
      status = SPROJ_FAIL(SPROJ_ERR_RANGE, "chunk %d has %lld LORs", k, (long long)chunk_lors[k]);
    else if ((total += chunk_lors[k]) > ((int64_t)1 << 62))
      status = SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "more than 2^62 LORs");
    else if (owner && (owner[k] < 0 || owner[k] >= c->size))
      status = SPROJ_FAIL(SPROJ_ERR_RANGE, "owner[%d] = %d outside 0..%d", k, owner[k], c->size - 1);
  }
  if (status == SPROJ_OK) {
    d = calloc(1, sizeof *d);
    if (d) {
      d->first = malloc((num_chunks + 1) * sizeof *d->first);
      d->owner = malloc(num_chunks * sizeof *d->owner);
      d->rank_lors = calloc(c->size, sizeof *d->rank_lors);
      d->local = malloc(num_chunks * sizeof *d->local);
      d->local_first = malloc((num_chunks + 1) * sizeof *d->local_first);
    }
    if (!d || !d->first || !d->owner || !d->rank_lors || !d->local || !d->local_first)
      status = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  if ((status = agree_status(__func__, c, status))) {
    dist_free(d);
    return status;
  }
  /* the same arguments everywhere: the count, the layout and a hash of the arrays, as min and -max */
  int eff_layout = owner ? -1 : layout;
  uint64_t h = hash_bytes(1469598103934665603ULL, chunk_lors, num_chunks * sizeof *chunk_lors);
  if (owner)
    h = hash_bytes(h, owner, num_chunks * sizeof *owner);
  int64_t all[6] = {num_chunks, -(int64_t)num_chunks, eff_layout, -(int64_t)eff_layout, (int64_t)(h >> 1),
                    -(int64_t)(h >> 1)};
  if (sproj_coll_allreduce(&c->coll, all, 6, SPROJ_MPI_INT64, SPROJ_MPI_MIN) != SPROJ_OK) {
    dist_free(d);
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "the ranks' check of their arguments failed");
  }
  if (all[0] != -all[1] || all[2] != -all[3] || all[4] != -all[5]) {
    dist_free(d);
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the ranks passed different chunks, layouts or owners");
  }

  d->comm = comm;
  d->num_chunks = num_chunks;
  d->first[0] = 0;
  for (int k = 0; k < num_chunks; k++)
    d->first[k + 1] = d->first[k] + chunk_lors[k];
  for (int k = 0; k < num_chunks; k++) {
    if (owner) {
      d->owner[k] = owner[k];
    } else if (layout == SPROJ_MPI_CYCLIC) {
      d->owner[k] = k % c->size;
    } else {
      /* the rank whose share [r/P, (r+1)/P) of the LORs holds the chunk's middle LOR, but skipping no rank and
       * leaving a chunk for each of the ranks after it, so that with P chunks or more no rank is idle */
      double mid = ((double)d->first[k] + 0.5 * (double)chunk_lors[k]) / (double)total;
      int r = (int)(mid * c->size), prev = k ? d->owner[k - 1] : 0, least = c->size - (num_chunks - k);
      r = r < c->size ? r : c->size - 1;
      r = r > prev + (k > 0) ? prev + (k > 0) : r;
      d->owner[k] = r < least ? least : r;
    }
    d->rank_lors[d->owner[k]] += chunk_lors[k];
  }
  for (int r = 0; r < c->size; r++)
    if (d->rank_lors[r] == 0) {
      int r0 = r;
      dist_free(d);
      return SPROJ_FAIL(SPROJ_ERR_EMPTY, "rank %d owns no chunk (%d chunks over %d ranks)", r0, num_chunks, c->size);
    }
  d->local_first[0] = 0;
  for (int k = 0; k < num_chunks; k++)
    if (d->owner[k] == c->rank) {
      d->local[d->num_local] = k;
      d->local_first[d->num_local + 1] = d->local_first[d->num_local] + chunk_lors[k];
      d->num_local++;
    }
  *dist = d;
  return SPROJ_OK;
}

int sproj_mpi_dist_destroy(sproj_mpi_dist *dist)
{
  dist_free(dist);
  return SPROJ_OK;
}

int sproj_mpi_dist_owner(const sproj_mpi_dist *dist, int chunk, int *rank)
{
  if (!dist || !rank)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "dist and rank must not be NULL");
  if (chunk < 0 || chunk >= dist->num_chunks)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "chunk %d outside 0..%d", chunk, dist->num_chunks - 1);
  *rank = dist->owner[chunk];
  return SPROJ_OK;
}

int sproj_mpi_dist_local(const sproj_mpi_dist *dist, int *num_chunks, int64_t *num_lors)
{
  if (!dist)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "dist must not be NULL");
  if (num_chunks)
    *num_chunks = dist->num_local;
  if (num_lors)
    *num_lors = dist->local_first[dist->num_local];
  return SPROJ_OK;
}

int sproj_mpi_dist_local_chunk(const sproj_mpi_dist *dist, int local, int *chunk, int64_t *global_first,
                               int64_t *local_first, int64_t *count)
{
  if (!dist)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "dist must not be NULL");
  if (local < 0 || local >= dist->num_local)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "local chunk %d outside 0..%d", local, dist->num_local - 1);
  int k = dist->local[local];
  if (chunk)
    *chunk = k;
  if (global_first)
    *global_first = dist->first[k];
  if (local_first)
    *local_first = dist->local_first[local];
  if (count)
    *count = dist->first[k + 1] - dist->first[k];
  return SPROJ_OK;
}

int sproj_mpi_dist_select(const sproj_mpi_dist *dist, const void *global, size_t bytes_per_lor, void *local)
{
  if (!dist || !global || !local)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "dist, global and local must not be NULL");
  if (bytes_per_lor == 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "bytes_per_lor is 0");
  for (int j = 0; j < dist->num_local; j++) {
    int k = dist->local[j];
    memcpy((char *)local + (size_t)dist->local_first[j] * bytes_per_lor,
           (const char *)global + (size_t)dist->first[k] * bytes_per_lor,
           (size_t)(dist->first[k + 1] - dist->first[k]) * bytes_per_lor);
  }
  return SPROJ_OK;
}

int sproj_mpi_dist_chunks(sproj_chunks **chunks, const sproj_mpi_dist *dist, sproj_lors *local_lors)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!chunks || !dist || !local_lors)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks, dist and local_lors must not be NULL");
  int64_t n = dist->local_first[dist->num_local];
  int64_t held;
  if ((ret = sproj_lors_count(local_lors, &held)))
    return ret;
  if (held != n)
    return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "the LOR set holds %lld LORs, this rank owns %lld", (long long)held,
                      (long long)n);
  int64_t *count = malloc(dist->num_local * sizeof *count);
  if (!count)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  for (int j = 0; j < dist->num_local; j++)
    count[j] = dist->local_first[j + 1] - dist->local_first[j];
  ret = sproj_chunks_create_ranges(chunks, local_lors, dist->num_local, dist->local_first, count);
  free(count);
  return ret;
}

/* ---- projections -------------------------------------------------------------------------------------------- */
int sproj_mpi_fwd(sproj_mpi_comm *comm, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                  const sproj_tof *tof)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "no communicator exists");
  int status = comm ? sproj_projection_check(__func__, img, proj, chunks, tof)
                    : SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  if ((status = agree_status(__func__, c, status)))
    return status;
  return agree_status(__func__, c, sproj_project(0, img, proj, chunks, tof));
}

/* sproj_mpi_back's image of img's geometry, zeroed by a task. */
static int scratch_for(const char *func, sproj_mpi_comm *c, const sproj_image *img, sproj_image **out)
{
  int dims[3], same = c->scratch != NULL;
  float vs[3], origin[3];
  sproj_image_geometry(img, dims, vs, origin);
  if (c->scratch) {
    int d[3];
    float v[3], o[3];
    sproj_image_geometry(c->scratch, d, v, o);
    same = !memcmp(d, dims, sizeof d) && !memcmp(v, vs, sizeof v) && !memcmp(o, origin, sizeof o);
  }
  if (c->scratch && !same)
    scratch_free(c);
  if (!c->scratch) {
    uint32_t nvox = (uint32_t)dims[0] * (uint32_t)dims[1] * (uint32_t)dims[2];
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, -1, 0, nvox, sizeof(float));
    int ret = sproj_image_register_handle(&c->scratch, h, dims, vs, origin);
    if (ret) {
      starpu_data_unregister_no_coherency(h);
      return sproj_fail(ret, func, "could not set up an image: %s", sproj_last_error());
    }
  }
  int ret = sproj_image_submit_zero(func, c->scratch);
  if (ret)
    return ret;
  *out = c->scratch;
  return SPROJ_OK;
}

int sproj_mpi_back(sproj_mpi_comm *comm, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                   const sproj_tof *tof)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "no communicator exists");
  int status = comm ? sproj_projection_check(__func__, img, proj, chunks, tof)
                    : SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  if ((status = agree_status(__func__, c, status)))
    return status;
  sproj_image *part = NULL;
  status = scratch_for(__func__, c, img, &part);
  if (status == SPROJ_OK)
    status = sproj_project(1, part, proj, chunks, tof);
  if ((status = agree_status(__func__, c, status)))
    return status;
  starpu_data_handle_t h = sproj_image_handle(part);
  int64_t *tag = &c->scratch_tag;
  if ((status = reduce_parts(c, &h, 1, &tag)))
    return SPROJ_FAIL(status, "the reduction across ranks failed");
  if ((status = sproj_image_submit_add(__func__, img, sproj_image_handle(part))))
    return status;
  return SPROJ_OK;
}

int sproj_mpi_gather(sproj_mpi_comm *comm, const sproj_mpi_dist *dist, sproj_proj *proj, int root, float *global)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "no communicator exists");
  int status = sproj_check_init(__func__);
  int receives = root == -1 || root == c->rank, nb = 0;
  int64_t held = 0;
  if (status)
    ;
  else if (!comm || !dist || !proj)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "comm, dist and proj must not be NULL");
  else if (dist->comm != comm)
    status = SPROJ_FAIL(SPROJ_ERR_MISMATCH, "the distribution belongs to another communicator");
  else if (root < -1 || root >= c->size)
    status = SPROJ_FAIL(SPROJ_ERR_RANGE, "root %d outside -1..%d", root, c->size - 1);
  else if (receives && !global)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "global must not be NULL on the receiving rank");
  else if ((status = sproj_proj_count(proj, &held, &nb)))
    ;
  else if (held != dist->local_first[dist->num_local])
    status = SPROJ_FAIL(SPROJ_ERR_MISMATCH, "proj holds %lld LORs, this rank owns %lld", (long long)held,
                        (long long)dist->local_first[dist->num_local]);
  if ((status = agree_status(__func__, c, status)))
    return status;
  int res[2] = {nb, -nb};
  if (sproj_coll_allreduce(&c->coll, res, 2, SPROJ_MPI_INT, SPROJ_MPI_MIN) != SPROJ_OK)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "the ranks' check of their projections failed");
  if (res[0] != -res[1])
    return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "the ranks' projections hold different numbers of values per LOR");
  int *counts = malloc(c->size * sizeof *counts), *displs = malloc(c->size * sizeof *displs);
  int64_t pos = 0;
  for (int r = 0; counts && displs && r < c->size; r++) {
    int64_t n = dist->rank_lors[r] * nb;
    counts[r] = n > INT_MAX ? -1 : (int)n;
    displs[r] = pos > INT_MAX ? -1 : (int)pos;
    pos += n;
  }
  float *all = receives ? malloc((size_t)pos * sizeof *all) : NULL;
  status = !counts || !displs || (receives && !all) ? SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory") : SPROJ_OK;
  for (int r = 0; status == SPROJ_OK && r < c->size; r++)
    if (counts[r] < 0 || displs[r] < 0)
      status = SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "more than 2^31-1 values: MPI counts them in int");
  const float *mine = NULL;
  int acquired = status == SPROJ_OK && (status = sproj_proj_acquire(__func__, proj, &mine)) == SPROJ_OK;
  if ((status = agree_status(__func__, c, status)) == SPROJ_OK) {
    int n = counts[c->rank];
    if (sproj_coll_gatherv(&c->coll, mine, all, counts, displs, root) != SPROJ_OK)
      status = SPROJ_FAIL(SPROJ_ERR_STARPU, "the gather failed");
    if (root < 0)
      c->bytes_sent += (int64_t)(c->size - 1) * n * (int64_t)sizeof(float);
    else if (c->rank != root)
      c->bytes_sent += (int64_t)n * (int64_t)sizeof(float);
    if (receives && status == SPROJ_OK) {
      /* each rank sent its chunks in increasing order: put them where they lie in the global numbering */
      int64_t *cursor = calloc(c->size, sizeof *cursor);
      if (!cursor) {
        status = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
      } else {
        for (int k = 0; k < dist->num_chunks; k++) {
          int r = dist->owner[k];
          int64_t len = (dist->first[k + 1] - dist->first[k]) * nb;
          memcpy(global + dist->first[k] * nb, all + displs[r] + cursor[r], (size_t)len * sizeof(float));
          cursor[r] += len;
        }
        free(cursor);
      }
    }
  }
  if (acquired)
    sproj_proj_release_acquired(proj);
  free(all);
  free(counts);
  free(displs);
  return status;
}

/* ---- OSEM across ranks -------------------------------------------------------------------------------------- */
static void recon_free(sproj_mpi_recon *R)
{
  if (R->r)
    sproj_recon_destroy(R->r);
  /* the images are unregistered: their tags can go */
  for (int i = 0; i < R->ntags; i++)
    if (R->tags[i] >= 0)
      starpu_mpi_tags_free(R->tags[i]);
  free(R->tags);
  free(R->tagged);
  free(R);
}

/* The reconstruction's hooks: agree (a rank that failed meets the others here), then sum an image, or the parts of
 * one that a rank's devices hold, across ranks. Each handle keeps its StarPU-MPI tag (for the StarPU-MPI method) in
 * R->tags, found by slot. */
static int slot(sproj_mpi_recon *R, starpu_data_handle_t h, int *at)
{
  int i = 0;
  while (i < R->ntags && R->tagged[i] != h)
    i++;
  if (i == R->ntags && i == R->cap_tags) {
    int cap = R->cap_tags ? 2 * R->cap_tags : 16;
    int64_t *t = realloc(R->tags, cap * sizeof *t);
    if (t)
      R->tags = t;
    starpu_data_handle_t *th = t ? realloc(R->tagged, cap * sizeof *th) : NULL;
    if (!th)
      return sproj_fail(SPROJ_ERR_NOMEM, R->func, "out of memory");
    R->tagged = th;
    R->cap_tags = cap;
  }
  if (i == R->ntags) {
    R->tagged[i] = h;
    R->tags[i] = -1;
    R->ntags++;
  }
  *at = i;
  return SPROJ_OK;
}

static int agreed(sproj_mpi_recon *R, int status)
{
  /* after a successful agreement every rank reduces: nothing may fail between the two */
  if ((status = agree_status(R->func, R->comm, status))) {
    R->agreed_failure = 1;
    R->agreed_status = status;
  }
  return status;
}

static int recon_reduce(void *user, sproj_image *img)
{
  sproj_mpi_recon *R = user;
  int i = 0, status = slot(R, sproj_image_handle(img), &i);
  if ((status = agreed(R, status)))
    return status;
  starpu_data_handle_t h = sproj_image_handle(img);
  int64_t *tag = &R->tags[i];
  status = reduce_parts(R->comm, &h, 1, &tag);
  return status ? sproj_fail(status, R->func, "the reduction across ranks failed") : SPROJ_OK;
}

static int recon_reduce_parts(void *user, const sproj_starpu_handle *parts, int n)
{
  sproj_mpi_recon *R = user;
  int64_t *tags[SPROJ_MPI_MAX_PARTS];
  int status = n > SPROJ_MPI_MAX_PARTS ? sproj_fail(SPROJ_ERR_INVALID, R->func, "%d parts", n) : SPROJ_OK;
  for (int i = 0, at = 0; i < n && !status; i++) {
    status = slot(R, parts[i], &at);
    tags[i] = &R->tags[at];
  }
  if ((status = agreed(R, status)))
    return status;
  status = reduce_parts(R->comm, parts, n, tags);
  return status ? sproj_fail(status, R->func, "the reduction across ranks failed") : SPROJ_OK;
}

/* Ends a collective reconstruction call that returned ret on this rank: a rank that failed by itself agrees once
 * (the others meet it at their next agreement); otherwise all agree at the end. */
static int recon_finish(sproj_mpi_recon *R, int ret)
{
  if (R->agreed_failure)
    return R->agreed_status;
  return agree_status(R->func, R->comm, ret);
}

/* This rank's lists of local chunks of the global subsets; checks everything about them. */
static int local_subsets(const char *func, sproj_mpi_comm *c, const sproj_mpi_dist *d,
                         const struct sproj_recon_config *cfg, int **idx_out, int **sizes_out)
{
  int S = cfg->num_subsets, n = d->num_chunks;
  if (S < 1 || S > n)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d subsets of %d chunks: 1 .. %d", S, n, n);
  if (cfg->subset_chunks && !cfg->subset_sizes)
    return sproj_fail(SPROJ_ERR_NULL, func, "subset_sizes is NULL");
  int64_t total = 0;
  for (int k = 0; cfg->subset_chunks && k < S; k++) {
    if (cfg->subset_sizes[k] < 1)
      return sproj_fail(cfg->subset_sizes[k] ? SPROJ_ERR_DIMS : SPROJ_ERR_EMPTY, func, "subset %d has %d chunks", k,
                        cfg->subset_sizes[k]);
    total += cfg->subset_sizes[k];
    if (total > INT32_MAX / 2)
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "too many chunks in the subsets");
  }
  if (!cfg->subset_chunks)
    total = n;
  int *to_local = malloc(n * sizeof *to_local), *idx = malloc((total ? total : 1) * sizeof *idx),
      *sizes = calloc(S, sizeof *sizes);
  if (!to_local || !idx || !sizes) {
    free(to_local);
    free(idx);
    free(sizes);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int k = 0; k < n; k++)
    to_local[k] = -1;
  for (int j = 0; j < d->num_local; j++)
    to_local[d->local[j]] = j;
  int ret = SPROJ_OK, pos = 0, nl = 0;
  for (int k = 0; k < S && !ret; k++) {
    int len = cfg->subset_chunks ? cfg->subset_sizes[k] : (n - k + S - 1) / S;
    for (int i = 0; i < len; i++) {
      int g = cfg->subset_chunks ? cfg->subset_chunks[pos + i] : k + i * S;
      if (g < 0 || g >= n) {
        ret = sproj_fail(SPROJ_ERR_RANGE, func, "subset %d lists chunk %d, outside 0..%d", k, g, n - 1);
        break;
      }
      if (to_local[g] >= 0) {
        idx[nl++] = to_local[g];
        sizes[k]++;
      }
    }
    pos += len;
    if (!ret && sizes[k] == 0)
      ret = sproj_fail(SPROJ_ERR_EMPTY, func, "rank %d owns no chunk of subset %d (choose fewer subsets or ranks, or "
                       "another distribution)", c->rank, k);
  }
  free(to_local);
  if (ret) {
    free(idx);
    free(sizes);
    return ret;
  }
  *idx_out = idx;
  *sizes_out = sizes;
  return SPROJ_OK;
}

int sproj_mpi_recon_create(sproj_mpi_recon **recon, sproj_mpi_comm *comm, const sproj_mpi_dist *dist, sproj_image *x,
                           const struct sproj_recon_config *cfg)
{
  const char *func = __func__;
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "no communicator exists");
  int status = sproj_check_init(func);
  int *idx = NULL, *sizes = NULL;
  if (status)
    ;
  else if (!recon || !comm || !dist || !x || !cfg)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "recon, comm, dist, x and cfg must not be NULL");
  else if (dist->comm != comm)
    status = SPROJ_FAIL(SPROJ_ERR_MISMATCH, "the distribution belongs to another communicator");
  else if (cfg->objective || cfg->sens_chunks || cfg->sens_subset_chunks || cfg->sens_subset_sizes)
    status = SPROJ_FAIL(SPROJ_ERR_INVALID, "the distributed reconstruction supports neither the objective nor "
                        "sensitivity chunkings (cfg->objective, cfg->sens_chunks must be 0 / NULL)");
  else if (!cfg->chunks)
    status = SPROJ_FAIL(SPROJ_ERR_NULL, "cfg->chunks must not be NULL");
  int nlocal = 0;
  if (status == SPROJ_OK && (status = sproj_chunks_count(cfg->chunks, &nlocal)) == SPROJ_OK &&
      nlocal != dist->num_local)
    status = SPROJ_FAIL(SPROJ_ERR_MISMATCH, "cfg->chunks has %d chunks, this rank owns %d of the distribution", nlocal,
                        dist->num_local);
  for (int j = 0; status == SPROJ_OK && j < dist->num_local; j++) {
    int64_t held = 0;
    if ((status = sproj_chunks_size(cfg->chunks, j, &held)))
      break;
    if (held != dist->local_first[j + 1] - dist->local_first[j])
      status = SPROJ_FAIL(SPROJ_ERR_MISMATCH, "local chunk %d of cfg->chunks holds %lld LORs, the distribution's %lld",
                          j, (long long)held, (long long)(dist->local_first[j + 1] - dist->local_first[j]));
  }
  if (status == SPROJ_OK)
    status = local_subsets(func, c, dist, cfg, &idx, &sizes);
  sproj_mpi_recon *R = status == SPROJ_OK ? calloc(1, sizeof *R) : NULL;
  if (status == SPROJ_OK && !R)
    status = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  if (status != SPROJ_OK) {
    free(idx);
    free(sizes);
    return agree_status(func, c, status);
  }
  R->comm = comm;
  R->func = func;
  struct sproj_recon_config local = *cfg;
  local.subset_chunks = idx;
  local.subset_sizes = sizes;
  struct sproj_recon_hook hook = {recon_reduce, recon_reduce_parts, R};
  /* one rank: nothing to sum across ranks, nor to agree on; the reconstruction is one process's */
  status = sproj_recon_create_hooked(func, &R->r, x, &local, c->size > 1 ? &hook : NULL);
  free(idx);
  free(sizes);
  if (status != SPROJ_OK)
    R->r = NULL;
  status = recon_finish(R, status);
  if (status != SPROJ_OK) {
    recon_free(R);
    return status;
  }
  *recon = R;
  return SPROJ_OK;
}

/* The caller's callback, then an agreement: every rank stops after the iteration in which any rank asked to. */
static int recon_progress(const struct sproj_recon_progress *progress, void *user)
{
  sproj_mpi_recon *R = user;
  int stop = R->callback(progress, R->user) != 0;
  struct agreement a;
  agree(R->comm, SPROJ_OK, stop, &a);
  if (a.status != SPROJ_OK) {
    R->agreed_failure = 1;
    R->agreed_status = a.status;
    sproj_fail(a.status, R->func, "rank %d failed: %s", a.failed_rank, sproj_strerror(a.status));
    return 1;
  }
  return a.stop;
}

int sproj_mpi_recon_iterate(sproj_mpi_recon *recon, int num_iterations, sproj_recon_callback callback, void *user)
{
  sproj_mpi_comm *c = comm_for(recon ? recon->comm : NULL);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "no communicator exists");
  if (!recon)
    return agree_status(__func__, c, SPROJ_FAIL(SPROJ_ERR_NULL, "recon is NULL"));
  recon->func = __func__;
  recon->agreed_failure = 0;
  recon->callback = callback;
  recon->user = user;
  int ret = sproj_recon_iterate(recon->r, num_iterations, callback ? recon_progress : NULL, recon);
  if (recon->agreed_failure)
    return recon->agreed_status; /* the iterations stopped at the agreement that reported a failure */
  return recon_finish(recon, ret);
}

int sproj_mpi_recon_destroy(sproj_mpi_recon *recon)
{
  if (!recon)
    return SPROJ_OK;
  recon_free(recon);
  return SPROJ_OK;
}
