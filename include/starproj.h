/* SPDX-License-Identifier: Apache-2.0 */
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
  SPROJ_ERR_TOF = -15,        /* a TOF parameter is out of its range (bin width, number of bins, sigma, num_sigmas) */
  SPROJ_ERR_IO = -16,         /* a file could not be opened, read, written or renamed */
  SPROJ_ERR_FORMAT = -17      /* a file's content is not in the expected format (header, type, size) */
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
  int reproducible;    /* 1: images start in reproducible mode (see sproj_image_set_reproducible); 0: default */
  int merge_calls;     /* -1 (default) or 1: a call like the one before it (same projector, direction, image,
                        * vector, chunking and TOF parameters) made while at least two projection tasks per
                        * worker still wait is merged with the calls after it into tasks of the usual size,
                        * submitted as soon as the queue runs low or at the next call that waits on, moves or
                        * frees data; code that submits its own StarPU tasks on starproj's handles calls
                        * sproj_flush() first. Back projections into a reproducible image are never merged
                        * (their bits depend on how the LORs are split into calls, not on timing).
                        * 0: every call becomes tasks at once. */
  int image_layouts;   /* -1 (default) or 1: GPU tasks of the non-TOF projectors that walk one LOR per thread
                        * (2^17 LORs or more) first copy the image into two layouts, [n0][n2][n1] for
                        * LORs along axis 0 and [n1][n2][n0] along axis 1, in which the neighbouring LORs of a view
                        * read neighbouring floats, and project from those (back projections add into them, then
                        * into the image). Forward values keep their bits; on the benchmark the forward projection
                        * takes less than half the time (doc/benchmarks.md). The copies live in a
                        * StarPU scratch buffer of two images per CUDA worker, made only while that takes at most
                        * an eighth of the GPU's memory (or of STARPU_LIMIT_CUDA_MEM). The same buffer holds the
                        * image shifted by one float for GPU tasks of the listmode back projection with at least an
                        * eighth as many events as voxels, which then need 2 atomics per sample instead of 2.5
                        * (14% less time on the benchmark). 0: neither. */
};

/* Fills cfg with the defaults (-1 / NULL / 0). */
void sproj_config_init(struct sproj_config *cfg);

/* Starts StarPU with cfg (NULL: defaults). If the caller already initialised StarPU, starproj uses that
 * instance as it is (cfg's worker counts and scheduler are then ignored) and sproj_shutdown() leaves it
 * running. The process environment is left as it was found (settings StarPU only reads from the environment
 * are set for its start and restored). Under a GPU memory limit below 512 MB (STARPU_LIMIT_CUDA_MEM or
 * STARPU_LIMIT_CUDA_<n>_MEM) StarPU starts without its GPU suballocator (STARPU_SUBALLOCATOR=0, unless set), whose
 * kept blocks would otherwise leave allocations waiting forever. Not thread-safe: call it from one thread, before any other starproj
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
 * automatic value (2^20 LORs with GPUs, halved until every CUDA worker's task fits a quarter of the smallest GPU's
 * memory, or of STARPU_LIMIT_CUDA_MEM, at 128 bytes per LOR; 2^15 on CPUs only). Affects chunkings created afterwards.
 * Errors: NOT_INIT, RANGE (negative or above 2^32-1). Not thread-safe: call it while no other thread creates
 * chunkings or submits projections (they read the value unlocked). */
int sproj_set_task_lors(int64_t task_lors);
/* The current largest task, in LORs (0 before sproj_init). */
int64_t sproj_get_task_lors(void);
/* Turns the merging of calls made while the workers are busy (sproj_config.merge_calls) on (1) or off (0), after
 * submitting what is held back. Errors: NOT_INIT, INVALID (not 0 or 1), and those of sproj_flush. */
int sproj_set_merge_calls(int on);
/* Turns the image copies of large GPU tasks (sproj_config.image_layouts) on (1) or off (0) for tasks
 * submitted from now on, after submitting what is held back. Errors: NOT_INIT, INVALID (not 0 or 1), and those of
 * sproj_flush. */
int sproj_set_image_layouts(int on);

/* Which kinds of worker may run projection tasks submitted from now on. Default: the GPUs when StarPU drives any
 * (CPU workers then still run reductions and the caller's own tasks), else the CPU cores. SPROJ_DEVICE_ANY lets
 * the scheduler weigh both, which pays where the GPUs are not much faster than all cores together; on an H200
 * against 15 cores it did not (doc/benchmarks.md). With both kinds and GPUs present, starproj picks the kind of
 * each task: a CPU core only for a task of at most SPROJ_ANY_CPU_MAX_LORS LORs submitted while at least two tasks
 * per CUDA worker wait, a core is free, and a core would finish it before the GPUs finish the work queued for them
 * (both rates measured as tasks run; a core starts from a slow guess), the GPUs otherwise: a core still busy after
 * the GPUs are done would make the whole job slower. SPROJ_ERR_NO_DEVICE if the mask names no existing worker.
 * Errors also: NOT_INIT, INVALID (a mask outside SPROJ_DEVICE_ANY). Not thread-safe: call it while no other
 * thread submits projections (they read the setting unlocked); tasks already submitted keep their devices. */
