/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: libstarproj's objects and the helpers its runtime, codelet and reconstruction files share (not
 * installed; the other libraries see only shared.h). */
#ifndef SPROJ_INTERNAL_H
#define SPROJ_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <starpu.h>

#include "starproj.h"
#include "shared.h"
#include "codelets.h"
#include "input_check.h"

/* ---- runtime state (runtime.c; set up by init.c) ---- */
struct sproj_runtime {
  int initialized;
  int owns_starpu;          /* 1 if sproj_init started StarPU */
  int ngpus;                /* distinct CUDA devices with a worker */
  unsigned gpu_node[STARPU_MAXCUDADEVS]; /* memory node of each GPU */
  int ncpu;                 /* CPU workers */
  int64_t task_lors;        /* largest task, in LORs */
  unsigned where;           /* STARPU_CPU / STARPU_CUDA mask for projection tasks */
  unsigned ctx;             /* scheduling context projection tasks go to (0: every worker) */
  unsigned ctx_cpu, ctx_gpu;/* contexts of the CPU workers and of the CUDA workers (0 if none was made) */
  int live_objects;         /* registered images, LOR sets and projection vectors (atomic) */
  int paused;               /* depth of sproj_pause (atomic): while > 0 the workers sleep and calls fail with BUSY */
  int reproducible;         /* images registered from now on start in reproducible mode */
  int merge_calls;          /* calls made while the workers are busy may be merged (merge.c) */
  int image_layouts;        /* large GPU tasks may work on principal-axis copies of the image (submit.c) */
  int split_gpus;           /* $SPROJ_SPLIT_GPUS: requests cut into tasks as for this many GPUs (0: the GPUs there are) */
  uint64_t layout_max_voxels; /* largest image for which they may (runtime.c) */
  uint32_t *gpu_set_workers;  /* for 2..SPROJ_MAX_STICKY_GPUS GPUs: the CUDA workers of each set of GPUs (bit g of
                                 the set's index: GPU g), words_per_set words each, as StarPU worker bitmaps */
  unsigned words_per_set;
  struct sproj_devices *gpu_devices, *cpu_devices; /* devices.c: who owns work on each kind of worker */
};

/* Most GPUs for which tasks follow their LORs (sproj_workers_holding). */
#define SPROJ_MAX_STICKY_GPUS 8

/* ---- devices (devices.c): the owners of work ----
 * A device is a memory node and the workers that run tasks there: a GPU and its CUDA workers, or, when projections
 * run on CPU workers, a group of them ($SPROJ_DEVICES groups, default 1; all on main memory, so that a machine
 * without GPUs runs the several-device paths, as stand-ins, and computes what they compute; with more devices than
 * GPUs, devices share GPUs the same way). Chunks homed on a device
 * (ch->piece_home) run every task there under any scheduler (sproj_workers_holding), so that their LORs, inputs and
 * results stay there. */
#define SPROJ_MAX_DEVICES 8
struct sproj_devices {
  int n;                               /* devices of this kind */
  unsigned long long where;            /* STARPU_CUDA or STARPU_CPU */
  unsigned node[SPROJ_MAX_DEVICES];    /* memory node of each */
  int nworkers[SPROJ_MAX_DEVICES];     /* workers of each */
  int first_worker[SPROJ_MAX_DEVICES]; /* one of them (the first) */
  unsigned words;                      /* words of each worker bitmap */
  uint32_t *bitmap;                    /* n bitmaps of words words */
  unsigned turn[SPROJ_MAX_DEVICES];    /* which of a device's workers takes its next task (atomic) */
};
/* Builds both kinds' devices once the workers are known (sproj_init), frees them (sproj_shutdown). */
int sproj_devices_make(void);
void sproj_devices_free(void);
/* The devices tasks of kind where (STARPU_CUDA or STARPU_CPU) run on; NULL for any other where (both kinds). */
const struct sproj_devices *sproj_devices_for(unsigned long long where);
/* The devices projections run on now (sproj_rt.where): their number (0 when both kinds are selected). */
int sproj_device_count(void);
/* The worker bitmap of device d of the current devices, *len words; NULL with *len = 0 when d is not one. */
const uint32_t *sproj_device_workers(int d, unsigned *len);
/* One worker of device d of the current devices, the next in turn at each call (for STARPU_EXECUTE_ON_WORKER); -1
 * when d is not one. */
