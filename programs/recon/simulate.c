/* SPDX-License-Identifier: Apache-2.0 */
/* simulate.c: the simulated data of a run without input files: the phantom, its attenuation and detector
 * efficiencies, and its counts or listmode events drawn where the data lives. */
#include <math.h>
#include "recon.h"

/* the seed of the efficiencies, made from the run's (a prime times it, plus a constant); LORs a thread takes at a
 * time */
#define SEED_PRIME 7919
#define SEED_OFFSET 17
#define LOR_BLOCK (1 << 16)

/* A small seeded generator for the detector efficiencies: splitmix64 (its increment, shifts and multipliers are the
 * algorithm's own), as codelets/recon/sim_counts.h's streams. */
static uint64_t mix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Efficiencies of +-15% (EFFICIENCY_LOW to EFFICIENCY_LOW + EFFICIENCY_SPAN) and attenuation factors exp(-line
 * integral), LOR by LOR: each LOR's random number depends on the seed and its index only (scattered by a 64-bit LCG
 * multiplier), so any number of threads gives the same factors. */
#define EFFICIENCY_LOW 0.85f
#define EFFICIENCY_SPAN 0.3f
#define LOR_SCATTER 0xd1342543de82ef95ull
struct factors_job {
  float *mult;
  const float *line;
  uint64_t seed;
};

static void factors_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  struct factors_job *j = ctx;
  for (int64_t i = first; i < end; i++) {
    uint64_t s = j->seed ^ ((uint64_t)i * LOR_SCATTER);
    double uniform = (double)(mix(&s) >> 11) * 0x1.0p-53; /* [0, 1) from 53 random bits */
    j->mult[i] = expf(-j->line[i]) * (EFFICIENCY_LOW + EFFICIENCY_SPAN * (float)uniform);
  }
}

/* The phantom, and the factor of each LOR: attenuation by a water cylinder (0.0096 / mm), from the line integrals
 * of its map, times detector efficiencies. line: room for the sinogram, used for the integrals. */
static void simulate_factors(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  size_t image_bytes = (size_t)l->nvox * sizeof(float), line_bytes = (size_t)l->si.num_lors * sizeof(float);
  float *line = alloc_or_die(line_bytes); /* the line integrals, then the factors */
  struct sproj_phantom ph, mu_ph;
  progress_step("phantom and attenuation map", -1.0);
  r->phantom = alloc_or_die(image_bytes);
  float *mu = alloc_or_die(image_bytes);
  TRY(sproj_pause());
  TRY(sproj_phantom_default(&ph, o->dims, l->vs, l->origin));
  TRY(sproj_phantom_fill(&ph, r->phantom, o->dims, l->vs, l->origin, 2));
  mu_ph = ph;
  mu_ph.value = 0.0096f;
  mu_ph.num_spheres = 0;
  TRY(sproj_phantom_fill(&mu_ph, mu, o->dims, l->vs, l->origin, 2));
  TRY(sproj_resume());
  sproj_image *img;
  sproj_proj *proj;
  progress_step("attenuation line integrals", -1.0);
  TRY(sproj_image_register(&img, mu, o->dims, l->vs, l->origin));
  TRY(sproj_proj_register(&proj, line, r->lors));
  TRY(sproj_fwd(img, proj, r->views, SPROJ_ALL_CHUNKS));
  TRY(sproj_proj_unregister(proj));
  TRY(sproj_image_unregister(img));
  /* the factors in place of the line integrals: one per-LOR array on the host, not two */
  r->mult = line;
  struct factors_job j = {r->mult, line, o->seed * SEED_PRIME + SEED_OFFSET}; /* not the sinogram's stream */
  TRY(sproj_pause());
  parallel_blocks("attenuation and efficiency factors", l->si.num_lors, LOR_BLOCK, factors_block, &j);
  TRY(sproj_resume());
  release(mu, image_bytes);
}

