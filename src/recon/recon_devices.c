/* SPDX-License-Identifier: Apache-2.0 */
/* recon_devices.c: OS-EM over several devices. Each device owns an equal share of every subset's LORs for the whole
 * run (their data, factors and forward values stay on it), back-projects its share into an image of its own, and the
 * devices' images are summed slab by slab: device s ends with the sum of slab s of every device's image and updates
 * slab s of the estimate, then every device gathers the updated slabs into its own copy of the estimate. With a power
 * of two of devices the sum is a recursive halving (reduce-scatter) whose last step lets both devices of a pair update
 * the pair's two slabs, and the gather a recursive doubling (all-gather): 2 log2 n - 1 copies into each device;
 * otherwise every device sends each slab to its owner directly (2 (n - 1) copies into each device). In a
 * reconstruction over several processes (a hook that sums parts of the image across them) the halving runs one step
 * further, so that each device holds its process's sum of its own slab, which the hook sums across the processes
 * before the device updates it: each process sends one image's worth in all, split over its devices. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "recon_internal.h"

struct recon_devices {
  int n;                                   /* devices */
  sproj_chunks *owned;                     /* chunk k * n + d: device d's share of subset k */
  const sproj_chunks *user_chunks;         /* the caller's chunking and subsets, which the owned ones replace */
  struct chunk_lists user_subsets;
  uint32_t first[SPROJ_MAX_DEVICES + 1];   /* slab s: voxels first[s] .. first[s+1]-1 */
  sproj_image *x[SPROJ_MAX_DEVICES];       /* each device's copy of the estimate; x[0] is the caller's image */
  sproj_image *xb[SPROJ_MAX_DEVICES];      /* with a resolution model: its blurred copy */
  sproj_image *bp[SPROJ_MAX_DEVICES];      /* each device's back projection of its share (and blurred, bpb) */
  sproj_image *bpb[SPROJ_MAX_DEVICES];
  starpu_data_handle_t xs[SPROJ_MAX_DEVICES]; /* the slabs of the estimate device d updates, current after it */
  starpu_data_handle_t *bs;                /* direct: [d * n + s]: slab s of device d's back projection */
  int levels;                              /* log2 n for a power of two n (halving and doubling), else 0 (direct) */
  int pairs;                               /* halving: the last step updates a pair's two slabs on both devices (1), or
                                            * halves once more and each device updates its slab (0: with a hook) */
  /* halving and doubling, device d, level j: what d sends at halving step j, what it keeps after it (j >= 1), and
   * what it knows after doubling step j (j >= 1); the slabs it updates (its pair's two, or its own) summed over
   * every device of the process (sum); see halve_update_double */
  starpu_data_handle_t sent[SPROJ_MAX_DEVICES][3], kept[SPROJ_MAX_DEVICES][3], known[SPROJ_MAX_DEVICES][3];
  starpu_data_handle_t sum[SPROJ_MAX_DEVICES];
  starpu_data_handle_t *ss;                /* [k * n + s]: slab s of sensitivity k */
  int nsens;
  int fresh;                               /* the first subset of an iterate call reads the caller's image */
};

/* ---- tasks on one device ---- */
/* (one of its workers in turn, as the projections of its chunks: sproj_workers_holding) */
static int on_device(struct starpu_codelet *cl, int d, void *arg, size_t argsize, struct starpu_data_descr *descr,
                     int nbuffers)
{
  return recon_insert_status(starpu_task_insert(cl, STARPU_CL_ARGS, arg, argsize, STARPU_DATA_MODE_ARRAY, descr, nbuffers,
                                                STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where,
                                                STARPU_SCHED_CTX, sproj_rt.ctx, STARPU_EXECUTE_ON_WORKER,
                                                sproj_device_worker(d), 0));
}

static int zero_on(int d, starpu_data_handle_t h)
{
  struct starpu_data_descr descr = {h, STARPU_W};
  return on_device(&sproj_image_zero_cl, d, NULL, 0, &descr, 1);
}

