/* SPDX-License-Identifier: Apache-2.0 */
/* recon.c: forward models (per-LOR factors, background, resolution blur) and ML-EM / OS-EM reconstruction submitted
 * as StarPU task graphs on resident data. */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "recon_internal.h"

/* ---- models ------------------------------------------------------------------------------------------- */

/* Index of the first value of v[first .. end) that is NaN / infinite (*bad_kind 0) or negative (*bad_kind 1), or -1. */
static int64_t first_bad_in(const float *v, int64_t first, int64_t end, int *bad_kind)
{
  for (int64_t i = first; i < end; i++) {
    if (!isfinite(v[i])) {
      *bad_kind = 0;
      return i;
    }
    if (v[i] < 0.0f) {
      *bad_kind = 1;
      return i;
    }
  }
  return -1;
}

struct bad_scan {
  const float *v;
  int64_t first, end, bad;
  int kind;
};

static void *bad_scan_part(void *arg)
{
  struct bad_scan *p = arg;
  p->bad = first_bad_in(p->v, p->first, p->end, &p->kind);
  return NULL;
}

/* The same over all of v, on up to one thread per core for large arrays (a TOF sinogram's 4.2 G values took one
 * thread 4-5 s): the first bad value of the lowest part that has one, so the answer never depends on the threads. */
static int64_t first_bad_value(const float *v, int64_t n, int *bad_kind)
{
  enum { MAX_PARTS = 64 };
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t parts = n / ((int64_t)1 << 24) + 1;
  if (parts > cores)
    parts = cores > 1 ? cores : 1;
  if (parts > MAX_PARTS)
    parts = MAX_PARTS;
  if (parts <= 1)
    return first_bad_in(v, 0, n, bad_kind);
  struct bad_scan part[MAX_PARTS];
  pthread_t th[MAX_PARTS];
  int started[MAX_PARTS] = {0};
  for (int64_t k = 0; k < parts; k++) {
    part[k] = (struct bad_scan){v, n * k / parts, n * (k + 1) / parts, -1, 0};
    started[k] = k > 0 && pthread_create(&th[k], NULL, bad_scan_part, &part[k]) == 0;
    if (k > 0 && !started[k])
      bad_scan_part(&part[k]); /* no thread: this one scans it */
  }
  bad_scan_part(&part[0]);
  for (int64_t k = 1; k < parts; k++)
    if (started[k])
      pthread_join(th[k], NULL);
  for (int64_t k = 0; k < parts; k++)
    if (part[k].bad >= 0) {
      *bad_kind = part[k].kind;
      return part[k].bad;
    }
  return -1;
}

/* SPROJ_OK, or the status and message for a NaN / infinite or negative value in an array of counts or factors with
 * per_elem values per element (a LOR or a voxel). */
static int check_values(const char *func, const char *what, const char *elem, const float *v, int64_t n, int per_elem)
{
  int kind;
  int64_t bad = first_bad_value(v, n, &kind);
  if (bad < 0)
    return SPROJ_OK;
  if (kind == 0)
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "%s of %s %lld is not finite", what, elem, (long long)(bad / per_elem));
  return sproj_fail(SPROJ_ERR_RANGE, func, "%s of %s %lld is %g: it must be >= 0", what, elem,
                    (long long)(bad / per_elem), v[bad]);
}

static void model_free(sproj_model *md)
{
  struct sproj_vec *vecs[2] = {md->mult, md->add};
  for (int i = 0; i < 2; i++)
    if (vecs[i]) {
      sproj_vec_fini(vecs[i], 0);
      free(vecs[i]);
    }
  free(md);
}

static int model_create(const char *func, sproj_model **model, sproj_lors *lors, const float *mult, const float *add,
                        int add_per_lor, const sproj_tof *tof, const float fwhm_mm[3])
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!model || !lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "model and lors must not be NULL");
  int lm = tof && lors->bins;
  if (tof && tof->lors && tof->lors != lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the per-LOR TOF parameters belong to another LOR set");
  if (lm && (ret = sproj_events_check_bins(func, lors, tof)))
    return ret;
  int num_values = tof && !lm ? tof->params.num_bins : 1;
  if (fwhm_mm)
    for (int k = 0; k < 3; k++) {
      if (!isfinite(fwhm_mm[k]))
        return sproj_fail(SPROJ_ERR_NONFINITE, func, "fwhm_mm[%d] is not finite", k);
      if (fwhm_mm[k] < 0.0f)
        return sproj_fail(SPROJ_ERR_RANGE, func, "fwhm_mm[%d] = %g must be >= 0", k, fwhm_mm[k]);
    }
  if (mult && (ret = check_values(func, "the factor", "LOR", mult, lors->num_lors, 1)))
    return ret;
  int add_values = add_per_lor ? 1 : num_values;
  if (add && (ret = check_values(func, "the background", "LOR", add, lors->num_lors * add_values, add_values)))
    return ret;

  sproj_model *md = calloc(1, sizeof *md);
  if (!md)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  md->lors = lors;
  md->tof = tof;
  md->lm = lm;
  md->num_values = num_values;
  md->add_per_lor = add_per_lor && num_values > 1;
  md->mult_host = mult;
  md->add_host = add;
  for (int k = 0; k < 3; k++)
    md->fwhm[k] = fwhm_mm ? fwhm_mm[k] : 0.0f;
  if ((mult && sproj_vec_register_ro(&md->mult, lors, mult, sizeof(float), 0)) ||
      (add && sproj_vec_register_ro(&md->add, lors, add, (size_t)add_values * sizeof(float), 0))) {
    model_free(md);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  sproj_count_object(1);
  *model = md;
  return SPROJ_OK;
}

int sproj_model_create(sproj_model **model, sproj_lors *lors, const float *mult, const float *add, const sproj_tof *tof,
                       const float fwhm_mm[3])
{
  return model_create(__func__, model, lors, mult, add, 0, tof, fwhm_mm);
}

int sproj_model_create_tof_uniform_add(sproj_model **model, sproj_lors *lors, const float *mult, const float *add,
                                       const sproj_tof *tof, const float fwhm_mm[3])
{
  return model_create(__func__, model, lors, mult, add, 1, tof, fwhm_mm);
}

int sproj_model_set_flat_background(sproj_model *model, float value)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!model)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model must not be NULL");
  if (model->add)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the model has a background array: a flat one would replace it");
  if (!isfinite(value))
    return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "the background is not finite");
  if (value < 0.0f)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "the background %g must be >= 0", value);
  int users = __atomic_load_n(&model->users, __ATOMIC_RELAXED);
  if (users > 0)
    return SPROJ_FAIL(SPROJ_ERR_BUSY, "%d reconstructions use the model", users);
  model->add_flat = value;
  return SPROJ_OK;
}

int sproj_model_destroy(sproj_model *model)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model)
    return SPROJ_OK;
  int users = __atomic_load_n(&model->users, __ATOMIC_RELAXED);
  if (users > 0)
    return SPROJ_FAIL(SPROJ_ERR_BUSY, "%d reconstructions still use the model", users);
  model_free(model);
  sproj_count_object(-1);
  return SPROJ_OK;
}