int sproj_set_devices(unsigned device_mask);
#define SPROJ_ANY_CPU_MAX_LORS 4096

/* What ran where: per-worker counts of projection tasks and LORs since sproj_init or sproj_stats_reset (a task is
 * counted by the worker that takes it, when it takes it; after a wait or sync every finished task is counted). */
struct sproj_worker_stats {
  char name[64];         /* StarPU's worker name, e.g. "CUDA 0 (NVIDIA H200 ...)" or "CPU 3" */
  int is_gpu;            /* 1 for a CUDA worker */
  int gpu;               /* its GPU, 0 .. sproj_num_gpus()-1 (as in sproj_image_upload); -1 for a CPU worker */
  int64_t tasks;         /* projection tasks executed */
  int64_t lors;          /* LORs projected (forward + back) */
  int64_t layout_tasks;  /* of the tasks, those that worked on an image layout (image_layouts: the principal-axis
                          * copies, or the shifted image of listmode back projections) */
};
int sproj_num_workers(void);
int sproj_worker_stats(int worker, struct sproj_worker_stats *stats);
int sproj_stats_reset(void);

/* Waits until every submitted task has finished (submitting merged calls first, see merge_calls). */
int sproj_wait_all(void);
/* Submits every call held back: the calls merged while the workers were busy (see sproj_config.merge_calls), of
 * every thread, and what this thread's open batch has collected. Needed only before submitting StarPU tasks of
 * one's own on starproj's handles; every starproj call that waits on, moves or frees data does it itself. Returns
 * the first error of a held-back submission since the last sync. Errors: NOT_INIT, NOMEM, STARPU. */
int sproj_flush(void);

/* Batches. Between sproj_batch_begin() and sproj_batch_end(), this thread's sproj_fwd / sproj_back calls (and the
 * _chunks variants) on one image, projection vector and chunking are collected and submitted together, merged
 * into few large tasks as sproj_fwd_chunks does: one call per small chunk then costs about what one list call
 * costs. A call on other objects submits what was collected first; so does every sync, upload, release, wait or
 * unregister call of this thread, and sproj_image_handle(). Until then other threads do not see the collected
 * work: do not make them depend on it inside the batch. Batches nest; the outermost end submits and returns the
 * status of that submission. Errors: NOT_INIT, INVALID (end without begin). */
int sproj_batch_begin(void);
int sproj_batch_end(void);

/* Host memory that GPUs can copy from asynchronously (pinned when GPUs are in use). sproj_init first.
 * Errors: NOT_INIT, NULL, EMPTY (0 bytes), NOMEM (*ptr untouched). */
int sproj_malloc_pinned(void **ptr, size_t bytes);
/* Frees memory from sproj_malloc_pinned; bytes must be the size it was allocated with (ptr NULL: no-op), and
 * starproj must still run with the same GPUs (free before sproj_shutdown). Not while a registered object still
 * uses it. Errors: NOT_INIT, INVALID, STARPU. */
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
/* Reproducible mode (on = 1) or the default (on = 0) for back projections into this image from now on. By default
 * back projections add in float in whatever order tasks, workers and GPUs run, so the last bits of a voxel vary
 * from run to run. In reproducible mode every contribution is rounded to a 64-bit fixed-point number with 2^-32
 * resolution and summed as integers (in any order, the same sum); each back projection call then adds its sum to
 * the image once, in float. The result has the same bits on every run, for any number of CPU workers and GPUs,
 * any task size and any order of the chunks in a call (the order of separate calls, as on one thread, still
 * counts). It differs from the default mode by at most the rounding of each contribution (2^-33 absolute); sums
 * must stay within +-2^31 per voxel and call. Costs: one 8-byte accumulator per voxel per device, one flush task
 * per call, and integer atomics on GPUs (measured in doc/benchmarks.md). Errors: NULL, NOT_INIT, INVALID (on). */
