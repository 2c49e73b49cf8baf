/* SPDX-License-Identifier: Apache-2.0 */
/* steps.c: the steps a reconstruction's creation (recon.c), iterations (iterate.c), objective (objective.c), data
 * terms (terms.c, small_rule.c) and devices (recon_devices.c) all build on: StarPU's status as the library's, zero and
 * blur tasks on images, temporary images and projection vectors, chunk lists, pieces grouped into tasks as the
 * projections group them, <s, x> on the host, and the upload of the chunks' inputs ahead of the first task. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "recon_internal.h"

int recon_insert_status(int starpu_ret)
{
  return starpu_ret == 0 ? SPROJ_OK : SPROJ_ERR_STARPU;
}

int recon_submit_zero(starpu_data_handle_t h)
{
  return recon_insert_status(starpu_task_insert(&sproj_image_zero_cl, STARPU_W, h, STARPU_EXECUTE_WHERE,
                                          (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0));
}

int recon_submit_gauss(sproj_recon *r, starpu_data_handle_t in, starpu_data_handle_t out)
{
  struct sproj_gauss_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  *arg = r->gauss;
  return recon_insert_status(starpu_task_insert(&sproj_gauss3d_cl, STARPU_R, in, STARPU_W, out, STARPU_SCRATCH, r->scratch,
                                          STARPU_CL_ARGS, arg, sizeof *arg, STARPU_EXECUTE_WHERE,
                                          (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0));
}

int recon_submit_blurred(sproj_recon *r, sproj_image *x, sproj_image **src)
{
  *src = x;
  if (!r->blur)
    return SPROJ_OK;
  *src = r->xb;
  return recon_submit_gauss(r, x->handle, r->xb->handle);
}

/* <s, x> on the host, s the sum of the sensitivities (subset -1: the expected total of the sensitivity LORs, less
 * their background) or the sensitivity subset k's gradient subtracts (sens_factor times its image). */
int recon_sens_dot(const char *func, sproj_recon *r, sproj_image *img, int subset, double *dot)
{
  const struct sproj_geom *g = &img->geom;
  size_t nvox = (size_t)g->n[0] * g->n[1] * g->n[2];
  if (starpu_data_acquire_on_node(img->handle, STARPU_MAIN_RAM, STARPU_R) != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "starpu_data_acquire failed");
  const float *x = (const float *)starpu_vector_get_local_ptr(img->handle);
  double sum = 0.0;
  int ret = SPROJ_OK;
  int first = subset < 0 ? 0 : (r->num_sens == 1 ? 0 : subset), end = subset < 0 ? r->num_sens : first + 1;
  for (int k = first; k < end && !ret; k++) {
    if (starpu_data_acquire_on_node(r->sens[k]->handle, STARPU_MAIN_RAM, STARPU_R) != 0) {
      ret = sproj_fail(SPROJ_ERR_STARPU, func, "starpu_data_acquire failed");
      break;
    }
    const float *s = (const float *)starpu_vector_get_local_ptr(r->sens[k]->handle);
    for (size_t v = 0; v < nvox; v++)
      sum += (double)s[v] * x[v];
    starpu_data_release_on_node(r->sens[k]->handle, STARPU_MAIN_RAM);
  }
  starpu_data_release_on_node(img->handle, STARPU_MAIN_RAM);
  *dot = subset < 0 ? sum : (double)r->sens_factor * sum;
  return ret;
}

void recon_lists_free(struct chunk_lists *l)
{
  free(l->start);
  free(l->idx);
  l->start = l->idx = NULL;
}

/* An image like x that lives only where tasks put it (no host buffer until one is asked for); sproj_image_drop
 * drops it after the tasks using it, without bringing it home. */
int recon_temp_image(const char *func, sproj_image **out, const sproj_image *like)
{
  const struct sproj_geom *g = &like->geom;
  uint32_t nvox = (uint32_t)g->n[0] * (uint32_t)g->n[1] * (uint32_t)g->n[2];
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, -1, 0, nvox, sizeof(float));
  int ret = sproj_image_register_handle(out, h, g->n, g->voxel_size, g->origin);
  if (ret) {
    starpu_data_unregister_no_coherency(h);
    return sproj_fail(ret, func, "could not set up an image: %s", sproj_last_error());
  }
  return SPROJ_OK;
}

/* A projection vector of the model's shape. It has a host buffer (values_out, to free after unregistering) only so
 * that StarPU can gather its pieces there when the objective asks for it; the tasks never need it. */
