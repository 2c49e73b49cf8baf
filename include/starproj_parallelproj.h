/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_parallelproj.h: one-shot projector calls with the argument lists of libparallelproj 2.x's C API. */
#ifndef STARPROJ_PARALLELPROJ_H
#define STARPROJ_PARALLELPROJ_H

#include <stddef.h>
#include "starproj.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * For code written against libparallelproj 2.x: each call below takes the arguments of the libparallelproj call
 * of the same name (joseph3d_fwd -> sproj_pp_joseph3d_fwd, ...) in the same order and with the same types, computes
 * the same projector (the conventions of starproj.h; the TOF differences noted there apply) and returns a status
 * instead of void. Porting a call is renaming it and checking its result.
 *
 * What a call does: registers the caller's arrays with starproj (sproj_image_register, sproj_lors_register, ...),
 * submits one whole-set projection, waits for it and unregisters everything, so the result is in the caller's
 * array when it returns. The work runs wherever sproj_init put projections (the GPUs when there are any, else the
 * CPU cores), split into tasks as sproj_fwd splits a request.
 *
 * starproj must be initialised first: sproj_init(NULL) once before the first call, sproj_shutdown() after the last
 * (NOT_INIT otherwise). A call does not start StarPU itself, so that when and how StarPU starts (workers,
 * scheduler, sproj_config) stays in the caller's hands and shutdown has one obvious place.
 *
 * Arrays are host arrays (libparallelproj also takes device pointers: starproj does not). device_id and
 * threads_per_block are accepted so that calls port unchanged, and ignored: StarPU chooses the devices
 * (sproj_set_devices restricts the kinds), and starproj's kernels choose their block size.
 *
 * What the resident API of starproj.h gains over these calls: each one-shot call copies the image and the LORs to
 * the device and the result back, every time, as libparallelproj does. With the resident API the image and the
 * LORs are uploaded once and stay on the devices across calls; per call only the small pieces move (a view, a
 * subset), calls return at once and may come from several threads, many small calls merge into few tasks
 * (sproj_fwd_chunks, batches), and back projections accumulate on the devices until the image is synced. For an
 * iterative reconstruction that is the difference between copying the image twice per subset and not at all.
 *
 * Common arguments:
 *   lor_start, lor_end  3 floats per LOR (or event): LOR i runs from lor_start[3i..3i+2] to lor_end[3i..3i+2].
 *   image               [n0][n1][n2] floats, C order; read by forward calls, ADDED to by back calls.
 *   image_origin        centre of voxel (0,0,0); voxel_size: 3 floats > 0; image_dim: n0, n1, n2 > 0.
 *   num_lors/num_events number of LORs; 0 does nothing and returns SPROJ_OK (after the pointer checks).
 * TOF arguments as in sproj_tof_register: tof_sigma and tof_center_offset hold one value (used for every LOR) or,
 * when is_lor_dependent_tof_sigma / is_lor_dependent_tof_center_offset is non-zero, one value per LOR; num_tof_bins
 * 1..SPROJ_MAX_TOF_BINS; listmode events carry a bin tof_bin_index[i] in 0..num_tof_bins-1.
 *
 * Errors: NULL (a required pointer), NOT_INIT, OVERFLOW (num_lors above 2^32-1), and those of the registration
 * calls (DIMS, VOXEL_SIZE, NONFINITE, RANGE, TOF), whose message names the call that refused. A call that fails
 * leaves the output array as it was. Thread safety: calls from several threads at once are safe; each waits for
 * its own work only.
 */

/* ---- libparallelproj's TOF numbers ----------------------------------------------------------------------------
 * starproj's TOF conventions (starproj.h) differ from what libparallelproj 2.x's code computes in three places:
 *   - the centre offset: starproj moves the bins along the LOR towards xend; libparallelproj along the LOR's
 *     principal axis, which is towards xend only where xend's coordinate on that axis is the larger (elsewhere its
 *     +offset is starproj's -offset);
 *   - listmode: starproj projects an event to exactly its LOR's TOF-sinogram bin; libparallelproj weighs the samples
 *     of the planes within num_sigmas sigma of the event's bin by the Gaussian integrated over one bin and
 *     normalises over those planes (those outside the image included), 1e-3 to 5e-3 of the largest value away;
 *   - listmode bins: starproj's lie in 0 .. num_bins-1; libparallelproj takes any (registered with
 *     sproj_lors_register_events_convention, below).
 * sproj_tof_set_convention(tof, SPROJ_TOF_CONVENTION_PARALLELPROJ) makes every projection with tof compute
 * libparallelproj's numbers instead, for ports that must reproduce them (Python's starproj.parallelproj_core does):
 * its listmode forward values in the same float operations (on CPU workers bit for bit, as measured against its CPU
 * build), its TOF sinogram and the back projections within 1e-5 of the largest value. Only where a listmode window
 * reaches more than 16384 voxel planes beyond the image does its normalisation stop there. Listmode events then
 * may carry any bin. Requests submitted before the call keep the convention they were submitted with; SPROJ_TOF_CONVENTION_STARPROJ (the default) goes
 * back. The calls of this header keep starproj's conventions. Errors: NOT_INIT, NULL, INVALID (another
 * convention). */
