/* SPDX-License-Identifier: Apache-2.0 */
/* starproj.h: the projector runtime of starproj (libstarproj): Joseph forward and back projectors on data kept
 * resident by StarPU. Extensions, each including this header: starproj_recon.h (scanner geometry, forward models,
 * reconstruction, simulation; also libstarproj), starproj_io.h (files; libstarproj-io), starproj_mpi.h (several
 * processes; libstarproj-mpi), starproj_parallelproj.h (one-shot calls with libparallelproj's arguments). */
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

/* Marks what starproj's libraries export: exactly the calls its public headers declare (the libraries are built
 * with -fvisibility=hidden, so nothing else is visible to a program or to another library in its process). */
#if defined(__GNUC__) && __GNUC__ >= 4
#define SPROJ_API __attribute__((visibility("default")))
#else
#define SPROJ_API
#endif

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
SPROJ_API const char *sproj_strerror(int status);
/* Message about the last failing call made by this thread ("" if none); valid until this thread's next call. */
SPROJ_API const char *sproj_last_error(void);

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
SPROJ_API void sproj_config_init(struct sproj_config *cfg);

/* Starts StarPU with cfg (NULL: defaults). If the caller already initialised StarPU, starproj uses that
 * instance as it is (cfg's worker counts and scheduler are then ignored) and sproj_shutdown() leaves it
 * running. The process environment is left as it was found (settings StarPU only reads from the environment
 * are set for its start and restored). Under a GPU memory limit below 512 MB (STARPU_LIMIT_CUDA_MEM or
 * STARPU_LIMIT_CUDA_<n>_MEM) StarPU starts without its GPU suballocator (STARPU_SUBALLOCATOR=0, unless set), whose
 * kept blocks would otherwise leave allocations waiting forever. Not thread-safe: call it from one thread, before any other starproj
 * call. Errors: INVALID (already initialised, a bad field, an unknown scheduler), RANGE (ncpu, task_lors),
 * NO_DEVICE (no worker), STARPU. */
SPROJ_API int sproj_init(const struct sproj_config *cfg);
/* Waits for all submitted work and stops StarPU (if sproj_init started it). SPROJ_ERR_BUSY while images, LOR sets,
 * projection vectors or TOF parameters are still registered. Not thread-safe: call it once no other thread uses
 * starproj. */
SPROJ_API int sproj_shutdown(void);
/* 1 between a successful sproj_init and sproj_shutdown, else 0. */
SPROJ_API int sproj_is_initialized(void);

/* SPROJ_OK if StarPU has a scheduling policy of that name (what sproj_config.sched and STARPU_SCHED may name), else
 * INVALID with a message listing the names it knows. Needs no sproj_init: programs check their options with it
 * before starting anything. Errors: NULL, INVALID. Thread-safe. */
SPROJ_API int sproj_scheduler_check(const char *name);
/* Scheduler of the devices projections go to now (sproj_set_devices), e.g. "lws" (NULL before sproj_init). */
SPROJ_API const char *sproj_scheduler_name(void);
/* Number of CPU workers and of GPUs driven by StarPU (0 before sproj_init). */
SPROJ_API int sproj_num_cpu_workers(void);
SPROJ_API int sproj_num_gpus(void);
/* Number of devices projections are spread over now (sproj_set_devices): one per GPU when they run on GPUs, one of all
 * CPU workers when they run on CPU workers; 0 when both kinds are selected or before sproj_init. The environment
 * variable SPROJ_DEVICES (1 to 8) at sproj_init asks for another number: CPU workers are then split into that many
 * groups, and with more devices than GPUs (or CPU workers) devices share them. Shared devices compute what as many
 * separate ones would (their shares of the work, their sums), which lets a machine without GPUs, or with one, run
 * and test the paths of several; they are not faster. Devices own chunks (sproj_chunks_set_device) and a
 * reconstruction's shares of its data (starproj_recon.h). */
SPROJ_API int sproj_num_devices(void);

