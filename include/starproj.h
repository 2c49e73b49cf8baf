/* starproj.h: the public API of starproj, Joseph forward and back projectors on data kept resident by StarPU. */
#ifndef STARPROJ_H
#define STARPROJ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPROJ_VERSION_MAJOR 0
#define SPROJ_VERSION_MINOR 1
#define SPROJ_VERSION_PATCH 0

/*
 * How to use it (the three steps of every request):
 *
 *   sproj_init(NULL);
 *   sproj_image_register(&img, image, dims, voxel_size, origin);      register once
 *   sproj_lors_register(&lors, xstart, xend, num_lors);
 *   sproj_chunks_create_ranges(&views, lors, nviews, first, count);   e.g. one chunk per view
 *   sproj_proj_register(&proj, values, lors);
 *
 *   sproj_image_upload(img, SPROJ_ALL_GPUS);                          1. allocate + copy, ahead of use
 *   sproj_lors_upload(lors, views, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS);
 *   for (v = 0; v < nviews; v++) sproj_fwd(img, proj, views, v);      2. compute, asynchronously,
 *   sproj_proj_sync(proj, views, 3, SPROJ_SYNC_READ);                    on whatever copy is resident
 *   ...
 *   sproj_image_release(img, SPROJ_ALL_GPUS);                         3. drop device copies, and
 *   sproj_proj_unregister(proj); ... sproj_shutdown();                   unregister (writes back)
 *
 * Conventions (those of parallelproj): image float32 C order [n0][n1][n2] (i2 fastest), origin = world
 * coordinates of the centre of voxel (0,0,0); LOR endpoints xstart/xend as 3 floats per LOR in the same units.
 *
 * Every call returns SPROJ_OK (0) or a negative sproj_status; sproj_strerror() names the code and
 * sproj_last_error() gives the calling thread's message about its last failure. A call that fails changes
 * nothing. Submission calls (sproj_fwd, sproj_back, ...) are safe from several host threads at once;
 * registering and unregistering one object must not race with using it.
 */

/* ---- status codes ------------------------------------------------------------------------------------- */
enum sproj_status {
  SPROJ_OK = 0,
  SPROJ_ERR_NULL = -1,        /* a required pointer argument is NULL */
  SPROJ_ERR_DIMS = -2,        /* a dimension or count is zero or negative */
  SPROJ_ERR_VOXEL_SIZE = -3,  /* a voxel size is not a finite number > 0 */
  SPROJ_ERR_NONFINITE = -4,   /* a coordinate or origin is NaN or infinite */
  SPROJ_ERR_MISMATCH = -5,    /* objects that must belong together do not (other LOR set, other size) */
  SPROJ_ERR_EMPTY = -6,       /* nothing to work on: zero LORs, zero chunks, an empty chunk */
  SPROJ_ERR_OVERFLOW = -7,    /* a size is too large (more than 2^32-1 elements in one vector, or bytes overflow) */
  SPROJ_ERR_RANGE = -8,       /* an index or range is outside its bounds, or ranges overlap */
  SPROJ_ERR_NOT_INIT = -9,    /* sproj_init() has not been called (or sproj_shutdown() was) */
  SPROJ_ERR_NO_DEVICE = -10,  /* no such GPU, or no worker of the requested kind */
  SPROJ_ERR_NOMEM = -11,      /* out of host memory */
  SPROJ_ERR_STARPU = -12,     /* StarPU refused or failed an operation */
  SPROJ_ERR_BUSY = -13,       /* the object is still used by others (chunkings or projections of a LOR set) */
  SPROJ_ERR_INVALID = -14,    /* any other invalid argument (flags, handle of the wrong kind, double init) */
  SPROJ_ERR_TOF = -15         /* a TOF parameter is out of its range (bin width, number of bins, sigma, num_sigmas) */
};

/* Short description of a status code (never NULL, also for unknown codes). */
const char *sproj_strerror(int status);
/* Message about the last failing call made by this thread ("" if none); valid until this thread's next call. */
const char *sproj_last_error(void);

/* ---- runtime ------------------------------------------------------------------------------------------ */
/* Kinds of worker, as a bit mask. */
enum sproj_device {
  SPROJ_DEVICE_CPU = 1,
  SPROJ_DEVICE_CUDA = 2,
  SPROJ_DEVICE_ANY = 3
};
/* GPU argument meaning "every GPU StarPU drives". */
#define SPROJ_ALL_GPUS (-1)
/* Chunk argument meaning "every chunk of the chunking". */
#define SPROJ_ALL_CHUNKS (-1)