int recon_temp_proj(const char *func, sproj_proj **out, float **values_out, const sproj_model *md)
{
  size_t nval = (size_t)md->lors->num_lors * (size_t)md->num_values;
  float *values = malloc(nval * sizeof *values);
  if (!values)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int ret = md->num_values > 1 ? sproj_proj_register_tof(out, values, md->lors, md->num_values)
                               : sproj_proj_register(out, values, md->lors);
  if (ret) {
    free(values);
    return ret;
  }
  *values_out = values;
  return SPROJ_OK;
}

void recon_groups_free(struct term_groups *g)
{
  free(g->start);
  free(g->piece);
  free(g->chunk);
  memset(g, 0, sizeof *g);
}

int recon_groups_make(const sproj_chunks *ch, const int *list, int num, struct term_groups *g)
{
  int npieces = 0;
  int64_t total = 0;
  for (int i = 0; i < num; i++) {
    npieces += ch->piece_start[list[i] + 1] - ch->piece_start[list[i]];
    total += ch->count[list[i]];
  }
  memset(g, 0, sizeof *g);
  g->start = malloc(((size_t)npieces + 1) * sizeof *g->start);
  g->piece = malloc(((size_t)npieces + 1) * sizeof *g->piece);
  g->chunk = malloc(((size_t)npieces + 1) * sizeof *g->chunk);
  if (!g->start || !g->piece || !g->chunk) {
    recon_groups_free(g);
    return SPROJ_ERR_NOMEM;
  }
  int64_t target = sproj_task_target_spread(total, sproj_request_spread(ch, sproj_rt.where, list, num));
  int64_t lors = 0;
  int n = 0, in_task = 0, home = -1;
  for (int i = 0; i < num; i++)
    for (int q = ch->piece_start[list[i]]; q < ch->piece_start[list[i] + 1]; q++) {
      /* a task holds pieces of one home, as the projections' tasks */
      int q_home = sproj_piece_home(ch, sproj_rt.where, q);
      if (sproj_task_full(in_task, lors, ch->piece_len[q], target) || (in_task > 0 && q_home != home)) {
        g->start[++g->num] = n;
        in_task = 0;
        lors = 0;
      }
      home = q_home;
      g->piece[n] = q;
      g->chunk[n++] = list[i];
      in_task++;
      lors += ch->piece_len[q];
    }
  if (in_task > 0)
    g->start[++g->num] = n;
  g->start[0] = 0;
  return SPROJ_OK;
}

/* The per-LOR bytes a device holds of a reconstruction's chunks: endpoints, TOF bins, data, factors, background. */
static size_t bytes_per_lor(const sproj_recon *r, const sproj_chunks *ch)
{
  const sproj_model *md = r->model;
  return 6 * sizeof(float) + (ch->lors->bins ? sizeof(int16_t) : 0) +
         (size_t)md->num_values * sizeof(float) * (r->data != NULL) +
         (md->add ? (size_t)(md->add_per_lor ? 1 : md->num_values) * sizeof(float) : 0) +
         (md->mult ? sizeof(float) : 0);
}

int recon_upload_inputs(const char *func, const sproj_recon *r, const sproj_chunks *ch, int ndev, const int *dev,
                        const unsigned *node)
{
  const sproj_model *md = r->model;
  if (sproj_gpu_memory_below(4 * (size_t)(ch->lors->num_lors / ndev + 1) * bytes_per_lor(r, ch)))
    return SPROJ_OK;
  starpu_data_handle_t *arrays[4];
  int narrays = 0;
  if ((ch->lors->bins && sproj_vec_children(ch->lors->bins, ch, &arrays[narrays++])) ||
      (r->data && sproj_vec_children(&r->data->vec, ch, &arrays[narrays++])) ||
      (md->mult && sproj_vec_children(md->mult, ch, &arrays[narrays++])) ||
      (md->add && sproj_vec_children(md->add, ch, &arrays[narrays++])))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int *list = malloc((size_t)ch->num_chunks * sizeof *list);
  if (!list)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int ret = SPROJ_OK;
  for (int d = 0; d < ndev && !ret; d++) {
    int num = 0;
    for (int c = 0; c < ch->num_chunks; c++)
      if (dev[c] == d)
        list[num++] = c;
    int nh = 0, nr = 0;
    starpu_data_handle_t *h = num && narrays ? sproj_piece_handles(ch, list, num, arrays, narrays, &nh) : NULL;
    starpu_data_handle_t *runs = num ? sproj_run_handles(ch, list, num, &nr) : NULL;
    if (num && ((narrays && !h) || !runs))
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    else if (nr)
      ret = sproj_upload_handles(runs, nr, &node[d], 1);
    if (!ret && nh)
      ret = sproj_upload_handles(h, nh, &node[d], 1);
    free(h);
    free(runs);
  }
  free(list);
  return ret;
}
