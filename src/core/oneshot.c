/* SPDX-License-Identifier: Apache-2.0 */
/* oneshot.c: libparallelproj-style one-shot projections (register, compute, wait, unregister on every call). */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "shared.h"
#include "starproj_parallelproj.h"

/* parallelproj's TOF bins are shorts; starproj's event bins are int16_t: the same array must do for both */
_Static_assert(sizeof(short) == sizeof(int16_t), "short is not 16 bits wide");

/* What one call registers, unregistered in reverse order at its end. */
struct oneshot {
  const char *func;
  sproj_image *img;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_tof *tof;
};

/* Checks shared by every call. Returns SPROJ_OK, a negative status, or 1 when there is nothing to do. */
static int oneshot_check(const char *func, const float *lor_start, const float *lor_end, const void *image,
                         const float *image_origin, const float *voxel_size, const void *values, size_t num_lors,
                         const int *image_dim)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!lor_start || !lor_end || !image || !image_origin || !voxel_size || !values || !image_dim)
    return sproj_fail(SPROJ_ERR_NULL, func, "lor_start, lor_end, image, image_origin, voxel_size, projection_values "
                      "and image_dim must not be NULL");
  if (num_lors > UINT32_MAX)
    return sproj_fail(SPROJ_ERR_OVERFLOW, func, "%zu LORs: at most 2^32-1 in one call", num_lors);
  return num_lors == 0 ? 1 : SPROJ_OK;
}

/* TOF parameters of a call: scalars from the first element, arrays when they are per LOR. */
static int oneshot_tof(struct oneshot *o, float tof_bin_width, const float *tof_sigma, const float *tof_center_offset,
                       float num_sigmas, short num_tof_bins, unsigned char lor_sigma, unsigned char lor_offset)
{
  if (!tof_sigma || !tof_center_offset)
    return sproj_fail(SPROJ_ERR_NULL, o->func, "tof_sigma and tof_center_offset must not be NULL");
  struct sproj_tof_params par = {tof_bin_width, num_tof_bins, num_sigmas, tof_sigma[0], tof_center_offset[0]};
  return sproj_tof_register(&o->tof, &par, o->lors, lor_sigma ? tof_sigma : NULL,
                            lor_offset ? tof_center_offset : NULL);
}

/* Unregisters what the call registered (waiting for its work and writing results back) and returns the call's
 * status: ret if it failed, else the first failing unregistration. A failure is reported under the call's name. */
static int oneshot_finish(struct oneshot *o, int ret)
{
  int r;
  if (o->tof && (r = sproj_tof_unregister(o->tof)) && !ret)
    ret = r;
  if (o->proj && (r = sproj_proj_unregister(o->proj)) && !ret)
    ret = r;
  if (o->lors && (r = sproj_lors_unregister(o->lors)) && !ret)
    ret = r;
  if (o->img && (r = sproj_image_unregister(o->img)) && !ret)
    ret = r;
  if (ret < 0 && strncmp(sproj_last_error(), o->func, strlen(o->func)) != 0)
    sproj_fail_as(ret, o->func);
  return ret;
}

/* Non-TOF and TOF-sinogram calls: register the image, the LORs and the values (one per LOR, or for a TOF sinogram
 * num_bins per LOR). */
static int oneshot_register(struct oneshot *o, const float *lor_start, const float *lor_end, const float *image,
                            const float *image_origin, const float *voxel_size, const float *values, size_t num_lors,
                            const int *image_dim, int sino, int num_bins)
{
  /* inputs are only read: StarPU writes a host buffer back only where a task wrote the data */
  int ret = sproj_image_register(&o->img, (float *)image, image_dim, voxel_size, image_origin);
  if (!ret)
    ret = sproj_lors_register(&o->lors, lor_start, lor_end, (int64_t)num_lors);
  if (!ret)
    ret = sino ? sproj_proj_register_tof(&o->proj, (float *)values, o->lors, num_bins)
                   : sproj_proj_register(&o->proj, (float *)values, o->lors);
  return ret;
}