int sproj_device_worker(int d);
/* Memory node of device d of the current devices. */
unsigned sproj_device_node(int d);
/* Home device of piece p of ch for tasks of kind where: -1 when it has none or where is not the devices' kind. */
int sproj_piece_home(const sproj_chunks *ch, unsigned long long where, int p);

/* Counts a projection task of `lors` LORs taken by the calling worker, and whether it works on the image's
 * principal-axis copies (for sproj_worker_stats). */
void sproj_stats_count(int64_t lors, int layout);
extern struct sproj_runtime sproj_rt;
/* runtime.c, for starting and stopping (init.c): the automatic task size, the wait for every task of every context,
 * the per-worker statistics zeroed, and the stop of what the submission layer holds (sproj_register_held: its stop
 * runs, and on success both are forgotten). */
int64_t sproj_default_task_lors(void);
void sproj_wait_everything(void);
void sproj_stats_clear(void);
int sproj_stop_held(void);
/* The worker bitmaps of sproj_workers_holding (sproj_rt.gpu_set_workers; devices.c), made by sproj_init. */
void sproj_gpu_sets_make(void);

/* Submits what this thread's open batch holds (see sproj_batch_begin) and the calls merged while the workers were
 * busy (merge.c). */
int sproj_flush_pending(void);
/* Work held back by the submission layer: it registers how to submit what it holds and how to stop (its helper
 * thread) when it first holds something, so that the sync points and sproj_shutdown below it reach it without
 * calling up. sproj_flush_held() runs the registered flush (SPROJ_OK when none). */
void sproj_register_held(int (*flush)(void), int (*stop)(void));
int sproj_flush_held(void);
/* Where a task whose first LORs are piece p of ch runs. When the piece has a home device (any kind, any scheduler,
 * sproj_piece_home): *worker, one of that device's workers in turn, for STARPU_EXECUTE_ON_WORKER, which every StarPU
 * policy obeys (several of StarPU 1.4's modular policies and heteroprio never run a task whose workers are restricted
 * by STARPU_TASK_WORKERIDS: they stall or stop on an assertion), and NULL. Else *worker = -1 and, for a task bound to
 * GPUs alone (where == STARPU_CUDA): the CUDA workers of the GPUs the piece was uploaded to (ch->piece_gpus), or when
 * it was not, of the GPUs that hold a valid copy of its run, as a StarPU worker bitmap (STARPU_TASK_WORKERIDS) of
 * *len words that lives until sproj_shutdown; NULL with *len = 0 for any other where, when the set is every GPU or
 * none, or with one GPU. GPU tasks on a LOR piece run where the piece was uploaded or already is, so that the LORs
 * stay resident there instead of being copied to every GPU as the tasks move; NULL under a scheduler the caller
 * named. */
const uint32_t *sproj_workers_holding(unsigned long long where, const sproj_chunks *ch, int p, unsigned *len,
                                      int *worker);
/* Counts, for every memory node, the workers of the kinds in where (STARPU_CPU / STARPU_CUDA mask) it serves. */
void sproj_workers_per_node(unsigned where, unsigned workers_on[STARPU_MAXNODES]);
/* Whether some GPU that projections may run on has less memory (or a lower STARPU_LIMIT_CUDA_MEM) than bytes. */
int sproj_gpu_memory_below(size_t bytes);
/* sproj_check_init, then sproj_flush_held: for every call that waits on, moves or frees data. */
int sproj_check_init_flush(const char *func);
/* Memory nodes named by a GPU argument: one node, or every GPU's. Returns the count or a negative error. */
int sproj_gpu_nodes(const char *func, int gpu, unsigned nodes[STARPU_MAXCUDADEVS]);
/* Fewest pieces a chunk of n LORs is cut into, and the LOR target of one task of a request of total LORs. */
int64_t sproj_pieces_for(int64_t n);
int64_t sproj_task_target(int64_t total);
/* The same for work spread over `spread` devices instead of all of them (1: a chunk or request one device owns). */
int64_t sproj_pieces_for_spread(int64_t n, int spread);
int64_t sproj_task_target_spread(int64_t total, int spread);
/* How many devices a request of the listed chunks of ch is spread over: the distinct homes of their pieces (0 when
 * none has one, in which case the request is spread over every worker as before). */