struct sproj_config {
  int ncpu;            /* CPU workers; -1: $STARPU_NCPU if set, else every core when there is no GPU, else the
                        * cores left after one per CUDA worker and one for the submitting thread */
  int ncuda;           /* GPUs; -1: StarPU's default ($STARPU_NCUDA, else all); 0: none */
  const char *sched;   /* StarPU scheduler for every context; NULL: $STARPU_SCHED if set, else "lws" for
                          projections on GPUs or on CPU cores, "dmda" for projections on any device */
  int64_t task_lors;   /* largest number of LORs in one task; 0: automatic (see sproj_set_task_lors) */
  int workers_per_gpu; /* CUDA workers (streams) per GPU, so that small tasks run side by side;
                        * -1: $STARPU_NWORKER_PER_CUDA if set, else 4 */
  int verbose;         /* 1: print the chosen workers and scheduler on stderr at sproj_init */
};

/* Fills cfg with the defaults (-1 / NULL / 0). */
void sproj_config_init(struct sproj_config *cfg);

/* Starts StarPU with cfg (NULL: defaults). If the caller already initialised StarPU, starproj uses that
 * instance as it is (cfg's worker counts and scheduler are then ignored) and sproj_shutdown() leaves it
 * running. Returns SPROJ_ERR_INVALID if starproj is already initialised. */
int sproj_init(const struct sproj_config *cfg);
/* Waits for all submitted work and stops StarPU (if sproj_init started it). SPROJ_ERR_BUSY while images, LOR sets,
 * projection vectors or TOF parameters are still registered. */
int sproj_shutdown(void);

/* Scheduler of the devices projections go to now (sproj_set_devices), e.g. "lws" (NULL before sproj_init). */
const char *sproj_scheduler_name(void);
/* Number of CPU workers and of GPUs driven by StarPU (0 before sproj_init). */
int sproj_num_cpu_workers(void);
int sproj_num_gpus(void);

/* Task granularity. A request (one chunk, a list of chunks or the whole LOR set) is cut into tasks of at
 * most task_lors LORs, and large chunks into enough pieces to keep every worker busy. 0 restores the
 * automatic value (2^20 LORs with GPUs, 2^15 on CPUs only). Affects chunkings created afterwards. */
int sproj_set_task_lors(int64_t task_lors);
int64_t sproj_get_task_lors(void);

/* Which kinds of worker may run projection tasks submitted from now on. Default: the GPUs when StarPU drives any
 * (CPU workers then still run reductions and the caller's own tasks), else the CPU cores. SPROJ_DEVICE_ANY lets
 * the scheduler weigh both, which pays where the GPUs are not much faster than all cores together; on an H200
 * against 15 cores it did not (doc/benchmarks.md). SPROJ_ERR_NO_DEVICE if the mask names no existing worker. */
int sproj_set_devices(unsigned device_mask);

/* What ran where: per-worker counts of projection tasks and LORs since sproj_init or sproj_stats_reset. */
struct sproj_worker_stats {
  char name[64];         /* StarPU's worker name, e.g. "CUDA 0 (NVIDIA H200 ...)" or "CPU 3" */
  int is_gpu;            /* 1 for a CUDA worker */
  int64_t tasks;         /* projection tasks executed */
  int64_t lors;          /* LORs projected (forward + back) */
};
int sproj_num_workers(void);
int sproj_worker_stats(int worker, struct sproj_worker_stats *stats);
int sproj_stats_reset(void);

/* Waits until every submitted task has finished. */
int sproj_wait_all(void);

/* Batches. Between sproj_batch_begin() and sproj_batch_end(), this thread's sproj_fwd / sproj_back calls (and the
 * _chunks variants) on one image, projection vector and chunking are collected and submitted together, merged
 * into few large tasks as sproj_fwd_chunks does: one call per small chunk then costs about what one list call
 * costs. A call on other objects submits what was collected first; so does every sync, upload, release, wait or
 * unregister call of this thread, and sproj_image_handle(). Until then other threads do not see the collected
 * work: do not make them depend on it inside the batch. Batches nest; the outermost end submits and returns the
 * status of that submission. Errors: NOT_INIT, INVALID (end without begin). */
int sproj_batch_begin(void);
int sproj_batch_end(void);