/* Listmode calls: the LOR set carries each event's bin. */
static int oneshot_register_events(struct oneshot *o, const float *lor_start, const float *lor_end,
                                   const float *image, const float *image_origin, const float *voxel_size,
                                   const float *values, size_t num_events, const int *image_dim,
                                   const short *tof_bin_index)
{
  if (!tof_bin_index)
    return sproj_fail(SPROJ_ERR_NULL, o->func, "tof_bin_index must not be NULL");
  int ret = sproj_image_register(&o->img, (float *)image, image_dim, voxel_size, image_origin);
  if (!ret)
    ret = sproj_lors_register_events(&o->lors, lor_start, lor_end, (const int16_t *)tof_bin_index,
                                     (int64_t)num_events);
  if (!ret)
    ret = sproj_proj_register(&o->proj, (float *)values, o->lors);
  return ret;
}

/* One call: its arguments, what kind of projection it asks for and which direction. */
enum oneshot_kind { ONESHOT_NONTOF, ONESHOT_TOF_SINO, ONESHOT_TOF_LM };
struct oneshot_call {
  const char *func;
  enum oneshot_kind kind;
  int back;
  const float *lor_start, *lor_end, *image, *image_origin, *voxel_size, *values;
  size_t num_lors;
  const int *image_dim;
  /* TOF calls only */
  float tof_bin_width, num_sigmas;
  const float *tof_sigma, *tof_center_offset;
  short num_tof_bins;
  unsigned char lor_sigma, lor_offset;
  const short *tof_bin_index; /* listmode */
};

/* Checks, registers, projects, waits and unregisters: the same steps for every call. */
static int oneshot_run(const struct oneshot_call *c)
{
  struct oneshot o = {.func = c->func};
  int ret = oneshot_check(c->func, c->lor_start, c->lor_end, c->image, c->image_origin, c->voxel_size, c->values,
                          c->num_lors, c->image_dim);
  if (ret)
    return ret > 0 ? SPROJ_OK : ret;
  if (c->kind == ONESHOT_TOF_LM)
    ret = oneshot_register_events(&o, c->lor_start, c->lor_end, c->image, c->image_origin, c->voxel_size, c->values,
                                  c->num_lors, c->image_dim, c->tof_bin_index);
  else
    ret = oneshot_register(&o, c->lor_start, c->lor_end, c->image, c->image_origin, c->voxel_size, c->values,
                           c->num_lors, c->image_dim, c->kind == ONESHOT_TOF_SINO, c->num_tof_bins);
  if (!ret && c->kind != ONESHOT_NONTOF)
    ret = oneshot_tof(&o, c->tof_bin_width, c->tof_sigma, c->tof_center_offset, c->num_sigmas, c->num_tof_bins,
                      c->lor_sigma, c->lor_offset);
  if (!ret) {
    switch (c->kind) {
    case ONESHOT_NONTOF:
      ret = c->back ? sproj_back(o.img, o.proj, NULL, SPROJ_ALL_CHUNKS) : sproj_fwd(o.img, o.proj, NULL, SPROJ_ALL_CHUNKS);
      break;
    case ONESHOT_TOF_SINO:
      ret = c->back ? sproj_back_tof_sino(o.img, o.proj, NULL, SPROJ_ALL_CHUNKS, o.tof)
                    : sproj_fwd_tof_sino(o.img, o.proj, NULL, SPROJ_ALL_CHUNKS, o.tof);
      break;
    case ONESHOT_TOF_LM:
      ret = c->back ? sproj_back_tof_lm(o.img, o.proj, NULL, SPROJ_ALL_CHUNKS, o.tof)
                    : sproj_fwd_tof_lm(o.img, o.proj, NULL, SPROJ_ALL_CHUNKS, o.tof);
      break;
    }
  }
  return oneshot_finish(&o, ret);
}

/* device_id and threads_per_block mean nothing here: StarPU places the work. */
int sproj_pp_joseph3d_fwd(const float *lor_start, const float *lor_end, const float *image, const float *image_origin,
                          const float *voxel_size, float *projection_values, size_t num_lors, const int *image_dim,
                          int device_id, int threads_per_block)
{
  (void)device_id, (void)threads_per_block;
  const struct oneshot_call c = {.func = __func__, .kind = ONESHOT_NONTOF, .back = 0, .lor_start = lor_start,
                                 .lor_end = lor_end, .image = image, .image_origin = image_origin,
                                 .voxel_size = voxel_size, .values = projection_values, .num_lors = num_lors,
                                 .image_dim = image_dim};
  return oneshot_run(&c);
}