/* Task granularity. A request (one chunk, a list of chunks or the whole LOR set) is cut into tasks of at
 * most task_lors LORs, and large chunks into enough pieces to keep every worker busy. 0 restores the
 * automatic value (2^20 LORs with GPUs, halved until every CUDA worker's task fits a quarter of the smallest GPU's
 * memory, or of STARPU_LIMIT_CUDA_MEM, at 128 bytes per LOR; 2^15 on CPUs only). Affects chunkings created afterwards.
 * Errors: NOT_INIT, RANGE (negative or above 2^32-1). Not thread-safe: call it while no other thread creates
 * chunkings or submits projections (they read the value unlocked). */
SPROJ_API int sproj_set_task_lors(int64_t task_lors);
/* The current largest task, in LORs (0 before sproj_init). */
SPROJ_API int64_t sproj_get_task_lors(void);
/* Turns the merging of calls made while the workers are busy (sproj_config.merge_calls) on (1) or off (0), after
 * submitting what is held back. Errors: NOT_INIT, INVALID (not 0 or 1), and those of sproj_flush. */
SPROJ_API int sproj_set_merge_calls(int on);
/* Turns the image copies of large GPU tasks (sproj_config.image_layouts) on (1) or off (0) for tasks
 * submitted from now on, after submitting what is held back. Errors: NOT_INIT, INVALID (not 0 or 1), and those of
 * sproj_flush. */
SPROJ_API int sproj_set_image_layouts(int on);

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
SPROJ_API int sproj_set_devices(unsigned device_mask);
/* The kinds projections go to now, as a mask of SPROJ_DEVICE_CPU / SPROJ_DEVICE_CUDA: what sproj_set_devices last set
 * (less kinds without workers), or the default; 0 when starproj is not initialised. Lets a caller that changes the
 * setting for its own calls put it back. */
SPROJ_API unsigned sproj_get_devices(void);
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
SPROJ_API int sproj_num_workers(void);
SPROJ_API int sproj_worker_stats(int worker, struct sproj_worker_stats *stats);
SPROJ_API int sproj_stats_reset(void);
/* Memory of GPU gpu (0 .. sproj_num_gpus()-1) as StarPU accounts for it, in bytes: *used_bytes what StarPU holds there
 * now (the buffers of data handles, those its allocation cache keeps after use, scratch buffers); *total_bytes (may
 * be NULL) what it may use (the GPU's memory, or STARPU_LIMIT_CUDA_MEM), -1 when StarPU sets no bound. Memory CUDA
 * takes for itself (context, kernels) is not counted. Lets a long run check that what stays on a GPU does not grow.
 * Errors: NOT_INIT, NULL (used_bytes), NO_DEVICE (no such GPU). */
SPROJ_API int sproj_gpu_memory(int gpu, int64_t *used_bytes, int64_t *total_bytes);

/* Waits until every submitted task has finished (submitting merged calls first, see merge_calls). */
SPROJ_API int sproj_wait_all(void);
/* Submits every call held back: the calls merged while the workers were busy (see sproj_config.merge_calls), of
 * every thread, and what this thread's open batch has collected. Needed only before submitting StarPU tasks of
 * one's own on starproj's handles; every starproj call that waits on, moves or frees data does it itself. Returns
 * the first error of a held-back submission since the last sync. Errors: NOT_INIT, NOMEM, STARPU. */
SPROJ_API int sproj_flush(void);
/* Host work of the caller's own beside an idle runtime: StarPU's CPU workers poll for tasks while they have none,
 * which takes the cores from the caller's threads (a host loop on every core ran at half speed beside them).
 * sproj_pause waits for every task submitted, then makes the workers sleep until the matching sproj_resume; pauses
 * nest. While paused, every call that registers, submits or waits fails with BUSY (so that none waits forever);
 * host-side calls (simulation, I/O, geometry) work. Errors: NOT_INIT; INVALID (sproj_resume without a pause). */
SPROJ_API int sproj_pause(void);
SPROJ_API int sproj_resume(void);

