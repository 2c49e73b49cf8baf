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
                        * cores left after one per CUDA worker and one for the submitting thread; at most the
                        * machine's hardware threads (RANGE otherwise) */
  int ncuda;           /* GPUs; -1: StarPU's default ($STARPU_NCUDA, else all); 0: none */
  const char *sched;   /* StarPU scheduler for every context; NULL: $STARPU_SCHED if set, else "lws" for
                          projections on GPUs or on CPU cores, "dmda" for projections on any device. A name
                          StarPU does not know, here or in $STARPU_SCHED, makes sproj_init fail (INVALID) */
  int64_t task_lors;   /* largest number of LORs in one task; 0: automatic (see sproj_set_task_lors) */
  int workers_per_gpu; /* CUDA workers (streams) per GPU, so that small tasks run side by side;
                        * -1: $STARPU_NWORKER_PER_CUDA if set, else 4 */
  int verbose;         /* 1: print the chosen workers and scheduler on stderr at sproj_init */
  int max_queued_tasks;/* submission calls wait while more tasks than this are queued and not finished, until
                        * half of them are done, so memory stays bounded (StarPU keeps a few KB per queued
                        * task); -1: 10000 ($STARPU_LIMIT_MAX_SUBMITTED_TASKS if set); 0: no limit. Applies
                        * only when sproj_init starts StarPU. */
};

/* Fills cfg with the defaults (-1 / NULL / 0). */
void sproj_config_init(struct sproj_config *cfg);

/* Starts StarPU with cfg (NULL: defaults). If the caller already initialised StarPU, starproj uses that
 * instance as it is (cfg's worker counts and scheduler are then ignored) and sproj_shutdown() leaves it
 * running. The process environment is left as it was found (settings StarPU only reads from the environment
 * are set for its start and restored). Not thread-safe: call it from one thread, before any other starproj
 * call. Errors: INVALID (already initialised, a bad field, an unknown scheduler), RANGE (ncpu, task_lors),
 * NO_DEVICE (no worker), STARPU. */
int sproj_init(const struct sproj_config *cfg);
/* Waits for all submitted work and stops StarPU (if sproj_init started it). SPROJ_ERR_BUSY while images, LOR sets,
 * projection vectors or TOF parameters are still registered. Not thread-safe: call it once no other thread uses
 * starproj. */
int sproj_shutdown(void);

/* Scheduler of the devices projections go to now (sproj_set_devices), e.g. "lws" (NULL before sproj_init). */
const char *sproj_scheduler_name(void);
/* Number of CPU workers and of GPUs driven by StarPU (0 before sproj_init). */
int sproj_num_cpu_workers(void);
int sproj_num_gpus(void);

/* Task granularity. A request (one chunk, a list of chunks or the whole LOR set) is cut into tasks of at
 * most task_lors LORs, and large chunks into enough pieces to keep every worker busy. 0 restores the
 * automatic value (2^20 LORs with GPUs, 2^15 on CPUs only). Affects chunkings created afterwards.
 * Errors: NOT_INIT, RANGE (negative or above 2^32-1). Not thread-safe: call it while no other thread creates
 * chunkings or submits projections (they read the value unlocked). */
int sproj_set_task_lors(int64_t task_lors);
/* The current largest task, in LORs (0 before sproj_init). */
int64_t sproj_get_task_lors(void);

/* Which kinds of worker may run projection tasks submitted from now on. Default: the GPUs when StarPU drives any
 * (CPU workers then still run reductions and the caller's own tasks), else the CPU cores. SPROJ_DEVICE_ANY lets
 * the scheduler weigh both, which pays where the GPUs are not much faster than all cores together; on an H200
 * against 15 cores it did not (doc/benchmarks.md). SPROJ_ERR_NO_DEVICE if the mask names no existing worker.
 * Errors also: NOT_INIT, INVALID (a mask outside SPROJ_DEVICE_ANY). Not thread-safe: call it while no other
 * thread submits projections (they read the setting unlocked); tasks already submitted keep their devices. */
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
/* Frees memory from sproj_malloc_pinned; bytes must be the size it was allocated with (ptr NULL: no-op). Not
 * while a registered object still uses it. Errors: NOT_INIT, STARPU. */
int sproj_free_pinned(void *ptr, size_t bytes);
/* Pins / unpins memory the caller allocated itself (a no-op without GPUs). */
int sproj_pin(void *ptr, size_t bytes);
/* Undoes sproj_pin on the same range (ptr and bytes as pinned), before the caller frees it. Errors: NOT_INIT, NULL,
 * EMPTY (bytes 0), STARPU (StarPU could not unpin the range). */
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

/* Largest |coordinate| of a LOR endpoint (10 km in mm; a float there is exact to 1 mm). */
#define SPROJ_MAX_COORDINATE 1e7f

/* Registers num_lors LORs: xstart[3*i..3*i+2] to xend[3*i..3*i+2]. The buffers are read, never written,
 * and must stay valid until sproj_lors_unregister. Every coordinate is checked to be finite and at most
 * SPROJ_MAX_COORDINATE in magnitude (RANGE otherwise): float coordinates farther out lose the precision of a
 * voxel.
 * Errors: NULL, EMPTY (num_lors == 0), DIMS (num_lors < 0), OVERFLOW (num_lors > 2^32-1), NONFINITE, RANGE. */
int sproj_lors_register(sproj_lors **lors, const float *xstart, const float *xend, int64_t num_lors);
/* Uses a caller's StarPU handles: two vectors of equal length with elemsize 3*sizeof(float). */
int sproj_lors_register_handles(sproj_lors **lors, sproj_starpu_handle xstart, sproj_starpu_handle xend);
/* Number of LORs (or events) of the set, into *num_lors. Errors: NULL. */
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
/* Number of chunks of the chunking, into *num_chunks. Errors: NULL. */
int sproj_chunks_count(const sproj_chunks *chunks, int *num_chunks);
/* LORs of chunk `chunk`: [*first, *first + *count). Errors: NULL, RANGE (chunk outside 0..num_chunks-1). */
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
 * which is much cheaper than one call per small chunk. A chunk may be listed more than once (here or in a
 * batch): forward projection writes the same values again, back projection adds once per listed copy.
 * Errors as above, plus EMPTY (num == 0). */
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
/* Bound of the TOF ratios below: kernels narrower or wider than a millionth or a million bins, or offsets of more
 * than a million bins, describe no scanner and would overflow the bin arithmetic. */
#define SPROJ_TOF_MAX_RATIO 1e6

/* Ranges, checked by sproj_tof_register (SPROJ_ERR_TOF otherwise; NONFINITE for a NaN or infinite offset), for the
 * scalars and for every per-LOR value alike:
 *   bin_width and sigma finite and > 0, with 1/SPROJ_TOF_MAX_RATIO <= sigma / bin_width <= SPROJ_TOF_MAX_RATIO;
 *   num_sigmas finite and > 0, with num_sigmas * sigma / bin_width <= SPROJ_TOF_MAX_RATIO (a sample's window is
 *   cut to 64 bins around it anyway);
 *   center_offset finite, with |center_offset| <= SPROJ_TOF_MAX_RATIO * bin_width. */
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
/* Frees TOF parameters (NULL: no-op), after pending tasks that read their per-LOR arrays; tasks already submitted
 * keep the scalar parameters they were given. Errors: NOT_INIT. */
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

/* ---- forward model and reconstruction ---------------------------------------------------------------- */

/* ---- simulation and files ------------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_H */
