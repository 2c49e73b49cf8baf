/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c: the run's layout and what it costs: sizes formed without wrapping, the limits of starproj and of this
 * machine checked before anything is allocated or started, and the allocators of the run's arrays. */
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "recon.h"

/* ---- sizes ---------------------------------------------------------------------------------------------------- */
/* Sizes are products of counts the user chooses, so they are formed in 64 bits and saturate at UINT64_MAX instead
 * of wrapping: a size too large to represent stays above every limit it is compared with. */
uint64_t mul_sat(uint64_t a, uint64_t b)
{
  return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t add_sat(uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Bytes of physical memory, or UINT64_MAX when the system does not say. */
uint64_t physical_memory(void)
{
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0)
    return UINT64_MAX;
  return mul_sat((uint64_t)pages, (uint64_t)page);
}

static double gib(uint64_t bytes)
{
  return (double)bytes / GIB;
}

/* The resolution model's kernel reaches at most this many voxels each side at 3 sigma (SPROJ_GAUSS_MAX_RADIUS of
 * the codelets, which sproj_recon_create enforces once StarPU runs). */
#define MAX_BLUR_REACH 64
/* What one listmode event costs the host while the run holds it: LOR index and TOF bin as drawn or read (4 + 2), and
 * again in the order of the chunks (4 + 2), factor and background (8); without a GPU also its endpoints (24) and a
 * projected value (4), which a GPU makes and keeps. */
#define EVENT_BYTES 20
#define EVENT_HOST_BYTES 28

/* Needs no StarPU: a scanner object only describes the geometry. */
void make_layout(const struct options *o, struct layout *l)
{
  struct sproj_scanner_params sp;
  TRY(sproj_scanner_preset(o->scanner, &sp));
  TRY(sproj_scanner_create(&l->scanner, &sp));
  TRY(sproj_scanner_info(l->scanner, &l->si));
  l->nvox = (int64_t)o->dims[0] * o->dims[1] * o->dims[2]; /* at most 4096^3: fits */
  for (int k = 0; k < 3; k++) {
    l->vs[k] = o->voxel_size[k];
    l->origin[k] = (-0.5f * o->dims[k] + 0.5f) * o->voxel_size[k];
  }
  /* TOF: the benchmark scanner's (25.4 mm bins, 385 ps FWHM), and for the small scanner bins covering its 180 mm */
  int small = strcmp(o->scanner, "small") == 0;
  struct sproj_tof_params tp = program_tof(small);
  l->tp = tp;
  l->nbins = o->tof ? tp.num_bins : 1;
}

/* The layout of the run's sinogram as a raw file describes it: view, plane, radial (and tof_bin) with the scanner's
 * sizes. tof: with the TOF axis. */
void sino_layout(const struct options *o, const struct layout *l, int tof, struct sproj_sino_info *info)
{
  static const char *const axes[4] = {"view", "plane", "radial", "tof_bin"};
  const int64_t shape[4] = {l->si.num_views, l->si.num_planes, l->si.num_radial_bins, l->nbins};
  memset(info, 0, sizeof *info);
  info->num_dims = tof ? 4 : 3;
  for (int k = 0; k < info->num_dims; k++) {
    info->shape[k] = shape[k];
    snprintf(info->axes[k], SPROJ_RAW_NAME_LEN, "%s", axes[k]);
  }
  snprintf(info->scanner, sizeof info->scanner, "%s", o->scanner);
  info->num_tof_bins = tof ? l->nbins : 0;
  info->tof_bin_width = tof ? l->tp.bin_width : 0.0f;
}

/* gpus: the GPUs found (0 before StarPU starts: the most the run can take); a sinogram simulated on GPUs stays there */
struct need memory_need(const struct options *o, const struct layout *l, uint64_t nevents, int gpus)
{
  struct need n;
  int simulate = !o->input && !o->input_lm;
  int blur = o->use_fwhm && (o->fwhm[0] > 0 || o->fwhm[1] > 0 || o->fwhm[2] > 0);
  /* the estimate and its back projection, the blur's two buffers, the sensitivities (one per subset for a
   * sinogram, one for listmode), and the phantom and its attenuation map when simulating */
  uint64_t images = 2 + (blur ? 2 : 0) + (o->listmode ? 1 : (uint64_t)o->subsets) + (simulate ? 2 : 0);
  n.images = mul_sat(mul_sat(images, (uint64_t)l->nvox), sizeof(float));
  /* per LOR: its endpoints (made on the GPU when there is one), factor, background and the sensitivities' copy of
   * the factor; per LOR and TOF bin: the sinogram (the expected counts, then in place the counts), or when reading a
   * TOF background per bin that too (the reconstruction's own projection stays on the devices) */
  uint64_t lors = (uint64_t)l->si.num_lors, values = mul_sat(lors, (uint64_t)l->nbins);
  uint64_t per_value = (simulate || !o->listmode ? 1 : 0) + (o->add_file && o->tof ? 1 : 0);
  uint64_t per_lor = 3 + (gpus > 0 ? 0 : 2 * 3); /* the endpoints' 6 floats are made on the GPU when there is one */
  if (simulate && gpus > 0) {
    per_value = 0;
    /* the counts' sums over TOF bins (the preview's; listmode's events per LOR) and listmode's places of events */
    per_lor += (o->tof ? 1 : 0) + (o->listmode ? 1 : 0);
  }
  n.sinogram = add_sat(mul_sat(lors, per_lor * sizeof(float)), mul_sat(values, per_value * sizeof(float)));
  n.events = o->listmode ? mul_sat(nevents, EVENT_BYTES + (gpus > 0 ? 0 : EVENT_HOST_BYTES)) : 0;
  return n;
}

/* Listmode events a simulation draws: the expected trues plus the background, counts x (1 + background); from
 * EVENTS_SATURATE on (below 2^64 = 1.84e19, so that the conversion is defined) UINT64_MAX. */
#define EVENTS_SATURATE 1.8e19
uint64_t expected_events(const struct options *o)
{
  double e = ceil(o->counts * (1.0 + o->background));
  return e >= EVENTS_SATURATE ? UINT64_MAX : (uint64_t)e;
}

/* What the options ask of starproj, the scanner and this machine, checked before anything is allocated or started
 * (each of these used to fail after StarPU had started, or to corrupt memory): 0, or 2 after a message.
 * nevents_in: the events of a listmode input (0 otherwise). */
int validate_run(const struct options *o, const struct layout *l, int64_t nevents_in)
{
  if ((uint64_t)l->nvox > MAX_ELEMENTS)
    return fail_usage("--image %dx%dx%d is %lld voxels, more than starproj's limit of %llu (2^32-1) per image",
                      o->dims[0], o->dims[1], o->dims[2], (long long)l->nvox, (unsigned long long)MAX_ELEMENTS);
  if (!o->listmode && o->subsets > l->si.num_views)
    return fail_usage("--subsets %d: the %s scanner's sinogram has %d views, and each subset needs one", o->subsets,
                      o->scanner, l->si.num_views);
  for (int k = 0; k < 3 && o->use_fwhm; k++) {
    double reach = ceil(3.0 * o->fwhm[k] / (2.0 * sqrt(2.0 * log(2.0))) / o->voxel_size[k]);
    if (o->fwhm[k] > 0 && reach > MAX_BLUR_REACH)
      return fail_usage("--fwhm %g with --voxel-size %g (axis %d): the resolution model would reach %.0f voxels each "
                        "side (3 sigma), at most %d", (double)o->fwhm[k], (double)o->voxel_size[k], k, reach,
                        MAX_BLUR_REACH);
  }
  int simulate = !o->input && !o->input_lm;
  uint64_t nevents = !o->listmode ? 0 : simulate ? expected_events(o) : (uint64_t)nevents_in;
  struct need n = memory_need(o, l, nevents, 0);
  uint64_t total = add_sat(add_sat(n.images, n.sinogram), n.events), limit = physical_memory();
  if (total > limit)
    return fail_usage("this run needs about %.3g GiB of memory (images %.3g GiB, sinogram %.3g GiB, listmode "
                      "events %.3g GiB), more than the %.3g GiB of this machine", gib(total), gib(n.images),
                      gib(n.sinogram), gib(n.events), gib(limit));
  if (simulate && o->listmode && nevents > MAX_ELEMENTS)
    return fail_usage("--counts %g and --background %g make about %.4g listmode events, more than starproj's limit "
                      "of %llu (2^32-1) in one set", o->counts, o->background, (double)nevents,
                      (unsigned long long)MAX_ELEMENTS);
  return 0;
}

/* Arrays the devices read or write: pinned (copies run asynchronously) up to PIN_MOST bytes, plain memory beyond. On
 * an H200 host pinning the benchmark's 17 GB TOF sinogram took about 10 s, far more than the single copy each way
 * that pinning speeds up (a few seconds from plain memory at the bus's pageable rate). release() frees either. */
#define PIN_MOST ((size_t)256 << 20)
#define HUGE_PAGE ((size_t)2 << 20) /* the alignment of the arrays not pinned, for madvise(MADV_HUGEPAGE) */
#define TOUCH_BLOCK ((int64_t)64 << 20) /* bytes each thread faults in at a time */
static void touch_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  memset((char *)ctx + first, 0, (size_t)(end - first));
}