/* Batches. Between sproj_batch_begin() and sproj_batch_end(), this thread's sproj_fwd / sproj_back calls (and the
 * _chunks variants) on one image, projection vector and chunking are collected and submitted together, merged
 * into few large tasks as sproj_fwd_chunks does: one call per small chunk then costs about what one list call
 * costs. A call on other objects submits what was collected first; so does every sync, upload, release, wait or
 * unregister call of this thread, and sproj_image_handle(). Until then other threads do not see the collected
 * work: do not make them depend on it inside the batch. Batches nest; the outermost end submits and returns the
 * status of that submission. Errors: NOT_INIT, INVALID (end without begin). */
SPROJ_API int sproj_batch_begin(void);
SPROJ_API int sproj_batch_end(void);

/* Host memory that GPUs can copy from asynchronously (pinned when GPUs are in use). sproj_init first.
 * Errors: NOT_INIT, NULL, EMPTY (0 bytes), NOMEM (*ptr untouched). */
SPROJ_API int sproj_malloc_pinned(void **ptr, size_t bytes);
/* Frees memory from sproj_malloc_pinned; bytes must be the size it was allocated with (ptr NULL: no-op), and
 * starproj must still run with the same GPUs (free before sproj_shutdown). Not while a registered object still
 * uses it. Errors: NOT_INIT, INVALID, STARPU. */
SPROJ_API int sproj_free_pinned(void *ptr, size_t bytes);
/* Pins / unpins memory the caller allocated itself (a no-op without GPUs). */
SPROJ_API int sproj_pin(void *ptr, size_t bytes);
/* Undoes sproj_pin on the same range (ptr and bytes as pinned), before the caller frees it. Errors: NOT_INIT, NULL,
 * EMPTY (bytes 0), STARPU (StarPU could not unpin the range). */
SPROJ_API int sproj_unpin(void *ptr, size_t bytes);

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
SPROJ_API int sproj_image_register(sproj_image **img, float *data, const int dims[3], const float voxel_size[3],
                                   const float origin[3]);
/* Uses a caller's StarPU handle instead: a vector of dims[0]*dims[1]*dims[2] floats (elemsize 4).
 * Its reduction methods are set to starproj's (needed by back projection). sproj_image_unregister then
 * leaves the handle registered. Errors as above, plus INVALID for a handle of another kind or size. */
SPROJ_API int sproj_image_register_handle(sproj_image **img, sproj_starpu_handle handle, const int dims[3],
                                          const float voxel_size[3], const float origin[3]);
/* An image of the library's own, allocated where tasks use it (on a GPU, without a host copy) and never brought
 * home: a back projection target the caller hands on (sproj_recon_config.sensitivity_images) or zeroes and reads
 * through sproj_image_sync, which then allocates a host copy. Its value is undefined until written (sproj_image_zero
 * first for a back projection). Errors: NULL, NOT_INIT, DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW, NOMEM. */
SPROJ_API int sproj_image_create(sproj_image **img, const int dims[3], const float voxel_size[3], const float origin[3]);
/* Step 1: allocates the image on one GPU (0..sproj_num_gpus()-1) or on every GPU (SPROJ_ALL_GPUS) and copies
 * it there, after any pending task that writes it; returns when the copy is done. Without GPUs,
 * SPROJ_ALL_GPUS is a no-op. Errors: NULL, NOT_INIT, NO_DEVICE. */
SPROJ_API int sproj_image_upload(sproj_image *img, int gpu);
/* Step 3: drops the device copy (after pending tasks; the value is written back first if only the device has
 * it). Errors: NULL, NOT_INIT, NO_DEVICE. */
SPROJ_API int sproj_image_release(sproj_image *img, int gpu);
/* Waits for pending tasks on the image (including the reduction of back projections) and makes the host buffer
 * hold its current value; see enum sproj_sync_mode. Errors: NULL, NOT_INIT, INVALID (mode). */
SPROJ_API int sproj_image_sync(sproj_image *img, int mode);
/* Sets the image to 0 where the next projections run, by a task after the pending tasks on it: a back projection
 * target starts again without its host buffer (a GPU writes the zeros; no copy either way). The host buffer is
 * stale until the next sproj_image_sync. Errors: NULL, NOT_INIT, STARPU. */
SPROJ_API int sproj_image_zero(sproj_image *img);
/* Waits, writes the value back to the host buffer (an image of sproj_image_create: none) and frees the object (img may
 * be NULL: no-op). */