int sproj_image_blur(sproj_image *dst, sproj_image *src, const float fwhm_mm[3])
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!dst || !src || !fwhm_mm)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "dst, src and fwhm_mm must not be NULL");
  if (dst == src)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "dst and src must be two images");
  for (int k = 0; k < 3; k++) {
    if (dst->geom.n[k] != src->geom.n[k] || dst->geom.voxel_size[k] != src->geom.voxel_size[k])
      return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "dst and src differ in size or voxel size along axis %d", k);
    if (!isfinite(fwhm_mm[k]))
      return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "fwhm_mm[%d] is not finite", k);
    if (fwhm_mm[k] < 0.0f)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "fwhm_mm[%d] = %g must be >= 0", k, fwhm_mm[k]);
  }
  struct sproj_gauss_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  int bad_axis = sproj_gauss_arg_init(arg, src->geom.n, src->geom.voxel_size, fwhm_mm);
  if (bad_axis >= 0) {
    free(arg);
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "a FWHM of %g along axis %d spans more than %d voxels each side at 3 sigma",
                      fwhm_mm[bad_axis], bad_axis, SPROJ_GAUSS_MAX_RADIUS);
  }
  if ((ret = sproj_flush_held())) {
    free(arg);
    return ret;
  }
  uint32_t nvox = (uint32_t)src->geom.n[0] * (uint32_t)src->geom.n[1] * (uint32_t)src->geom.n[2];
  starpu_data_handle_t scratch;
  starpu_vector_data_register(&scratch, -1, 0, nvox, sizeof(float));
  ret = starpu_task_insert(&sproj_gauss3d_cl, STARPU_R, src->handle, STARPU_W, dst->handle, STARPU_SCRATCH, scratch,
                           STARPU_CL_ARGS, arg, sizeof *arg, STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where,
                           STARPU_SCHED_CTX, sproj_rt.ctx, 0);
  starpu_data_unregister_submit(scratch);
  return ret ? SPROJ_FAIL(SPROJ_ERR_STARPU, "StarPU refused the blur task (%d)", ret) : SPROJ_OK;
}

/* Forward (back = 0) or back projection of a list of chunks with the model's projector. */
int recon_model_project(const sproj_model *md, int back, sproj_image *img, sproj_proj *p, const sproj_chunks *ch,
                         const int *list, int num)
{
  int ret;
  if (!md->tof)
    ret = back ? sproj_back_chunks(img, p, ch, list, num) : sproj_fwd_chunks(img, p, ch, list, num);
  else if (md->lm)
    ret = back ? sproj_back_tof_lm_chunks(img, p, ch, list, num, md->tof)
               : sproj_fwd_tof_lm_chunks(img, p, ch, list, num, md->tof);
  else
    ret = back ? sproj_back_tof_sino_chunks(img, p, ch, list, num, md->tof)
               : sproj_fwd_tof_sino_chunks(img, p, ch, list, num, md->tof);
  /* inside a caller's batch the projection would only be collected: our own tasks must come after it */
  return ret ? ret : sproj_flush_pending();
}

/* ---- reconstructions ------------------------------------------------------------------------------------ */


void sproj_recon_config_init(struct sproj_recon_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->num_subsets = 1;
}

void recon_lists_free(struct chunk_lists *l)
{
  free(l->start);
  free(l->idx);
  l->start = l->idx = NULL;
}

