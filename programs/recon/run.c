/* SPDX-License-Identifier: Apache-2.0 */
/* run.c: the run on StarPU: its start, the sinogram's LORs, the estimate said before the long phases, the model of
 * the data, the upload and the reconstruction's iterations, and the end that takes it all down. */
#include <math.h>
#include <string.h>
#include "recon.h"

/* ---- what ran where ---------------------------------------------------------------------------------------- */
static void where_line(char *buf, size_t len)
{
  int64_t gpu_lors[64] = {0}, cpu_lors = 0, total = 0;
  int ngpu = 0;
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    if (sproj_worker_stats(w, &st) != SPROJ_OK)
      continue;
    total += st.lors;
    if (st.is_gpu) {
      int g = st.gpu;
      if (g >= 0 && g < 64) {
        gpu_lors[g] += st.lors;
        if (g + 1 > ngpu)
          ngpu = g + 1;
      }
    } else {
      cpu_lors += st.lors;
    }
  }
  size_t k = (size_t)snprintf(buf, len, "projections on");
  if (total == 0) {
    snprintf(buf + k, len - k, " (none yet)");
    return;
  }
  for (int g = 0; g < ngpu && k < len; g++)
    k += (size_t)snprintf(buf + k, len - k, " GPU %d %.0f%%,", g, 100.0 * gpu_lors[g] / total);
  if (k < len)
    snprintf(buf + k, len - k, " CPU cores %.0f%%", 100.0 * cpu_lors / total);
}

void start_starpu(const struct options *o, const struct layout *l)
{
  if (!o->verbose)
    setenv("STARPU_SILENT", "1", 0);
  /* StarPU keeps part of a GPU's memory clean by writing values back to their home node before it must evict them;
   * the run's sinograms and listmode counts live on the GPUs with a home in host memory that is only mapped, so each
   * write-back made host pages of its own (0.6 - 9 GB more host memory, varying run to run, on the H200 host:
   * doc/benchmarks.md). The values that must stay evictable are written through already (sproj_proj_register on a
   * small GPU); the caller's settings win. */
  setenv("STARPU_MINIMUM_CLEAN_BUFFERS", "0", 0);
  setenv("STARPU_TARGET_CLEAN_BUFFERS", "0", 0);
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = o->ncpu;
  cfg.ncuda = o->ngpu;
  cfg.sched = o->sched;
  TRY(sproj_init(&cfg));
  if (o->devices)
    TRY(sproj_set_devices(strcmp(o->devices, "gpu") == 0 ? SPROJ_DEVICE_CUDA
                          : strcmp(o->devices, "cpu") == 0 ? SPROJ_DEVICE_CPU
                                                           : SPROJ_DEVICE_ANY));
  const struct sproj_sinogram_info *si = &l->si;
  SAY("starproj-recon: %s scanner (%d detectors x %d rings, %d views x %d radial bins x %d planes = %lld LORs), "
      "image %dx%dx%d of %.3gx%.3gx%.3g mm%s%s\n", o->scanner, si->num_detectors, si->num_rings, si->num_views,
      si->num_radial_bins, si->num_planes, (long long)si->num_lors, o->dims[0], o->dims[1], o->dims[2],
      o->voxel_size[0], o->voxel_size[1], o->voxel_size[2], o->tof ? ", TOF" : "", o->listmode ? ", listmode" : "");
  SAY("devices: %d CPU workers, %d GPUs, scheduler %s\n", sproj_num_cpu_workers(), sproj_num_gpus(),
      sproj_scheduler_name());
}

/* The sinogram's LORs and its views chunking, made where the projections run (on a GPU they never exist on the
 * host), and the TOF parameters. */
void setup_lors(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  progress_step("the scanner's LORs", -1.0);
  TRY(sproj_scanner_lors_create(l->scanner, 0, &r->lors, &r->views));
  if (o->tof)
    TRY(sproj_tof_register(&r->tof, &l->tp, NULL, NULL, NULL));
  sino_layout(o, l, o->tof, &r->sino_info);
}

