/* SPDX-License-Identifier: Apache-2.0 */
/* project.c: projections across ranks: forward projection of each rank's chunks, back projection summed over the
 * ranks, and the gathering of the ranks' projection values. */
#include "config.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

int sproj_mpi_fwd(sproj_mpi_comm *comm, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                  const sproj_tof *tof)
{
  sproj_mpi_comm *c = comm_for(comm);
  if (!c)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "no communicator exists");
  int status = comm ? sproj_projection_check(__func__, img, proj, chunks, tof)
                    : SPROJ_FAIL(SPROJ_ERR_NULL, "comm must not be NULL");
  if ((status = comm_agree_status(__func__, c, status)))
    return status;
  return comm_agree_status(__func__, c, sproj_project(0, img, proj, chunks, tof));
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
    comm_scratch_free(c);
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
  if ((status = comm_agree_status(__func__, c, status)))
    return status;
  sproj_image *part = NULL;
  status = scratch_for(__func__, c, img, &part);
  if (status == SPROJ_OK)
    status = sproj_project(1, part, proj, chunks, tof);
  if ((status = comm_agree_status(__func__, c, status)))
    return status;
  starpu_data_handle_t h = sproj_image_handle(part);
  int64_t *tag = &c->scratch_tag;
  if ((status = comm_sum_parts(c, &h, 1, &tag)))
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
  if ((status = comm_agree_status(__func__, c, status)))
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
  if ((status = comm_agree_status(__func__, c, status)) == SPROJ_OK) {
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