/* Validates and copies S lists of chunks of ch (idx NULL: interleaved, chunk c in list c % S). */
static int lists_make(const char *func, const char *what, const sproj_chunks *ch, int S, const int *idx,
                      const int *sizes, struct chunk_lists *out)
{
  int nch = ch->num_chunks;
  if (S < 1)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d subsets: there must be at least 1", S);
  if (S > nch)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d subsets of %d chunks (%s): at most one subset per chunk", S, nch, what);
  if (idx && !sizes)
    return sproj_fail(SPROJ_ERR_NULL, func, "%s: subset sizes are NULL", what);
  int64_t total = 0;
  for (int k = 0; idx && k < S; k++) {
    if (sizes[k] == 0)
      return sproj_fail(SPROJ_ERR_EMPTY, func, "%s: subset %d has no chunk", what, k);
    if (sizes[k] < 0)
      return sproj_fail(SPROJ_ERR_DIMS, func, "%s: subset %d has %d chunks", what, k, sizes[k]);
    total += sizes[k];
    if (total > INT32_MAX / 2)
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "%s: too many chunks", what);
  }
  for (int64_t i = 0; idx && i < total; i++)
    if (idx[i] < 0 || idx[i] >= nch)
      return sproj_fail(SPROJ_ERR_RANGE, func, "%s: chunk %d outside 0..%d", what, idx[i], nch - 1);
  /* a chunk twice in one subset would get the ratio of its ratio */
  if (idx) {
    int *seen = calloc(nch, sizeof *seen), pos = 0;
    if (!seen)
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    for (int k = 0; k < S; k++)
      for (int j = 0; j < sizes[k]; j++, pos++) {
        if (seen[idx[pos]] == k + 1) {
          free(seen);
          return sproj_fail(SPROJ_ERR_RANGE, func, "%s: chunk %d appears twice in subset %d", what, idx[pos], k);
        }
        seen[idx[pos]] = k + 1;
      }
    free(seen);
  }
  if (!idx)
    total = nch;
  out->num = S;
  out->start = malloc((S + 1) * sizeof *out->start);
  out->idx = malloc(total * sizeof *out->idx);
  if (!out->start || !out->idx) {
    recon_lists_free(out);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  int pos = 0;
  for (int k = 0; k < S; k++) {
    out->start[k] = pos;
    if (idx) {
      memcpy(out->idx + pos, idx + pos, sizes[k] * sizeof *idx);
      pos += sizes[k];
    } else {
      for (int c = k; c < nch; c += S)
        out->idx[pos++] = c;
    }
  }
  out->start[S] = pos;
  return SPROJ_OK;
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

/* ---- task submission ---- */
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

static int submit_update(sproj_recon *r, starpu_data_handle_t corr, starpu_data_handle_t sens)
{
  struct sproj_update_arg *arg = calloc(1, sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  arg->sens_factor = r->sens_factor;
  return recon_insert_status(starpu_task_insert(&sproj_em_update_cl, STARPU_RW, r->x->handle, STARPU_R, corr, STARPU_R, sens,
                                          STARPU_CL_ARGS, arg, sizeof *arg, STARPU_EXECUTE_WHERE,
                                          (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0));
}

#define RATIO_MAX_BUFFERS 5


static int nll_sums_add(struct nll_sums *s, starpu_data_handle_t *h)
{
  if (s->num == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    starpu_data_handle_t *handle = realloc(s->handle, cap * sizeof *handle);
    if (!handle)
      return SPROJ_ERR_NOMEM;
    s->handle = handle;
    double **part = realloc(s->part, cap * sizeof *part);
    if (!part)
      return SPROJ_ERR_NOMEM;
    s->part = part;
    s->cap = cap;
  }
  double *part = malloc(SPROJ_NLL_PARTIALS * sizeof *part);
  if (!part)
    return SPROJ_ERR_NOMEM;
  starpu_vector_data_register(&s->handle[s->num], STARPU_MAIN_RAM, (uintptr_t)part, SPROJ_NLL_PARTIALS, sizeof *part);
  s->part[s->num] = part;
  *h = s->handle[s->num++];
  return SPROJ_OK;
}

/* Waits for the objective tasks and returns the sum of their partial sums, added in order; frees them. */
double recon_nll_sums_finish(struct nll_sums *s)
{
  double sum = 0.0;
  for (int t = 0; t < s->num; t++) {
    starpu_data_unregister(s->handle[t]);
    for (int j = 0; j < SPROJ_NLL_PARTIALS; j++)
      sum += s->part[t][j];
    free(s->part[t]);
  }
  free(s->handle);
  free(s->part);
  memset(s, 0, sizeof *s);
  return sum;
}

/* Submits the ratio (or objective) task of the arg->npieces pieces collected in descr, the first of them piece
 * first, with the small-value rule's maxima (or NULL) last, and empties arg. */
static int ratio_task(const sproj_chunks *ch, struct starpu_data_descr *descr, struct sproj_ratio_arg *arg, int bpp,
                      int first, struct nll_sums *nll, starpu_data_handle_t small)
{
  struct sproj_ratio_arg *a = malloc(sizeof *a);
  if (!a)
    return SPROJ_ERR_NOMEM;
  *a = *arg;
  arg->npieces = 0;
  int nbuf = bpp * a->npieces, ret;
  if (nll) {
    if ((ret = nll_sums_add(nll, &descr[nbuf].handle))) {
      free(a);
      return ret;
    }
    descr[nbuf++].mode = STARPU_W;
  }
  if (small)
    descr[nbuf++] = (struct starpu_data_descr){.handle = small, .mode = STARPU_R};
  /* where the task's first LORs are (as the projections: sproj_workers_holding) */
  unsigned nwords = 0;
  int worker;
  const uint32_t *workers = sproj_workers_holding(sproj_rt.where, ch, first, &nwords, &worker);
  return recon_insert_status(starpu_task_insert(nll ? &sproj_em_nll_cl : &sproj_em_ratio_cl, STARPU_CL_ARGS, a, sizeof *a,
                                          STARPU_DATA_MODE_ARRAY, descr, nbuf, STARPU_EXECUTE_WHERE,
                                          (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                                          STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers, 0));
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

/* Ratio tasks (kind, enum sproj_ratio_kind) over the pieces of one list of chunks, grouped by the rule of projection
 * tasks (sproj_task_full), so that each covers the pieces of one forward task and runs where it ran; or, with nll,
 * objective tasks over the same buffers (read only), each adding its partial sums to nll. The Hessian reads r->px
 * beside r->p; its approximation needs no background. With the small-value rule every task also reads the largest
 * numerators of the chunks (small_rule.c). */
int recon_submit_terms(sproj_recon *r, const int *list, int num, int kind, struct nll_sums *nll)
{
  const sproj_chunks *ch = r->chunks;
  const sproj_model *md = r->model;
  int with_a = md->add != NULL && kind != SPROJ_RATIO_APPROX_HESSIAN;
  starpu_data_handle_t *pc, *xc = NULL, *yc = NULL, *mc = NULL, *ac = NULL, small = NULL;
  if ((md->mult && sproj_vec_children(md->mult, ch, &mc)) || (with_a && sproj_vec_children(md->add, ch, &ac)))
    return SPROJ_ERR_NOMEM;
  struct term_groups g;
  if (recon_groups_make(ch, list, num, &g))
    return SPROJ_ERR_NOMEM;
  struct starpu_data_descr *descr = malloc((RATIO_MAX_BUFFERS * SPROJ_MAX_PIECES + 2) * sizeof *descr);
  if (!descr) {
    recon_groups_free(&g);
    return SPROJ_ERR_NOMEM;
  }
  struct sproj_ratio_arg arg = {.num_bins = md->num_values, .has_y = r->data != NULL, .has_m = md->mult != NULL,
                                .has_a = with_a, .a_per_lor = md->add_per_lor, .kind = kind, .max_ratio = r->max_ratio,
                                .a_flat = kind == SPROJ_RATIO_APPROX_HESSIAN ? 0.0f : md->add_flat};
  int bpp = sproj_ratio_buffers_per_piece(&arg), ret = SPROJ_OK;
  sproj_proj *px = kind == SPROJ_RATIO_HESSIAN ? r->px : NULL;

  /* the partitions of written vectors change with the chunking in use: hold their locks (p, px, then the data) */
  pthread_mutex_lock(&r->p->vec.lock);
  if (px)
    pthread_mutex_lock(&px->vec.lock);
  if (r->data)
    pthread_mutex_lock(&r->data->vec.lock);
  if (sproj_vec_children_locked(&r->p->vec, ch, &pc) || (px && sproj_vec_children_locked(&px->vec, ch, &xc)) ||
      (r->data && sproj_vec_children_locked(&r->data->vec, ch, &yc)))
    ret = SPROJ_ERR_NOMEM;
  if (!ret)
    ret = recon_small_submit(r, kind, &g, pc, yc, &small);
  arg.has_small = small != NULL;
  arg.small_fraction = r->small_fraction;
  for (int t = 0; t < g.num && !ret; t++) {
    for (int j = g.start[t]; j < g.start[t + 1]; j++) {
      int q = g.piece[j];
      struct starpu_data_descr *d = descr + bpp * arg.npieces;
      int k = 0;
      d[k++] = (struct starpu_data_descr){.handle = pc[q], .mode = nll ? STARPU_R : STARPU_RW};
      if (xc)
        d[k++] = (struct starpu_data_descr){.handle = xc[q], .mode = STARPU_R};
      if (yc)
        d[k++] = (struct starpu_data_descr){.handle = yc[q], .mode = STARPU_R};
      if (mc)
        d[k++] = (struct starpu_data_descr){.handle = mc[q], .mode = STARPU_R};
      if (ac)
        d[k++] = (struct starpu_data_descr){.handle = ac[q], .mode = STARPU_R};
      arg.slot[arg.npieces++] = g.chunk[j];
    }
    ret = ratio_task(ch, descr, &arg, bpp, g.piece[g.start[t]], nll, small);
  }
  if (r->data)
    pthread_mutex_unlock(&r->data->vec.lock);
  if (px)
    pthread_mutex_unlock(&px->vec.lock);
  pthread_mutex_unlock(&r->p->vec.lock);
  free(descr);
  recon_groups_free(&g);
  return ret;
}

/* ---- simulated data ----------------------------------------------------------------------------------- */
static int check_handle_values(const char *func, const char *what, const char *elem, starpu_data_handle_t h, int64_t n,
                               int per_elem);

/* Simulation tasks over every piece of chunking ch, grouped by the rule of projection tasks and run where each group's
 * first LORs are (as the projections that wrote the values): with partials, sum tasks reading the data (each adding
 * its partial sums there), else draw tasks writing it (and the per-LOR sums into sums when given). */
static int submit_sim(const char *func, const sproj_model *md, sproj_proj *data, const sproj_chunks *ch,
                      const struct sproj_sim_arg *proto, sproj_proj *sums, struct nll_sums *partials)
{
  starpu_data_handle_t *dc, *mc = NULL, *ac = NULL, *sc = NULL;
  if ((md->mult && sproj_vec_children(md->mult, ch, &mc)) || (md->add && sproj_vec_children(md->add, ch, &ac)))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  struct sproj_sim_arg arg = *proto;
  arg.npieces = 0;
  arg.has_m = mc != NULL;
  arg.has_a = ac != NULL;
  arg.has_sums = sums != NULL && !partials;
  int bpp = sproj_sim_buffers_per_piece(&arg), ret = SPROJ_OK, first = 0;
  struct starpu_data_descr *descr = malloc((size_t)(bpp * SPROJ_MAX_PIECES + 1) * sizeof *descr);
  if (!descr)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int64_t lors = 0, target = sproj_task_target_spread(ch->lors->num_lors, sproj_chunking_spread(ch, sproj_rt.where));
  pthread_mutex_lock(&data->vec.lock);
  if (arg.has_sums)
    pthread_mutex_lock(&sums->vec.lock);
  if (sproj_vec_children_locked(&data->vec, ch, &dc) || (arg.has_sums && sproj_vec_children_locked(&sums->vec, ch, &sc)))
    ret = SPROJ_ERR_NOMEM;
  for (unsigned q = 0; q <= ch->npieces && !ret; q++) {
    /* a task is submitted when full, and after the last piece */
    if (arg.npieces > 0 && (q == ch->npieces || sproj_task_full(arg.npieces, lors, ch->piece_len[q], target) ||
                            sproj_piece_home(ch, sproj_rt.where, (int)q) != sproj_piece_home(ch, sproj_rt.where, first))) {
      struct sproj_sim_arg *a = malloc(sizeof *a);
      if (!a) {
        ret = SPROJ_ERR_NOMEM;
        break;
      }
      *a = arg;
      int nbuf = bpp * arg.npieces;
      if (partials) {
        if ((ret = nll_sums_add(partials, &descr[nbuf].handle))) {
          free(a);
          break;
        }
        descr[nbuf++].mode = STARPU_W;
      }
      unsigned nwords = 0;
      int worker;
      const uint32_t *workers = sproj_workers_holding(sproj_rt.where, ch, first, &nwords, &worker);
      ret = recon_insert_status(starpu_task_insert(partials ? &sproj_sim_sum_cl : &sproj_sim_draw_cl, STARPU_CL_ARGS, a,
                                             sizeof *a, STARPU_DATA_MODE_ARRAY, descr, nbuf, STARPU_EXECUTE_WHERE,
                                             (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                                             STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers,
                                             0));
      arg.npieces = 0;
    }
    if (q == ch->npieces || ret)
      break;
    if (arg.npieces == 0) {
      first = (int)q;
      lors = 0;
    }
    struct starpu_data_descr *d = descr + bpp * arg.npieces;
    int k = 0;
    d[k++] = (struct starpu_data_descr){.handle = dc[q], .mode = partials ? STARPU_R : STARPU_RW};
    if (mc)
      d[k++] = (struct starpu_data_descr){.handle = mc[q], .mode = STARPU_R};
    if (ac)
      d[k++] = (struct starpu_data_descr){.handle = ac[q], .mode = STARPU_R};
    if (arg.has_sums)
      d[k++] = (struct starpu_data_descr){.handle = sc[q], .mode = STARPU_W};
    arg.first_value[arg.npieces++] = ch->piece_first[q] * (int64_t)md->num_values;
    lors += ch->piece_len[q];
  }
  if (arg.has_sums)
    pthread_mutex_unlock(&sums->vec.lock);
  pthread_mutex_unlock(&data->vec.lock);
  free(descr);
  if (ret == SPROJ_ERR_NOMEM || ret == SPROJ_ERR_STARPU)
    return sproj_fail(ret, func, "could not submit the simulation tasks");
  return ret;
}

static int check_sim_data(const char *func, const sproj_model *md, const sproj_proj *data, const sproj_chunks *ch)
{
  if (md->lm)
    return sproj_fail(SPROJ_ERR_INVALID, func, "the model is a listmode model: data are simulated as sinograms");
  if (data->vec.lors != md->lors || ch->lors != md->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data and the chunking must belong to the model's LOR set");
  if (data->num_bins != md->num_values)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data hold %d values per LOR, the model %d", data->num_bins,
                      md->num_values);
  return SPROJ_OK;
}

int sproj_model_expected(const sproj_model *model, sproj_image *img, sproj_proj *out, const sproj_chunks *chunks,
                         double *trues)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model || !img || !out || !chunks)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model, img, out and chunks must not be NULL");
  if ((ret = check_sim_data(__func__, model, out, chunks)))
    return ret;
  struct sproj_gauss_arg gauss;
  int bad_axis = sproj_gauss_arg_init(&gauss, img->geom.n, img->geom.voxel_size, model->fwhm);
  if (bad_axis >= 0)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "a FWHM of %g along axis %d spans more than %d voxels each side at 3 sigma",
                      model->fwhm[bad_axis], bad_axis, SPROJ_GAUSS_MAX_RADIUS);
  const struct sproj_geom *g = &img->geom;
  if ((ret = check_handle_values(__func__, "the image", "voxel", img->handle, (int64_t)g->n[0] * g->n[1] * g->n[2], 1)))
    return ret;
  int blur = gauss.radius[0] > 0 || gauss.radius[1] > 0 || gauss.radius[2] > 0;
  sproj_image *src = img, *blurred = NULL;
  if (blur) {
    if ((ret = recon_temp_image(__func__, &blurred, img)))
      return ret;
    if ((ret = sproj_image_blur(blurred, img, model->fwhm))) {
      sproj_image_drop(blurred);
      return ret;
    }
    src = blurred;
  }
  int *list = malloc((size_t)chunks->num_chunks * sizeof *list);
  if (!list) {
    sproj_image_drop(blurred);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  for (int c = 0; c < chunks->num_chunks; c++)
    list[c] = c;
  ret = recon_model_project(model, 0, src, out, chunks, list, chunks->num_chunks);
  free(list);
  sproj_image_drop(blurred); /* after the projections, which it waits for */
  if (ret)
    return ret;
  out->model_made = 1;
  if (!trues)
    return SPROJ_OK;
  struct nll_sums partials = {0};
  struct sproj_sim_arg proto = {.num_bins = model->num_values, .a_per_lor = model->add_per_lor,
                                .a_flat = model->add_flat};
  ret = submit_sim(__func__, model, out, chunks, &proto, NULL, &partials);
  double sum = recon_nll_sums_finish(&partials); /* waits for the tasks submitted */
  if (ret)
    return ret;
  *trues = sum;
  return SPROJ_OK;
}

int sproj_model_draw(const sproj_model *model, sproj_proj *data, const sproj_chunks *chunks, float scale,
                     uint64_t seed, int noise, sproj_proj *lor_sums)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model || !data || !chunks)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model, data and chunks must not be NULL");
  if ((ret = check_sim_data(__func__, model, data, chunks)))
    return ret;
  if (!isfinite(scale))
    return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "scale is not finite");
  if (scale < 0.0f)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "scale = %g must be >= 0", scale);
  if (lor_sums && (lor_sums->vec.lors != model->lors || lor_sums->num_bins != 1))
    return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "lor_sums must hold one value per LOR of the model's LOR set");
  if (lor_sums == data)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "lor_sums must not be the data");
  struct sproj_sim_arg proto = {.num_bins = model->num_values, .a_per_lor = model->add_per_lor,
                                .a_flat = model->add_flat, .noise = noise != 0,
                                .scale = scale, .seed = seed};
  if ((ret = submit_sim(__func__, model, data, chunks, &proto, lor_sums, NULL)))
    return ret;
  if (lor_sums)
    lor_sums->model_made = data->model_made;
  return SPROJ_OK;
}