/* What the run will take, said before its long phases: host memory as estimated from its arrays and, with no GPU
 * (where a preset can take hours), the time of an iteration from a few views projected forward here (twice: the
 * second, once their LORs are in place), times the views, times 3 for the back projection; a warning when either is
 * far beyond this machine. With GPUs nothing is projected only to measure: the sensitivities, a real back projection
 * of every LOR, come within seconds. */
void estimate(const struct options *o, struct run *r, int64_t nevents_in)
{
  const struct layout *l = &r->l;
  int simulate = !o->input && !o->input_lm;
  uint64_t nevents = !o->listmode ? 0 : simulate ? expected_events(o) : (uint64_t)nevents_in;
  struct need n = memory_need(o, l, nevents, sproj_num_gpus());
  uint64_t total = add_sat(add_sat(n.images, n.sinogram), n.events), limit = physical_memory();
  if (sproj_num_gpus() > 0) {
    SAY("estimate: host memory about %.1f GB (this machine has %.1f GB)\n", total / 1e9, limit / 1e9);
    if ((double)total > 0.8 * (double)limit)
      SAY("warning: this run needs most of the machine's memory: it may be slowed by swapping or stopped\n");
    return;
  }
  progress_phase("estimate");
  int views[8], nv = l->si.num_views < 8 ? l->si.num_views : 8;
  for (int k = 0; k < nv; k++)
    views[k] = k * (l->si.num_views / nv);
  const int64_t per_view = l->si.lors_per_view * nv;
  float *xs = host_alloc((size_t)per_view * 3 * sizeof(float)), *xe = host_alloc((size_t)per_view * 3 * sizeof(float));
  float *img = host_alloc((size_t)l->nvox * sizeof(float)), *val = host_alloc((size_t)per_view * l->nbins * sizeof(float));
  memset(img, 0, (size_t)l->nvox * sizeof(float));
  sproj_lors *lors;
  sproj_image *x;
  sproj_proj *p;
  TRY(sproj_scanner_view_lors(l->scanner, views, nv, xs, xe, 0));
  TRY(sproj_lors_register(&lors, xs, xe, per_view));
  TRY(sproj_image_register(&x, img, o->dims, l->vs, l->origin));
  TRY(o->tof ? sproj_proj_register_tof(&p, val, lors, l->nbins) : sproj_proj_register(&p, val, lors));
  double best = 1e30;
  for (int k = 0; k < 2; k++) {
    double t = now();
    TRY(o->tof ? sproj_fwd_tof_sino(x, p, NULL, SPROJ_ALL_CHUNKS, r->tof) : sproj_fwd(x, p, NULL, SPROJ_ALL_CHUNKS));
    TRY(sproj_proj_sync(p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    best = fmin(best, now() - t);
  }
  TRY(sproj_proj_unregister(p));
  TRY(sproj_image_unregister(x));
  TRY(sproj_lors_unregister(lors));
  free(xs);
  free(xe);
  free(img);
  free(val);
  /* listmode: an event costs what a sinogram LOR does, but for TOF only its window of bins (2 x num_sigmas sigmas
   * wide) of the LOR's bins: a rough guess */
  double units = o->listmode ? (double)nevents / (double)per_view : (double)l->si.num_views / nv;
  if (o->listmode && o->tof) {
    double window = 2.0 * l->tp.num_sigmas * l->tp.sigma / l->tp.bin_width + 1.0;
    units *= fmin(1.0, window / l->nbins);
  }
  double iteration = 3.0 * best * units;
  SAY("estimate: host memory about %.1f GB (this machine has %.1f GB); an iteration about %.3g s (%d views, %lld LORs, "
      "projected in %.3g ms here)\n", total / 1e9, limit / 1e9, iteration, nv, (long long)per_view, 1e3 * best);
  if ((double)total > 0.8 * (double)limit)
    SAY("warning: this run needs most of the machine's memory: it may be slowed by swapping or stopped\n");
  if (iteration * o->iterations > 600.0)
    SAY("warning: the %s preset is far too large for the devices found (%d CPU workers, %d GPUs): about %.0f minutes "
        "for the iterations alone%s\n", o->scanner, sproj_num_cpu_workers(), sproj_num_gpus(),
        iteration * o->iterations / 60.0, sproj_num_gpus() ? "" : "; one GPU makes it seconds");
}

/* The model of the data: the factors, the background (one value per LOR, spread over a TOF LOR's bins) and the
 * resolution model. */
void make_model(const struct options *o, struct run *r, sproj_model **model)
{
  const float *fwhm = o->use_fwhm ? o->fwhm : NULL;
  if (o->tof && !r->add_per_bin)
    TRY(sproj_model_create_tof_uniform_add(model, r->lors, r->mult, r->add, r->tof, fwhm));
  else
    TRY(sproj_model_create(model, r->lors, r->mult, r->add, r->tof, fwhm));
}

/* ---- reconstruction ------------------------------------------------------------------------------------------- */
struct progress_ctx {
  const struct options *o;
  sproj_image *img;
  const float *x;
  const int *dims;
  float vs[3], origin[3];
  int failed;
};

static int on_iteration(const struct sproj_recon_progress *p, void *user)
{
  struct progress_ctx *ctx = user;
  progress_step(NULL, (double)p->iteration / ctx->o->iterations);
  char where[256];
  where_line(where, sizeof where);
  if (p->has_objective)
    SAY("iteration %d/%d (%d subsets): %.2f s, Poisson NLL %.10g, %s\n", p->iteration, ctx->o->iterations,
        p->num_subsets, p->elapsed, p->objective, where);
  else
    SAY("iteration %d/%d (%d subsets): %.2f s, %s\n", p->iteration, ctx->o->iterations, p->num_subsets, p->elapsed,
        where);
  fflush(stdout);
  if (ctx->o->save_iterations) {
    char name[64];
    snprintf(name, sizeof name, "recon_iter%d.nii", p->iteration);
    char *path = output_file(ctx->o->output, name);
    if (sproj_nifti_write(path, ctx->x, ctx->dims, ctx->vs, ctx->origin, "starproj-recon iteration") != SPROJ_OK) {
      fprintf(stderr, "starproj-recon: %s\n", sproj_last_error());
      ctx->failed = 1;
    }
    free(path);
    return ctx->failed;
  }
  return 0;
}

/* With one GPU, the LORs and the data go there before the reconstruction starts (timed as a phase of their own); with
 * several, the reconstruction spreads each chunk to one GPU itself. */
static void upload(const struct options *o, struct run *r, const struct sproj_recon_config *cfg)
{
  if (sproj_num_gpus() != 1 || (o->devices && strcmp(o->devices, "cpu") == 0))
    return;
  progress_phase("upload");
  if (o->listmode) {
    TRY(sproj_lors_upload(r->events, r->ev_chunks, SPROJ_ALL_CHUNKS, 0));
  } else {
    TRY(sproj_lors_upload(r->lors, cfg->chunks, SPROJ_ALL_CHUNKS, 0));
    TRY(sproj_proj_upload(r->data, cfg->chunks, SPROJ_ALL_CHUNKS, 0));
  }
  progress_end();
}

/* The model of the data, the sensitivities, and the iterations. */
void reconstruct(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  r->x = alloc_or_die((size_t)l->nvox * sizeof(float));
  for (int64_t v = 0; v < l->nvox; v++)
    r->x[v] = 1.0f;
  TRY(sproj_image_register(&r->ximg, r->x, o->dims, l->vs, l->origin));
  const float *fwhm = o->use_fwhm ? o->fwhm : NULL;
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.num_subsets = o->subsets;
  cfg.objective = o->objective;
  if (!o->listmode) {
    if (!r->model) { /* a simulation made it already */
      progress_phase("model");
      make_model(o, r, &r->model);
    }
    if (!r->data)
      TRY(o->tof ? sproj_proj_register_tof(&r->data, r->counts, r->lors, l->nbins)
                 : sproj_proj_register(&r->data, r->counts, r->lors));
    cfg.data = r->data;
    cfg.chunks = r->views;
  } else {
    progress_phase("events");
    event_arrays(o, r);
    event_chunks(o, r);
    TRY(sproj_model_create(&r->model, r->events, r->ev_mult, r->ev_add, r->tof, fwhm));
    if (r->add_flat) /* each event's share of a flat background: its LOR's, or its TOF bin's */
      TRY(sproj_model_set_flat_background(r->model, o->tof ? r->flat_add / (float)r->l.nbins : r->flat_add));
    TRY(sproj_model_create(&r->sens_model, r->lors, r->mult, NULL, NULL, fwhm));
    cfg.chunks = r->ev_chunks;
    cfg.sens_model = r->sens_model;
  }
  cfg.model = r->model;
  upload(o, r, &cfg);
  char where[256];
  progress_phase("sensitivities");
  TRY(sproj_stats_reset());
  TRY(sproj_recon_create(&r->recon, r->ximg, &cfg));
  /* the sensitivities' back projections are submitted, not done: waited for here, so that this phase's time and the
   * devices named are theirs, not the first iteration's (on one GPU nothing could run beside them anyway) */
  TRY(sproj_wait_all());
  where_line(where, sizeof where);
  SAY("sensitivities: %.2f s, %s\n", progress_end(), where);
  struct progress_ctx ctx = {o, r->ximg, r->x, o->dims, {l->vs[0], l->vs[1], l->vs[2]},
                             {l->origin[0], l->origin[1], l->origin[2]}, 0};
  TRY(sproj_stats_reset());
  progress_phase("iterations");
  progress_step(NULL, 0.0);
  TRY(sproj_recon_iterate(r->recon, o->iterations, on_iteration, &ctx));
  if (ctx.failed)
    exit(1);
  TRY(sproj_image_sync(r->ximg, SPROJ_SYNC_READ));
  SAY("reconstruction: %d iterations x %d subsets in %.2f s\n", o->iterations, o->subsets, progress_end());
}

void finish(struct run *r, struct inputs *in)
{
  TRY(sproj_recon_destroy(r->recon));
  TRY(sproj_model_destroy(r->model));
  TRY(sproj_model_destroy(r->sens_model));
  /* simulated counts stay where they were made: bringing a TOF sinogram home would cost seconds for nothing */
  if (r->data)
    TRY(r->counts_on_devices ? sproj_proj_discard(r->data) : sproj_proj_unregister(r->data));
  TRY(sproj_proj_unregister(r->lor_sums_proj));
  if (r->events) {
    TRY(sproj_chunks_destroy(r->ev_chunks));
    TRY(sproj_lors_unregister(r->events));
  }
  TRY(sproj_image_unregister(r->ximg));
  TRY(sproj_tof_unregister(r->tof));
  TRY(sproj_chunks_destroy(r->views));
  TRY(sproj_lors_unregister(r->lors));
  TRY(sproj_scanner_destroy(r->l.scanner));
  TRY(sproj_shutdown());
  /* what the listmode sampler and the file readers returned (the pinned buffers go with the process) */
  if (r->ev_lor != in->lor)
    sproj_free(r->ev_lor);
  if (r->ev_bin != in->bins)
    sproj_free(r->ev_bin);
  /* the events in chunk order (plain memory, NULL without listmode) */
  free(r->ev_lor_chunked); /* NULL once the factors took its place (ev_mult) */
  free(r->ev_mult);
  free(r->ev_add);
  free(r->ev_bin_chunked);
  free_inputs(in);
}
