/* SPDX-License-Identifier: Apache-2.0 */
/* check_mpi.c: the distributed layer against the single-process library, on every rank of an mpirun (1, 2, 4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "starproj.h"
#include "starproj_recon.h"
#include "starproj_mpi.h"
#include "recon_scene.h"

/* Without Check's runner (its forks and jumps do not mix with MPI): a failed check aborts every rank at once, so
 * that nothing waits for a rank that stopped. */
static int g_rank, g_size;

#define CHECK(cond, ...)                                                                                       \
  do {                                                                                                         \
    if (!(cond)) {                                                                                             \
      fprintf(stderr, "check_mpi rank %d/%d: %s:%d: failed: %s: ", g_rank, g_size, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                                            \
      fputc('\n', stderr);                                                                                     \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                            \
    }                                                                                                          \
  } while (0)
#define OK(call)                                                                                               \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    CHECK(rc_ == SPROJ_OK, "%s returned %d (%s: %s)", #call, rc_, sproj_strerror(rc_), sproj_last_error());    \
  } while (0)

/* The tolerance of everything summed across ranks: the ranks add their parts in another order than one process
 * (float sums, ~1e-7 relative each), and OSEM's updates carry that on (seen with 2 and 4 ranks: 5e-7 for the back
 * projections, 1e-6 for OSEM, 3e-6 for LM-OSEM, whose 1/ybar per event amplifies it; with 1 rank 0, the same bits).
 * 1e-5 relative L2 is still a thousand times below a real error (one view missing from a back projection changes it
 * by ~1e-2). */
#define TOL 1e-5

static sproj_mpi_comm *g_comm;
static struct scene g_s;
static sproj_mpi_dist *g_views; /* the sinogram's views over the ranks */

