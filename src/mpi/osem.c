/* SPDX-License-Identifier: Apache-2.0 */
/* osem.c: OS-EM across ranks: each rank's reconstruction of its share (src/recon) with a hook that agrees and sums
 * every back projection (or the devices' parts of it) across the ranks. */
#include "config.h"
#include <stdlib.h>
#include <starpu_mpi.h>
#include "mpi_internal.h"

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
  if ((status = comm_agree_status(R->func, R->comm, status))) {
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
  status = comm_sum_parts(R->comm, &h, 1, &tag);
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
  status = comm_sum_parts(R->comm, parts, n, tags);
  return status ? sproj_fail(status, R->func, "the reduction across ranks failed") : SPROJ_OK;
}

/* Ends a collective reconstruction call that returned ret on this rank: a rank that failed by itself agrees once
 * (the others meet it at their next agreement); otherwise all agree at the end. */
static int recon_finish(sproj_mpi_recon *R, int ret)
{
  if (R->agreed_failure)
    return R->agreed_status;
  return comm_agree_status(R->func, R->comm, ret);
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
    return comm_agree_status(func, c, status);
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
  comm_agree(R->comm, SPROJ_OK, stop, &a);
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
    return comm_agree_status(__func__, c, SPROJ_FAIL(SPROJ_ERR_NULL, "recon is NULL"));
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