int sproj_pp_joseph3d_back(const float *lor_start, const float *lor_end, float *image, const float *image_origin,
                           const float *voxel_size, const float *projection_values, size_t num_lors,
                           const int *image_dim, int device_id, int threads_per_block)
{
  (void)device_id, (void)threads_per_block;
  const struct oneshot_call c = {.func = __func__, .kind = ONESHOT_NONTOF, .back = 1, .lor_start = lor_start,
                                 .lor_end = lor_end, .image = image, .image_origin = image_origin,
                                 .voxel_size = voxel_size, .values = projection_values, .num_lors = num_lors,
                                 .image_dim = image_dim};
  return oneshot_run(&c);
}

int sproj_pp_joseph3d_tof_sino_fwd(const float *lor_start, const float *lor_end, const float *image,
                                   const float *image_origin, const float *voxel_size, float *projection_values,
                                   size_t num_lors, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                   const float *tof_center_offset, float num_sigmas, short num_tof_bins,
                                   unsigned char is_lor_dependent_tof_sigma,
                                   unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                   int threads_per_block)
{
  (void)device_id, (void)threads_per_block;
  const struct oneshot_call c = {__func__, ONESHOT_TOF_SINO, 0, lor_start, lor_end, image, image_origin, voxel_size,
                                 projection_values, num_lors, image_dim, tof_bin_width, num_sigmas, tof_sigma,
                                 tof_center_offset, num_tof_bins, is_lor_dependent_tof_sigma,
                                 is_lor_dependent_tof_center_offset, NULL};
  return oneshot_run(&c);
}

int sproj_pp_joseph3d_tof_sino_back(const float *lor_start, const float *lor_end, float *image,
                                    const float *image_origin, const float *voxel_size, const float *projection_values,
                                    size_t num_lors, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                    const float *tof_center_offset, float num_sigmas, short num_tof_bins,
                                    unsigned char is_lor_dependent_tof_sigma,
                                    unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                    int threads_per_block)
{
  (void)device_id, (void)threads_per_block;
  const struct oneshot_call c = {__func__, ONESHOT_TOF_SINO, 1, lor_start, lor_end, image, image_origin, voxel_size,
                                 projection_values, num_lors, image_dim, tof_bin_width, num_sigmas, tof_sigma,
                                 tof_center_offset, num_tof_bins, is_lor_dependent_tof_sigma,
                                 is_lor_dependent_tof_center_offset, NULL};
  return oneshot_run(&c);
}

int sproj_pp_joseph3d_tof_lm_fwd(const float *lor_start, const float *lor_end, const float *image,
                                 const float *image_origin, const float *voxel_size, float *projection_values,
                                 size_t num_events, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                 const float *tof_center_offset, float num_sigmas, const short *tof_bin_index,
                                 short num_tof_bins, unsigned char is_lor_dependent_tof_sigma,
                                 unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                 int threads_per_block)
{
  (void)device_id, (void)threads_per_block;
  const struct oneshot_call c = {__func__, ONESHOT_TOF_LM, 0, lor_start, lor_end, image, image_origin, voxel_size,
                                 projection_values, num_events, image_dim, tof_bin_width, num_sigmas, tof_sigma,
                                 tof_center_offset, num_tof_bins, is_lor_dependent_tof_sigma,
                                 is_lor_dependent_tof_center_offset, tof_bin_index};
  return oneshot_run(&c);
}

int sproj_pp_joseph3d_tof_lm_back(const float *lor_start, const float *lor_end, float *image,
                                  const float *image_origin, const float *voxel_size, const float *projection_values,
                                  size_t num_events, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                  const float *tof_center_offset, float num_sigmas, const short *tof_bin_index,
                                  short num_tof_bins, unsigned char is_lor_dependent_tof_sigma,
                                  unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                  int threads_per_block)
{
  (void)device_id, (void)threads_per_block;
  const struct oneshot_call c = {__func__, ONESHOT_TOF_LM, 1, lor_start, lor_end, image, image_origin, voxel_size,
                                 projection_values, num_events, image_dim, tof_bin_width, num_sigmas, tof_sigma,
                                 tof_center_offset, num_tof_bins, is_lor_dependent_tof_sigma,
                                 is_lor_dependent_tof_center_offset, tof_bin_index};
  return oneshot_run(&c);
}
