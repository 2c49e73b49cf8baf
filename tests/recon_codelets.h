/* SPDX-License-Identifier: Apache-2.0 */
/* recon_codelets.h: the reconstruction codelets run alone, for check_recon and check_recon_cuda. */
#ifndef SPROJ_TESTS_RECON_CODELETS_H
#define SPROJ_TESTS_RECON_CODELETS_H

#include "recon_scene.h"

/* The separable Gaussian blur of the library's gauss3d codelet, run on one worker kind (STARPU_CPU / STARPU_CUDA). */
void scene_blur(const struct tu_geom *g, const float fwhm[3], const float *in, float *out, unsigned where);

/* Inputs of the objective codelet: two pieces of n[q] LORs of nb values (p, y, a: nb per LOR; m one per LOR), filled
 * from the tests' random stream with p in [0, 10), a in [0.01, 1), m in [0.1, 1) and counts y in 0 .. max_count. */
struct nll_input {
  int nb, n[2];
  float *p[2], *y[2], *m[2], *a[2];
};
void scene_nll_input(struct nll_input *in, int nb, int n0, int n1, int max_count);
void scene_nll_input_free(struct nll_input *in);
/* The objective codelet (em_nll) on one worker kind (STARPU_CPU / STARPU_CUDA) over the two pieces, with the data y or
 * as listmode (no data): the sum of its partial sums. */
double scene_nll(unsigned where, const struct nll_input *in, int listmode);

/* The ratio codelet (em_ratio) of kind (enum sproj_ratio_kind) on one worker kind over the two pieces of in: out[q]
 * starts as a copy of p[q] and ends as its terms. The background a[q] per value, or with a_per_lor its first n[q]
 * floats one per LOR; px[q] the Hessian's forward values (kind SPROJ_RATIO_HESSIAN, else NULL); cap the quotients'
 * bound (0: none); smax NULL or the small-value rule's largest numerators, nb floats for each piece. */
void scene_ratio(unsigned where, const struct nll_input *in, int kind, int a_per_lor, float *const px[2], float cap,
                 const float *smax, float *out[2]);

/* scene_expected of the image blurred by the library's codelet (CPU). */
int scene_expected_blurred(const struct scene *s, const float *img, const float fwhm[3], int tof, float *out);

#endif