#define SPROJ_TOF_CONVENTION_STARPROJ 0
#define SPROJ_TOF_CONVENTION_PARALLELPROJ 1
SPROJ_API int sproj_tof_set_convention(sproj_tof *tof, int convention);

/* Listmode events whose bins follow a convention: SPROJ_TOF_CONVENTION_STARPROJ registers them exactly as
 * sproj_lors_register_events / sproj_lors_register_events_handles do (a negative bin is refused), and
 * SPROJ_TOF_CONVENTION_PARALLELPROJ takes every int16_t bin, as libparallelproj's listmode does: it places bin b
 * b bin widths from the centre of bin 0, whatever b, so that bins outside 0 .. num_bins-1 lie beyond the ends of
 * its TOF sinogram (libparallelproj's own tests project bins -2 .. 2 with 27 bins). Projected with TOF parameters in
 * libparallelproj's convention, such events give its values; a submission with parameters in starproj's convention
 * refuses any bin outside 0 .. num_bins-1 (RANGE), whichever the registration. The bins are checked (and their
 * range noted) as the plain registrations check them: host arrays in the calling thread, vectors where they live.
 * Errors: those of the plain registrations, INVALID (another convention). */
SPROJ_API int sproj_lors_register_events_convention(sproj_lors **events, const float *xstart, const float *xend,
                                                    const int16_t *tof_bin, int64_t num_events, int convention);
SPROJ_API int sproj_lors_register_events_handles_convention(sproj_lors **events, sproj_starpu_handle xstart,
                                                            sproj_starpu_handle xend, sproj_starpu_handle tof_bin,
                                                            int convention);

/* Non-TOF forward projection: projection_values[i] = line integral of image along LOR i (overwritten). */
SPROJ_API int sproj_pp_joseph3d_fwd(const float *lor_start, const float *lor_end, const float *image, const float *image_origin,
                                    const float *voxel_size, float *projection_values, size_t num_lors, const int *image_dim,
                                    int device_id, int threads_per_block);

/* Non-TOF back projection: adds the adjoint of sproj_pp_joseph3d_fwd applied to projection_values to image. */
SPROJ_API int sproj_pp_joseph3d_back(const float *lor_start, const float *lor_end, float *image, const float *image_origin,
                                     const float *voxel_size, const float *projection_values, size_t num_lors,
                                     const int *image_dim, int device_id, int threads_per_block);

/* TOF-sinogram forward projection into projection_values[num_lors][num_tof_bins] (overwritten). */
SPROJ_API int sproj_pp_joseph3d_tof_sino_fwd(const float *lor_start, const float *lor_end, const float *image,
                                             const float *image_origin, const float *voxel_size, float *projection_values,
                                             size_t num_lors, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                             const float *tof_center_offset, float num_sigmas, short num_tof_bins,
                                             unsigned char is_lor_dependent_tof_sigma,
                                             unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                             int threads_per_block);

/* TOF-sinogram back projection of projection_values[num_lors][num_tof_bins], added to image. */
SPROJ_API int sproj_pp_joseph3d_tof_sino_back(const float *lor_start, const float *lor_end, float *image,
                                              const float *image_origin, const float *voxel_size, const float *projection_values,
                                              size_t num_lors, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                              const float *tof_center_offset, float num_sigmas, short num_tof_bins,
                                              unsigned char is_lor_dependent_tof_sigma,
                                              unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                              int threads_per_block);

/* TOF listmode forward projection: projection_values[i] = TOF-sinogram bin tof_bin_index[i] of event i's LOR. */
SPROJ_API int sproj_pp_joseph3d_tof_lm_fwd(const float *lor_start, const float *lor_end, const float *image,
                                           const float *image_origin, const float *voxel_size, float *projection_values,
                                           size_t num_events, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                           const float *tof_center_offset, float num_sigmas, const short *tof_bin_index,
                                           short num_tof_bins, unsigned char is_lor_dependent_tof_sigma,
                                           unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                           int threads_per_block);

/* TOF listmode back projection of one value per event, added to image. */
SPROJ_API int sproj_pp_joseph3d_tof_lm_back(const float *lor_start, const float *lor_end, float *image,
                                            const float *image_origin, const float *voxel_size, const float *projection_values,
                                            size_t num_events, const int *image_dim, float tof_bin_width, const float *tof_sigma,
                                            const float *tof_center_offset, float num_sigmas, const short *tof_bin_index,
                                            short num_tof_bins, unsigned char is_lor_dependent_tof_sigma,
                                            unsigned char is_lor_dependent_tof_center_offset, int device_id,
                                            int threads_per_block);

#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_PARALLELPROJ_H */