SPROJ_API int sproj_image_unregister(sproj_image *img);
/* Reproducible mode (on = 1) or the default (on = 0) for back projections into this image from now on. By default
 * back projections add in float in whatever order tasks, workers and GPUs run, so the last bits of a voxel vary
 * from run to run. In reproducible mode every contribution is rounded to a 64-bit fixed-point number with 2^-32
 * resolution and summed as integers (in any order, the same sum); each back projection call then adds its sum to
 * the image once, in float. The result has the same bits on every run, for any number of CPU workers and GPUs,
 * any task size and any order of the chunks in a call (the order of separate calls, as on one thread, still
 * counts). It differs from the default mode by at most the rounding of each contribution (2^-33 absolute); sums
 * must stay within +-2^31 per voxel and call. Costs: one 8-byte accumulator per voxel per device, one flush task
 * per call, and integer atomics on GPUs (measured in doc/benchmarks.md). Errors: NULL, NOT_INIT, INVALID (on). */
SPROJ_API int sproj_image_set_reproducible(sproj_image *img, int on);
/* The StarPU handle of the image, for callers who submit their own tasks on it. */
SPROJ_API sproj_starpu_handle sproj_image_handle(const sproj_image *img);
/* The geometry the image was registered with (any output may be NULL). Errors: NULL (img). Thread-safe. */
SPROJ_API int sproj_image_geometry(const sproj_image *img, int dims[3], float voxel_size[3], float origin[3]);

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
SPROJ_API int sproj_lors_register(sproj_lors **lors, const float *xstart, const float *xend, int64_t num_lors);
/* Uses a caller's StarPU handles: two vectors of equal length with elemsize 3*sizeof(float); their coordinates are
 * checked as by sproj_lors_register, with the same messages, where the vectors live: a vector whose home node is a
 * GPU's memory by a task on that GPU (only a few bytes of the result come to the host; nothing is copied to main
 * memory), any other after acquiring it for reading in main memory. They stay the caller's.
 * Errors: NULL, NOT_INIT, INVALID (not vectors, or another element size), MISMATCH (different lengths), EMPTY,
 * NONFINITE, RANGE, STARPU. */
SPROJ_API int sproj_lors_register_handles(sproj_lors **lors, sproj_starpu_handle xstart, sproj_starpu_handle xend);
/* Number of LORs (or events) of the set, into *num_lors. Errors: NULL. */
SPROJ_API int sproj_lors_count(const sproj_lors *lors, int64_t *num_lors);
/* Copies the endpoints of LORs first .. first + n - 1 into xstart and xend (3 floats per LOR each), bringing the set
 * home from where it was made or last used (the whole set: for checks and small sets, not for every call).
 * Errors: NULL, NOT_INIT, RANGE (the LORs are not all in the set; nothing copied), STARPU. */
SPROJ_API int sproj_lors_copy(const sproj_lors *lors, int64_t first, int64_t n, float *xstart, float *xend);
/* Frees the LOR set. SPROJ_ERR_BUSY while chunkings or projection vectors of it exist. */
SPROJ_API int sproj_lors_unregister(sproj_lors *lors);

/* A chunking of a LOR set: chunk c covers LORs [first[c], first[c] + count[c]). Chunks may come in any order
 * and need not cover every LOR, but must not overlap. A chunking is created once and reused for as many
 * requests (and projection vectors of the LOR set) as wanted. Errors: NULL, EMPTY (num_chunks == 0 or
 * count[c] == 0), DIMS (negative), RANGE (outside the set or overlapping), NOMEM. */
SPROJ_API int sproj_chunks_create_ranges(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int64_t *first,
                                         const int64_t *count);
/* num_chunks chunks of (nearly) equal size covering the whole set (num_chunks <= number of LORs). */
SPROJ_API int sproj_chunks_create_blocks(sproj_chunks **chunks, sproj_lors *lors, int num_chunks);
/* Number of chunks of the chunking, into *num_chunks. Errors: NULL. */
SPROJ_API int sproj_chunks_count(const sproj_chunks *chunks, int *num_chunks);
/* LORs of chunk `chunk`, when it is one range: [*first, *first + *count). Errors: NULL, RANGE (chunk outside
 * 0..num_chunks-1), INVALID (a chunk of several ranges: see sproj_chunks_ranges). */