struct piece_at {
  int64_t first;
  unsigned q;
};

static int cmp_piece_first(const void *a, const void *b)
{
  int64_t x = ((const struct piece_at *)a)->first, y = ((const struct piece_at *)b)->first;
  return (x > y) - (x < y);
}

/* The TOF bins of the events of the drawn counts in data, emitted by tasks where the counts are: per piece with
 * events, its part of bins (places piece_event[q] .. piece_end[q]) as a vector of its own, with off (per LOR, its
 * first event's place in its piece) as a read-only per-LOR vector. Waits for them and brings the bins home. */
static int emit_bins(const char *func, const sproj_model *md, sproj_proj *data, const sproj_chunks *ch,
                     const int32_t *off, const int64_t *piece_event, const int64_t *piece_end, int16_t *bins)
{
  struct sproj_vec *ov;
  if (sproj_vec_register_ro(&ov, md->lors, off, sizeof(int32_t), 1))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  starpu_data_handle_t *oc, *dc, *out = calloc(ch->npieces, sizeof *out);
  int ret = out ? SPROJ_OK : SPROJ_ERR_NOMEM;
  if (!ret && sproj_vec_children(ov, ch, &oc))
    ret = SPROJ_ERR_NOMEM;
  pthread_mutex_lock(&data->vec.lock);
  if (!ret && sproj_vec_children_locked(&data->vec, ch, &dc))
    ret = SPROJ_ERR_NOMEM;
  for (unsigned q = 0; q < ch->npieces && !ret; q++) {
    int64_t n = piece_end[q] - piece_event[q];
    if (n == 0)
      continue;
    starpu_vector_data_register(&out[q], STARPU_MAIN_RAM, (uintptr_t)(bins + piece_event[q]), (uint32_t)n,
                                sizeof(int16_t));
    struct sproj_emit_arg *a = malloc(sizeof *a);
    if (!a) {
      ret = SPROJ_ERR_NOMEM;
      break;
    }
    *a = (struct sproj_emit_arg){1, md->num_values};
    unsigned nwords = 0;
    int worker;
    const uint32_t *workers = sproj_workers_holding(sproj_rt.where, ch, (int)q, &nwords, &worker);
    ret = recon_insert_status(starpu_task_insert(&sproj_sim_emit_cl, STARPU_CL_ARGS, a, sizeof *a, STARPU_R, dc[q], STARPU_R,
                                           oc[q], STARPU_W, out[q], STARPU_EXECUTE_WHERE,
                                           (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                                           STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers, 0));
  }
  pthread_mutex_unlock(&data->vec.lock);
  for (unsigned q = 0; out && q < ch->npieces; q++)
    if (out[q])
      starpu_data_unregister(out[q]); /* waits for its task and brings the bins home */
  free(out);
  sproj_vec_fini(ov, 1);
  free(ov);
  if (ret == SPROJ_ERR_NOMEM || ret == SPROJ_ERR_STARPU)
    return sproj_fail(ret, func, "could not submit the event tasks");
  return ret;
}

/* Placing the events of drawn counts: blocks of up to PLACE_BLOCK LORs, none across two pieces, in LOR order. */
enum { PLACE_BLOCK = 1 << 18 };
struct place_block {
  unsigned q;            /* its piece */
  int bad;               /* a LOR whose count is not a number of events (negative, not finite, 2^31 or more) */
  int64_t first, end;    /* its LORs */
  int64_t count;         /* its events */
  int64_t start;         /* its first event's place in its piece */
};
struct placing {
  const sproj_chunks *ch;
  const float *sums;     /* per LOR, its events */
  int32_t *off;          /* per LOR, its first event's place in its piece: written over sums (the same memory, read
                          * and written with memcpy), LOR by LOR once its count has been read */
  struct place_block *blocks;
  int64_t nblocks;
  const int64_t *piece_event; /* per piece, its first event's place */
  int32_t *lor;          /* per event, its LOR */
  int16_t *bins;         /* per event, its TOF bin (faulted in here, written by tasks), or NULL */
};

/* Whether a drawn count is a number of events a piece can place (not negative, finite, below 2^31). */
static int placeable(float c)
{
  return c >= 0.0f && c < 0x1.0p31f;
}

static int placing_blocks(const char *func, struct placing *pl, const unsigned *order)
{
  const sproj_chunks *ch = pl->ch;
  int64_t n = 0;
  for (unsigned k = 0; k < ch->npieces; k++)
    n += ((int64_t)ch->piece_len[order[k]] + PLACE_BLOCK - 1) / PLACE_BLOCK;
  pl->blocks = malloc((size_t)(n > 0 ? n : 1) * sizeof *pl->blocks);
  if (!pl->blocks)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  pl->nblocks = 0;
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    int64_t end = ch->piece_first[q] + (int64_t)ch->piece_len[q];
    for (int64_t i = ch->piece_first[q]; i < end; i += PLACE_BLOCK)
      pl->blocks[pl->nblocks++] = (struct place_block){q, 0, i, i + PLACE_BLOCK < end ? i + PLACE_BLOCK : end, 0, 0};
  }
  return SPROJ_OK;
}

