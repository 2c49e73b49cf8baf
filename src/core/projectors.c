/* SPDX-License-Identifier: Apache-2.0 */
/* projectors.c: the public projection calls (forward and back; non-TOF, TOF sinogram and TOF listmode; one chunk or a
 * list of chunks), the checks that they make before anything is held or submitted, and the same for the distributed
 * layer (sproj_projection_check, sproj_project). A checked request goes on to merge.c. */
#include "config.h"
#include <stdlib.h>
#include "internal.h"
#include "submit.h"

static int check_args(const char *func, const struct sproj_request *rq, const sproj_image *img, const sproj_proj *proj,
                      const sproj_chunks *chunks, int chunk)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!img || !proj)
    return sproj_fail(SPROJ_ERR_NULL, func, "img and proj must not be NULL");
  if (!chunks && chunk != 0 && chunk != SPROJ_ALL_CHUNKS)
    return sproj_fail(SPROJ_ERR_RANGE, func, "without a chunking, chunk must be 0 or SPROJ_ALL_CHUNKS");
  const sproj_lors *lors = proj->vec.lors;
  if (chunks && chunks->lors != lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the chunking belongs to another LOR set than proj");
  if (chunks && chunk != SPROJ_ALL_CHUNKS && (chunk < 0 || chunk >= chunks->num_chunks))
    return sproj_fail(SPROJ_ERR_RANGE, func, "chunk %d outside 0..%d", chunk, chunks->num_chunks - 1);
  if (rq->kind == SPROJ_KIND_NONTOF) {
    if (proj->num_bins != 1)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "proj holds %d TOF bins per LOR: use the TOF projectors",
                        proj->num_bins);
    return SPROJ_OK;
  }
  if (!rq->tof)
    return sproj_fail(SPROJ_ERR_NULL, func, "tof is NULL");
  if (rq->tof->lors && rq->tof->lors != lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the per-LOR TOF parameters belong to another LOR set");
  int num_bins = rq->tof->params.num_bins;
  if (rq->kind == SPROJ_KIND_TOF_SINO && proj->num_bins != num_bins)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "proj holds %d values per LOR, the TOF parameters %d bins",
                      proj->num_bins, num_bins);
  if (rq->kind == SPROJ_KIND_TOF_LM) {
    if (!lors->bins)
      return sproj_fail(SPROJ_ERR_INVALID, func, "the LOR set has no TOF bins (sproj_lors_register_events)");
    if (proj->num_bins != 1)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "listmode takes one value per event, proj holds %d",
                        proj->num_bins);
    return sproj_events_check_bins(func, lors, rq->tof);
  }
  return SPROJ_OK;
}

static int submit_one(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                      const sproj_chunks *chunks, int chunk)
{
  int ret = check_args(func, rq, img, proj, chunks, chunk);
  if (ret)
    return ret;
  if (!chunks) {
    /* the whole set: events whose order the library holds are projected in it */
    int served;
    ret = sproj_held_request(func, rq, img, proj, &served);
    if (ret || served)
      return ret;
  }
  if (chunks && chunk == SPROJ_ALL_CHUNKS) {
    int *list, num;
    if ((ret = sproj_chunk_list(func, chunks, chunk, &list, &num)))
      return ret;
    ret = sproj_request_chunks(func, rq, img, proj, chunks, list, num);
    free(list);
    return ret;
  }
  int c = chunks ? chunk : 0;
  return sproj_request_chunks(func, rq, img, proj, chunks, &c, 1);
}

static int submit_list(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                       const sproj_chunks *chunks, const int *list, int num)
{
  int ret = check_args(func, rq, img, proj, chunks, 0);
  if (ret)
    return ret;
  if (!list)
    return sproj_fail(SPROJ_ERR_NULL, func, "chunk_list is NULL");
  if (num == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "num is 0");
  if (num < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num = %d is negative", num);
  return sproj_request_chunks(func, rq, img, proj, chunks, list, num);
}

/* ---- the public projection calls: one chunk (or all) and a list of chunks, per projector and direction ---- */
int sproj_fwd(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk)
{
  const struct sproj_request rq = {0, SPROJ_KIND_NONTOF, NULL};
  return submit_one(__func__, &rq, img, proj, chunks, chunk);
}

int sproj_fwd_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list, int num)
{
  const struct sproj_request rq = {0, SPROJ_KIND_NONTOF, NULL};
  return submit_list(__func__, &rq, img, proj, chunks, chunk_list, num);
}