/* Host memory that GPUs can copy from asynchronously (pinned when GPUs are in use). sproj_init first. */
int sproj_malloc_pinned(void **ptr, size_t bytes);
int sproj_free_pinned(void *ptr, size_t bytes);
/* Pins / unpins memory the caller allocated itself (a no-op without GPUs). */
int sproj_pin(void *ptr, size_t bytes);
int sproj_unpin(void *ptr, size_t bytes);

/* What the caller will do with a host buffer after a sync call. */
enum sproj_sync_mode {
  SPROJ_SYNC_READ = 1, /* only read it: device copies stay valid and are reused */
  SPROJ_SYNC_WRITE = 2 /* read and modify it (until the next submission using it): device copies are dropped */
};

/* StarPU's data handle type, without including starpu.h (it is starpu_data_handle_t). */
struct _starpu_data_state;
typedef struct _starpu_data_state *sproj_starpu_handle;

/* ---- images ------------------------------------------------------------------------------------------- */
typedef struct sproj_image sproj_image;

/* Registers a host image of dims[0]*dims[1]*dims[2] floats (C order) with voxel_size[3] > 0 and origin[3]
 * (centre of voxel (0,0,0)). The buffer must stay valid until sproj_image_unregister; while registered, read
 * it only after sproj_image_sync and modify it only after sproj_image_sync(..., SPROJ_SYNC_WRITE).
 * Errors: NULL, NOT_INIT, DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW. */
int sproj_image_register(sproj_image **img, float *data, const int dims[3], const float voxel_size[3],
                         const float origin[3]);
/* Uses a caller's StarPU handle instead: a vector of dims[0]*dims[1]*dims[2] floats (elemsize 4).
 * Its reduction methods are set to starproj's (needed by back projection). sproj_image_unregister then
 * leaves the handle registered. Errors as above, plus INVALID for a handle of another kind or size. */
int sproj_image_register_handle(sproj_image **img, sproj_starpu_handle handle, const int dims[3],
                                const float voxel_size[3], const float origin[3]);
/* Step 1: allocates the image on one GPU (0..sproj_num_gpus()-1) or on every GPU (SPROJ_ALL_GPUS) and copies
 * it there, after any pending task that writes it; returns when the copy is done. Without GPUs,
 * SPROJ_ALL_GPUS is a no-op. Errors: NULL, NOT_INIT, NO_DEVICE. */
int sproj_image_upload(sproj_image *img, int gpu);
/* Step 3: drops the device copy (after pending tasks; the value is written back first if only the device has
 * it). Errors: NULL, NOT_INIT, NO_DEVICE. */
int sproj_image_release(sproj_image *img, int gpu);
/* Waits for pending tasks on the image (including the reduction of back projections) and makes the host buffer
 * hold its current value; see enum sproj_sync_mode. Errors: NULL, NOT_INIT, INVALID (mode). */
int sproj_image_sync(sproj_image *img, int mode);
/* Waits, writes the value back to the host buffer and frees the object (img may be NULL: no-op). */
int sproj_image_unregister(sproj_image *img);
/* The StarPU handle of the image, for callers who submit their own tasks on it. */
sproj_starpu_handle sproj_image_handle(const sproj_image *img);

/* ---- LOR sets and chunkings --------------------------------------------------------------------------- */
typedef struct sproj_lors sproj_lors;
typedef struct sproj_chunks sproj_chunks;

/* Registers num_lors LORs: xstart[3*i..3*i+2] to xend[3*i..3*i+2]. The buffers are read, never written,
 * and must stay valid until sproj_lors_unregister. Every coordinate is checked to be finite.
 * Errors: NULL, EMPTY (num_lors == 0), DIMS (num_lors < 0), OVERFLOW (num_lors > 2^32-1), NONFINITE. */
int sproj_lors_register(sproj_lors **lors, const float *xstart, const float *xend, int64_t num_lors);
/* Uses a caller's StarPU handles: two vectors of equal length with elemsize 3*sizeof(float). */
int sproj_lors_register_handles(sproj_lors **lors, sproj_starpu_handle xstart, sproj_starpu_handle xend);
int sproj_lors_count(const sproj_lors *lors, int64_t *num_lors);
/* Frees the LOR set. SPROJ_ERR_BUSY while chunkings or projection vectors of it exist. */
int sproj_lors_unregister(sproj_lors *lors);

