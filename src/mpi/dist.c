/* SPDX-License-Identifier: Apache-2.0 */
/* dist.c: distributions of a LOR set's chunks over the ranks (which rank projects which chunk), checked to be the
 * same on every rank, and what a rank needs of its share (its LORs, its chunking). */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

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

/* FNV-1a's 64-bit offset basis and prime */
#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

/* A 63-bit FNV-1a hash of an array, to check that every rank passed the same one. */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t bytes)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; i++)
    h = (h ^ p[i]) * FNV_PRIME;
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
  if ((status = comm_agree_status(__func__, c, status))) {
    dist_free(d);
    return status;
  }
  /* the same arguments everywhere: the count, the layout and a hash of the arrays, as min and -max */
  int eff_layout = owner ? -1 : layout;
  uint64_t h = hash_bytes(FNV_OFFSET, chunk_lors, num_chunks * sizeof *chunk_lors);
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
