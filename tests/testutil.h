/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.h: what the test programs share: random data, an independent double-precision Joseph reference,
 * phantoms, comparisons and the Check runner. */
#ifndef SPROJ_TESTUTIL_H
#define SPROJ_TESTUTIL_H

#include <stdint.h>
#include <check.h>
#include "starproj.h"
#include "starproj_recon.h"
#include "starproj_io.h"

struct tu_geom {
  int n[3];
  float vs[3];
  float origin[3];
};

/* deterministic random numbers (xorshift64*) */
void tu_seed(uint64_t seed);
double tu_uniform(double lo, double hi);
int tu_randint(int lo, int hi); /* lo..hi inclusive */

/* image helpers */
int64_t tu_nvox(const struct tu_geom *g);
float *tu_alloc(int64_t n);
void tu_fill_uniform(float *v, int64_t n, float lo, float hi);
/* a geometry with random (modest) dims, anisotropic voxels and an off-centre origin */
void tu_random_geom(struct tu_geom *g);
/* box of the image on axis k */
double tu_box_lo(const struct tu_geom *g, int k);
double tu_box_hi(const struct tu_geom *g, int k);

/* Random LORs of every kind the projector must handle (crossing, endpoints inside, one inside, missing,
 * axis-parallel, in-plane, zero-length, diagonal ties); returns how many of each kind in kinds[8] if not NULL. */
void tu_random_lors(const struct tu_geom *g, float *xs, float *xe, int64_t n, int64_t kinds[8]);

/* Independent double-precision Joseph projector (parametric formulation, parallelproj's plane rule). */
/* 1 when the LOR's first or last plane hangs on a clipped end within 1e-4 voxel of a plane, where Joseph's
 * method jumps and float and double results may rightly differ by a whole sample: such LORs are left out of
 * per-LOR comparisons (and counted). */
int tu_ref_ambiguous(const struct tu_geom *g, const float *xs, const float *xe);
double tu_ref_fwd_lor(const float *img, const struct tu_geom *g, const float *xs, const float *xe);
void tu_ref_fwd(const float *img, const struct tu_geom *g, const float *xs, const float *xe, int64_t n, double *out);
void tu_ref_back(double *img, const struct tu_geom *g, const float *xs, const float *xe, const float *values,
                 int64_t n);

/* Independent double-precision TOF-sinogram projection of one LOR into out[num_bins]. Only the choice of the
 * bins each sample reaches (parallelproj's float window) is emulated in float; positions along the LOR, the
 * Gaussian integrals over the bins and their normalisation are computed in double. Offset towards xend. */
void tu_ref_tof_sino_lor(const float *img, const struct tu_geom *g, const float *xs, const float *xe, float bin_width,
                         int num_bins, float num_sigmas, float sigma, float offset, double *out);

/* Independent double-precision listmode projection of an event in bin `bin` as libparallelproj 2.x defines it
 * (sproj_tof_set_convention's PARALLELPROJ): the samples of the planes within num_sigmas sigma of the bin's centre,
 * weighted by the Gaussian integrated over one bin and normalised over those planes (outside the image too), times
 * the bin width; the offset along the principal axis. Only the window's planes are chosen in float, as
 * libparallelproj does. */
double tu_ref_tof_lm_pp_lor(const float *img, const struct tu_geom *g, const float *xs, const float *xe, float bin_width,
                            int num_bins, float num_sigmas, float sigma, float offset, int bin);

/* Ball of radius r around c (world units), value 1, with partial-volume fractions from s^3 sub-samples. */
void tu_ball_image(float *img, const struct tu_geom *g, const double c[3], double r, int s);

/* comparisons */
double tu_max_abs(const float *v, int64_t n);
double tu_max_abs_diff_fd(const float *a, const double *b, int64_t n);
double tu_rel_l2_ff(const float *a, const float *b, int64_t n);
double tu_rel_l2_fd(const float *a, const double *b, int64_t n);
double tu_dot_fd(const float *a, const double *b, int64_t n);
double tu_dot_ff(const float *a, const float *b, int64_t n);

/* An image, a LOR set and a projection vector registered together. */
struct tu_set {
  sproj_image *img;
  sproj_lors *lors;
  sproj_proj *proj;
};
int tu_set_register(struct tu_set *s, const struct tu_geom *g, float *img, const float *xs, const float *xe,
                    int64_t n, float *values);
int tu_set_unregister(struct tu_set *s);

/* Whole-set forward (into out) / back projection (adding into img) through the library, registering and
 * unregistering everything; returns the first failing status. */
int tu_fwd_whole(const struct tu_geom *g, float *img, const float *xs, const float *xe, int64_t n, float *out);
int tu_back_whole(const struct tu_geom *g, float *img, const float *xs, const float *xe, int64_t n, float *values);
/* Back projection of n random LORs with random values (ambiguous LORs left out, see tu_ref_ambiguous) through the
 * library against tu_ref_back: asserts that something was projected, the largest voxel difference <= max_tol times
 * the largest reference voxel, and the relative L2 difference <= rel_tol. */
void tu_check_back_against_ref(const struct tu_geom *g, int64_t n, double max_tol, double rel_tol);
/* projection tasks run so far, over all workers */
int64_t tu_total_tasks(void);

/* starproj with StarPU quiet; returns 0 or the sproj status */
int tu_init(int ncpu, int ncuda);

/* Runs a suite without forking (StarPU lives in this process) and returns the exit status for Automake:
 * 0 if every check passed, 1 otherwise. */
int tu_run(Suite *s);

#endif