/* A chunking of a LOR set: chunk c covers LORs [first[c], first[c] + count[c]). Chunks may come in any order
 * and need not cover every LOR, but must not overlap. A chunking is created once and reused for as many
 * requests (and projection vectors of the LOR set) as wanted. Errors: NULL, EMPTY (num_chunks == 0 or
 * count[c] == 0), DIMS (negative), RANGE (outside the set or overlapping), NOMEM. */
int sproj_chunks_create_ranges(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int64_t *first,
                               const int64_t *count);
/* num_chunks chunks of (nearly) equal size covering the whole set (num_chunks <= number of LORs). */
int sproj_chunks_create_blocks(sproj_chunks **chunks, sproj_lors *lors, int num_chunks);
int sproj_chunks_count(const sproj_chunks *chunks, int *num_chunks);
/* The range of a chunk made of one range (INVALID for a chunk of several, see sproj_chunks_ranges). */
int sproj_chunks_range(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count);
/* Frees the chunking after pending tasks that use it (chunks may be NULL: no-op). */
int sproj_chunks_destroy(sproj_chunks *chunks);

/* Step 1 / step 3 for LORs: copies the LORs of one chunk (or SPROJ_ALL_CHUNKS) of a chunking (NULL: the
 * whole set as used by whole-set requests) to one GPU or every GPU / drops those copies.
 * Errors: NULL, NOT_INIT, MISMATCH (chunking of another set), RANGE (chunk), NO_DEVICE. */
int sproj_lors_upload(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu);
int sproj_lors_release(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu);

/* ---- projection vectors ------------------------------------------------------------------------------- */
typedef struct sproj_proj sproj_proj;

/* Registers a host vector with one float per LOR of lors (the output of forward projection, the input of
 * back projection). Errors: NULL, NOT_INIT. */
int sproj_proj_register(sproj_proj **proj, float *values, sproj_lors *lors);
/* Uses a caller's StarPU vector handle of float elements, one per LOR. */
int sproj_proj_register_handle(sproj_proj **proj, sproj_starpu_handle handle, sproj_lors *lors);
/* Copies the values of a chunk (or all chunks; chunks NULL: the whole vector) to GPUs / drops the copies. */
int sproj_proj_upload(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu);
int sproj_proj_release(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu);
/* Waits for pending tasks writing the chunk (SPROJ_ALL_CHUNKS: all chunks; chunks NULL: the whole vector) and
 * makes the host buffer hold its current values; see enum sproj_sync_mode. */
int sproj_proj_sync(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int mode);
/* Waits, writes the values back to the host buffer and frees the object (NULL: no-op). */
int sproj_proj_unregister(sproj_proj *proj);

/* ---- projections (step 2) ----------------------------------------------------------------------------- */
/* Forward projection of img along the LORs of one chunk (SPROJ_ALL_CHUNKS: every chunk; chunks NULL: the
 * whole LOR set, chunk must then be 0 or SPROJ_ALL_CHUNKS) into the matching elements of proj (overwritten).
 * Returns at once; the work runs on whichever CPU cores and GPUs StarPU picks, using resident copies.
 * Errors: NULL, NOT_INIT, MISMATCH (chunking of another LOR set than proj's), RANGE (chunk), NO_DEVICE. */
int sproj_fwd(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk);
/* Back projection: ADDS the transpose of the forward projector applied to proj's chunk elements to img.
 * Tasks from any number of calls and threads accumulate race-free (StarPU reduction). */
int sproj_back(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk);
/* The same for a list of chunks in one call: neighbouring small chunks are merged into fewer, larger tasks,
 * which is much cheaper than one call per small chunk. Errors as above, plus EMPTY (num == 0). */
int sproj_fwd_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                     int num);
int sproj_back_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                      int num);

/* ---- time of flight ---------------------------------------------------------------------------------- */
/* Conventions (parallelproj's): TOF bin b of a LOR is centred (b - (num_bins-1)/2) * bin_width from the LOR's
 * midpoint, shifted by center_offset along the LOR towards xend. Each Joseph sample contributes to the bins
 * within num_sigmas * sigma of its position with the Gaussian integrated over the bin, normalised over that
 * window (at most 64 bins), so that the sum over the bins equals the non-TOF projection where the bins cover the
 * LOR. Listmode events use the same weights: an event in bin b projects to the value of TOF-sinogram bin b of its
 * LOR. TOF sinograms are laid out [lor][tof_bin]. */
#define SPROJ_MAX_TOF_BINS 32767

