/* SPDX-License-Identifier: Apache-2.0 */
/* shared.h: what libstarproj gives starproj's other libraries (libstarproj-io, libstarproj-mpi) beyond the public
 * headers, and the only internals its host-only files need (not installed). Everything here is exported from
 * libstarproj.so (SPROJ_SHARED) so that those libraries link against it; it is no API: a user's program must not
 * call it, and it may change with any release. The exported-symbol check (scripts/check-exports.sh) accepts exactly
 * the public headers' declarations and these. */
#ifndef SPROJ_SHARED_H
#define SPROJ_SHARED_H

#include <stdint.h>
#include "starproj.h"
#include "starproj_recon.h"

#if defined(__GNUC__)
#define SPROJ_SHARED __attribute__((visibility("default")))
#else
#define SPROJ_SHARED
#endif

/* ---- errors (errors.c) ---- */
/* Records "func: message" as this thread's last error (sproj_last_error) and returns code. */
SPROJ_SHARED int sproj_fail(int code, const char *func, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define SPROJ_FAIL(code, ...) sproj_fail((code), __func__, __VA_ARGS__)
/* The last failure's message recorded again under func's name, returning code: a call that failed inside another
 * call, reported as the outer call's. */
SPROJ_SHARED int sproj_fail_as(int code, const char *func);

/* ---- progress (progress.c) ---- */
/* Step `what` (a string that lives as long as the library) of a long host-side call is `fraction` done: calls the
 * hook set with sproj_set_progress, at most every 0.2 s per thread and step and always at fraction 1. */
SPROJ_SHARED void sproj_progress_report(const char *what, double fraction);
/* Runs fn(ctx, b) for every block b = 0 .. nblocks-1 on up to num_threads threads (<= 0: one per online core), the
 * calling thread among them, reporting the share done as step `what`. Blocks run in any order and on any thread: a
 * result that must not depend on the threads must depend only on the blocks. Fewer threads (one that could not be
 * started) only take longer. With more than one thread, StarPU's workers sleep meanwhile (sproj_host_work_begin):
 * fn must not wait for tasks. */
typedef void (*sproj_block_fn)(void *ctx, int64_t block);
SPROJ_SHARED void sproj_run_blocks(const char *what, int num_threads, int64_t nblocks, sproj_block_fn fn, void *ctx);

/* ---- image geometry (image.c): the one rule for every call that takes dims, voxel_size and origin ---- */
/* dims and voxel_size must not be NULL (NULL); dims[k] > 0 (DIMS) with at most max_voxels voxels in all (OVERFLOW);
 * voxel_size[k] finite and > 0 (VOXEL_SIZE); origin (NULL: 0) finite (NONFINITE); the far face of the box,
 * origin[k] + dims[k] * voxel_size[k] in float, finite (OVERFLOW). On success *nvox (may be NULL) = voxels. */
SPROJ_SHARED int sproj_check_geometry(const char *func, const int dims[3], const float voxel_size[3],
                                      const float origin[3], uint64_t max_voxels, uint64_t *nvox);
/* voxel_size[k] finite and > 0 (VOXEL_SIZE), the rule sproj_check_geometry applies, for calls that take a voxel size
 * alone (voxel_size not NULL). */
SPROJ_SHARED int sproj_check_voxel_size(const char *func, const float voxel_size[3]);
/* Most voxels of a host array of floats that sizes can address: the bound of the host-side calls. */
#define SPROJ_HOST_MAX_VOXELS ((uint64_t)(SIZE_MAX / sizeof(float)))

/* ---- runtime (runtime.c), for the distributed layer ---- */
/* SPROJ_OK if sproj_init has run, else records (as func) and returns SPROJ_ERR_NOT_INIT. */
SPROJ_SHARED int sproj_check_init(const char *func);
/* Registered images, LOR sets and projection vectors: sproj_shutdown refuses while some remain. A library that
 * registers objects of its own counts them (+1 / -1). */
SPROJ_SHARED int sproj_live_objects(void);
SPROJ_SHARED void sproj_count_object(int delta);
/* Host work on every core (sproj_run_blocks; ordering and reordering events): StarPU's idle workers poll for
 * tasks and would each take a core from it, so while starproj is initialised they sleep in between (tasks submitted
 * meanwhile, by any thread, wait; no call fails with BUSY as after sproj_pause). begin returns what end needs. */
SPROJ_SHARED int sproj_host_work_begin(void);
SPROJ_SHARED void sproj_host_work_end(int paused);
/* Drops an image whose value nobody wants (after the tasks using it, without bringing it home): its handle, and the
 * accumulator and copies StarPU allocated for it on the devices; counts it gone. */
SPROJ_SHARED void sproj_image_drop(sproj_image *img);

/* ---- projections (submit.c), for the distributed layer ---- */
/* Checks that img, proj, chunks (NULL: the whole set) and tof (NULL: non-TOF) belong together as the projection of
 * that kind would (values per LOR, LOR set, event bins), reporting errors as func. */
SPROJ_SHARED int sproj_projection_check(const char *func, sproj_image *img, sproj_proj *proj,
                                        const sproj_chunks *chunks, const sproj_tof *tof);
/* Forward (back = 0) or back projection of every chunk with the projector the arguments name: non-TOF without
 * tof, TOF listmode for events, TOF sinogram otherwise; submitted at once (never held in a batch). */
SPROJ_SHARED int sproj_project(int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                               const sproj_tof *tof);
/* Submits a task that zeroes the image, and one that adds the image behind src (a StarPU vector of as many floats)
 * into dst, on the workers projections run on. */
SPROJ_SHARED int sproj_image_submit_zero(const char *func, sproj_image *img);
SPROJ_SHARED int sproj_image_submit_add(const char *func, sproj_image *dst, sproj_starpu_handle src);

/* Waits for the projection values of every chunk and gives a pointer to all of them (num_lors x values per LOR, in
 * host memory), holding proj (no call may use it) until sproj_proj_release_acquired. */
SPROJ_SHARED int sproj_proj_acquire(const char *func, sproj_proj *proj, const float **values);
SPROJ_SHARED void sproj_proj_release_acquired(sproj_proj *proj);

/* ---- reconstruction hook (recon.c), for the distributed layer ---- */
/* reduce is called after each back projection of a reconstruction into img has been submitted (every sensitivity,
 * every subset's correction), before anything reads img: it may make img the sum of several processes' images. A
 * non-zero return fails the call that submitted the back projection with that status. */
struct sproj_recon_hook {
  int (*reduce)(void *user, sproj_image *img);
  /* With several devices (a power of two of them) the devices' parts of a subset's back projection, each already
   * summed over this process's devices, instead of the whole image: parts[0 .. n-1] are StarPU vectors of floats
   * (slab d of the image on device d, which updates it; with the image's reduction methods), each to be made the sum
   * over processes in the same way. NULL: the devices are not used with a hook. */
  int (*reduce_parts)(void *user, const sproj_starpu_handle *parts, int n);
  void *user;
};
/* sproj_recon_create with a hook (NULL: none), reporting errors as func. */
SPROJ_SHARED int sproj_recon_create_hooked(const char *func, sproj_recon **recon, sproj_image *x,
                                           const struct sproj_recon_config *cfg, const struct sproj_recon_hook *hook);

#endif