int sproj_request_spread(const sproj_chunks *ch, unsigned long long where, const int *list, int num);
/* The same for every piece of ch. */
int sproj_chunking_spread(const sproj_chunks *ch, unsigned long long where);
/* The grouping rule of projection tasks (submit.c) and of the reconstruction's ratio and objective tasks (terms.c):
 * a task holding npieces pieces of lors LORs is submitted before a piece of next LORs joins it when it is full
 * (SPROJ_MAX_PIECES) or the piece would take it past the target; a single piece larger than the target makes a task
 * of its own. */
static inline int sproj_task_full(int npieces, int64_t lors, int64_t next, int64_t target)
{
  return npieces == SPROJ_MAX_PIECES || (npieces > 0 && lors + next > target);
}

/* GPU check (cuda_check.c): SPROJ_OK if info says the library has a kernel image for the GPU, else records a
 * message naming the GPU, its compute capability and the architectures built for, and returns NO_DEVICE. */
int sproj_cuda_image_status(int device, const struct sproj_cuda_device_info *info);
/* Runs that check on every GPU StarPU drives (no-op in builds without CUDA). */
int sproj_check_cuda_images(void);

/* ---- objects ---- */
struct sproj_image;
/* The fixed-point accumulator of an image's reproducible back projections, created (zeroed) on first use. */
int sproj_image_accumulator(const char *func, struct sproj_image *img, starpu_data_handle_t *acc);
/* The scratch handle of an image's principal-axis copies (2 x sproj_layout_copy_stride(voxels) floats), made on
 * first use; NULL when the image is too large for them (runtime.c's layout_max_voxels). */
starpu_data_handle_t sproj_image_copies(struct sproj_image *img);
/* The scratch handle of an image's TOF listmode projections by tiles (sproj_tof_tiles_scratch_words of the largest
 * task, 32-bit words), made on first use; NULL when too large for a StarPU vector or for the GPUs' memory. */
starpu_data_handle_t sproj_image_tiles(struct sproj_image *img);
/* The scratch handle of an image's pair layouts (sproj_pairs_offset(geom, 2) floats, joseph3d_ray.h), made on first
 * use; NULL when they would take more of the GPUs' memory than the principal-axis copies may. */
starpu_data_handle_t sproj_image_pairs(struct sproj_image *img);
/* Worker w's partial image of img (registered on first use, allocated by StarPU where w writes it; NULL when w is
 * not a worker or memory is short). The caller holds img->parts_lock. */
starpu_data_handle_t sproj_image_part(struct sproj_image *img, int w);
struct sproj_image {
  starpu_data_handle_t handle;
  struct sproj_geom geom;
  int owns_handle;
  int reproducible;           /* back projections accumulate in fixed point (sproj_image_set_reproducible) */
  starpu_data_handle_t acc;   /* their 64-bit accumulator, one per voxel (NULL until first needed) */
  starpu_data_handle_t copies;/* scratch of the principal-axis copies (NULL until first needed) */
  starpu_data_handle_t tiles; /* scratch of the listmode projections by tiles (NULL until first needed) */
  starpu_data_handle_t pairs; /* scratch of the pair layouts of listmode forward projections (NULL until needed) */
  int owner;                  /* the device whose tasks alone add into it (a reconstruction's partial image), or -1:
                               * back projections then add into it one task at a time, with no per-worker buffers
                               * whose reduction StarPU might run on another device */
  starpu_data_handle_t *parts;/* per worker: its sum of one call's back projections of chunks homed on its device
                               * (sproj_image_part; NULL until first needed), nparts of them */
  unsigned nparts;
  pthread_mutex_t parts_lock; /* held by the call that zeroes, fills and sums them */
};

/* A chunking applied to one per-LOR vector: a StarPU partition plan, one child per piece. */
/* A chunking applied to a per-LOR vector. With many pieces the vector is cut in two levels: into groups of
 * consecutive pieces whose LORs follow each other (about the square root of their number, at least 64), and each
 * group into its pieces. StarPU's partition step is one task holding every child of the level it cuts, and its
 * dependency checks cost the square of their number (16 k pieces took 19 s on a 2-core machine); groups keep each
 * step small, and a group is cut only when one of its pieces is first used. */