SPROJ_API int sproj_chunks_range(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count);
/* Frees the chunking after pending tasks that use it (chunks may be NULL: no-op). */
SPROJ_API int sproj_chunks_destroy(sproj_chunks *chunks);

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
SPROJ_API int sproj_lors_upload(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu);
SPROJ_API int sproj_lors_release(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu);
/* Gives one chunk (or SPROJ_ALL_CHUNKS) a home: device 0..sproj_num_devices()-1, or -1 for none (the default). Every
 * task on the chunk's LORs submitted from now on (projections, and the reconstruction's tasks on them) runs on that
 * device's workers, under any scheduler: its LORs, values and per-LOR inputs move there once and stay, and a
 * forward projection's values stay there until they are read. A task never mixes chunks of two homes. Homes name
 * devices of the kind projections run on; with both kinds selected (SPROJ_DEVICE_ANY) they are not used.
 * Errors: NULL, NOT_INIT, RANGE (chunk), NO_DEVICE (device outside -1..sproj_num_devices()-1). */
SPROJ_API int sproj_chunks_set_device(sproj_chunks *chunks, int chunk, int device);

/* ---- projection vectors ------------------------------------------------------------------------------- */
typedef struct sproj_proj sproj_proj;

/* Registers a host vector with one float per LOR of lors (the output of forward projection, the input of
 * back projection). Errors: NULL, NOT_INIT. */
SPROJ_API int sproj_proj_register(sproj_proj **proj, float *values, sproj_lors *lors);
/* Uses a caller's StarPU vector handle of float elements, one per LOR (it stays the caller's).
 * Errors: NULL, NOT_INIT, INVALID (not a vector), MISMATCH (another length or element size than the LOR set needs). */
SPROJ_API int sproj_proj_register_handle(sproj_proj **proj, sproj_starpu_handle handle, sproj_lors *lors);
/* The same for a TOF sinogram (see sproj_proj_register_tof): a vector with one element per LOR of num_tof_bins
 * floats (elemsize num_tof_bins * sizeof(float)), the LOR's bins. Errors: those of sproj_proj_register_handle, and
 * of sproj_proj_register_tof for num_tof_bins (EMPTY, DIMS, TOF). */
SPROJ_API int sproj_proj_register_tof_handle(sproj_proj **proj, sproj_starpu_handle handle, sproj_lors *lors,
                                             int num_tof_bins);
/* Values of the library's own for the LORs of lors (num_tof_bins per LOR: 1, or a TOF sinogram's bins), with no
 * array of the caller's: host memory the library maps lazily, whose pages exist only where values are written on the
 * host or come home, so that data made and used on the GPUs (drawn there by sproj_model_expected and
 * sproj_model_draw, projected, reconstructed from, dropped by sproj_proj_discard) need no host array of their size.
 * Their contents are unspecified until written. sproj_proj_sync refuses them (INVALID); sproj_proj_discard or
 * sproj_proj_unregister frees them. Errors: NULL, NOT_INIT, EMPTY, DIMS, TOF (num_tof_bins as
 * sproj_proj_register_tof), NOMEM. */
SPROJ_API int sproj_proj_create(sproj_proj **proj, sproj_lors *lors, int num_tof_bins);
/* Copies the values of a chunk (or all chunks; chunks NULL: the whole vector) to GPUs / drops the copies. */
SPROJ_API int sproj_proj_upload(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu);
SPROJ_API int sproj_proj_release(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu);
/* Waits for pending tasks writing the chunk (SPROJ_ALL_CHUNKS: all chunks; chunks NULL: the whole vector) and
 * makes the host buffer hold its current values; see enum sproj_sync_mode. */
SPROJ_API int sproj_proj_sync(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int mode);
/* Waits, writes the values back to the host buffer and frees the object (NULL: no-op). */
SPROJ_API int sproj_proj_unregister(sproj_proj *proj);
/* Unregisters proj without bringing its values home: it waits for the tasks that use it (without moving the values),
 * then they are dropped wherever they are (a GPU), and values the devices wrote never reach the host array, whose
 * contents are then unspecified. For data kept on the devices only,
 * such as data drawn there by sproj_model_draw. NULL: nothing. Errors: INVALID (proj from sproj_proj_register_handle:
 * the handle is the caller's). */