struct sproj_tof_params {
  float bin_width;     /* width of a TOF bin along the LOR, in the units of the LORs; > 0 */
  int num_bins;        /* 1 .. SPROJ_MAX_TOF_BINS */
  float num_sigmas;    /* half-width of a sample's window, in sigmas; > 0 (3 is usual) */
  float sigma;         /* standard deviation of the TOF kernel along the LOR; > 0 (when not per LOR) */
  float center_offset; /* shift of the bin centres towards xend (when not per LOR) */
};
typedef struct sproj_tof sproj_tof;

/* Registers TOF parameters once. sigma and center_offset may each be NULL (the scalar in params applies) or an
 * array with one value per LOR of lors, registered with it and chunked like it (it must stay valid until
 * sproj_tof_unregister). Errors: NULL (tof, params, or arrays without lors), NOT_INIT, TOF (a parameter or a
 * per-LOR sigma out of range), NONFINITE (offsets). */
int sproj_tof_register(sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors, const float *sigma,
                       const float *center_offset);
int sproj_tof_unregister(sproj_tof *tof);

/* Registers listmode events: a LOR set whose LOR i carries the TOF bin tof_bin[i] (0 .. num_bins-1 of the TOF
 * parameters it is projected with; checked at submission). Errors: those of sproj_lors_register, NULL, RANGE
 * (a negative bin). */
int sproj_lors_register_events(sproj_lors **events, const float *xstart, const float *xend, const int16_t *tof_bin,
                               int64_t num_events);

/* Registers a TOF sinogram: num_tof_bins values per LOR of lors, [lor][tof_bin]. Errors: as sproj_proj_register,
 * EMPTY / DIMS (num_tof_bins 0 / negative), TOF (more than SPROJ_MAX_TOF_BINS). */
int sproj_proj_register_tof(sproj_proj **proj, float *values, sproj_lors *lors, int num_tof_bins);

/* TOF-sinogram forward / back projection of chunks, as sproj_fwd / sproj_back. proj must hold tof's number of bins
 * per LOR. Errors: as sproj_fwd, plus NULL (tof), MISMATCH (bins, or per-LOR parameters of another set). */
int sproj_fwd_tof_sino(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                       const sproj_tof *tof);
int sproj_back_tof_sino(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                        const sproj_tof *tof);
int sproj_fwd_tof_sino_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                              int num, const sproj_tof *tof);
int sproj_back_tof_sino_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                               int num, const sproj_tof *tof);
/* TOF listmode forward / back projection of chunks of events (sproj_lors_register_events), one value per event.
 * Errors: as above, plus INVALID (a LOR set without bins), RANGE (an event's bin >= tof's num_bins). */
int sproj_fwd_tof_lm(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk, const sproj_tof *tof);
int sproj_back_tof_lm(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk, const sproj_tof *tof);
int sproj_fwd_tof_lm_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                            int num, const sproj_tof *tof);
int sproj_back_tof_lm_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                             int num, const sproj_tof *tof);

/* ---- scanner geometry -------------------------------------------------------------------------------- */
/* Chunkings whose chunks are lists of ranges. Chunk c of sproj_chunks_create_lists is the num_ranges[c] ranges
 * [first[k], first[k] + count[k]) for k = s .. s + num_ranges[c] - 1, s = num_ranges[0] + ... + num_ranges[c-1]:
 * first and count hold the ranges of chunk 0, then those of chunk 1, and so on. No two ranges (of one chunk or of
 * two) may overlap; chunks need not cover every LOR. A range that starts where the previous range of its chunk
 * ends is joined to it. Projections, uploads and syncs treat such a chunk as one chunk (its ranges are pieces of
 * the same tasks), with the values every single-range chunking gives: forward bit for bit, back projections up to
 * the order of the additions. Many short ranges cost what as many small chunks cost in memory (one StarPU child
 * handle per range and per-LOR vector), not in tasks; and creating or destroying a chunking takes time that grows
 * with the square of its ranges (StarPU checks the children of a partition pairwise): about 0.5 s for 4000 ranges
 * on 2 cores, so a chunking of 10^5 ranges (views of a vision600-size sinogram stored [segment][axial][view][radial]
 * are 352512) is impractical: store such data view by view, or chunk a subset's own LOR set.
 * Errors: NULL, NOT_INIT, EMPTY (num_chunks == 0, a chunk without ranges, an empty range), DIMS (negative), RANGE
 * (outside the set or overlapping), OVERFLOW (more than 2^30 ranges or pieces), NOMEM. */
int sproj_chunks_create_lists(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int *num_ranges,
                              const int64_t *first, const int64_t *count);