static int gauss_on(sproj_recon *r, int d, starpu_data_handle_t in, starpu_data_handle_t out)
{
  struct sproj_gauss_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  *arg = r->gauss;
  struct starpu_data_descr descr[3] = {{in, STARPU_R}, {out, STARPU_W}, {r->scratch, STARPU_SCRATCH}};
  return on_device(&sproj_gauss3d_cl, d, arg, sizeof *arg, descr, 3);
}

/* Pieces of img (piece[i] from voxel first[i] of img, i < count) cut (to_slabs) or put together, on device d. */
static int pieces_on(int d, starpu_data_handle_t img, const starpu_data_handle_t *piece, const uint32_t *first,
                     int count, int to_slabs)
{
  struct sproj_slabs_arg *arg = calloc(1, sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  struct starpu_data_descr descr[1 + SPROJ_MAX_DEVICES];
  descr[0] = (struct starpu_data_descr){img, to_slabs ? STARPU_R : STARPU_W};
  arg->nslabs = count;
  for (int i = 0; i < count; i++) {
    arg->first[i] = first[i];
    descr[1 + i] = (struct starpu_data_descr){piece[i], to_slabs ? STARPU_W : STARPU_R};
  }
  return on_device(to_slabs ? &sproj_slab_split_cl : &sproj_slab_gather_cl, d, arg, sizeof *arg, descr, 1 + count);
}

/* Slabs first_slab .. first_slab + count - 1 of img (handles slab[0 .. count-1]) cut or put together, on device d. */
static int slabs_on(const struct recon_devices *D, int d, starpu_data_handle_t img, const starpu_data_handle_t *slab,
                    int first_slab, int count, int to_slabs)
{
  return pieces_on(d, img, slab, &D->first[first_slab], count, to_slabs);
}

/* ---- halving and doubling (n = 2^levels devices) ---- */
/* At level j a device pairs with the device whose number differs in bit levels - 1 - j (n / 2 apart first). Before
 * halving step j, device d holds partial sums of the 2h slabs from (d / 2h) 2h, h = n >> (j + 1); it keeps the half
 * that holds slab d and sends the other half to its partner, which keeps that one; after the last step it holds the
 * sum of slab d. The doubling runs the steps backwards: at step j each device sends the slabs it knows (the half it
 * kept at halving step j) and receives its partner's. */
static int half_of(int n, int j)
{
  return n >> (j + 1);
}
static int kept_slab(int n, int d, int j)
{
  int h = half_of(n, j);
  return d / h * h;
}
static int sent_slab(int n, int d, int j)
{
  int h = half_of(n, j);
  return (d / h ^ 1) * h;
}
static int partner(int n, int d, int j)
{
  return d ^ half_of(n, j);
}

/* The slabs device d updates: its own with the direct exchange, its pair's two (d and d ^ 1) with halving and
 * doubling, whose last step sums both slabs on both devices of a pair instead of halving them once more (pairs). */
static int update_slab(const struct recon_devices *D, int d)
{
  return D->pairs ? d & ~1 : d;
}
static int update_count(const struct recon_devices *D)
{
  return D->pairs ? 2 : 1;
}

/* The halving steps that cut: every level but the pair's last with pairs, else every level. */
static int cuts(const struct recon_devices *D)
{
  return D->levels - D->pairs;
}

/* log2 n when the sum over n devices is a halving and doubling (n a power of two, unless SPROJ_SLAB_EXCHANGE=direct
 * asks for the direct exchange on any count, to compare the two), else 0. */
static int halving_levels(int n)
{
  const char *exchange = getenv("SPROJ_SLAB_EXCHANGE");
  int levels = 0;
  while ((1 << levels) < n)
    levels++;
  return (1 << levels) != n || (exchange && !strcmp(exchange, "direct")) ? 0 : levels;
}

/* ---- set-up ---- */
/* Whether the reconstruction can run over the devices: several, the image in several slabs, a distributed reduction
 * only with a halving (its hook then sums each device's slab across processes), not reproducible (its sums are
 * fixed-point ones of one image), and no chunk in two subsets (the shares would overlap). */
static int devices_apply(const sproj_recon *r)
{
  int n = sproj_device_count();
  const struct sproj_geom *g = &r->x->geom;
  /* the small-value rule's groups are the caller's chunks, which the owned chunking cuts across */
  if (n < 2 || (r->hook.reduce && (!r->hook.reduce_parts || !halving_levels(n))) || r->x->reproducible ||
      r->small_fraction > 0.0f ||
      (int64_t)g->n[0] * g->n[1] * g->n[2] < n)
    return 0;
  const sproj_chunks *ch = r->chunks;
  char *seen = calloc((size_t)ch->num_chunks, 1);
  if (!seen)
    return 0;
  int ok = 1;
  for (int j = 0; j < r->subsets.start[r->subsets.num] && ok; j++)
    ok = !seen[r->subsets.idx[j]]++;
  for (int k = 0; k < r->subsets.num && ok; k++) {
    int64_t lors = 0;
    for (int j = r->subsets.start[k]; j < r->subsets.start[k + 1]; j++)
      lors += ch->count[r->subsets.idx[j]];
    ok = lors >= n; /* every device gets at least one LOR of every subset */
  }
  free(seen);
  return ok;
}

/* The owned chunking: subset k's LORs, its chunks' ranges in the subset's order, cut into n consecutive shares of
 * (nearly) equal LOR counts, share d homed on device d. */
static int build_owned(const char *func, sproj_recon *r, struct recon_devices *D)
{
  const sproj_chunks *ch = r->chunks;
  int n = D->n, S = r->subsets.num, nchunks = S * n;
  int max_ranges = 0;
  for (int j = 0; j < r->subsets.start[S]; j++) {
    int c = r->subsets.idx[j];
    max_ranges += ch->range_start[c + 1] - ch->range_start[c];
  }
  /* a share may start and end inside a range: at most one range more per share */
  int cap = max_ranges + nchunks;
  int *rs = malloc((size_t)(nchunks + 1) * sizeof *rs);
  int64_t *first = malloc((size_t)cap * sizeof *first), *count = malloc((size_t)cap * sizeof *count);
  int8_t *home = malloc((size_t)nchunks * sizeof *home);
  int ret = SPROJ_OK;
  if (!rs || !first || !count || !home) {
    ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    goto out;
  }
  int nr = 0;
  for (int k = 0; k < S; k++) {
    int64_t total = 0, done = 0;
    for (int j = r->subsets.start[k]; j < r->subsets.start[k + 1]; j++)
      total += ch->count[r->subsets.idx[j]];
    int d = 0;
    int64_t end = total / n; /* where share d ends, in the subset's LORs */
    rs[k * n] = nr;
    home[k * n] = 0;
    for (int j = r->subsets.start[k]; j < r->subsets.start[k + 1]; j++) {
      int c = r->subsets.idx[j];
      for (int q = ch->range_start[c]; q < ch->range_start[c + 1]; q++) {
        int64_t at = ch->range_first[q], left = ch->range_count[q];
        while (left > 0) {
          int64_t take = end - done < left ? end - done : left;
          first[nr] = at;
          count[nr++] = take;
          at += take;
          left -= take;
          done += take;
          if (done == end && d < n - 1) {
            d++;
            rs[k * n + d] = nr;
            home[k * n + d] = (int8_t)d;
            end = total * (d + 1) / n;
          }
        }
      }
    }
  }
  rs[nchunks] = nr;
  ret = sproj_chunks_build_owned(func, &D->owned, ch->lors, nchunks, rs, first, count, home);
out:
  free(rs);
  free(first);
  free(count);
  free(home);
  return ret;
}

/* Copies each device's LORs and per-LOR inputs (TOF bins, data, factors, background) to it ahead of the first task,
 * when the devices are GPUs that can hold their shares four times over (the projections would move them anyway):
 * chunk k * n + d to device d. */
static int upload_shares(const char *func, sproj_recon *r, struct recon_devices *D)
{
  const sproj_chunks *ch = D->owned;
  if (sproj_rt.where != STARPU_CUDA)
    return SPROJ_OK;
  int *dev = malloc((size_t)ch->num_chunks * sizeof *dev);
  if (!dev)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (int c = 0; c < ch->num_chunks; c++)
    dev[c] = c % D->n;
  unsigned node[SPROJ_MAX_DEVICES];
  for (int d = 0; d < D->n; d++)
    node[d] = sproj_device_node(d);
  int ret = recon_upload_inputs(func, r, ch, D->n, dev, node);
  free(dev);
  return ret;
}

static int temp_image(const char *func, sproj_image **out, const sproj_image *like, int owner)
{
  int ret = recon_temp_image(func, out, like);
  if (!ret)
    (*out)->owner = owner;
  return ret;
}

/* A handle of slabs s .. s + count - 1, in memory StarPU allocates where it is used. */
static int slabs_handle(starpu_data_handle_t *h, const struct recon_devices *D, int s, int count)
{
  starpu_vector_data_register(h, -1, 0, D->first[s + count] - D->first[s], sizeof(float));
  return *h ? SPROJ_OK : SPROJ_ERR_STARPU;
}

static int slab_handle(starpu_data_handle_t *h, const struct recon_devices *D, int s)
{
  return slabs_handle(h, D, s, 1);
}

int recon_devices_create(const char *func, sproj_recon *r)
{
  if (!devices_apply(r))
    return SPROJ_OK;
  struct recon_devices *D = calloc(1, sizeof *D);
  if (!D)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int n = D->n = sproj_device_count(), ret;
  const struct sproj_geom *g = &r->x->geom;
  uint64_t nvox = (uint64_t)g->n[0] * g->n[1] * g->n[2];
  for (int s = 0; s <= n; s++)
    D->first[s] = (uint32_t)(nvox * (uint64_t)s / (uint64_t)n);
  r->dev = D; /* from here on recon_devices_free undoes whatever was made */
  if ((ret = build_owned(func, r, D)))
    return ret;
  /* the reconstruction now works on the owned chunking: subset k is chunks k * n .. k * n + n - 1 */
  D->user_chunks = r->chunks;
  D->user_subsets = r->subsets;
  struct chunk_lists owned = {r->subsets.num, malloc((size_t)(r->subsets.num + 1) * sizeof(int)),
                              malloc((size_t)r->subsets.num * n * sizeof(int))};
  if (!owned.start || !owned.idx) {
    recon_lists_free(&owned);
    r->subsets = (struct chunk_lists){0};
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int k = 0; k <= owned.num; k++)
    owned.start[k] = k * n;
  for (int c = 0; c < owned.num * n; c++)
    owned.idx[c] = c;
  r->chunks = D->owned;
  r->subsets = owned;
  D->x[0] = r->x;
  for (int d = 0; d < n; d++) {
    if ((d > 0 && (ret = temp_image(func, &D->x[d], r->x, -1))) || (ret = temp_image(func, &D->bp[d], r->x, d)) ||
        (r->blur && ((ret = temp_image(func, &D->xb[d], r->x, -1)) || (ret = temp_image(func, &D->bpb[d], r->x, -1)))))
      return ret;
  }
  D->levels = halving_levels(n);
  D->pairs = D->levels && !r->hook.reduce_parts;
  for (int d = 0; d < n; d++)
    if (slabs_handle(&D->xs[d], D, update_slab(D, d), update_count(D)))
      return sproj_fail(SPROJ_ERR_STARPU, func, "could not register a slab");
  if (D->levels) {
    for (int d = 0; d < n; d++) {
      for (int j = 0; j < cuts(D); j++) {
        int h = half_of(n, j);
        if (slabs_handle(&D->sent[d][j], D, sent_slab(n, d, j), h) ||
            (j > 0 && slabs_handle(&D->kept[d][j], D, kept_slab(n, d, j), h)) ||
            (j > 0 && slabs_handle(&D->known[d][j], D, kept_slab(n, d, j - 1), 2 * h)))
          return sproj_fail(SPROJ_ERR_STARPU, func, "could not register a slab");
      }
      if (cuts(D) && slabs_handle(&D->sum[d], D, update_slab(D, d), update_count(D)))
        return sproj_fail(SPROJ_ERR_STARPU, func, "could not register a slab");
      /* summed across processes by the hook, as an image would be */
      if (r->hook.reduce_parts)
        starpu_data_set_reduction_methods(D->sum[d], &sproj_image_add_cl, &sproj_image_zero_cl);
    }
    return upload_shares(func, r, D);
  }
  D->bs = calloc((size_t)n * n, sizeof *D->bs);
  if (!D->bs)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (int s = 0; s < n; s++)
    for (int d = 0; d < n; d++)
      if (slab_handle(&D->bs[d * n + s], D, s))
        return sproj_fail(SPROJ_ERR_STARPU, func, "could not register a slab");
  return upload_shares(func, r, D);
}

int recon_devices_sensitivities(const char *func, sproj_recon *r)
{
  struct recon_devices *D = r->dev;
  int n = D->n, ret = SPROJ_OK;
  D->ss = calloc((size_t)r->num_sens * n, sizeof *D->ss);
  if (!D->ss)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  D->nsens = r->num_sens;
  /* the slabs of each sensitivity device d updates live on device d */
  for (int k = 0; k < r->num_sens && !ret; k++)
    for (int d = 0; d < n && !ret; d++) {
      if (slabs_handle(&D->ss[k * n + d], D, update_slab(D, d), update_count(D)))
        return sproj_fail(SPROJ_ERR_STARPU, func, "could not register a slab");
      ret = slabs_on(D, d, r->sens[k]->handle, &D->ss[k * n + d], update_slab(D, d), 1, 1);
    }
  return ret ? sproj_fail(ret, func, "could not submit the sensitivity's slabs") : SPROJ_OK;
}

void recon_devices_drop_images(sproj_recon *r)
{
  struct recon_devices *D = r->dev;
  if (!D)
    return;
  for (int d = 0; d < D->n; d++) {
    if (d > 0)
      sproj_image_drop(D->x[d]);
    sproj_image_drop(D->xb[d]);
    sproj_image_drop(D->bp[d]);
    sproj_image_drop(D->bpb[d]);
    D->x[d] = D->xb[d] = D->bp[d] = D->bpb[d] = NULL;
  }
  for (int i = 0; i < D->n; i++)
    if (D->xs[i])
      starpu_data_unregister_no_coherency(D->xs[i]);
  for (int i = 0; D->bs && i < D->n * D->n; i++)
    if (D->bs[i])
      starpu_data_unregister_no_coherency(D->bs[i]);
  for (int i = 0; D->ss && i < D->nsens * D->n; i++)
    if (D->ss[i])
      starpu_data_unregister_no_coherency(D->ss[i]);
  for (int d = 0; d < D->n; d++)
    for (int j = 0; j < D->levels; j++) {
      starpu_data_handle_t *h[4] = {&D->sent[d][j], &D->kept[d][j], &D->known[d][j], &D->sum[d]};
      for (int i = 0; i < 4; i++)
        if (*h[i]) {
          starpu_data_unregister_no_coherency(*h[i]);
          *h[i] = NULL;
        }
    }
  free(D->bs);
  free(D->ss);
  memset(D->xs, 0, sizeof D->xs);
  D->bs = D->ss = NULL;
}

void recon_devices_free(sproj_recon *r)
{
  struct recon_devices *D = r->dev;
  if (!D)
    return;
  recon_devices_drop_images(r);
  if (D->user_chunks) {
    recon_lists_free(&r->subsets);
    r->subsets = D->user_subsets;
    r->chunks = D->user_chunks;
  }
  if (D->owned)
    sproj_chunks_release(D->owned);
  free(D);
  r->dev = NULL;
}

/* ---- iterations ---- */
int recon_devices_begin(sproj_recon *r)
{
  struct recon_devices *D = r->dev;
  int ret = SPROJ_OK;
  /* the caller's image may have changed since the last call: each device takes the slabs it updates of it, and the
   * first subset projects it */
  for (int d = 0; d < D->n && !ret; d++)
    ret = slabs_on(D, d, r->x->handle, &D->xs[d], update_slab(D, d), 1, 1);
  D->fresh = 1;
  return ret;
}

/* The image device d's back projection of a subset ends in (blurred with a resolution model). */
static starpu_data_handle_t summand(const struct recon_devices *D, int d)
{
  return (D->bpb[d] ? D->bpb[d] : D->bp[d])->handle;
}

/* Halving step 0 on device d: the half of its back projection bp it sends on (none with 2 devices and pairs, whose
 * one step is the pair's, below). */
static int halving_start(const struct recon_devices *D, int d, starpu_data_handle_t bp)
{
  return cuts(D) ? slabs_on(D, d, bp, &D->sent[d][0], sent_slab(D->n, d, 0), 1, 1) : SPROJ_OK;
}

/* The rest of the halving, the update and the doubling. Halving steps 1 .. cuts - 1 add the partner's half to the
 * half kept and cut the sum again; the last step adds the partner's sums to the device's own (sum[d]): with pairs,
 * between the devices d and d ^ 1 of a pair, of the pair's two slabs, and each device of the pair updates both slabs
 * from its sums and its partner's (one exchange of two slabs instead of a halving step and a doubling step of one slab
 * each); without, of its own slab, which the hook sums across processes before the device updates it. The doubling
 * (steps cuts - 1 .. 0) then ends in each device's copy of the estimate. Every sum adds the partial sums of two
 * devices, which float addition gives alike in either order, so the sums follow a tree that the device count fixes:
 * the same result from run to run whichever device runs first, and on both devices of a pair. */
static int halve_update_double(sproj_recon *r, struct recon_devices *D, int sk)
{
  int n = D->n, H = cuts(D), ret = SPROJ_OK;
  for (int j = 1; j <= H && !ret; j++)
    for (int d = 0; d < n && !ret; d++) {
      /* what d holds before step j: slabs from base; after step 0 the half of its own image it kept */
      int base = kept_slab(n, d, j - 1), last = j == H;
      starpu_data_handle_t own = j == 1 ? summand(D, d) : D->kept[d][j - 1];
      struct sproj_slab_halve_arg *arg = malloc(sizeof *arg);
      if (!arg)
        return SPROJ_ERR_NOMEM;
      *arg = (struct sproj_slab_halve_arg){j == 1 ? D->first[base] : 0,
                                           last ? 0 : D->first[sent_slab(n, d, j)] - D->first[base],
                                           last ? 0 : D->first[kept_slab(n, d, j)] - D->first[base], last ? 1 : 2};
      struct starpu_data_descr descr[4] = {{own, STARPU_R}, {D->sent[partner(n, d, j - 1)][j - 1], STARPU_R},
                                           {last ? D->sum[d] : D->sent[d][j], STARPU_W},
                                           {last ? NULL : D->kept[d][j], STARPU_W}}; /* no kept[][levels] */
      ret = on_device(&sproj_slab_halve_cl, d, arg, sizeof *arg, descr, last ? 3 : 4);
    }
  /* across processes: every device's slab, in one call */
  if (!ret && !D->pairs)
    ret = r->hook.reduce_parts(r->hook.user, D->sum, n);
  for (int d = 0; d < n && !ret; d++) {
    struct sproj_slab_update_arg *arg = calloc(1, sizeof *arg);
    if (!arg)
      return SPROJ_ERR_NOMEM;
    arg->nparts = D->pairs ? 2 : 1;
    arg->sens_factor = r->sens_factor;
    /* two devices with pairs: the pair's slabs are the whole image, summed by nothing but this update */
    struct starpu_data_descr descr[4] = {{D->xs[d], STARPU_RW}, {D->ss[sk * n + d], STARPU_R},
                                         {H ? D->sum[d] : summand(D, d), STARPU_R},
                                         {H ? D->sum[d ^ 1] : summand(D, d ^ 1), STARPU_R}};
    ret = on_device(&sproj_slab_update_cl, d, arg, sizeof *arg, descr, 2 + arg->nparts);
  }
  /* the doubling: with pairs from the pair's two slabs, else from each device's own */
  for (int j = H - 1; j >= 0 && !ret; j--)
    for (int d = 0; d < n && !ret; d++) {
      int p = partner(n, d, j), base = j ? kept_slab(n, d, j - 1) : 0;
      starpu_data_handle_t piece[2] = {j == H - 1 ? D->xs[d] : D->known[d][j + 1],
                                       j == H - 1 ? D->xs[p] : D->known[p][j + 1]};
      uint32_t first[2] = {D->first[kept_slab(n, d, j)] - D->first[base],
                           D->first[sent_slab(n, d, j)] - D->first[base]};
      ret = pieces_on(d, j ? D->known[d][j] : D->x[d]->handle, piece, first, 2, 0);
    }
  /* two devices with pairs: the updated pair is the whole image */
  for (int d = 0; d < n && !H && !ret; d++)
    ret = slabs_on(D, d, D->x[d]->handle, &D->xs[d], 0, 1, 0);
  return ret;
}

/* The direct exchange (any device count): device s updates slab s from every device's slab of it, added in device
 * order (sensitivity sk), then every device gathers the updated slabs into its copy of the estimate (device 0's copy
 * is the caller's image). */
static int direct_update_gather(sproj_recon *r, struct recon_devices *D, int sk)
{
  int n = D->n, ret = SPROJ_OK;
  for (int s = 0; s < n && !ret; s++) {
    struct sproj_slab_update_arg *arg = calloc(1, sizeof *arg);
    if (!arg)
      return SPROJ_ERR_NOMEM;
    arg->nparts = n;
    arg->sens_factor = r->sens_factor;
    struct starpu_data_descr descr[2 + SPROJ_MAX_DEVICES];
    descr[0] = (struct starpu_data_descr){D->xs[s], STARPU_RW};
    descr[1] = (struct starpu_data_descr){D->ss[sk * n + s], STARPU_R};
    for (int d = 0; d < n; d++)
      descr[2 + d] = (struct starpu_data_descr){D->bs[d * n + s], STARPU_R};
    ret = on_device(&sproj_slab_update_cl, s, arg, sizeof *arg, descr, 2 + n);
  }
  for (int d = 0; d < n && !ret; d++)
    ret = slabs_on(D, d, D->x[d]->handle, D->xs, 0, n, 0);
  return ret;
}

int recon_devices_subset(sproj_recon *r, int k)
{
  struct recon_devices *D = r->dev;
  int n = D->n, ret = SPROJ_OK;
  /* each device: forward, ratio and back projection of its share, then the first cut of its image for the exchange */
  for (int d = 0; d < n && !ret; d++) {
    int c = k * n + d;
    sproj_image *src = D->fresh ? r->x : D->x[d], *part = D->bp[d];
    if (r->blur && !(ret = gauss_on(r, d, src->handle, D->xb[d]->handle)))
      src = D->xb[d];
    if (ret || (ret = zero_on(d, D->bp[d]->handle)) || (ret = recon_model_project(r->model, 0, src, r->p, D->owned, &c, 1)) ||
        (ret = recon_submit_terms(r, &c, 1, SPROJ_RATIO_EM, NULL)) ||
        (ret = recon_model_project(r->model, 1, D->bp[d], r->p, D->owned, &c, 1)))
      break;
    if (r->blur && !(ret = gauss_on(r, d, D->bp[d]->handle, D->bpb[d]->handle)))
      part = D->bpb[d];
    if (!ret)
      ret = D->levels ? halving_start(D, d, part->handle) : slabs_on(D, d, part->handle, &D->bs[d * n], 0, n, 1);
  }
  if (!ret)
    ret = (D->levels ? halve_update_double : direct_update_gather)(r, D, r->num_sens == 1 ? 0 : k);
  D->fresh = 0;
  return ret;
}