/* The value is the same float on every rank, bit for bit (the image stays replicated). */
static void check_replicated(const float *v, int64_t n, const char *what)
{
  float *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi);
  CHECK(lo && hi, "out of memory");
  MPI_Allreduce(v, lo, (int)n, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(v, hi, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(memcmp(lo, v, n * sizeof *v) == 0 && memcmp(hi, v, n * sizeof *v) == 0, "%s differs between ranks", what);
  free(lo);
  free(hi);
}

/* One line per comparison on rank 0: what the log shows of the margin. */
static void report(const char *what, int method, int tof, double err)
{
  if (g_rank == 0)
    printf("%d ranks, %s, %s, %s: relative L2 to one process %.2g (tolerance %g)\n", g_size, what,
           tof ? "TOF" : "non-TOF", method == SPROJ_MPI_REDUCE_STARPU ? "StarPU-MPI redux" : "MPI_Allreduce", err, TOL);
}

/* The single-process references are computed on rank 0 only (on 2 cores, 4 ranks would compute them 4 times) and
 * sent to every rank. */
static void share(float *v, int64_t n)
{
  MPI_Bcast(v, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
}

/* This rank's part of a global per-LOR array. */
static void *local_part(const sproj_mpi_dist *d, const void *global, size_t bytes_per_lor)
{
  int64_t n;
  OK(sproj_mpi_dist_local(d, NULL, &n));
  void *p = malloc((size_t)n * bytes_per_lor);
  CHECK(p, "out of memory");
  OK(sproj_mpi_dist_select(d, global, bytes_per_lor, p));
  return p;
}

/* A rank's LOR set, its chunking by the distribution and its count. */
struct local_set {
  float *xs, *xe;
  int16_t *bins;
  int64_t n;
  sproj_lors *lors;
  sproj_chunks *chunks;
};

static void local_open(struct local_set *l, const sproj_mpi_dist *d, const float *xs, const float *xe,
                       const int16_t *bins)
{
  OK(sproj_mpi_dist_local(d, NULL, &l->n));
  l->xs = local_part(d, xs, 3 * sizeof(float));
  l->xe = local_part(d, xe, 3 * sizeof(float));
  l->bins = bins ? local_part(d, bins, sizeof(int16_t)) : NULL;
  if (bins)
    OK(sproj_lors_register_events(&l->lors, l->xs, l->xe, l->bins, l->n));
  else
    OK(sproj_lors_register(&l->lors, l->xs, l->xe, l->n));
  OK(sproj_mpi_dist_chunks(&l->chunks, d, l->lors));
}

static void local_close(struct local_set *l)
{
  OK(sproj_chunks_destroy(l->chunks));
  OK(sproj_lors_unregister(l->lors));
  free(l->xs);
  free(l->xe);
  free(l->bins);
}

/* ---- forward and back projection -------------------------------------------------------------------------- */
static void test_projections(int method, int tof)
{
  const struct scene *s = &g_s;
  int64_t nvox = tu_nvox(&s->g);
  int nb = tof ? s->tof.num_bins : 1;
  int64_t nval = s->nlors * nb;
  OK(sproj_mpi_set_reduce(g_comm, method));

  /* one process, the whole set */
  float *ref_fwd = tu_alloc(nval), *values = tu_alloc(nval), *ref_back = tu_alloc(nvox);
  float *img = scene_copy(s->truth, nvox);
  tu_fill_uniform(values, nval, 0.0f, 1.0f);
  for (int64_t v = 0; v < nvox; v++)
    ref_back[v] = 0.5f;
  sproj_lors *lors;
  sproj_image *im, *ib;
  sproj_proj *pf, *pb;
  sproj_tof *t = NULL;
  OK(sproj_image_register(&im, img, s->g.n, s->g.vs, s->g.origin));
  if (tof)
    OK(sproj_tof_register(&t, &s->tof, NULL, NULL, NULL));
  if (g_rank == 0) {
    OK(sproj_lors_register(&lors, s->xs, s->xe, s->nlors));
    OK(sproj_image_register(&ib, ref_back, s->g.n, s->g.vs, s->g.origin));
    if (tof) {
      OK(sproj_proj_register_tof(&pf, ref_fwd, lors, nb));
      OK(sproj_proj_register_tof(&pb, values, lors, nb));
      OK(sproj_fwd_tof_sino(im, pf, NULL, SPROJ_ALL_CHUNKS, t));
      OK(sproj_back_tof_sino(ib, pb, NULL, SPROJ_ALL_CHUNKS, t));
    } else {
      OK(sproj_proj_register(&pf, ref_fwd, lors));
      OK(sproj_proj_register(&pb, values, lors));
      OK(sproj_fwd(im, pf, NULL, SPROJ_ALL_CHUNKS));
      OK(sproj_back(ib, pb, NULL, SPROJ_ALL_CHUNKS));
  }
  OK(sproj_proj_unregister(pf));
  OK(sproj_proj_unregister(pb));
  OK(sproj_image_unregister(ib));
  OK(sproj_lors_unregister(lors));
  }
  share(ref_fwd, nval);
  share(ref_back, nvox);

  /* every rank its views */
  struct local_set l;
  local_open(&l, g_views, s->xs, s->xe, NULL);
  float *fwd_local = tu_alloc(l.n * nb), *val_local = local_part(g_views, values, nb * sizeof(float));
  float *gathered = tu_alloc(nval), *back = tu_alloc(nvox);
  for (int64_t v = 0; v < nvox; v++)
    back[v] = 0.5f;
  sproj_image *idb;
  OK(sproj_image_register(&idb, back, s->g.n, s->g.vs, s->g.origin));
  if (tof) {
    OK(sproj_proj_register_tof(&pf, fwd_local, l.lors, nb));
    OK(sproj_proj_register_tof(&pb, val_local, l.lors, nb));
  } else {
    OK(sproj_proj_register(&pf, fwd_local, l.lors));
    OK(sproj_proj_register(&pb, val_local, l.lors));
  }
  OK(sproj_mpi_fwd(g_comm, im, pf, l.chunks, t));
  OK(sproj_mpi_gather(g_comm, g_views, pf, -1, gathered));
  /* each LOR is projected by the same code on the same image wherever it lives: bit for bit */
  CHECK(memcmp(gathered, ref_fwd, nval * sizeof(float)) == 0, "gathered forward projection differs (tof %d)", tof);
  memset(gathered, 0, nval * sizeof(float));
  int root = g_size - 1;
  OK(sproj_mpi_gather(g_comm, g_views, pf, root, g_rank == root ? gathered : NULL));
  if (g_rank == root)
    CHECK(memcmp(gathered, ref_fwd, nval * sizeof(float)) == 0, "forward projection gathered at %d differs", root);

  /* twice: the second call reuses the layer's image and must add, not replace */
  OK(sproj_mpi_back(g_comm, idb, pb, l.chunks, t));
  OK(sproj_mpi_back(g_comm, idb, pb, NULL, t));
  OK(sproj_image_sync(idb, SPROJ_SYNC_READ));
  for (int64_t v = 0; v < nvox; v++)
    ref_back[v] = 2.0f * ref_back[v] - 0.5f;
  double err = tu_rel_l2_ff(back, ref_back, nvox);
  CHECK(err < TOL, "back projection (method %d, tof %d): relative L2 %g >= %g", method, tof, err, TOL);
  report("back projection", method, tof, err);
  check_replicated(back, nvox, "the back projection");
  int64_t sent;
  OK(sproj_mpi_bytes_sent(g_comm, &sent));
  CHECK(g_size == 1 ? sent == 0 : sent > 0, "bytes sent %lld with %d ranks", (long long)sent, g_size);

  OK(sproj_proj_unregister(pf));
  OK(sproj_proj_unregister(pb));
  OK(sproj_image_unregister(idb));
  OK(sproj_image_unregister(im));
  OK(sproj_tof_unregister(t));
  local_close(&l);
  free(ref_fwd);
  free(values);
  free(ref_back);
  free(img);
  free(fwd_local);
  free(val_local);
  free(gathered);
  free(back);
}

/* ---- sinogram OSEM ---------------------------------------------------------------------------------------- */
static int iterations_seen;
static int count_iterations(const struct sproj_recon_progress *pr, void *user)
{
  (void)user;
  iterations_seen = pr->iteration;
  return 0;
}

static void test_osem(int method, int tof)
{
  const struct scene *s = &g_s;
  const int S = 4, iters = 2, nb = tof ? s->tof.num_bins : 1;
  int64_t nvox = tu_nvox(&s->g), nval = s->nlors * nb;
  OK(sproj_mpi_set_reduce(g_comm, method));
  float *ybar = tu_alloc(nval), *counts = tu_alloc(nval);
  OK(scene_expected(s, s->truth, tof, ybar));
  scene_counts(ybar, nval, counts);
  const float *add = tof ? s->add_tof : s->add;

  /* one process */
  float *x_ref = scene_ones(s), *y_ref = scene_copy(counts, nval);
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_model *model;
  sproj_image *img;
  sproj_proj *y;
  sproj_recon *r;
  sproj_tof *t = NULL;
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.num_subsets = S;
  if (tof)
    OK(sproj_tof_register(&t, &s->tof, NULL, NULL, NULL));
  if (g_rank == 0) {
    OK(sproj_lors_register(&lors, s->xs, s->xe, s->nlors));
    OK(scene_views(s, lors, &views));
    OK(sproj_model_create(&model, lors, s->mult, add, t, NULL));
    OK(sproj_image_register(&img, x_ref, s->g.n, s->g.vs, s->g.origin));
    OK(tof ? sproj_proj_register_tof(&y, y_ref, lors, nb) : sproj_proj_register(&y, y_ref, lors));
    cfg.model = model;
    cfg.data = y;
    cfg.chunks = views;
    OK(sproj_recon_create(&r, img, &cfg));
    OK(sproj_recon_iterate(r, iters, NULL, NULL));
    OK(sproj_recon_destroy(r));
    OK(sproj_image_unregister(img));
    OK(sproj_proj_unregister(y));
    OK(sproj_model_destroy(model));
    OK(sproj_chunks_destroy(views));
    OK(sproj_lors_unregister(lors));
  }
  share(x_ref, nvox);

  /* across the ranks */
  struct local_set l;
  local_open(&l, g_views, s->xs, s->xe, NULL);
  float *x = scene_ones(s), *y_loc = local_part(g_views, counts, nb * sizeof(float));
  float *m_loc = local_part(g_views, s->mult, sizeof(float)), *a_loc = local_part(g_views, add, nb * sizeof(float));
  OK(sproj_model_create(&model, l.lors, m_loc, a_loc, t, NULL));
  OK(sproj_image_register(&img, x, s->g.n, s->g.vs, s->g.origin));
  OK(tof ? sproj_proj_register_tof(&y, y_loc, l.lors, nb) : sproj_proj_register(&y, y_loc, l.lors));
  cfg.model = model;
  cfg.data = y;
  cfg.chunks = l.chunks;
  sproj_mpi_recon *mr;
  OK(sproj_mpi_recon_create(&mr, g_comm, g_views, img, &cfg));
  iterations_seen = 0;
  OK(sproj_mpi_recon_iterate(mr, 1, count_iterations, NULL));
  OK(sproj_mpi_recon_iterate(mr, iters - 1, NULL, NULL));
  CHECK(iterations_seen == 1, "the callback saw %d iterations", iterations_seen);
  OK(sproj_image_sync(img, SPROJ_SYNC_READ));
  double err = tu_rel_l2_ff(x, x_ref, nvox);
  CHECK(err < TOL, "OSEM (method %d, tof %d): relative L2 %g >= %g", method, tof, err, TOL);
  report("OSEM, 4 subsets, 2 iterations", method, tof, err);
  check_replicated(x, nvox, "the OSEM image");
  /* and it did reconstruct something: the image moved away from the ones */
  double moved = 0.0;
  for (int64_t v = 0; v < nvox; v++)
    moved += fabs(x[v] - 1.0);
  CHECK(moved > 0.1 * nvox, "OSEM left the image at its start (%g)", moved / nvox);
  OK(sproj_mpi_recon_destroy(mr));
  OK(sproj_image_unregister(img));
  OK(sproj_proj_unregister(y));
  OK(sproj_model_destroy(model));
  OK(sproj_tof_unregister(t));
  local_close(&l);
  free(ybar);
  free(counts);
  free(x_ref);
  free(y_ref);
  free(x);
  free(y_loc);
  free(m_loc);
  free(a_loc);
}

/* ---- TOF listmode OSEM ------------------------------------------------------------------------------------ */
static void test_lm(int method)
{
  const struct scene *s = &g_s;
  const int S = 4, iters = 2, nb = s->tof.num_bins;
  int64_t nvox = tu_nvox(&s->g), nval = s->nlors * nb;
  OK(sproj_mpi_set_reduce(g_comm, method));
  float *ybar = tu_alloc(nval), *counts = tu_alloc(nval);
  OK(scene_expected(s, s->truth, 1, ybar));
  scene_counts(ybar, nval, counts);
  float *exs, *exe, *em, *ea;
  int16_t *eb;
  int64_t vfirst[256], vcount[256];
  int64_t ne = scene_events(s, counts, nb, &exs, &exe, &eb, &em, &ea, vfirst, vcount);
  for (int v = 0; v < s->nviews; v++)
    CHECK(vcount[v] > 0, "view %d has no event", v);

  /* one process */
  float *x_ref = scene_ones(s);
  sproj_lors *ev, *sino;
  sproj_chunks *ev_views;
  sproj_model *model, *sens;
  sproj_image *img;
  sproj_recon *r;
  sproj_tof *t;
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.num_subsets = S;
  OK(sproj_tof_register(&t, &s->tof, NULL, NULL, NULL));
  if (g_rank == 0) {
    OK(sproj_lors_register_events(&ev, exs, exe, eb, ne));
    OK(sproj_chunks_create_ranges(&ev_views, ev, s->nviews, vfirst, vcount));
    OK(sproj_lors_register(&sino, s->xs, s->xe, s->nlors));
    OK(sproj_model_create(&model, ev, em, ea, t, NULL));
    OK(sproj_model_create(&sens, sino, s->mult, NULL, NULL, NULL));
    OK(sproj_image_register(&img, x_ref, s->g.n, s->g.vs, s->g.origin));
    cfg.model = model;
    cfg.sens_model = sens;
    cfg.chunks = ev_views;
    OK(sproj_recon_create(&r, img, &cfg));
    OK(sproj_recon_iterate(r, iters, NULL, NULL));
    OK(sproj_recon_destroy(r));
    OK(sproj_image_unregister(img));
    OK(sproj_model_destroy(model));
    OK(sproj_model_destroy(sens));
    OK(sproj_chunks_destroy(ev_views));
    OK(sproj_lors_unregister(ev));
    OK(sproj_lors_unregister(sino));
  }
  share(x_ref, nvox);

  /* across the ranks: events by views, the sensitivity's LORs by the sinogram's views */
  sproj_mpi_dist *ev_dist;
  OK(sproj_mpi_dist_create(&ev_dist, g_comm, s->nviews, vcount, SPROJ_MPI_BLOCKS, NULL));
  struct local_set le, ls;
  local_open(&le, ev_dist, exs, exe, eb);
  local_open(&ls, g_views, s->xs, s->xe, NULL);
  float *x = scene_ones(s), *em_loc = local_part(ev_dist, em, sizeof(float));
  float *ea_loc = local_part(ev_dist, ea, sizeof(float));
  float *sm_loc = local_part(g_views, s->mult, sizeof(float));
  OK(sproj_model_create(&model, le.lors, em_loc, ea_loc, t, NULL));
  OK(sproj_model_create(&sens, ls.lors, sm_loc, NULL, NULL, NULL));
  OK(sproj_image_register(&img, x, s->g.n, s->g.vs, s->g.origin));
  cfg.model = model;
  cfg.sens_model = sens;
  cfg.chunks = le.chunks;
  sproj_mpi_recon *mr;
  OK(sproj_mpi_recon_create(&mr, g_comm, ev_dist, img, &cfg));
  OK(sproj_mpi_recon_iterate(mr, iters, NULL, NULL));
  OK(sproj_image_sync(img, SPROJ_SYNC_READ));
  double err = tu_rel_l2_ff(x, x_ref, nvox);
  CHECK(err < TOL, "TOF LM-OSEM (method %d): relative L2 %g >= %g", method, err, TOL);
  report("LM-OSEM, 4 subsets, 2 iterations", method, 1, err);
  check_replicated(x, nvox, "the LM-OSEM image");
  OK(sproj_mpi_recon_destroy(mr));
  OK(sproj_image_unregister(img));
  OK(sproj_model_destroy(model));
  OK(sproj_model_destroy(sens));
  OK(sproj_tof_unregister(t));
  local_close(&le);
  local_close(&ls);
  OK(sproj_mpi_dist_destroy(ev_dist));
  free(ybar);
  free(counts);
  free(exs);
  free(exe);
  free(eb);
  free(em);
  free(ea);
  free(x_ref);
  free(x);
  free(em_loc);
  free(ea_loc);
  free(sm_loc);
}

/* ---- distributions ---------------------------------------------------------------------------------------- */
static void test_distribution(void)
{
  /* blocks balanced by LORs: 8 chunks, one of them large */
  int64_t sizes[8] = {10, 10, 10, 10, 10, 10, 10, 70};
  sproj_mpi_dist *d;
  OK(sproj_mpi_dist_create(&d, g_comm, 8, sizes, SPROJ_MPI_BLOCKS, NULL));
  int prev = 0, owner;
  for (int c = 0; c < 8; c++) {
    OK(sproj_mpi_dist_owner(d, c, &owner));
    CHECK(owner >= prev && owner < g_size, "blocks: chunk %d on rank %d after rank %d", c, owner, prev);
    prev = owner;
  }
  if (g_size > 1) {
    OK(sproj_mpi_dist_owner(d, 7, &owner));
    CHECK(owner == g_size - 1, "the large chunk (middle LOR at 85%% of the LORs) is on rank %d", owner);
  }
  int n;
  int64_t lors, total = 0, first, lfirst, count;
  OK(sproj_mpi_dist_local(d, &n, &lors));
  int64_t expect = 0;
  for (int j = 0; j < n; j++) {
    int c;
    OK(sproj_mpi_dist_local_chunk(d, j, &c, &first, &lfirst, &count));
    CHECK(lfirst == expect && count == sizes[c], "local chunk %d: first %lld count %lld", j, (long long)lfirst,
          (long long)count);
    expect += count;
  }
  CHECK(expect == lors, "local LORs %lld, chunks add up to %lld", (long long)lors, (long long)expect);
  MPI_Allreduce(&lors, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total == 140, "the ranks own %lld LORs of 140", (long long)total);
  OK(sproj_mpi_dist_destroy(d));

  /* cyclic and an explicit owner array */
  OK(sproj_mpi_dist_create(&d, g_comm, 8, sizes, SPROJ_MPI_CYCLIC, NULL));
  OK(sproj_mpi_dist_owner(d, 5, &owner));
  CHECK(owner == 5 % g_size, "cyclic: chunk 5 on rank %d", owner);
  OK(sproj_mpi_dist_destroy(d));
  int own[8];
  for (int c = 0; c < 8; c++)
    own[c] = (7 - c) % g_size;
  OK(sproj_mpi_dist_create(&d, g_comm, 8, sizes, SPROJ_MPI_BLOCKS, own));
  OK(sproj_mpi_dist_owner(d, 0, &owner));
  CHECK(owner == 7 % g_size, "override: chunk 0 on rank %d", owner);
  OK(sproj_mpi_dist_destroy(d));
}

/* ---- bad input on one rank -------------------------------------------------------------------------------- */
/* Every rank got status `status`. */
static void check_all(int rc, int status, const char *what)
{
  int lo, hi;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == status && hi == status, "%s: statuses %d..%d over the ranks, expected %d everywhere (here %d: %s)", what,
        lo, hi, status, rc, sproj_last_error());
}

/* The caller's collectives: sums, minima and maxima of each type against the closed forms of the ranks' values (exact:
 * small integers, also in float and double), a barrier, and a mismatch refused on every rank. The image-sized sum
 * (70000 floats) is what the layer's reductions use. */
static void test_collectives(void)
{
  int P = g_size, r = g_rank;
  OK(sproj_mpi_barrier(g_comm));
  int iv[3] = {r + 1, r + 1, r + 1};
  OK(sproj_mpi_allreduce(g_comm, iv, 1, SPROJ_MPI_INT, SPROJ_MPI_SUM));
  OK(sproj_mpi_allreduce(g_comm, iv + 1, 1, SPROJ_MPI_INT, SPROJ_MPI_MIN));
  OK(sproj_mpi_allreduce(g_comm, iv + 2, 1, SPROJ_MPI_INT, SPROJ_MPI_MAX));
  CHECK(iv[0] == P * (P + 1) / 2 && iv[1] == 1 && iv[2] == P, "int sum/min/max %d %d %d", iv[0], iv[1], iv[2]);
  int64_t lv[2] = {((int64_t)1 << 40) * (r + 1), -(int64_t)r};
  OK(sproj_mpi_allreduce(g_comm, lv, 2, SPROJ_MPI_INT64, SPROJ_MPI_SUM));
  CHECK(lv[0] == ((int64_t)1 << 40) * P * (P + 1) / 2 && lv[1] == -(int64_t)P * (P - 1) / 2, "int64 sums");
  double dv = 0.5 * r;
  OK(sproj_mpi_allreduce(g_comm, &dv, 1, SPROJ_MPI_DOUBLE, SPROJ_MPI_MAX));
  CHECK(dv == 0.5 * (P - 1), "double max %g", dv);
  int n = 70000;
  float *fv = malloc(n * sizeof *fv);
  CHECK(fv != NULL, "out of memory");
  for (int i = 0; i < n; i++)
    fv[i] = (float)(i % 7 + r);
  OK(sproj_mpi_allreduce(g_comm, fv, n, SPROJ_MPI_FLOAT, SPROJ_MPI_SUM));
  for (int i = 0; i < n; i++)
    CHECK(fv[i] == (float)(P * (i % 7) + P * (P - 1) / 2), "float sum at %d: %g", i, fv[i]);
  free(fv);
  /* one rank with another count: INVALID everywhere, nothing exchanged */
  int two[2] = {0, 0};
  check_all(sproj_mpi_allreduce(g_comm, two, r == P - 1 && P > 1 ? 2 : 1, SPROJ_MPI_INT, SPROJ_MPI_SUM),
            P > 1 ? SPROJ_ERR_INVALID : SPROJ_OK, "allreduce, counts differ");
  check_all(sproj_mpi_allreduce(g_comm, two, 1, SPROJ_MPI_INT, r == 0 ? 9 : SPROJ_MPI_SUM), SPROJ_ERR_INVALID,
            "allreduce, unknown op on rank 0");
}

static void test_bad_input(void)
{
  const struct scene *s = &g_s;
  const int last = g_size - 1;
  struct local_set l;
  local_open(&l, g_views, s->xs, s->xe, NULL);
  float *img_data = scene_ones(s), *vals = tu_alloc(l.n);
  tu_fill_uniform(vals, l.n, 0.0f, 1.0f);
  sproj_image *img;
  sproj_proj *p;
  OK(sproj_image_register(&img, img_data, s->g.n, s->g.vs, s->g.origin));
  OK(sproj_proj_register(&p, vals, l.lors));

  /* a NULL projection on the last rank only */
  check_all(sproj_mpi_fwd(g_comm, img, g_rank == last ? NULL : p, l.chunks, NULL), SPROJ_ERR_NULL, "fwd, NULL proj");
  /* two different faults: the most negative status wins everywhere (RANGE -8 over NULL -1) */
  int rc = sproj_mpi_gather(g_comm, g_views, p, g_rank == 0 ? g_size : 0, g_rank == last ? NULL : vals);
  check_all(rc, SPROJ_ERR_RANGE, "gather, a root out of range on rank 0");
  /* a TOF projector on the last rank's non-TOF projection: MISMATCH, and the back projection adds nothing */
  sproj_tof *t;
  OK(sproj_tof_register(&t, &s->tof, NULL, NULL, NULL));
  float before = img_data[100];
  check_all(sproj_mpi_back(g_comm, img, p, l.chunks, g_rank == last ? t : NULL), SPROJ_ERR_MISMATCH, "back, TOF");
  OK(sproj_image_sync(img, SPROJ_SYNC_READ));
  CHECK(img_data[100] == before, "a failed back projection changed the image");
  OK(sproj_tof_unregister(t));

  /* negative data on the last rank: the reconstruction fails everywhere, and nothing is created */
  sproj_model *model;
  OK(sproj_model_create(&model, l.lors, NULL, NULL, NULL, NULL));
  OK(sproj_proj_sync(p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE));
  if (g_rank == last)
    vals[l.n / 2] = -1.0f;
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = model;
  cfg.data = p;
  cfg.chunks = l.chunks;
  cfg.num_subsets = 2;
  sproj_mpi_recon *mr = (sproj_mpi_recon *)&cfg; /* a sentinel: must stay untouched */
  check_all(sproj_mpi_recon_create(&mr, g_comm, g_views, img, &cfg), SPROJ_ERR_RANGE, "recon, negative data");
  CHECK(mr == (sproj_mpi_recon *)&cfg, "a failed create wrote its out-pointer");
  /* more subsets than the last rank holds chunks of a subset: EMPTY everywhere (64 views, 64 subsets) */
  OK(sproj_proj_sync(p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE));
  vals[l.n / 2] = 0.5f;
  if (g_size > 1) {
    cfg.num_subsets = 64;
    check_all(sproj_mpi_recon_create(&mr, g_comm, g_views, img, &cfg), SPROJ_ERR_EMPTY, "recon, 64 subsets");
  }
  /* the objective is not offered across ranks, asked for on the last rank only */
  cfg.num_subsets = 2;
  cfg.objective = g_rank == last;
  check_all(sproj_mpi_recon_create(&mr, g_comm, g_views, img, &cfg), SPROJ_ERR_INVALID, "recon, objective");
  CHECK(mr == (sproj_mpi_recon *)&cfg, "a failed create wrote its out-pointer");
  /* and the same call right then works: no rank was left behind */
  cfg.objective = 0;
  OK(sproj_mpi_recon_create(&mr, g_comm, g_views, img, &cfg));
  OK(sproj_mpi_recon_iterate(mr, 1, NULL, NULL));
  check_all(sproj_mpi_recon_iterate(g_rank == last ? NULL : mr, 1, NULL, NULL), SPROJ_ERR_NULL, "iterate, NULL");
  OK(sproj_mpi_recon_destroy(mr));

  /* distributions the ranks disagree on */
  int64_t sizes[4] = {5, 5, 5, 5 + (g_rank == last)};
  sproj_mpi_dist *d = NULL;
  if (g_size > 1)
    check_all(sproj_mpi_dist_create(&d, g_comm, 4, sizes, SPROJ_MPI_BLOCKS, NULL), SPROJ_ERR_INVALID, "dist, sizes");
  sizes[3] = g_rank == last ? 0 : 5;
  check_all(sproj_mpi_dist_create(&d, g_comm, 4, sizes, SPROJ_MPI_BLOCKS, NULL), SPROJ_ERR_EMPTY, "dist, empty chunk");
  sizes[3] = 5;
  if (g_size > 1) {
    check_all(sproj_mpi_dist_create(&d, g_comm, 1, sizes, SPROJ_MPI_BLOCKS, NULL), SPROJ_ERR_EMPTY, "dist, idle rank");
    check_all(sproj_mpi_set_reduce(g_comm, g_rank == last ? SPROJ_MPI_REDUCE_STARPU : SPROJ_MPI_REDUCE_ALLREDUCE),
              SPROJ_ERR_INVALID, "set_reduce, different methods");
  }
  check_all(sproj_mpi_set_reduce(g_comm, g_rank == last ? 7 : SPROJ_MPI_REDUCE_DEFAULT), SPROJ_ERR_INVALID,
            "set_reduce, unknown method");
  CHECK(d == NULL, "a failed create wrote its out-pointer");

  OK(sproj_model_destroy(model));
  OK(sproj_proj_unregister(p));
  OK(sproj_image_unregister(img));
  local_close(&l);
  free(img_data);
  free(vals);
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = 1;
  OK(sproj_mpi_comm_create(&g_comm, MPI_COMM_WORLD, &cfg));
  int devices = sproj_num_devices();
  int r, n, method;
  OK(sproj_mpi_comm_rank(g_comm, &r));
  OK(sproj_mpi_comm_size(g_comm, &n));
  CHECK(r == g_rank && n == g_size, "rank %d of %d", r, n);
  OK(sproj_mpi_get_reduce(g_comm, &method));
  CHECK(method == SPROJ_MPI_REDUCE_ALLREDUCE, "default reduction %d", method);

  scene_build(&g_s);
  int64_t per_view[256];
  for (int v = 0; v < g_s.nviews; v++)
    per_view[v] = g_s.per_view;
  OK(sproj_mpi_dist_create(&g_views, g_comm, g_s.nviews, per_view, SPROJ_MPI_BLOCKS, NULL));

  test_collectives();
  test_distribution();
  /* every job with the MPI_Allreduce; with StarPU-MPI's reduction one of each kind (the reduction does not depend on
   * the projector) */
  test_projections(SPROJ_MPI_REDUCE_ALLREDUCE, 0);
  test_projections(SPROJ_MPI_REDUCE_ALLREDUCE, 1);
  test_osem(SPROJ_MPI_REDUCE_ALLREDUCE, 0);
  test_osem(SPROJ_MPI_REDUCE_ALLREDUCE, 1);
  test_lm(SPROJ_MPI_REDUCE_ALLREDUCE);
  test_projections(SPROJ_MPI_REDUCE_STARPU, 0);
  test_osem(SPROJ_MPI_REDUCE_STARPU, 1);
  test_lm(SPROJ_MPI_REDUCE_STARPU);
  test_bad_input();

  OK(sproj_mpi_dist_destroy(g_views));
  scene_free(&g_s);
  OK(sproj_mpi_comm_destroy(g_comm));
  if (g_rank == 0)
    printf("check_mpi: %d ranks of %d devices: forward bit for bit, back projection, OSEM (non-TOF, TOF) and TOF "
           "LM-OSEM within %g of one process, with both reductions; the collectives; bad input on one rank failed on "
           "all\n", g_size, devices, TOL);
  /* the layer finalised MPI only if it had initialised it: here the test did */
  MPI_Finalize();
  return 0;
}