/* Strided ranges: chunk c is num_ranges[c] ranges of count[c] LORs starting at first[c] + k * stride[c],
 * k = 0 .. num_ranges[c] - 1 (a viewgram of a sinogram stored [segment][axial][view][radial] is one such chunk).
 * Errors as sproj_chunks_create_lists (RANGE also when a range starts outside the set). */
int sproj_chunks_create_strided(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int64_t *first,
                                const int64_t *count, const int64_t *stride, const int *num_ranges);
/* LORs in chunk (all its ranges); number of ranges of chunk (after joining); its ranges into first[num_ranges] and
 * count[num_ranges], in the order given at creation. Errors: NULL, RANGE (chunk). Thread-safe (read-only). */
int sproj_chunks_size(const sproj_chunks *chunks, int chunk, int64_t *num_lors);
int sproj_chunks_num_ranges(const sproj_chunks *chunks, int chunk, int *num_ranges);
int sproj_chunks_ranges(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count);

/* Cylindrical PET scanners: num_rings rings, each a regular polygon of num_modules flat modules (the polygon's sides,
 * at distance radius from the axis z) with detectors_per_module detectors each, detector_pitch apart, centred on
 * the module. Module m's centre lies at angle 2*pi*m/num_modules from the x axis; detector d of a ring
 * (0 .. num_modules*detectors_per_module - 1) is detector d % detectors_per_module of module d / detectors_per_module,
 * detectors numbered counter-clockwise (towards increasing angle) within and across modules. Ring r lies at
 * z = ring_z[r]. Units: those of the images (millimetres in the presets).
 *
 * Its sinogram (span 1, no arc correction, interleaved):
 * - views v = 0 .. D/2 - 1 (D = detectors per ring), radial bins k = 0 .. num_radial_bins - 1;
 *   with j = k - num_radial_bins/2 and h = floor(j/2), the LOR of (v, k) joins detector (v + h) mod D (at xstart)
 *   and detector (v + D/2 - (j - h)) mod D (at xend): bin num_radial_bins/2 passes through the axis and each
 *   radial step moves one of the two detectors by one;
 * - segments s = -max_ring_difference .. +max_ring_difference: the ring pairs with ring(xend) - ring(xstart) = s;
 *   axial positions a = 0 .. num_rings - |s| - 1 within a segment: ring(xstart) = a + max(0, -s), so a is the lower
 *   of the two rings (as STIR numbers them). The planes of a view are its (segment, axial) pairs.
 * - LOR index, by the layout's order (radial bins always fastest; segments in the layout's segment sequence):
 *     SPROJ_ORDER_VIEW_SEGMENT     [view][segment][axial][radial]  a view, and a viewgram, is one range
 *     SPROJ_ORDER_SEGMENT_VIEW     [segment][view][axial][radial]  STIR's "by view" order: a viewgram is one range
 *     SPROJ_ORDER_SEGMENT_AXIAL    [segment][axial][view][radial]  STIR's "by sinogram" order: a viewgram is one
 *                                                                  range of num_radial_bins LORs per axial position
 * Number of LORs: views x radial bins x planes, planes = sum over s of (num_rings - |s|).
 * A scanner object is immutable: every call on it may run from any number of threads at once. None of the calls
 * below needs sproj_init, except those that make chunkings. */
#define SPROJ_MAX_RINGS 256
#define SPROJ_MAX_DETECTORS_PER_RING (1 << 20)

enum sproj_lor_order {
  SPROJ_ORDER_VIEW_SEGMENT = 0,   /* [view][segment][axial][radial] (default; the benchmarks' order) */
  SPROJ_ORDER_SEGMENT_VIEW = 1,   /* [segment][view][axial][radial] */
  SPROJ_ORDER_SEGMENT_AXIAL = 2   /* [segment][axial][view][radial] (the "framework order") */
};
enum sproj_segment_sequence {
  SPROJ_SEGMENTS_ASCENDING = 0,   /* -max, ..., -1, 0, 1, ..., max (default) */
  SPROJ_SEGMENTS_ZERO_PLUS = 1,   /* 0, +1, -1, +2, -2, ... (STIR's standard sequence) */
  SPROJ_SEGMENTS_ZERO_MINUS = 2   /* 0, -1, +1, -2, +2, ... (ECAT / Siemens files) */
};