int sproj_back(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk)
{
  const struct sproj_request rq = {1, SPROJ_KIND_NONTOF, NULL};
  return submit_one(__func__, &rq, img, proj, chunks, chunk);
}

int sproj_back_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list, int num)
{
  const struct sproj_request rq = {1, SPROJ_KIND_NONTOF, NULL};
  return submit_list(__func__, &rq, img, proj, chunks, chunk_list, num);
}

int sproj_fwd_tof_sino(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                       const sproj_tof *tof)
{
  const struct sproj_request rq = {0, SPROJ_KIND_TOF_SINO, tof};
  return submit_one(__func__, &rq, img, proj, chunks, chunk);
}

int sproj_fwd_tof_sino_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                              int num, const sproj_tof *tof)
{
  const struct sproj_request rq = {0, SPROJ_KIND_TOF_SINO, tof};
  return submit_list(__func__, &rq, img, proj, chunks, chunk_list, num);
}

int sproj_back_tof_sino(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                        const sproj_tof *tof)
{
  const struct sproj_request rq = {1, SPROJ_KIND_TOF_SINO, tof};
  return submit_one(__func__, &rq, img, proj, chunks, chunk);
}

int sproj_back_tof_sino_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                               int num, const sproj_tof *tof)
{
  const struct sproj_request rq = {1, SPROJ_KIND_TOF_SINO, tof};
  return submit_list(__func__, &rq, img, proj, chunks, chunk_list, num);
}

int sproj_fwd_tof_lm(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                     const sproj_tof *tof)
{
  const struct sproj_request rq = {0, SPROJ_KIND_TOF_LM, tof};
  return submit_one(__func__, &rq, img, proj, chunks, chunk);
}

int sproj_fwd_tof_lm_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                            int num, const sproj_tof *tof)
{
  const struct sproj_request rq = {0, SPROJ_KIND_TOF_LM, tof};
  return submit_list(__func__, &rq, img, proj, chunks, chunk_list, num);
}

int sproj_back_tof_lm(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                      const sproj_tof *tof)
{
  const struct sproj_request rq = {1, SPROJ_KIND_TOF_LM, tof};
  return submit_one(__func__, &rq, img, proj, chunks, chunk);
}

int sproj_back_tof_lm_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                             int num, const sproj_tof *tof)
{
  const struct sproj_request rq = {1, SPROJ_KIND_TOF_LM, tof};
  return submit_list(__func__, &rq, img, proj, chunks, chunk_list, num);
}

/* ---- for the distributed layer (shared.h) ---- */
static enum sproj_kind kind_of(const sproj_proj *proj, const sproj_tof *tof)
{
  return !tof ? SPROJ_KIND_NONTOF : proj->vec.lors->bins ? SPROJ_KIND_TOF_LM : SPROJ_KIND_TOF_SINO;
}

int sproj_projection_check(const char *func, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                           const sproj_tof *tof)
{
  if (!proj)
    return check_args(func, &(struct sproj_request){0, SPROJ_KIND_NONTOF, tof}, img, proj, chunks, 0);
  const struct sproj_request rq = {0, kind_of(proj, tof), tof};
  return check_args(func, &rq, img, proj, chunks, SPROJ_ALL_CHUNKS);
}

int sproj_project(int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const sproj_tof *tof)
{
  const char *func = back ? "sproj_back" : "sproj_fwd";
  int ret = sproj_projection_check(func, img, proj, chunks, tof);
  if (ret)
    return ret;
  const struct sproj_request rq = {back, kind_of(proj, tof), tof};
  /* inside a caller's batch the projection would only be collected: what follows must come after it */
  ret = submit_one(func, &rq, img, proj, chunks, SPROJ_ALL_CHUNKS);
  return ret ? ret : sproj_flush_pending();
}