static void place_count(void *ctx, int64_t b)
{
  struct placing *pl = ctx;
  struct place_block *k = &pl->blocks[b];
  int64_t n = 0;
  for (int64_t i = k->first; i < k->end; i++) {
    float c = pl->sums[i];
    if (!placeable(c)) {
      k->bad = 1;
      return;
    }
    n += (int64_t)c;
  }
  k->count = n;
}

static void place_write(void *ctx, int64_t b)
{
  struct placing *pl = ctx;
  const struct place_block *k = &pl->blocks[b];
  const int64_t base = pl->piece_event[k->q];
  int64_t n = k->start;
  for (int64_t i = k->first; i < k->end; i++) {
    float c;
    int32_t at = (int32_t)n;
    memcpy(&c, pl->sums + i, sizeof c);
    memcpy(pl->off + i, &at, sizeof at);
    for (int64_t e = base + n, end = e + (int64_t)c; e < end; e++)
      pl->lor[e] = (int32_t)i;
    n += (int64_t)c;
  }
  /* the bins' pages are faulted in here, on every core: the tasks' copies home would take them one at a time */
  if (pl->bins && k->count > 0)
    memset(pl->bins + base + k->start, 0, (size_t)k->count * sizeof *pl->bins);
}

/* The message for the first LOR, in LOR order, whose count cannot be placed (the rare way out: one thread). */
static int first_misplaced(const char *func, const sproj_chunks *ch, const unsigned *order, const float *sums)
{
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    int64_t n = 0;
    for (int64_t i = ch->piece_first[q]; i < ch->piece_first[q] + (int64_t)ch->piece_len[q]; i++) {
      float c = sums[i];
      if (!placeable(c) || n + (int64_t)c > INT32_MAX)
        return sproj_fail(SPROJ_ERR_OVERFLOW, func, "LOR %lld: %g events (a piece holds at most 2^31-1)",
                          (long long)i, c);
      n += (int64_t)c;
    }
  }
  return sproj_fail(SPROJ_ERR_OVERFLOW, func, "more events than a piece holds (2^31-1)");
}

/* Memory for many events: huge pages where the system gives them on request (fewer faults), freed by free(). */
static void *huge_alloc(size_t bytes)
{
  void *p = NULL;
  if (bytes < ((size_t)4 << 20))
    return malloc(bytes);
  if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

int sproj_model_draw_events(const sproj_model *model, sproj_proj *data, const sproj_chunks *chunks, float scale,
                            uint64_t seed, int32_t **lor, int16_t **tof_bin, int64_t *num_events)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model || !data || !chunks || !lor || !num_events)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model, data, chunks, lor and num_events must not be NULL");
  if ((ret = check_sim_data(__func__, model, data, chunks)))
    return ret;
  const int64_t nl = model->lors->num_lors;
  if (nl > INT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%lld LORs: event LOR numbers are 32-bit", (long long)nl);
  const sproj_chunks *ch = chunks;
  /* the pieces in LOR order, without overlaps: the events come out in the order of their values */
  unsigned *order = malloc((size_t)ch->npieces * sizeof *order);
  /* one per-LOR array: the counts summed over TOF bins, then each LOR's first place (0.6 GB at the benchmark's scale) */
  _Static_assert(sizeof(float) == sizeof(int32_t), "a LOR's place takes its count's place");
  float *sums = malloc((size_t)nl * sizeof *sums);
  int32_t *off = (int32_t *)(void *)sums;
  int64_t *piece_event = malloc(((size_t)ch->npieces + 1) * sizeof *piece_event);
  int32_t *lors_out = NULL;
  int16_t *bins = NULL;
  sproj_proj *sp = NULL;
  struct placing pl = {.ch = chunks, .off = off};
  if (!order || !sums || !piece_event) {
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
    goto done;
  }
  struct piece_at *at = malloc((size_t)ch->npieces * sizeof *at);
  if (!at) {
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (unsigned q = 0; q < ch->npieces; q++)
    at[q] = (struct piece_at){ch->piece_first[q], q};
  qsort(at, ch->npieces, sizeof *at, cmp_piece_first);
  for (unsigned k = 0; k < ch->npieces; k++)
    order[k] = at[k].q;
  free(at);
  for (unsigned k = 1; k < ch->npieces; k++)
    if (ch->piece_first[order[k]] < ch->piece_first[order[k - 1]] + (int64_t)ch->piece_len[order[k - 1]]) {
      ret = SPROJ_FAIL(SPROJ_ERR_INVALID, "the chunking's chunks overlap: a LOR would be drawn twice");
      goto done;
    }
  sproj_progress_report("drawing the counts", 0.0);
  if ((ret = sproj_proj_register(&sp, sums, model->lors)) ||
      (ret = sproj_model_draw(model, data, chunks, scale, seed, 1, sp)) ||
      (ret = sproj_proj_sync(sp, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ)))
    goto done;
  /* every event's place: pieces in LOR order, LORs in order within them; counted and written by blocks of LORs on
   * every core (one thread took 4 s for the benchmark's 240 M events), the same places whatever the threads */
  pl.sums = sums;
  if ((ret = placing_blocks(__func__, &pl, order)))
    goto done;
  /* StarPU's idle CPU workers poll for tasks and would take half of every core: they sleep meanwhile (tasks
   * submitted by other threads wait, and nobody gets BUSY as with sproj_pause) */
  starpu_pause();
  sproj_run_blocks("counting the events", 0, pl.nblocks, place_count, &pl);
  starpu_resume();
  int64_t total = 0;
  int64_t b = 0;
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    piece_event[q] = total;
    for (int64_t in_piece = 0; b < pl.nblocks && pl.blocks[b].q == q; b++) {
      if (pl.blocks[b].bad || in_piece + pl.blocks[b].count > INT32_MAX) {
        ret = first_misplaced(__func__, ch, order, sums);
        goto done;
      }
      pl.blocks[b].start = in_piece;
      in_piece += pl.blocks[b].count;
      total += pl.blocks[b].count;
    }
  }
  /* where each piece's events end */
  int64_t *ends = malloc((size_t)ch->npieces * sizeof *ends);
  if (!ends) {
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    ends[q] = k + 1 < ch->npieces ? piece_event[order[k + 1]] : total;
  }
  lors_out = huge_alloc((size_t)(total > 0 ? total : 1) * sizeof *lors_out);
  if (tof_bin && model->num_values > 1)
    bins = huge_alloc((size_t)(total > 0 ? total : 1) * sizeof *bins);
  if (!lors_out || (tof_bin && model->num_values > 1 && !bins)) {
    free(ends);
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %lld events", (long long)total);
    goto done;
  }
  pl.piece_event = piece_event;
  pl.lor = lors_out;
  pl.bins = bins;
  /* the places are written over the counts: StarPU lets go of them first (its host copy is the valid one) */
  sproj_proj_unregister(sp);
  sp = NULL;
  starpu_pause();
  sproj_run_blocks("placing the events", 0, pl.nblocks, place_write, &pl);
  starpu_resume();
  if (bins) {
    sproj_progress_report("the events' TOF bins", 0.0);
    ret = emit_bins(__func__, model, data, ch, off, piece_event, ends, bins);
    sproj_progress_report("the events' TOF bins", 1.0);
  }
  free(ends);
  if (ret)
    goto done;
  *lor = lors_out;
  if (tof_bin)
    *tof_bin = bins;
  *num_events = total;
  lors_out = NULL;
  bins = NULL;
done:
  if (sp)
    sproj_proj_unregister(sp);
  free(pl.blocks);
  free(order);
  free(sums); /* and off, which it holds */
  free(piece_event);
  free(lors_out);
  free(bins);
  return ret;
}