int sproj_image_set_reproducible(sproj_image *img, int on);
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
/* Uses a caller's StarPU handles: two vectors of equal length with elemsize 3*sizeof(float); their coordinates are
 * checked as by sproj_lors_register (the handles are acquired for reading once), and they stay the caller's.
 * Errors: NULL, NOT_INIT, INVALID (not vectors, or another element size), MISMATCH (different lengths), EMPTY,
 * NONFINITE, RANGE, STARPU. */
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
/* LORs of chunk `chunk`, when it is one range: [*first, *first + *count). Errors: NULL, RANGE (chunk outside
 * 0..num_chunks-1), INVALID (a chunk of several ranges: see sproj_chunks_ranges). */
int sproj_chunks_range(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count);
/* Frees the chunking after pending tasks that use it (chunks may be NULL: no-op). */
int sproj_chunks_destroy(sproj_chunks *chunks);

/* Step 1 / step 3 for LORs: copies the LORs of one chunk (or SPROJ_ALL_CHUNKS) of a chunking (NULL: the
 * whole set as used by whole-set requests) to one GPU or every GPU / drops those copies. An upload is a placement
 * hint: on a GPU with less memory (or STARPU_LIMIT_CUDA_MEM) than the data, only the first pieces that fit in half
 * of it are copied, and StarPU moves the others when tasks need them (the same holds for sproj_proj_upload).
 * With several GPUs and the default scheduler, a GPU task runs on the GPUs that hold its first LORs when some do and
 * others do not: LORs uploaded to one GPU (or first used there) are projected there, and are not copied to the
 * others. A scheduler you name (sproj_config.sched, STARPU_SCHED) places every task itself.
 * Small chunks whose LORs follow each other in the set (a view's segments, blocks) share one copy on a device, of at
 * most 262144 LORs (6 MB): uploading or releasing one of them moves its neighbours in that stretch with it (their
 * tasks still run where each chunk was uploaded), and a task of many such chunks costs StarPU two LOR buffers per
 * stretch instead of two per chunk.
 * Errors: NULL, NOT_INIT, MISMATCH (chunking of another set), RANGE (chunk), NO_DEVICE. */
int sproj_lors_upload(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu);
int sproj_lors_release(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu);

/* ---- projection vectors ------------------------------------------------------------------------------- */
typedef struct sproj_proj sproj_proj;

/* Registers a host vector with one float per LOR of lors (the output of forward projection, the input of
 * back projection). Errors: NULL, NOT_INIT. */