SPROJ_API int sproj_proj_discard(sproj_proj *proj);
/* Number of LORs of its set and values per LOR (1, or the TOF bins of a TOF sinogram); either output may be NULL.
 * Errors: NULL (proj). Thread-safe. */
SPROJ_API int sproj_proj_count(const sproj_proj *proj, int64_t *num_lors, int *values_per_lor);

/* ---- projections (step 2) ----------------------------------------------------------------------------- */
/* Forward projection of img along the LORs of one chunk (SPROJ_ALL_CHUNKS: every chunk; chunks NULL: the
 * whole LOR set, chunk must then be 0 or SPROJ_ALL_CHUNKS) into the matching elements of proj (overwritten).
 * Returns at once; the work runs on whichever CPU cores and GPUs StarPU picks, using resident copies.
 * Errors: NULL, NOT_INIT, MISMATCH (chunking of another LOR set than proj's), RANGE (chunk), NO_DEVICE. */
SPROJ_API int sproj_fwd(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk);
/* Back projection: ADDS the transpose of the forward projector applied to proj's chunk elements to img.
 * Tasks from any number of calls and threads accumulate race-free (StarPU reduction: each worker adds into a
 * private image buffer). Where a memory limit (STARPU_LIMIT_CPU_MEM / STARPU_LIMIT_CUDA_MEM, or a GPU's size)
 * cannot hold one buffer per worker, the tasks add into the image one at a time instead (slower, same values);
 * an image that does not fit a GPU is refused with NOMEM. */
SPROJ_API int sproj_back(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk);
/* The same for a list of chunks in one call: neighbouring small chunks are merged into fewer, larger tasks,
 * which is much cheaper than one call per small chunk. A chunk may be listed more than once (here or in a
 * batch): forward projection writes the same values again, back projection adds once per listed copy. chunks NULL
 * stands for the whole LOR set as one chunk (every list entry must then be 0).
 * Errors as above, plus NULL (chunk_list), EMPTY (num == 0), DIMS (num < 0). */
SPROJ_API int sproj_fwd_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                               int num);
SPROJ_API int sproj_back_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
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
SPROJ_API int sproj_tof_register(sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors, const float *sigma,
                                 const float *center_offset);
/* The same with the per-LOR arrays in a caller's StarPU vectors of float, one element per LOR of lors (NULL: the
 * scalar in params applies; the handles stay the caller's). Their values are checked as above, where they live (as
 * sproj_lors_register_handles checks its vectors: on the GPU that is a vector's home, else in main memory).
 * Errors: those of sproj_tof_register, INVALID (not a vector of float), MISMATCH (another length than the LOR set),
 * STARPU. */
SPROJ_API int sproj_tof_register_handles(sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors,
                                         sproj_starpu_handle sigma, sproj_starpu_handle center_offset);
/* Frees TOF parameters (NULL: no-op), after pending tasks that read their per-LOR arrays; tasks already submitted
 * keep the scalar parameters they were given. Errors: NOT_INIT. */
SPROJ_API int sproj_tof_unregister(sproj_tof *tof);

/* Registers listmode events: a LOR set whose LOR i carries the TOF bin tof_bin[i] (0 .. num_bins-1 of the TOF
 * parameters it is projected with; checked at submission). Errors: those of sproj_lors_register, NULL, RANGE
 * (a negative bin). Events in libparallelproj's convention, whose bins may be any int16_t:
 * sproj_lors_register_events_convention (starproj_parallelproj.h). */
SPROJ_API int sproj_lors_register_events(sproj_lors **events, const float *xstart, const float *xend, const int16_t *tof_bin,
                                         int64_t num_events);