int recon_submit_blurred(sproj_recon *r, sproj_image *x, sproj_image **src)
{
  *src = x;
  if (!r->blur)
    return SPROJ_OK;
  *src = r->xb;
  return recon_submit_gauss(r, x->handle, r->xb->handle);
}

/* One OS-EM update: blur, forward, ratio, zero, back, blur, update, all as tasks. */
static int submit_subset(sproj_recon *r, int k)
{
  const int *list = r->subsets.idx + r->subsets.start[k];
  int num = r->subsets.start[k + 1] - r->subsets.start[k], ret;
  sproj_image *src, *corr = r->bp;
  if ((ret = recon_submit_blurred(r, r->x, &src)) || (ret = recon_model_project(r->model, 0, src, r->p, r->chunks, list, num)) ||
      (ret = recon_submit_terms(r, list, num, SPROJ_RATIO_EM, NULL)) || (ret = recon_submit_zero(r->bp->handle)) ||
      (ret = recon_model_project(r->model, 1, r->bp, r->p, r->chunks, list, num)) ||
      (r->hook.reduce && (ret = r->hook.reduce(r->hook.user, r->bp))))
    return ret;
  if (r->blur) {
    corr = r->xb;
    if ((ret = recon_submit_gauss(r, r->bp->handle, r->xb->handle)))
      return ret;
  }
  return submit_update(r, corr->handle, recon_subset_sens(r, k)->handle);
}

/* ---- creation ---- */
/* With several GPUs and projections on GPUs alone, every chunk's LORs and per-LOR inputs (TOF bins, data,
 * multiplicative factors, additive terms) are uploaded to one GPU before the first task: the chunks of each subset
 * spread evenly over the GPUs (each to the one with the fewest of that subset's LORs, ties to the one with the
 * fewest in all), so that every subset keeps every GPU busy. The projection and ratio tasks then follow their LORs
 * (sproj_workers_holding) and the forward values, ratios and inputs never move again: between iterations only the
 * image crosses between the GPUs. Skipped when a GPU could not hold its share four times over; a chunk that does not
 * fit is simply not uploaded (its tasks go wherever the scheduler puts them). */
static int spread_chunks(const char *func, sproj_recon *r)
{
  const sproj_chunks *ch = r->chunks;
  const sproj_model *md = r->model;
  int ngpus = sproj_rt.ngpus;
  /* tasks follow their LORs only with 2..SPROJ_MAX_STICKY_GPUS GPUs (sproj_workers_holding) */
  if (ngpus < 2 || !sproj_rt.gpu_set_workers || sproj_rt.where != STARPU_CUDA)
    return SPROJ_OK;
  int64_t lors = ch->lors->num_lors;
  size_t per_lor = 6 * sizeof(float) + (ch->lors->bins ? sizeof(int16_t) : 0) +
                   (size_t)md->num_values * sizeof(float) * (r->data != NULL) +
                   (md->add ? (size_t)(md->add_per_lor ? 1 : md->num_values) * sizeof(float) : 0) +
                   (md->mult ? sizeof(float) : 0);
  if (sproj_gpu_memory_below(4 * (size_t)(lors / ngpus + 1) * per_lor))
    return SPROJ_OK;
  starpu_data_handle_t *arrays[4];
  int narrays = 0;
  if ((ch->lors->bins && sproj_vec_children(ch->lors->bins, ch, &arrays[narrays++])) ||
      (r->data && sproj_vec_children(&r->data->vec, ch, &arrays[narrays++])) ||
      (md->mult && sproj_vec_children(md->mult, ch, &arrays[narrays++])) ||
      (md->add && sproj_vec_children(md->add, ch, &arrays[narrays++])))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int64_t total[SPROJ_MAX_STICKY_GPUS] = {0}, in_subset[SPROJ_MAX_STICKY_GPUS];
  int *gpu_of = malloc((size_t)ch->num_chunks * sizeof *gpu_of), *list = malloc((size_t)ch->num_chunks * sizeof *list);
  int *run_gpu = malloc((size_t)(ch->nruns ? ch->nruns : 1) * sizeof *run_gpu);
  if (!gpu_of || !list || !run_gpu) {
    free(gpu_of);
    free(list);
    free(run_gpu);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int c = 0; c < ch->num_chunks; c++)
    gpu_of[c] = -1;
  for (unsigned q = 0; q < ch->nruns; q++)
    run_gpu[q] = -1;
  for (int k = 0; k < r->subsets.num; k++) {
    memset(in_subset, 0, sizeof in_subset);
    for (int j = r->subsets.start[k]; j < r->subsets.start[k + 1]; j++) {
      int c = r->subsets.idx[j], best = 0;
      for (int g = 1; g < ngpus; g++)
        if (in_subset[g] < in_subset[best] || (in_subset[g] == in_subset[best] && total[g] < total[best]))
          best = g;
      /* small chunks whose LORs share a run (one LOR handle) go where the run went first */
      int run = ch->piece_start[c] < ch->piece_start[c + 1] ? ch->piece_run[ch->piece_start[c]] : -1;
      if (run >= 0 && run_gpu[run] >= 0)
        best = run_gpu[run];
      for (int q = ch->piece_start[c]; q < ch->piece_start[c + 1]; q++)
        if (run_gpu[ch->piece_run[q]] < 0)
          run_gpu[ch->piece_run[q]] = best;
      gpu_of[c] = best;
      in_subset[best] += ch->count[c];
      total[best] += ch->count[c];
    }
  }
  int ret = SPROJ_OK;
  for (int g = 0; g < ngpus && !ret; g++) {
    int num = 0;
    for (int c = 0; c < ch->num_chunks; c++)
      if (gpu_of[c] == g)
        list[num++] = c;
    int nh = 0, nr = 0;
    starpu_data_handle_t *h = num && narrays ? sproj_piece_handles(ch, list, num, arrays, narrays, &nh) : NULL;
    starpu_data_handle_t *runs = num ? sproj_run_handles(ch, list, num, &nr) : NULL;
    if (num && ((narrays && !h) || !runs))
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    else if (nr)
      ret = sproj_upload_handles(runs, nr, &sproj_rt.gpu_node[g], 1);
    if (!ret && nh)
      ret = sproj_upload_handles(h, nh, &sproj_rt.gpu_node[g], 1);
    free(h);
    free(runs);
  }
  free(gpu_of);
  free(list);
  free(run_gpu);
  return ret;
}