void *alloc_or_die(size_t bytes)
{
  void *p = NULL;
  if (bytes > PIN_MOST ? posix_memalign(&p, HUGE_PAGE, bytes) != 0
                       : sproj_malloc_pinned(&p, bytes ? bytes : 1) != SPROJ_OK) {
    fprintf(stderr, "starproj-recon: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  if (bytes > PIN_MOST) {
    /* Huge pages, faulted in on every core now: the GPU's copy into fresh memory (the 17 GB TOF sinogram) otherwise
     * waits on millions of page faults taken one at a time, 11 s on an H200 host. */
    madvise(p, bytes, MADV_HUGEPAGE);
    int paused = sproj_is_initialized() && sproj_pause() == SPROJ_OK; /* StarPU's idle workers would take half */
    parallel_blocks("allocating", (int64_t)bytes, TOUCH_BLOCK, touch_block, p);
    if (paused)
      TRY(sproj_resume());
  }
  return p;
}

void release(void *p, size_t bytes)
{
  if (bytes > PIN_MOST)
    free(p);
  else
    sproj_free_pinned(p, bytes ? bytes : 1);
}

/* Scratch that never goes to a device: plain malloc (alloc_or_die's may be pinned, and freed with the process). */
void *host_alloc(size_t bytes)
{
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    out_of_memory();
  return p;
}

/* An array that tasks fill where they run: not faulted in here. With GPUs the simulated sinogram is made and used on
 * them and its host pages are never touched (no memory, no time); on CPU workers the tasks fault them in. */
void *lazy_alloc(size_t bytes)
{
  void *p = NULL;
  if (posix_memalign(&p, HUGE_PAGE, bytes ? bytes : 1) != 0)
    out_of_memory();
  if (bytes > PIN_MOST)
    madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