/* The same from a caller's StarPU vectors (they stay the caller's): the endpoints as in sproj_lors_register_handles
 * and tof_bin, a vector of as many int16_t elements. The bins are checked as above, where they live, with the
 * endpoints (one task when they share a GPU; endpoint errors come first, unlike sproj_lors_register_events).
 * Errors: those of sproj_lors_register_handles, NULL, INVALID (tof_bin not a vector of int16_t), MISMATCH (another
 * length), RANGE (a negative bin). */
SPROJ_API int sproj_lors_register_events_handles(sproj_lors **events, sproj_starpu_handle xstart, sproj_starpu_handle xend,
                                                 sproj_starpu_handle tof_bin);

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
 * pays off at once. While starproj is initialised, StarPU's workers sleep during the call, which would otherwise
 * poll for tasks on the cores it uses (tasks submitted meanwhile, by any thread, wait until it returns; inside
 * sproj_pause they stay asleep). Equal LORs keep their order; LORs with a non-finite coordinate come last. Takes 16
 * bytes per LOR of scratch memory. Errors (order untouched): RANGE (num_lors < 0), NULL (voxel_size; xstart, xend
 * or order when num_lors > 0), VOXEL_SIZE, OVERFLOW (more than 2^32-1 LORs, as a LOR set), NOMEM. */
SPROJ_API int sproj_lors_order(const float *xstart, const float *xend, int64_t num_lors, const float voxel_size[3],
                               int64_t *order);
/* Reorders n elements of elem_bytes bytes each in place: element i becomes the old element order[i]. order must be a
 * permutation of 0 .. n-1 (as sproj_lors_order fills). Runs on one thread per core with StarPU's workers asleep, as
 * sproj_lors_order (20 M 12-byte elements: 0.10 s on a 16-core host). Takes n * elem_bytes bytes of scratch memory.
 * Errors (array untouched): RANGE (n < 0, or order not a permutation), NULL, DIMS (elem_bytes 0), OVERFLOW, NOMEM. */
SPROJ_API int sproj_reorder(void *array, size_t elem_bytes, int64_t n, const int64_t *order);
/* Lets starproj hold an order of the events of `events` (sproj_lors_order's for images of voxel size voxel_size) and
 * project them in it, while the caller's arrays, values and chunkings stay in the caller's order: for events in the
 * order they were detected, which the caller does not reorder itself. The call orders the events (on every core, as
 * sproj_lors_order) and keeps an ordered copy of their endpoints and bins as the library's own: 38 bytes per event in
 * main memory (endpoints, bins, the order both ways and the ordered values), and on the GPUs that project them the
 * copy beside the caller's events. From then on a whole-set listmode projection of events (chunks NULL) runs on the
 * copy: forward, the ordered values are gathered into proj in the caller's order; back, proj's values are gathered
 * into the order first. Each event projects to the same value as without the order (bit for bit), and a back
 * projection gives the same image up to the order of float additions (reproducible mode: the same bits). TOF
 * parameters with per-event sigma or offset (sproj_tof_register on events) are copied in the order at the first
 * request with each parameter set (4 bytes per event and array, kept with the order). Requests for chunks of a
 * chunking go the ordinary way. One H100, the benchmark's 20 M events in random order: forward / back projection 0.0131 / 0.0189 s
 * without, 0.0074 / 0.0186 s with (events ordered by the caller: 0.0068 / 0.0179 s; the gathers take the rest); the
 * call took 0.44 s on the host's 16 cores, so on GPUs it pays off after some 70 forward and back projections (on CPU
 * workers, which gain 10-25% in the order, sooner). A second call on the same events does nothing;
 * sproj_lors_drop_order or sproj_lors_unregister frees the order. Errors (nothing held): NULL, INVALID (not events: no
 * TOF bins), VOXEL_SIZE, NOMEM, STARPU. */
SPROJ_API int sproj_lors_hold_order(sproj_lors *events, const float voxel_size[3]);
/* Frees the order sproj_lors_hold_order made for events, after the tasks that use it (none held: nothing to do).
 * Errors: NOT_INIT, NULL. */
SPROJ_API int sproj_lors_drop_order(sproj_lors *events);

/* Registers a TOF sinogram: num_tof_bins values per LOR of lors, [lor][tof_bin]. Errors: as sproj_proj_register,
 * EMPTY / DIMS (num_tof_bins 0 / negative), TOF (more than SPROJ_MAX_TOF_BINS). */