/* Checks a registered vector's values on the host (waits for it and gathers it there). */
static int check_handle_values(const char *func, const char *what, const char *elem, starpu_data_handle_t h, int64_t n,
                               int per_elem)
{
  if (starpu_data_acquire_on_node(h, STARPU_MAIN_RAM, STARPU_R) != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "starpu_data_acquire failed");
  int ret = check_values(func, what, elem, (const float *)starpu_vector_get_local_ptr(h), n, per_elem);
  starpu_data_release_on_node(h, STARPU_MAIN_RAM);
  return ret;
}

/* Sensitivities G^T A^T m (non-TOF A) over lists of chunks of the sensitivity model (lists NULL: one of the whole
 * set), each into its own resident image. */
static int make_sensitivities(const char *func, sproj_recon *r, const sproj_chunks *ch, const struct chunk_lists *l)
{
  const sproj_model *sm = r->sens_model;
  int64_t n = sm->lors->num_lors;
  int num = l ? l->num : 1, ret = SPROJ_OK;
  r->sens = calloc(num, sizeof *r->sens);
  /* the model's factors themselves as the values back projected (only read: a second handle on them is safe), or
   * ones when it has none */
  float *m = sm->mult_host ? NULL : malloc(n * sizeof *m);
  if (!r->sens || (!sm->mult_host && !m)) {
    free(m);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int64_t i = 0; m && i < n; i++)
    m[i] = 1.0f;
  sproj_proj *pm;
  if ((ret = sproj_proj_register(&pm, m ? m : (float *)sm->mult_host, sm->lors))) {
    free(m);
    return ret;
  }
  r->num_sens = num;
  for (int k = 0; k < num && !ret; k++) {
    if ((ret = recon_temp_image(func, &r->sens[k], r->x)))
      break;
    sproj_image *into = r->blur ? r->bp : r->sens[k];
    const int *list = l ? l->idx + l->start[k] : NULL;
    int len = l ? l->start[k + 1] - l->start[k] : 0;
    if ((ret = recon_submit_zero(into->handle)))
      break;
    ret = l ? sproj_back_chunks(into, pm, ch, list, len) : sproj_back(into, pm, NULL, SPROJ_ALL_CHUNKS);
    if (!ret)
      ret = sproj_flush_pending();
    if (!ret && r->hook.reduce)
      ret = r->hook.reduce(r->hook.user, into);
    if (!ret && r->blur)
      ret = recon_submit_gauss(r, r->bp->handle, r->sens[k]->handle);
  }
  sproj_proj_unregister(pm); /* waits for the back projections reading it */
  free(m);
  if (ret == SPROJ_ERR_STARPU || ret == SPROJ_ERR_NOMEM)
    return sproj_fail(ret, func, "could not submit the sensitivity computation");
  return ret;
}

/* The listmode objective's background terms: the sum of the sensitivity model's background over all its LORs, and
 * each subset's share, the sum over its sensitivity chunks (lists given) or the whole divided by S (one sensitivity
 * for all subsets, as the gradient's sensitivity term). */
static int sens_backgrounds(const char *func, sproj_recon *r, const sproj_chunks *ch, const struct chunk_lists *l)
{
  int S = r->subsets.num;
  r->sens_subset_background = calloc(S, sizeof *r->sens_subset_background);
  if (!r->sens_subset_background)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  const sproj_model *sm = r->sens_model;
  if (!sm->add_host && sm->add_flat == 0.0f)
    return SPROJ_OK;
  const float *a = sm->add_host;
  /* a flat background: the same value in every one of the model's values */
  int64_t per_lor = a && sm->add_per_lor ? 1 : sm->num_values, n = sm->lors->num_lors * per_lor;
  if (!a) {
    r->sens_background = (double)sm->add_flat * (double)n;
    for (int k = 0; k < S; k++) {
      int64_t m = 0;
      if (!l) {
        r->sens_subset_background[k] = r->sens_background / S;
        continue;
      }
      for (int j = l->start[k]; j < l->start[k + 1]; j++)
        for (int q = ch->range_start[l->idx[j]]; q < ch->range_start[l->idx[j] + 1]; q++)
          m += ch->range_count[q] * per_lor;
      r->sens_subset_background[k] = (double)sm->add_flat * (double)m;
    }
    return SPROJ_OK;
  }
  for (int64_t i = 0; i < n; i++)
    r->sens_background += a[i];
  for (int k = 0; k < S; k++) {
    if (!l) {
      r->sens_subset_background[k] = r->sens_background / S;
      continue;
    }
    double sum = 0.0;
    for (int j = l->start[k]; j < l->start[k + 1]; j++) {
      int c = l->idx[j];
      for (int q = ch->range_start[c]; q < ch->range_start[c + 1]; q++)
        for (int64_t i = ch->range_first[q] * per_lor; i < (ch->range_first[q] + ch->range_count[q]) * per_lor; i++)
          sum += a[i];
    }
    r->sens_subset_background[k] = sum;
  }
  return SPROJ_OK;
}

static void recon_free(sproj_recon *r)
{
  for (int k = 0; k < r->num_sens; k++)
    sproj_image_drop(r->sens[k]);
  free(r->sens);
  free(r->sens_subset_background);
  sproj_image_drop(r->xb);
  sproj_image_drop(r->bp);
  if (r->scratch)
    starpu_data_unregister_no_coherency(r->scratch);
  /* the devices' images go first: dropping an image waits for the tasks that write it, and the back projections
   * into them are the last tasks to read the forward values, which are discarded next without waiting */
  recon_devices_drop_images(r);
  /* the forward values stay where they were computed: nothing reads them on the host */
  sproj_proj *temps[2] = {r->p, r->px};
  for (int t = 0; t < 2; t++) {
    if (!temps[t])
      continue;
    sproj_flush_held();
    sproj_vec_discard(&temps[t]->vec);
    free(temps[t]);
    sproj_count_object(-1);
  }
  free(r->p_host);
  free(r->px_host);
  recon_small_free(r);
  recon_devices_free(r);
  recon_lists_free(&r->subsets);
  if (r->model)
    __atomic_sub_fetch(&r->model->users, 1, __ATOMIC_RELAXED);
  if (r->sens_model)
    __atomic_sub_fetch(&r->sens_model->users, 1, __ATOMIC_RELAXED);
  free(r);
}

/* Checks everything that can be checked before anything is registered. */
static int check_config(const char *func, sproj_image *x, const struct sproj_recon_config *c)
{
  if (!x || !c)
    return sproj_fail(SPROJ_ERR_NULL, func, "recon, x and cfg must not be NULL");
  if (!c->model || !c->chunks)
    return sproj_fail(SPROJ_ERR_NULL, func, "cfg->model and cfg->chunks must not be NULL");
  const sproj_model *md = c->model;
  if (c->chunks->lors != md->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the chunking belongs to another LOR set than the model");
  if (c->data) {
    if (c->data->vec.lors != md->lors)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data belong to another LOR set than the model");
    if (c->data->num_bins != md->num_values)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data hold %d values per LOR, the model %d", c->data->num_bins,
                        md->num_values);
  } else if (!c->sens_model) {
    return sproj_fail(SPROJ_ERR_NULL, func, "listmode (no data) needs cfg->sens_model for the sensitivity");
  }
  const sproj_model *sm = c->sens_model ? c->sens_model : md;
  if (c->sens_model && c->sens_model->lors->bins && c->sens_model->tof)
    return sproj_fail(SPROJ_ERR_INVALID, func, "the sensitivity model is a listmode model: it needs the scanner's LORs");
  if (c->sens_chunks && c->sens_chunks->lors != sm->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the sensitivity chunking belongs to another LOR set");
  if (!c->sens_chunks && (c->sens_subset_chunks || c->sens_subset_sizes))
    return sproj_fail(SPROJ_ERR_NULL, func, "sensitivity subsets need cfg->sens_chunks");
  if (!isfinite(c->max_ratio))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "cfg->max_ratio is not finite");
  if (c->max_ratio < 0.0f)
    return sproj_fail(SPROJ_ERR_RANGE, func, "cfg->max_ratio %g is negative (0: no cap)", c->max_ratio);
  if (!isfinite(c->small_fraction))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "cfg->small_fraction is not finite");
  if (c->small_fraction < 0.0f || c->small_fraction >= 1.0f)
    return sproj_fail(SPROJ_ERR_RANGE, func, "cfg->small_fraction %g is outside 0 .. 1 (0: no rule; STIR: 1e-6)",
                      c->small_fraction);
  return SPROJ_OK;
}