struct sproj_plan {
  uint64_t chunking_id;
  unsigned npieces;
  starpu_data_handle_t *children;   /* per piece */
  unsigned ngroups;                 /* 0: the pieces are children of the vector itself */
  starpu_data_handle_t *groups;     /* per group: the group, a child of the vector */
  unsigned *group_start;            /* group g holds pieces group_start[g] .. group_start[g+1]-1 */
};

/* A vector with one element per LOR of a LOR set (projection values, TOF bins, per-LOR sigma or offset) and the
 * chunkings applied to it. Read-only vectors activate each plan once, on first use; the partition of a written
 * vector changes with the chunking in use, so its submitters hold its lock. */
struct sproj_vec {
  starpu_data_handle_t handle;
  sproj_lors *lors;
  int owns_handle;
  int readonly;
  pthread_mutex_t lock;
  struct sproj_plan *plans;
  int nplans, cap_plans;
  uint64_t last_chunking;   /* the chunking whose pieces were handed out last (0: none): a written vector's active
                             * partition, whose pieces every earlier task's accesses come before */
};

struct sproj_lors {
  starpu_data_handle_t xs, xe;
  int64_t num_lors;
  int owns_handles;
  void *own_xs, *own_xe;    /* memory of the set's own on the host (sproj_lors_create_unfilled), unmapped with it */
  uintptr_t gpu_xs, gpu_xe; /* or on a GPU, the set's home there (memory node gpu_node), freed with it */
  unsigned gpu_node;
  size_t own_bytes;
  struct sproj_vec *bins;   /* listmode: int16 TOF bin of each event (NULL for plain LOR sets) */
  int min_bin, max_bin;     /* a range that holds 0 and every event bin (min_bin < 0 only for events registered in
                             * libparallelproj's convention) */
  pthread_mutex_t lock;     /* guards the fields below */
  int nchunkings;           /* user chunkings alive */
  sproj_chunks *whole;      /* chunking used by whole-set requests (created on first use) */
  struct sproj_vec **vecs;  /* vectors of other objects (projection values, TOF parameters) on this set */
  int nvecs, cap_vecs;
  struct sproj_held *held;  /* listmode: the order the library holds (held.c), or NULL */
  void (*held_free)(struct sproj_held *); /* how to free it, set with it: held.c builds on this file, which frees
                                           * the order with the set through this pointer without calling up */
};

/* A LOR set of n LORs over memory of its own, for LORs that tasks write where they are used before any other use of
 * the set. gpu < 0: host memory that nothing has touched yet (its pages are faulted in only when the host writes or
 * reads them); else memory on GPU gpu, the set's home node there: StarPU keeps the LORs on that GPU, and switching
 * to a chunking's partition happens there too (on a host home, every chunking made of a set written on a GPU would
 * bring it home first). Its handles are unregistered without bringing anything home. */
int sproj_lors_create_unfilled(const char *func, sproj_lors **lors, int64_t n, int gpu);

/* The bins of listmode events against the TOF parameters they are projected with: in starproj's convention each
 * must lie in 0 .. num_bins-1 (RANGE), in libparallelproj's any bin is fine. */
int sproj_events_check_bins(const char *func, const sproj_lors *events, const sproj_tof *tof);

/* Whole-set requests held.c has served in a held order since the library was loaded (tests read it). */
long long sproj_held_served(void);

/* A chunking: chunks made of pieces; every piece is one StarPU child of each vector handle. */
struct sproj_chunks {
  uint64_t id;              /* unique for the process' lifetime: keys the plans of per-LOR vectors */
  sproj_lors *lors;
  int num_chunks;
  int64_t *count;           /* per chunk: LORs in all its ranges */
  int *range_start;         /* chunk c has ranges range_start[c] .. range_start[c+1]-1 */
  int64_t *range_first, *range_count;
  int *piece_start;         /* chunk c has pieces piece_start[c] .. piece_start[c+1]-1 */
  unsigned npieces;
  int64_t *piece_first;     /* per piece: first LOR and number of LORs */
  uint32_t *piece_len;
  /* Runs: consecutive pieces whose LORs follow each other, up to SPROJ_RUN_LORS LORs (a longer piece is a run of
   * its own). The LOR arrays are partitioned by runs, the per-LOR vectors by pieces. */
  unsigned nruns;
  int *piece_run;           /* per piece: its run and its first LOR there */
  uint32_t *piece_at;
  int64_t *run_first;       /* per run: first LOR and number of LORs */
  uint32_t *run_len;
  starpu_data_handle_t *xs_runs, *xe_runs;
  /* per piece: the GPUs its LORs were uploaded to by sproj_lors_upload (bit g: GPU g; read and written with atomics),
   * where its tasks then run even when its run is on other GPUs too */
  uint8_t *piece_gpus;
  /* per piece: its home device (sproj_chunks_set_device, or an owned chunking's), -1 for none; read and written with
   * atomics. A task holds pieces of one home only. */
  int8_t *piece_home;
};