SPROJ_API int sproj_proj_register_tof(sproj_proj **proj, float *values, sproj_lors *lors, int num_tof_bins);

/* TOF-sinogram forward / back projection of chunks, as sproj_fwd / sproj_back. proj must hold tof's number of bins
 * per LOR. Errors: as sproj_fwd, plus NULL (tof), MISMATCH (bins, or per-LOR parameters of another set). */
SPROJ_API int sproj_fwd_tof_sino(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                                 const sproj_tof *tof);
SPROJ_API int sproj_back_tof_sino(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk,
                                  const sproj_tof *tof);
SPROJ_API int sproj_fwd_tof_sino_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                                        int num, const sproj_tof *tof);
SPROJ_API int sproj_back_tof_sino_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                                         int num, const sproj_tof *tof);
/* TOF listmode forward / back projection of chunks of events (sproj_lors_register_events), one value per event.
 * Errors: as above, plus INVALID (a LOR set without bins), RANGE (an event's bin outside 0 .. tof's num_bins-1;
 * with tof in libparallelproj's convention, sproj_tof_set_convention, any bin is projected). */
SPROJ_API int sproj_fwd_tof_lm(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk, const sproj_tof *tof);
SPROJ_API int sproj_back_tof_lm(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk, const sproj_tof *tof);
SPROJ_API int sproj_fwd_tof_lm_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                                      int num, const sproj_tof *tof);
SPROJ_API int sproj_back_tof_lm_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list,
                                       int num, const sproj_tof *tof);

/* ---- chunkings whose chunks are lists of ranges ------------------------------------------------------ */
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
SPROJ_API int sproj_chunks_create_lists(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int *num_ranges,
                                        const int64_t *first, const int64_t *count);
/* Strided ranges: chunk c is num_ranges[c] ranges of count[c] LORs starting at first[c] + k * stride[c],
 * k = 0 .. num_ranges[c] - 1 (a viewgram of a sinogram stored [segment][axial][view][radial] is one such chunk).
 * Errors as sproj_chunks_create_lists (RANGE also when a range starts outside the set). */
SPROJ_API int sproj_chunks_create_strided(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int64_t *first,
                                          const int64_t *count, const int64_t *stride, const int *num_ranges);
/* LORs in chunk (all its ranges); number of ranges of chunk (after joining); its ranges into first[num_ranges] and
 * count[num_ranges], in the order given at creation. Errors: NULL, RANGE (chunk). Thread-safe (read-only). */
SPROJ_API int sproj_chunks_size(const sproj_chunks *chunks, int chunk, int64_t *num_lors);
SPROJ_API int sproj_chunks_num_ranges(const sproj_chunks *chunks, int chunk, int *num_ranges);
SPROJ_API int sproj_chunks_ranges(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count);

/* ---- progress of long host-side calls -------------------------------------------------------------------- */
/* Calls that take seconds on large data without StarPU (sproj_poisson, sproj_sample_listmode, sproj_scanner_lors on
 * big scanners) report how far they are: fn(what, fraction, user), what naming the step ("Poisson counts",
 * "shuffling the events", ...), fraction in 0 .. 1, from the thread that made the call, at most every 0.2 s per
 * step and always when a step ends. fn must return quickly and must not call starproj. NULL: no reports (the
 * default). Process-wide; set it from one thread, before the calls it should hear from. Those calls run on every
 * core; while starproj is initialised StarPU's workers, which would poll for tasks on the same cores, sleep during
 * them (tasks submitted meanwhile, by any thread, wait until the call returns). */
typedef void (*sproj_progress_fn)(const char *what, double fraction, void *user);
SPROJ_API void sproj_set_progress(sproj_progress_fn fn, void *user);

/* ---- memory the library allocated for the caller ------------------------------------------------------ */
/* Frees an array that a starproj call allocated for the caller: sproj_nifti_read, sproj_raw_read_sino,
 * sproj_raw_read_listmode (starproj_io.h), sproj_sample_listmode (starproj_recon.h) (NULL: no-op). */
SPROJ_API void sproj_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_H */