struct sproj_scanner_params {
  int num_modules;            /* sides of the polygon, >= 3 */
  int detectors_per_module;   /* >= 1; detectors per ring (num_modules * detectors_per_module) even, <= 2^20 */
  double detector_pitch;      /* > 0; a module's detectors must fit on its side: detectors_per_module * pitch <=
                               * 2 * radius * tan(pi / num_modules) */
  double radius;              /* distance of the modules from the axis, > 0 */
  int num_rings;              /* 1 .. SPROJ_MAX_RINGS */
  double ring_z[SPROJ_MAX_RINGS]; /* axial position of each ring, strictly increasing (entries past num_rings unused) */
  int num_radial_bins;        /* 1 .. D - 1, at most D - 1 so that no LOR joins a detector to itself */
  int max_ring_difference;    /* 0 .. num_rings - 1; -1: num_rings - 1 (every ring pair) */
  int order;                  /* enum sproj_lor_order */
  int segment_sequence;       /* enum sproj_segment_sequence */
};
typedef struct sproj_scanner sproj_scanner;

/* Fills params with a named scanner: "small" (16 modules x 8 detectors = 128 per ring, pitch 4, radius 90, 8 rings
 * 4 mm apart centred on 0, 65 radial bins: 64 views x 65 x 64 planes = 266240 LORs, for tests and the demo) or
 * "vision600" (parallelproj's benchmark scanner, Siemens Biograph Vision 600-like: 34 modules x 16 = 544 per ring,
 * pitch 4.03125 mm, radius 0.5 * (744.1 + 2 * 8.51) mm, 36 rings at 5.31556 * r + 2.8 * floor(r / 9) mm centred on 0
 * (their mean), 415 radial bins: 272 views x 415 x 1296 planes = 146292480 LORs). Every ring pair, order
 * SPROJ_ORDER_VIEW_SEGMENT, segments ascending; change fields before sproj_scanner_create as wanted.
 * Errors: NULL, INVALID (unknown name: params untouched). */
int sproj_scanner_preset(const char *name, struct sproj_scanner_params *params);
/* Checks params and makes a scanner object (the caller frees it with sproj_scanner_destroy).
 * Errors: NULL, DIMS (a count < 1), NONFINITE (pitch, radius, ring_z), RANGE (a count too large, odd detectors per
 * ring, detectors that do not fit on a module, rings not increasing, too many radial bins, max_ring_difference),
 * INVALID (order, segment_sequence), NOMEM. */
int sproj_scanner_create(sproj_scanner **scanner, const struct sproj_scanner_params *params);
/* Frees a scanner (NULL: no-op). Chunkings made from it stay valid. */
int sproj_scanner_destroy(sproj_scanner *scanner);
/* The parameters the scanner was made with (max_ring_difference resolved: never -1). */
int sproj_scanner_params(const sproj_scanner *scanner, struct sproj_scanner_params *params);

/* Sizes of a scanner's sinogram. */
struct sproj_sinogram_info {
  int num_detectors;          /* per ring (D) */
  int num_rings;
  int num_views;              /* D / 2 */
  int num_radial_bins;
  int max_ring_difference;    /* segments -max .. +max */
  int num_segments;           /* 2 * max + 1 */
  int num_planes;             /* (segment, axial) pairs of a view */
  int64_t lors_per_view;      /* num_planes * num_radial_bins */
  int64_t num_lors;           /* num_views * lors_per_view */
};
int sproj_scanner_info(const sproj_scanner *scanner, struct sproj_sinogram_info *info);
/* Axial positions of segment s (num_rings - |s|). Errors: NULL, RANGE (segment). */
int sproj_scanner_segment_planes(const sproj_scanner *scanner, int segment, int *num_planes);
/* LOR index of (view, segment, axial, radial) in the scanner's order, and back. Errors: NULL, RANGE (an index
 * outside the sinogram; outputs untouched). */
int sproj_scanner_lor_index(const sproj_scanner *scanner, int view, int segment, int axial, int radial, int64_t *lor);
int sproj_scanner_lor_position(const sproj_scanner *scanner, int64_t lor, int *view, int *segment, int *axial,
                               int *radial);

/* Endpoints of LORs (3 floats per LOR each: xstart at the detector of ring(xstart), xend at the other), computed
 * in double and rounded to float:
 * - sproj_scanner_lors: the whole sinogram, num_lors LORs in the scanner's order;
 * - sproj_scanner_view_lors: the listed views one after the other, each view's lors_per_view LORs in the order
 *   [segment][axial][radial] (the same in every order): a view subset's own LOR set;
 * - sproj_scanner_lors_at: the LORs of n given indices.
 * nthreads: host threads that fill (0: one per online core). Errors: NULL, RANGE (a view or index), DIMS (n,
 * nthreads or num_views negative), NOMEM. */