/* Simulated data, made where the data lives (the GPUs, or the CPU workers): the phantom projected through the model
 * of the data (its resolution too: the same G in the simulation and the reconstruction), scaled so that the trues
 * are the counts asked for, plus a flat background; then Poisson counts drawn in place, or listmode events drawn on
 * the host from the expected counts brought home. */
void simulate(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  const int64_t nlors = l->si.num_lors, values = nlors * l->nbins;
  const size_t bytes = (size_t)values * sizeof(float);
  simulate_factors(o, r);
  float bg_lor = (float)(o->background * o->counts / (double)nlors);
  r->add = alloc_or_die((size_t)nlors * sizeof(float));
  for (int64_t i = 0; i < nlors; i++)
    r->add[i] = bg_lor;
  r->add_flat = 1;
  r->flat_add = bg_lor;
  sproj_model *model;
  make_model(o, r, &model);
  /* The preview brings a non-TOF sinogram home: into memory faulted in beforehand on every core (a GPU's copy into
   * fresh pages waits on their faults one at a time). A TOF sinogram, and listmode's counts, stay where they are made:
   * their host pages exist only where values come home. (Values homed on the GPU instead were measured worse: StarPU
   * 1.4 gave their projection 6 - 19 GB of host buffers, doc/benchmarks.md.) */
  r->counts = !o->tof && !o->listmode ? alloc_or_die(bytes) : lazy_alloc(bytes);
  TRY(o->tof ? sproj_proj_register_tof(&r->data, r->counts, r->lors, l->nbins)
             : sproj_proj_register(&r->data, r->counts, r->lors));
  sproj_image *img;
  TRY(sproj_image_register(&img, r->phantom, o->dims, l->vs, l->origin));
  progress_step("projecting the phantom", -1.0);
  double trues = 0.0;
  TRY(sproj_model_expected(model, img, r->data, r->views, &trues));
  TRY(sproj_image_unregister(img));
  if (!(trues > 0)) {
    fprintf(stderr, "starproj-recon: the phantom projects to nothing: is the image inside the scanner?\n");
    exit(1);
  }
  float scale = (float)(o->counts / trues);
  for (int64_t v = 0; v < l->nvox; v++)
    r->phantom[v] *= scale;
  if (o->tof && !o->listmode) {
    r->lor_sums = alloc_or_die((size_t)nlors * sizeof(float));
    TRY(sproj_proj_register(&r->lor_sums_proj, r->lor_sums, r->lors));
  }
  if (o->listmode) {
    /* the counts drawn where they are, and their events' TOF bins written there: only the events come home */
    progress_step("the Poisson counts and their events", -1.0);
    TRY(sproj_model_draw_events(model, r->data, r->views, scale, o->seed, &r->ev_lor, o->tof ? &r->ev_bin : NULL,
                                &r->nevents));
    progress_step("the simulation's model and data let go", -1.0);
    TRY(sproj_model_destroy(model));
    TRY(sproj_proj_discard(r->data));
    r->data = NULL;
    free(r->counts);
    r->counts = NULL;
  } else {
    progress_step(o->noise_free ? "the expected counts" : "the expected and Poisson counts", -1.0);
    TRY(sproj_model_draw(model, r->data, r->views, scale, o->seed, !o->noise_free, r->lor_sums_proj));
    TRY(sproj_wait_all());
    r->model = model;
    r->counts_on_devices = 1;
  }
  SAY("simulated: %.4g expected trues, background %.3g per LOR%s, %s\n", o->counts, (double)(bg_lor / l->nbins),
      o->tof ? " and TOF bin" : "", o->listmode ? "listmode" : (o->noise_free ? "no noise" : "Poisson noise"));
  if (o->use_fwhm)
    SAY("simulated: the phantom blurred by the resolution model (FWHM %g x %g x %g mm), as the reconstruction "
        "models it\n", (double)o->fwhm[0], (double)o->fwhm[1], (double)o->fwhm[2]);
}