/* sproj_recon_create, reporting as func, with an optional hook (the distributed layer's reduction). */
int sproj_recon_create_hooked(const char *func, sproj_recon **recon, sproj_image *x, const struct sproj_recon_config *cfg,
                              const struct sproj_recon_hook *hook)
{
  int ret = sproj_check_init_flush(func);
  if (ret)
    return ret;
  if (!recon)
    return sproj_fail(SPROJ_ERR_NULL, func, "recon, x and cfg must not be NULL");
  if ((ret = check_config(func, x, cfg)))
    return ret;
  struct sproj_gauss_arg gauss;
  int bad_axis = sproj_gauss_arg_init(&gauss, x->geom.n, x->geom.voxel_size, cfg->model->fwhm);
  if (bad_axis >= 0)
    return sproj_fail(SPROJ_ERR_RANGE, func, "a FWHM of %g along axis %d spans more than %d voxels each side at 3 sigma",
                      cfg->model->fwhm[bad_axis], bad_axis, SPROJ_GAUSS_MAX_RADIUS);
  struct chunk_lists subsets = {0}, sens_lists = {0};
  const sproj_chunks *sens_chunks = cfg->sens_chunks;
  if ((ret = lists_make(func, "subsets", cfg->chunks, cfg->num_subsets, cfg->subset_chunks, cfg->subset_sizes,
                        &subsets)))
    return ret;
  if (sens_chunks && (ret = lists_make(func, "sensitivity subsets", sens_chunks, cfg->num_subsets,
                                       cfg->sens_subset_chunks, cfg->sens_subset_sizes, &sens_lists))) {
    recon_lists_free(&subsets);
    return ret;
  }
  /* the values, on the host, once */
  const struct sproj_geom *g = &x->geom;
  int64_t nvox = (int64_t)g->n[0] * g->n[1] * g->n[2];
  if ((ret = check_handle_values(func, "the initial image", "voxel", x->handle, nvox, 1)) == SPROJ_OK && cfg->data &&
      !cfg->data->model_made) {
    pthread_mutex_lock(&cfg->data->vec.lock);
    ret = check_handle_values(func, "the data", "LOR", cfg->data->vec.handle,
                              cfg->data->vec.lors->num_lors * cfg->data->num_bins, cfg->data->num_bins);
    pthread_mutex_unlock(&cfg->data->vec.lock);
  }
  if (ret) {
    recon_lists_free(&subsets);
    recon_lists_free(&sens_lists);
    return ret;
  }

  sproj_recon *r = calloc(1, sizeof *r);
  if (!r) {
    recon_lists_free(&subsets);
    recon_lists_free(&sens_lists);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  r->x = x;
  r->model = (sproj_model *)cfg->model;
  r->sens_model = (sproj_model *)(cfg->sens_model ? cfg->sens_model : cfg->model);
  __atomic_add_fetch(&r->model->users, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&r->sens_model->users, 1, __ATOMIC_RELAXED);
  r->data = cfg->data;
  r->chunks = cfg->chunks;
  r->subsets = subsets;
  r->gauss = gauss;
  r->blur = gauss.radius[0] > 0 || gauss.radius[1] > 0 || gauss.radius[2] > 0;
  r->objective = cfg->objective != 0;
  r->max_ratio = cfg->max_ratio;
  r->small_fraction = cfg->data ? cfg->small_fraction : 0.0f;
  r->sens_factor = 1.0f;
  if (hook)
    r->hook = *hook;
  if ((ret = recon_temp_proj(func, &r->p, &r->p_host, r->model)) || (ret = recon_temp_image(func, &r->bp, x)) ||
      (r->blur && (ret = recon_temp_image(func, &r->xb, x))))
    goto fail;
  if (r->blur)
    starpu_vector_data_register(&r->scratch, -1, 0, (uint32_t)nvox, sizeof(float));
  /* several devices: each owns its shares from now on; else the chunks are spread over the GPUs */
  if ((ret = recon_devices_create(func, r)) || (!r->dev && (ret = spread_chunks(func, r))) ||
      (ret = recon_small_create(func, r)))
    goto fail;

  if (sens_chunks) {
    ret = make_sensitivities(func, r, sens_chunks, &sens_lists);
  } else if (!cfg->sens_model && cfg->data) {
    ret = make_sensitivities(func, r, r->chunks, &r->subsets); /* sinogram: each subset's own */
  } else {
    ret = make_sensitivities(func, r, NULL, NULL);
    r->sens_factor = 1.0f / (float)cfg->num_subsets;
  }
  if (!ret && r->dev)
    ret = recon_devices_sensitivities(func, r);
  if (ret)
    goto fail;
  /* Only the listmode objective adds the background of the sensitivity LORs. Summed for every model, it cost a TOF
   * sinogram reconstruction 7 s (4.2 G values of the benchmark, added in one thread) before its first iteration. */
  if (!cfg->data && (ret = sens_backgrounds(func, r, sens_chunks, sens_chunks ? &sens_lists : NULL)))
    goto fail;
  recon_lists_free(&sens_lists);
  *recon = r;
  return SPROJ_OK;
fail:
  recon_lists_free(&sens_lists);
  recon_free(r);
  return ret;
}

int sproj_recon_create(sproj_recon **recon, sproj_image *x, const struct sproj_recon_config *cfg)
{
  return sproj_recon_create_hooked(__func__, recon, x, cfg, NULL);
}

int sproj_recon_destroy(sproj_recon *recon)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon)
    return SPROJ_OK;
  recon_free(recon);
  return SPROJ_OK;
}

/* ---- iterations and objective ---- */
static double seconds_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
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

int sproj_recon_objective(sproj_recon *recon, double *nll)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon || !nll)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "recon and nll must not be NULL");
  return recon_nll(__func__, recon, recon->x, -1, nll);
}

int sproj_recon_iterate(sproj_recon *recon, int num_iterations, sproj_recon_callback callback, void *user)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "recon is NULL");
  if (num_iterations < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_iterations = %d is negative", num_iterations);
  double t0 = seconds_now();
  if (num_iterations > 0 && recon->dev && (ret = recon_devices_begin(recon)))
    return SPROJ_FAIL(ret, "could not submit the image's slabs");
  for (int it = 0; it < num_iterations; it++) {
    for (int k = 0; k < recon->subsets.num; k++)
      if ((ret = recon->dev ? recon_devices_subset(recon, k) : submit_subset(recon, k)))
        return ret == SPROJ_ERR_STARPU || ret == SPROJ_ERR_NOMEM ? SPROJ_FAIL(ret, "could not submit subset %d", k)
                                                                 : ret;
    recon->iterations++;
    if (!callback)
      continue;
    struct sproj_recon_progress pr = {recon->iterations, recon->subsets.num, 0.0, recon->objective, 0.0};
    if (recon->objective && (ret = recon_nll(__func__, recon, recon->x, -1, &pr.objective)))
      return ret;
    if ((ret = sproj_image_sync(recon->x, SPROJ_SYNC_READ)))
      return ret;
    pr.elapsed = seconds_now() - t0;
    if (callback(&pr, user))
      break;
  }
  return SPROJ_OK;
}

int sproj_recon_sensitivity(sproj_recon *recon, int subset, float *out)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon || !out)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "recon and out must not be NULL");
  if (subset < 0 || subset >= recon->subsets.num)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "subset %d outside 0..%d", subset, recon->subsets.num - 1);
  starpu_data_handle_t h = recon_subset_sens(recon, subset)->handle;
  if (starpu_data_acquire_on_node(h, STARPU_MAIN_RAM, STARPU_R) != 0)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
  const float *s = (const float *)starpu_vector_get_local_ptr(h);
  uint32_t n = starpu_vector_get_nx(h);
  for (uint32_t v = 0; v < n; v++)
    out[v] = s[v] * recon->sens_factor;
  starpu_data_release_on_node(h, STARPU_MAIN_RAM);
  return SPROJ_OK;
}