int sproj_scanner_lors(const sproj_scanner *scanner, float *xstart, float *xend, int nthreads);
int sproj_scanner_view_lors(const sproj_scanner *scanner, const int *views, int num_views, float *xstart,
                            float *xend, int nthreads);
int sproj_scanner_lors_at(const sproj_scanner *scanner, int64_t n, const int64_t *lor, float *xstart, float *xend);

/* Chunkings of a LOR set registered from sproj_scanner_lors (its LOR count must be the sinogram's, else MISMATCH):
 * - views: chunk v = view v (one range in SPROJ_ORDER_VIEW_SEGMENT; num_planes ranges in the others);
 * - viewgrams: chunk v * num_segments + (s + max_ring_difference) = view v of segment s;
 * - subsets: chunk t (0 .. num_subsets - 1) = views t, t + num_subsets, t + 2 * num_subsets, ... (RANGE if
 *   num_subsets > num_views). sproj_scanner_subset_views gives those views (= chunk indices of the views chunking,
 *   for sproj_fwd_chunks lists) in views[] (room for (num_views + num_subsets - 1) / num_subsets) and their number.
 * Errors: NULL, NOT_INIT, MISMATCH, RANGE / DIMS (num_subsets, subset), those of sproj_chunks_create_lists. */
int sproj_scanner_chunks_views(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors);
int sproj_scanner_chunks_viewgrams(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors);
int sproj_scanner_chunks_subsets(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors,
                                 int num_subsets);
int sproj_scanner_subset_views(const sproj_scanner *scanner, int num_subsets, int subset, int *views, int *num_views);

/* Detector pairs (listmode events): detector det_a of ring ring_a and detector det_b of ring ring_b.
 * - sproj_scanner_pair_lors: xstart = detector a's position, xend = detector b's, for n pairs, exactly the floats
 *   of the sinogram LOR of the same detectors (when it is one). A TOF bin of an event given as such a pair is
 *   numbered from detector a's side: it needs no change (see sproj_tof_bins_from_centered for other numberings).
 * - sproj_scanner_lor_pairs: the detector pair of n sinogram LOR indices (a at xstart, b at xend).
 * - sproj_scanner_pair_lor: the sinogram LOR of one pair and *swapped = 1 when its xstart is detector b (the
 *   pair's TOF bins then count from the other end: b' = num_tof_bins - 1 - b); RANGE when the pair is in no LOR of
 *   the sinogram (radial bin or ring difference outside it, or both detectors the same).
 * Errors: NULL, DIMS (n < 0), RANGE (a ring, detector or LOR index outside the scanner; outputs untouched). */
struct sproj_det_pair {
  int32_t ring_a, det_a, ring_b, det_b;
};
int sproj_scanner_pair_lors(const sproj_scanner *scanner, int64_t n, const struct sproj_det_pair *pairs,
                            float *xstart, float *xend);
int sproj_scanner_lor_pairs(const sproj_scanner *scanner, int64_t n, const int64_t *lor,
                            struct sproj_det_pair *pairs);
int sproj_scanner_pair_lor(const sproj_scanner *scanner, const struct sproj_det_pair *pair, int64_t *lor,
                           int *swapped);

/* TOF bin numbering. starproj numbers the num_tof_bins bins 0 .. num_tof_bins - 1 from xstart's side; frameworks
 * (STIR) number them around the centre: c = b - num_tof_bins / 2 (integer division), i.e. -(n-1)/2 .. (n-1)/2 for
 * odd n. reverse = 1: the centred numbering counts from xend's side (c = (n - 1 - b) - n/2). n values are converted
 * from in to out (which may be the same array). Errors: NULL, DIMS (n < 0), TOF (num_tof_bins outside
 * 1 .. SPROJ_MAX_TOF_BINS), RANGE (a value outside its numbering: nothing written). Thread-safe. */
int sproj_tof_bins_from_centered(int64_t n, const int16_t *centered, int16_t *bins, int num_tof_bins, int reverse);
int sproj_tof_bins_to_centered(int64_t n, const int16_t *bins, int16_t *centered, int num_tof_bins, int reverse);

/* ---- forward model and reconstruction ---------------------------------------------------------------- */

/* ---- simulation and files ------------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_H */