/* Most LORs of a run of several pieces (6 MB of coordinates): small enough that a call on one small chunk moves
 * little beside it to a GPU that lacks it, large enough that a task of SPROJ_MAX_PIECES small pieces holds only a
 * few runs. */
#define SPROJ_RUN_LORS ((int64_t)1 << 18)

struct sproj_proj {
  struct sproj_vec vec;     /* its lock serialises submissions and plan changes on this vector */
  int num_bins;             /* values per LOR: 1, or the TOF bins of a TOF sinogram */
  /* set by sproj_model_expected (the projection of a checked image), kept by sproj_model_draw: the values are finite
   * and >= 0 wherever they are, and a reconstruction need not gather them on the host to check them; cleared by
   * sproj_proj_sync, after which the caller may have written them */
  int model_made;
  /* sproj_proj_create: the values' memory, the library's (a host mapping made lazily), freed with the object */
  uintptr_t own;
  size_t own_bytes;
};

struct sproj_tof {
  uint64_t id;              /* unique for the process' lifetime (another object may take a freed one's address) */
  struct sproj_tof_params params;
  int convention;           /* SPROJ_TOF_ARG_* (codelets/tof.h), from sproj_tof_set_convention */
  sproj_lors *lors;         /* set of the per-LOR arrays (NULL when there are none) */
  struct sproj_vec *sigma, *center_offset;
};

/* Per-LOR vectors (vec.c). init attaches the vector to lors (lors->vecs) unless own is set (the set's own bins). */
int sproj_vec_init(struct sproj_vec *v, sproj_lors *lors, starpu_data_handle_t handle, int owns, int readonly,
                   int own);
void sproj_vec_fini(struct sproj_vec *v, int own);
/* Frees a vector the library made for itself (owns_handle) whose values nobody reads any more, without bringing them
 * back to main memory. */
void sproj_vec_discard(struct sproj_vec *v);
/* Children of the vector for chunking ch, planned (and for read-only vectors activated) on first use. The _locked
 * form expects v->lock held. */
int sproj_vec_children(struct sproj_vec *v, const sproj_chunks *ch, starpu_data_handle_t **children);
int sproj_vec_children_locked(struct sproj_vec *v, const sproj_chunks *ch, starpu_data_handle_t **children);
/* Drops the plan of a chunking that is being destroyed. */
void sproj_vec_forget(struct sproj_vec *v, uint64_t chunking_id);
/* Registers a host array of num_lors elements of elemsize bytes as a read-only per-LOR vector of lors: into v
 * (init_ro), or into one it allocates (register_ro). */
int sproj_vec_init_ro(struct sproj_vec *v, sproj_lors *lors, const void *data, size_t elemsize, int own);
int sproj_vec_register_ro(struct sproj_vec **out, sproj_lors *lors, const void *data, size_t elemsize, int own);
/* sproj_vec_fini and free of an allocated vector (NULL: nothing), own as it was initialised. */
void sproj_vec_free(struct sproj_vec *v, int own);
/* A projection vector of one float per LOR over a host array that is only ever read (a model's factors), so that
 * back projections can take those values as they are, through the same pieces the other tasks read; freed with
 * sproj_proj_release_ro. */
int sproj_proj_register_ro(sproj_proj **out, sproj_lors *lors, const float *values);
void sproj_proj_release_ro(sproj_proj *proj);

/* Validates and builds a chunking whose chunk c is the list of ranges range_start[c] .. range_start[c+1]-1 of
 * first/count (range_start NULL: one range per chunk), reporting errors under func's name. */
int sproj_chunks_build_lists(const char *func, sproj_chunks **chunks, sproj_lors *lors, int num_chunks,
                             const int *range_start, const int64_t *first, const int64_t *count);