int sproj_proj_register(sproj_proj **proj, float *values, sproj_lors *lors);
/* Uses a caller's StarPU vector handle of float elements, one per LOR (it stays the caller's).
 * Errors: NULL, NOT_INIT, INVALID (not a vector), MISMATCH (another length or element size than the LOR set needs). */
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
 * Tasks from any number of calls and threads accumulate race-free (StarPU reduction: each worker adds into a
 * private image buffer). Where a memory limit (STARPU_LIMIT_CPU_MEM / STARPU_LIMIT_CUDA_MEM, or a GPU's size)
 * cannot hold one buffer per worker, the tasks add into the image one at a time instead (slower, same values);
 * an image that does not fit a GPU is refused with NOMEM. */
int sproj_back(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk);
/* The same for a list of chunks in one call: neighbouring small chunks are merged into fewer, larger tasks,
 * which is much cheaper than one call per small chunk. A chunk may be listed more than once (here or in a
 * batch): forward projection writes the same values again, back projection adds once per listed copy. chunks NULL
 * stands for the whole LOR set as one chunk (every list entry must then be 0).
 * Errors as above, plus NULL (chunk_list), EMPTY (num == 0), DIMS (num < 0). */
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

/* An order of LORs, listmode events above all, that makes their GPU projections faster: order[i] (each of 0 ..
 * num_lors-1 once) is the LOR to put in place i. Events in the order they were detected lie on random LORs, so the
 * threads of a GPU warp read (and add into) voxels scattered over the whole image; in this order neighbours run
 * through the same image columns (sorted by transaxial direction, then transaxial offset in voxel steps, then the
 * axial position of their midpoint; the last image axis is the axial one) and share cache lines. Each event projects
 * to the same value in any order, and back projections give the same image up to the order of float additions, so
 * a listmode reconstruction may reorder its events (sproj_reorder on every per-event array: endpoints, TOF bins,
 * per-event sigma and offset, factors, values). One H200, 20 M random events of the benchmark scanner: TOF listmode
 * forward / back projection 0.0112 / 0.0157 s in random order, 0.0075 / 0.0147 s in this one (doc/benchmarks.md),
 * about 0.25 ns per event and pass saved; the gain needs the whole set ordered (ordered only within blocks of 1 M,
 * the forward projection takes 0.0102 s), so ordering each subset's events among themselves keeps subsets random
 * but gains little on GPUs. Runs on one thread per core (SPROJ_ORDER_THREADS=N sets N; the order is the same): 20 M
 * LORs in 0.21 s on a 16-core host (1.9 s on one thread), so on GPUs it pays off for events projected some 50-100
 * times (kept resident across many iterations or reconstructions); CPU workers gain 10-25% of a pass, so there it
 * pays off at once. Equal LORs keep their order; LORs with a non-finite coordinate come last. Takes 16 bytes per LOR
 * of scratch memory. Errors (order untouched): RANGE (num_lors < 0), NULL (voxel_size; xstart, xend or order when
 * num_lors > 0), VOXEL_SIZE, OVERFLOW (more than 2^32-1 LORs, as a LOR set), NOMEM. */
int sproj_lors_order(const float *xstart, const float *xend, int64_t num_lors, const float voxel_size[3],
                     int64_t *order);
/* Reorders n elements of elem_bytes bytes each in place: element i becomes the old element order[i]. order must be a
 * permutation of 0 .. n-1 (as sproj_lors_order fills). Runs on one thread per core, as sproj_lors_order (20 M
 * 12-byte elements: 0.10 s on a 16-core host). Takes n * elem_bytes bytes of scratch memory. Errors (array
 * untouched): RANGE (n < 0, or order not a permutation), NULL, DIMS (elem_bytes 0), OVERFLOW, NOMEM. */
int sproj_reorder(void *array, size_t elem_bytes, int64_t n, const int64_t *order);

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
/* A forward model: expected counts ybar = m * (A G x) + a for the LORs of a set, where A is the non-TOF, TOF-sinogram
 * or TOF-listmode projector, m a multiplicative factor per LOR (attenuation x normalisation; NULL: 1), a an additive
 * background (randoms + scatter; NULL: 0) with one value per LOR, or per LOR and TOF bin ([lor][bin]) for a TOF
 * sinogram, and G an optional image-space Gaussian resolution model (separable, zero outside the image, kernel cut
 * at 3 sigma, normalised to sum 1; applied before forward and, as its own adjoint, after back projection). */
typedef struct sproj_model sproj_model;

/* Creates a model on the LORs of lors (a sinogram LOR set, or listmode events). tof NULL: non-TOF projector (events
 * registered with bins are then projected without them); tof given: TOF listmode for events registered with
 * sproj_lors_register_events, TOF sinogram otherwise. mult (one float per LOR) and add (one per LOR, or tof's
 * num_bins per LOR for a TOF sinogram) may be NULL; they are read, never written, registered as read-only per-LOR
 * vectors chunked like the LORs, and must stay valid until sproj_model_destroy. fwhm_mm: NULL or the FWHM of the
 * resolution model along the three image axes, in the units of the LORs (0: no blur along that axis). The model
 * keeps lors and tof in use (unregister them after sproj_model_destroy). Thread safety: create and destroy one
 * model from one thread; a model may serve several reconstructions.
 * Errors: NULL (model, lors), NOT_INIT, NONFINITE (a NaN / infinite factor, background or FWHM), RANGE (a negative
 * factor, background or FWHM; an event bin beyond tof's bins), MISMATCH (tof's per-LOR parameters of another set),
 * NOMEM. */
int sproj_model_create(sproj_model **model, sproj_lors *lors, const float *mult, const float *add, const sproj_tof *tof,
                       const float fwhm_mm[3]);
/* Frees the model (NULL: no-op). SPROJ_ERR_BUSY while a reconstruction uses it. */
int sproj_model_destroy(sproj_model *model);

/* An ML-EM / OS-EM reconstruction: x <- x / s_k * G^T A^T (m y / ybar) over the LORs of subset k, one update per
 * subset, S subsets per iteration (MLEM: S = 1). Sinogram data y (non-TOF or TOF) or listmode (y = 1 per event, with
 * per-event m and a). Every step of a subset (blur, forward projection, ratio, back projection into a zeroed image,
 * blur, update) is a StarPU task with CPU and CUDA implementations; a whole iteration is submitted at once and
 * ordered by StarPU's sequential consistency, so the image and every intermediate stay where they are computed
 * (on the GPUs) until the caller asks for them. The sensitivities s_k = G^T A^T m are computed once, at create,
 * with the non-TOF back projector (TOF weights are normalised, so this equals the sum over TOF bins where the bins
 * cover the part of each LOR inside the image) and stay resident. Where ybar <= 0 the ratio m y / ybar is taken as
 * 0 (the limit 0/0 = 0 for y = 0; for y > 0 such a value has an infinite likelihood term and no direction to move);
 * voxels where s_k is 0 (no LOR of subset k reaches them) are set to 0; the image never becomes negative. */
typedef struct sproj_recon sproj_recon;

struct sproj_recon_config {
  const sproj_model *model;   /* forward model of the data (required) */
  sproj_proj *data;           /* measured counts y on model's LOR set: one value per LOR, or [lor][bin] for a TOF
                               * sinogram; finite and >= 0. NULL: listmode, y = 1 per LOR (event) */
  const sproj_chunks *chunks; /* chunking of model's LOR set (required); subsets are lists of its chunks */
  int num_subsets;            /* S >= 1, at most the number of chunks */
  const int *subset_chunks;   /* NULL: interleaved, chunk c belongs to subset c % S (e.g. one chunk per view: subset s
                               * = views s, s + S, ...). Else the chunk indices of subset 0, then of subset 1, ... */
  const int *subset_sizes;    /* with subset_chunks: the number of chunks of each of the S subsets (each >= 1) */
  const sproj_model *sens_model;   /* LORs and m the sensitivity is back-projected from (listmode: the scanner's
                                    * sinogram LOR set with its m; required). NULL with sinogram data: model */
  const sproj_chunks *sens_chunks; /* NULL: one sensitivity of the whole sens_model LOR set, used divided by S (with
                                    * sinogram data and no sens_model: the data's own subsets, one each). Else a
                                    * chunking of sens_model's LOR set: one sensitivity per subset, from the lists below */
  const int *sens_subset_chunks;   /* with sens_chunks: as subset_chunks (NULL: interleaved) */
  const int *sens_subset_sizes;    /* as subset_sizes */
  int objective;                   /* 1: compute the objective after every iteration and pass it to the callback */
};
/* Fills cfg with zeros / NULL (num_subsets 1). */
void sproj_recon_config_init(struct sproj_recon_config *cfg);

/* Sets up a reconstruction of x (the initial image, finite and >= 0, usually 1 inside the field of view; updated
 * in place) from cfg, computes and keeps the sensitivities, and checks x and the data on the host (the only time
 * they are read there). x, the models, the data and the chunkings must outlive the reconstruction. Memory: the
 * sensitivities (one image per subset, or one), two or three working images (on the devices only) and one vector of
 * the data's shape for the expected counts (resident where the tasks run, with a host buffer of its size as its home
 * in main memory). With two or more GPUs, projections on GPUs alone and the default scheduler, create uploads
 * each chunk's LORs and per-LOR inputs to one GPU, each subset's chunks spread evenly over the GPUs (when a GPU can
 * hold its share four times over): every task then runs where its LORs are, and between iterations only images
 * cross between GPUs.
 * Errors (nothing is created): NULL (recon, x, cfg, model, chunks; listmode without sens_model), NOT_INIT,
 * MISMATCH (chunkings or data of another LOR set, data with another number of values per LOR than the model),
 * RANGE (S < 1 or more than the chunks, a chunk index out of range or twice in one subset, a blur kernel wider
 * than 2*64+1 voxels, a negative value in x or the data), NONFINITE (NaN / infinite in x or the data), EMPTY (a subset of 0 chunks),
 * INVALID (a sens_model on listmode events), NOMEM, STARPU. */
int sproj_recon_create(sproj_recon **recon, sproj_image *x, const struct sproj_recon_config *cfg);

/* Progress after each iteration. */
struct sproj_recon_progress {
  int iteration;     /* iterations done by this reconstruction so far (1, 2, ...) */
  int num_subsets;   /* updates per iteration */
  double elapsed;    /* seconds since this sproj_recon_iterate call began, the iteration's work finished */
  int has_objective; /* 1 when cfg.objective asked for it */
  double objective;  /* Poisson negative log-likelihood of x after this iteration (see sproj_recon_objective) */
};
/* Called after each iteration with x's current value in its host buffer (read it or save it; do not modify it).
 * Return 0 to go on, anything else to stop after this iteration. */
typedef int (*sproj_recon_callback)(const struct sproj_recon_progress *progress, void *user);

/* Runs num_iterations iterations (continuing from the previous ones). Without a callback (and without objective) it
 * returns once the work is submitted: x is current after sproj_image_sync. With a callback, each iteration is
 * waited for and x brought to the host before the call. One thread per reconstruction at a time.
 * Errors: NULL, NOT_INIT, DIMS (num_iterations < 0), STARPU, NOMEM, or what a submission returned. */
int sproj_recon_iterate(sproj_recon *recon, int num_iterations, sproj_recon_callback callback, void *user);

/* Poisson negative log-likelihood of x, sum(ybar - y log ybar) in double over the LORs of the subsets (terms with
 * y = 0 contribute ybar; y > 0 with ybar <= 0 gives +infinity). A forward projection of every subset, whose terms
 * are summed by tasks where the projections ran (partial sums in double, added on the host in a fixed order, so the
 * value does not depend on which worker ran what): only the partial sums reach the host. Listmode: sum over the
 * events of -log(ybar) plus <s, x> + sum of sens_model's background, s the sum of the sensitivities (so the
 * subsets' sensitivities must cover the sensitivity LORs once). Waits. Errors: NULL, NOT_INIT, STARPU, NOMEM. */
int sproj_recon_objective(sproj_recon *recon, double *nll);

/* Copies the sensitivity image subset k uses (already divided by S when one serves all) into out (as many floats
 * as x). Waits. Errors: NULL, NOT_INIT, RANGE (k). */
int sproj_recon_sensitivity(sproj_recon *recon, int subset, float *out);

/* Waits for pending work, frees the reconstruction's data (x keeps its current value) (NULL: no-op). */
int sproj_recon_destroy(sproj_recon *recon);

/* ---- simulation and files ------------------------------------------------------------------------------- */
/* Host-side calls: they need neither sproj_init nor StarPU, and are safe from several threads at once (each call
 * works on its own arguments). Arrays that these calls allocate for the caller are freed with sproj_free. */

/* Frees an array returned by sproj_nifti_read, sproj_raw_read_sino, sproj_raw_read_listmode or
 * sproj_sample_listmode (NULL: no-op). */
void sproj_free(void *ptr);

/* Files are written atomically: the data goes to a temporary file in the target's folder (named
 * ".<name>.tmp-<pid>-<n>"), which is renamed to the target only once everything is written and flushed. On any
 * failure the temporary file is removed, and a file already at the target stays as it was. */

/* Writes an image as NIfTI-1 (a single .nii file, float32, native byte order). The path must end in ".nii".
 * The image is float data[n0][n1][n2] (axis 2 fastest), voxel_size[3] > 0 and origin[3] (centre of voxel (0,0,0))
 * in mm, as for sproj_image_register. NIfTI's fastest index i is starproj's axis 2, j axis 1 and k axis 0, so a
 * NIfTI reader (nibabel) shows the shape (n2, n1, n0) and voxel sizes (vs2, vs1, vs0). The qform and sform
 * (both code 1, scanner coordinates) map voxel (i, j, k) to the world point (x, y, z) with
 *   x = origin[0] + k*vs0,  y = origin[1] + j*vs1,  z = origin[2] + i*vs2,
 * i.e. the file's world coordinates are starproj's (the LORs' frame): the linear part of the affine is a
 * permutation, with determinant < 0 (qfac = -1). Units: mm (xyzt_units). description: optional text (first 79
 * characters kept, NULL: none). Errors: NULL, INVALID (path), DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW, NOMEM, IO. */
int sproj_nifti_write(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                      const float origin[3], const char *description);

/* Reads a NIfTI-1 image (.nii, .nii.gz, .hdr/.img; any of NIfTI's real data types, converted to float with the
 * file's scl_slope / scl_inter) into a new array *data (free with sproj_free) with dims (n0, n1, n2) =
 * (dim[3], dim[2], dim[1]), voxel_size = (pixdim[3], pixdim[2], pixdim[1]) and origin = world coordinates of the
 * centre of voxel (0,0,0) from the sform (else the qform, else 0). For files written by sproj_nifti_write this is
 * the exact inverse. Files with another orientation are read with the same index mapping; their origin is still
 * the world position of voxel (0,0,0), but the directions of the axes are not applied. origin may be NULL.
 * Errors: NULL, IO (cannot open or read, truncated data), FORMAT (not NIfTI, more than 3 dimensions with a size
 * > 1, complex or RGB data, pixdim not > 0), OVERFLOW, NOMEM. */
int sproj_nifti_read(const char *path, float **data, int dims[3], float voxel_size[3], float origin[3]);

/* Raw data with a text header: "<base>.hdr" holds "key = value" lines, "<base>.raw" the numbers, C order (the
 * last axis fastest), native byte order (recorded in the header; the readers swap if needed). Keys:
 *   format = starproj-raw 1              content = sinogram | listmode
 *   data_file = <base name>.raw          data_type = float32 | int32
 *   byte_order = little-endian | big-endian
 *   shape = <n1> <n2> ...                (slowest first)      axes = <name1> <name2> ...
 *   scanner = <text>                     num_tof_bins = <n>   tof_bin_width = <mm>
 * and, for listmode, fields = lor tof_bin, num_lors = <n>. Lines starting with '#' are comments; unknown keys are
 * ignored. base may be given with or without ".hdr". The data file is written first and the header last, after
 * removing any old header: a header is never next to data it does not describe. (So a rewrite that fails in its
 * last steps, the renames, may leave an old pair without its header.) */
#define SPROJ_RAW_MAX_DIMS 8
#define SPROJ_RAW_NAME_LEN 32

/* A sinogram: a float32 array of any layout, described by the names of its axes. */
struct sproj_sino_info {
  int num_dims;                                         /* 1 .. SPROJ_RAW_MAX_DIMS */
  int64_t shape[SPROJ_RAW_MAX_DIMS];                    /* size of each axis, slowest first; > 0 */
  char axes[SPROJ_RAW_MAX_DIMS][SPROJ_RAW_NAME_LEN];    /* what each axis is: "view", "radial", "plane",
                                                         * "tof_bin", ...; letters, digits and _-.+ */
  char scanner[64];                                     /* scanner preset name, "" if none (characters as
                                                         * for axes) */
  int num_tof_bins;                                     /* 0 for non-TOF data */
  float tof_bin_width;                                  /* mm, 0 for non-TOF data */
};

/* Writes <base>.hdr and <base>.raw. Errors: NULL, INVALID (names with other characters, empty base),
 * DIMS, OVERFLOW (more than 2^62 bytes), TOF (num_tof_bins or tof_bin_width negative or not finite), NOMEM, IO. */
int sproj_raw_write_sino(const char *base, const struct sproj_sino_info *info, const float *data);
/* Reads them back: *info and a new array *data (free with sproj_free). Errors: NULL, IO (a file cannot be opened
 * or read), FORMAT (missing or malformed key, content not "sinogram", data type not float32, data file of
 * another size than the shape says), OVERFLOW, NOMEM. A failed read changes neither *info nor *data. */
int sproj_raw_read_sino(const char *base, struct sproj_sino_info *info, float **data);

/* Listmode: num_events events, each two int32 fields in the file (shape = num_events 2, axes = event field,
 * fields = lor tof_bin): the index of the event's LOR in the scanner's LOR enumeration (0 .. num_lors-1) and its
 * TOF bin (0 .. num_tof_bins-1; 0 for non-TOF data). */
struct sproj_lm_info {
  int64_t num_events;   /* >= 0 (an empty list is valid) */
  int64_t num_lors;     /* size of the LOR enumeration, 1 .. 2^31-1 */
  char scanner[64];     /* scanner preset name, "" if none */
  int num_tof_bins;     /* 0 for non-TOF data (every tof_bin then 0) */
  float tof_bin_width;  /* mm, 0 for non-TOF data */
};
/* Writes <base>.hdr and <base>.raw. tof_bin may be NULL (all 0). Errors: NULL, INVALID (names), DIMS (negative
 * count), RANGE (num_lors, an LOR outside 0 .. num_lors-1, a bin outside 0 .. max(num_tof_bins,1)-1), OVERFLOW
 * (more than 2^59 events), TOF, NOMEM, IO. */
int sproj_raw_write_listmode(const char *base, const struct sproj_lm_info *info, const int32_t *lor,
                             const int16_t *tof_bin);
/* Reads them back into new arrays *lor and *tof_bin (free both with sproj_free; NULL when there are no events).
 * tof_bin may be NULL if the bins are not wanted. Errors: as sproj_raw_read_sino (content "listmode", data type
 * int32, fields lor tof_bin), plus FORMAT for an event whose LOR or bin is out of its range. */
int sproj_raw_read_listmode(const char *base, struct sproj_lm_info *info, int32_t **lor, int16_t **tof_bin);

/* PNG previews (8-bit greyscale). window: {lo, hi} mapped to black .. white, or NULL: lo = 0 and hi = the 99.5th
 * percentile of the finite values shown (the largest finite value if that is not > 0; min .. max if that is not
 * > 0 either). NaN and values below lo are black, values above hi white. */

/* Three central slices of an image side by side, each scaled with nearest-neighbour sampling to square pixels
 * (voxel aspect ratio respected) of a common pitch, the largest extent shown over about 256 pixels; index 0 of
 * an axis at the top or left:
 * transaxial (axis 2 fixed at n2/2; rows: axis 1, columns: axis 0), coronal (axis 1 fixed at n1/2; rows: axis 2,
 * columns: axis 0) and sagittal (axis 0 fixed at n0/2; rows: axis 2, columns: axis 1), separated by 4 black
 * columns. Errors: NULL, DIMS, VOXEL_SIZE, OVERFLOW, INVALID (window lo >= hi or not finite), NOMEM, IO. */
int sproj_png_write_image(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                          const float window[2]);
/* One view of a sinogram: plane_axis down the rows, radial_axis across the columns, at index view of view_axis;
 * a fourth axis (TOF bins) is summed over. num_dims is 3 or 4, shape slowest first, the three axis arguments
 * distinct and < num_dims. Each bin becomes an s x s block, s the largest integer (1 .. 8) keeping both sides
 * <= 2048 pixels (sampled down when one side has more than 2048 bins). Errors: NULL, DIMS, INVALID, RANGE (view),
 * OVERFLOW, NOMEM, IO. */
int sproj_png_write_sino(const char *path, const float *sino, int num_dims, const int64_t *shape, int view_axis,
                         int radial_axis, int plane_axis, int64_t view, const float window[2]);

/* A phantom: a cylinder along axis 2 with spheres in it. Spheres replace the cylinder's value where they lie
 * (a later sphere replaces an earlier one), so a cold sphere (value 0) is a hole; outside the cylinder and the
 * spheres the image is 0. Coordinates in mm, in the image's world frame. */
#define SPROJ_PHANTOM_MAX_SPHERES 16
struct sproj_phantom_sphere {
  float centre[3];
  float radius;         /* > 0 */
  float value;
};
struct sproj_phantom {
  float centre[3];      /* centre of the cylinder (its axis is parallel to axis 2) */
  float radius;         /* cylinder radius, > 0 */
  float length;         /* cylinder length along axis 2, > 0 */
  float value;          /* activity in the cylinder */
  int num_spheres;      /* 0 .. SPROJ_PHANTOM_MAX_SPHERES */
  struct sproj_phantom_sphere spheres[SPROJ_PHANTOM_MAX_SPHERES];
};
/* Defaults scaled to an image (dims, voxel_size, origin as for sproj_image_register): a cylinder centred in the
 * image box, radius 0.8 x half the smaller transaxial extent (axes 0, 1), length 0.8 x the axial extent (axis 2),
 * value 1; six spheres in the central transaxial plane on a ring of 0.55 x the cylinder radius, 60 degrees
 * apart: four hot (value 4, radii 0.18, 0.15, 0.12, 0.09 x the cylinder radius) and two cold (value 0, radii
 * 0.18, 0.12 x the cylinder radius). Errors: NULL, DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW. */
int sproj_phantom_default(struct sproj_phantom *phantom, const int dims[3], const float voxel_size[3],
                          const float origin[3]);
/* Fills (overwrites) image[n0][n1][n2] with the phantom: each voxel holds the mean of the phantom's values at
 * supersample^3 points spread evenly over the voxel (the centres of a regular sub-grid), which approximates
 * its partial-volume fractions (supersample 1: the value at the voxel centre). supersample: 1 .. 16.
 * Errors: NULL, DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW, INVALID (phantom: radius or length not > 0, too many
 * spheres, non-finite values; supersample out of range). */
int sproj_phantom_fill(const struct sproj_phantom *phantom, float *image, const int dims[3],
                       const float voxel_size[3], const float origin[3], int supersample);

/* Random numbers: xoshiro256** streams seeded through splitmix64. The n elements are cut into fixed blocks of
 * SPROJ_RNG_BLOCK elements, each with its own stream derived from (seed, block index): results depend only on
 * the seed and the data, never on num_threads (0: one thread per online core; otherwise 1 .. 1024). */
#define SPROJ_RNG_BLOCK 65536

/* counts[i] ~ Poisson(expected[i]), exact samplers (inversion for means below 10, Hoermann's PTRS above),
 * returned as whole numbers in floats (exact up to 2^24). counts may equal expected (in place). expected[i]
 * must be finite and >= 0 (0 gives 0); they are all checked before any count is written. Errors: NULL, DIMS
 * (n < 0), NONFINITE, RANGE (a negative mean), INVALID (num_threads), NOMEM. */
int sproj_poisson(const float *expected, float *counts, int64_t n, uint64_t seed, int num_threads);

/* Listmode events from expected counts: expected[lor*T + t] for num_lors LORs and T = max(num_tof_bins, 1) TOF
 * bins. Draws c ~ Poisson(expected[e]) for every element e, exactly as sproj_poisson(expected, ..., seed) would
 * (the same numbers for the same seed), emits c events of element e (LOR e / T, TOF bin e % T), and shuffles
 * them into a random order (Fisher-Yates, a stream of its own derived from seed). *lor and *tof_bin are new
 * arrays of *num_events elements (free with sproj_free; NULL when no event was drawn); tof_bin may be NULL if
 * the bins are not wanted. Errors: NULL, DIMS, OVERFLOW (num_lors > 2^31-1 or too many events), TOF (bins),
 * NONFINITE, RANGE (negative mean), INVALID (num_threads), NOMEM. */
int sproj_sample_listmode(const float *expected, int64_t num_lors, int num_tof_bins, uint64_t seed, int num_threads,
                          int32_t **lor, int16_t **tof_bin, int64_t *num_events);


#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_H */