/* The same for a chunking the library owns whose chunk c is homed on device home[c] of the current devices: each
 * chunk is cut as for one device (sproj_pieces_for_spread), and runs of LORs never span two homes, so that no LOR is
 * needed on two devices. Not counted among the set's chunkings: free it with sproj_chunks_release. */
int sproj_chunks_build_owned(const char *func, sproj_chunks **chunks, sproj_lors *lors, int num_chunks,
                             const int *range_start, const int64_t *first, const int64_t *count, const int8_t *home);
void sproj_chunks_release(sproj_chunks *ch);

/* ---- any.c: CPU core or GPUs for each task under SPROJ_DEVICE_ANY ---- */
struct sproj_any_note;
/* Forgets the measured rates and queued work (sproj_init). */
void sproj_any_reset(void);
/* Whether a task of lors LORs should go to a CPU core: the GPUs have two of the queued_tasks projection tasks per
 * CUDA worker, a core is free, and a core would finish it before the GPUs finish the work queued for them. */
int sproj_any_core_takes(int64_t lors, int back, int ncores, int queued_tasks, int ncuda_workers);
/* A picked task is queued (NULL: out of memory); its submission failed; a worker took it (its prologue, which gives
 * back what was noted); it finished (its callback, which frees the note). */
struct sproj_any_note *sproj_any_queued(int64_t lors, int back, int cpu, int layout);
void sproj_any_cancel(struct sproj_any_note *note);
void sproj_any_taken(struct sproj_any_note *note, int64_t *lors, int *layout, int *cpu);
void sproj_any_done(void *note);
/* The clock that times the tasks (seconds, monotonic); the tests replace it with one they advance themselves. */
extern double (*sproj_any_clock)(void);

/* Makes ch a valid chunking for lors (NULL: the whole-set chunking, created on first use). */
int sproj_resolve_chunks(const char *func, sproj_lors *lors, const sproj_chunks *ch, const sproj_chunks **out);
/* Applies ch's pieces to a vector handle (a StarPU partition plan); the caller frees *children. */
int sproj_plan_pieces(starpu_data_handle_t handle, const sproj_chunks *ch, starpu_data_handle_t **children);
/* The same for the runs of the chunking (the LOR arrays). */
int sproj_plan_runs(starpu_data_handle_t handle, const sproj_chunks *ch, starpu_data_handle_t **children);
/* Frees a chunking's data (plans on the LOR handles and arrays). */
void sproj_chunks_free(sproj_chunks *ch);
/* Handles of the pieces of the listed chunks, taken from per-piece handle arrays (array after array). */
starpu_data_handle_t *sproj_piece_handles(const sproj_chunks *ch, const int *list, int num,
                                          starpu_data_handle_t *const *arrays, int narrays, int *count);
/* The LOR handles (xstart runs, then xend runs) of the runs holding the listed chunks' pieces, each run once. */
starpu_data_handle_t *sproj_run_handles(const sproj_chunks *ch, const int *list, int num, int *count);

/* Validates a chunk argument against a chunking and expands it into a list of chunk indices. */
int sproj_chunk_list(const char *func, const sproj_chunks *ch, int chunk, int **list, int *num);

/* Fetches (and waits for) handles on memory nodes; drops their copies there. */
int sproj_upload_handles(starpu_data_handle_t *handles, int nhandles, const unsigned *nodes, int nnodes);
int sproj_release_handles(starpu_data_handle_t *handles, int nhandles, const unsigned *nodes, int nnodes);

/* ---- inputs.c: per-LOR inputs (codelets/input_check.h) checked where they live ---- */
/* The limits of starproj.h the checks hold coordinates, sigma and offset to (lors.c), nvectors 0. */
struct sproj_input_arg sproj_input_limits(float bin_width, float num_sigmas);
/* Scans arg->nvectors vectors (kinds in arg) into one result each: those homed on a GPU by a check task on that
 * GPU, the others in main memory in the calling thread (acquired there, as a host check always did). Returns
 * SPROJ_OK or a status reported under func; what the results say is the caller's to report. */
int sproj_inputs_check(const char *func, const struct sproj_input_arg *arg, const starpu_data_handle_t *h,
                       struct sproj_input_result *res);
/* The check task alone, on the workers of memory node `node` (CPU workers for main memory), waited for. */
int sproj_inputs_check_on(const char *func, const struct sproj_input_arg *arg, const starpu_data_handle_t *h,
                          struct sproj_input_result *res, unsigned node);

#endif
