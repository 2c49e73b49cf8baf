/* SPDX-License-Identifier: Apache-2.0 */
/* recon_codelets.c: the reconstruction codelets (blur, objective, ratio) run alone on one worker kind, for the tests that
 * check them against references (they link libstarproj's objects, whose codelets are not exported). */
#include "recon_codelets.h"
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include <check.h>
#include "codelets.h"
#include "em_nll.h"
#include "gauss3d.h"

void scene_blur(const struct tu_geom *g, const float fwhm[3], const float *in, float *out, unsigned where)
{
  uint32_t nvox = (uint32_t)tu_nvox(g);
  struct sproj_gauss_arg *arg = malloc(sizeof *arg);
  if (!arg || sproj_gauss_arg_init(arg, g->n, g->vs, fwhm) >= 0)
    exit(99);
  starpu_data_handle_t hin, hout, hs;
  starpu_vector_data_register(&hin, STARPU_MAIN_RAM, (uintptr_t)in, nvox, sizeof(float));
  starpu_vector_data_register(&hout, STARPU_MAIN_RAM, (uintptr_t)out, nvox, sizeof(float));
  starpu_vector_data_register(&hs, -1, 0, nvox, sizeof(float));
  if (starpu_task_insert(&sproj_gauss3d_cl, STARPU_R, hin, STARPU_W, hout, STARPU_SCRATCH, hs, STARPU_CL_ARGS, arg,
                         sizeof *arg, STARPU_EXECUTE_WHERE, (unsigned long long)where, 0) != 0)
    exit(99);
  starpu_data_unregister(hin);
  starpu_data_unregister(hout);
  starpu_data_unregister(hs);
}

void scene_nll_input(struct nll_input *in, int nb, int n0, int n1, int max_count)
{
  in->nb = nb;
  in->n[0] = n0;
  in->n[1] = n1;
  for (int q = 0; q < 2; q++) {
    int64_t nv = (int64_t)in->n[q] * nb;
    in->p[q] = tu_alloc(nv);
    in->y[q] = tu_alloc(nv);
    in->a[q] = tu_alloc(nv);
    in->m[q] = tu_alloc(in->n[q]);
    tu_fill_uniform(in->p[q], nv, 0.0f, 10.0f);
    tu_fill_uniform(in->a[q], nv, 0.01f, 1.0f);
    tu_fill_uniform(in->m[q], in->n[q], 0.1f, 1.0f);
    for (int64_t k = 0; k < nv; k++)
      in->y[q][k] = (float)tu_randint(0, max_count);
  }
}

void scene_nll_input_free(struct nll_input *in)
{
  for (int q = 0; q < 2; q++) {
    free(in->p[q]);
    free(in->y[q]);
    free(in->m[q]);
    free(in->a[q]);
  }
}

/* Registers piece q's buffers of a ratio or objective task in their order (sproj_ratio_piece_get): the values p in
 * mode pmode, px when given (the Hessian), y unless without_y (listmode), m and a (one per LOR with a_per_lor); puts
 * the handles in h and appends them to d at *k. Returns how many. */
static int piece_buffers(const struct nll_input *in, int q, float *p, enum starpu_data_access_mode pmode,
                         const float *px, int without_y, int a_per_lor, starpu_data_handle_t h[5],
                         struct starpu_data_descr *d, int *k)
{
  const int nb = in->nb;
  int n = 0;
  starpu_vector_data_register(&h[n++], STARPU_MAIN_RAM, (uintptr_t)p, in->n[q], nb * sizeof(float));
  if (px)
    starpu_vector_data_register(&h[n++], STARPU_MAIN_RAM, (uintptr_t)px, in->n[q], nb * sizeof(float));
  if (!without_y)
    starpu_vector_data_register(&h[n++], STARPU_MAIN_RAM, (uintptr_t)in->y[q], in->n[q], nb * sizeof(float));
  starpu_vector_data_register(&h[n++], STARPU_MAIN_RAM, (uintptr_t)in->m[q], in->n[q], sizeof(float));
  starpu_vector_data_register(&h[n++], STARPU_MAIN_RAM, (uintptr_t)in->a[q], in->n[q],
                              (a_per_lor ? 1 : nb) * sizeof(float));
  for (int j = 0; j < n; j++)
    d[(*k)++] = (struct starpu_data_descr){.handle = h[j], .mode = j == 0 ? pmode : STARPU_R};
  return n;
}

double scene_nll(unsigned where, const struct nll_input *in, int listmode)
{
  starpu_data_handle_t h[2][5], out;
  struct starpu_data_descr d[5 * 2 + 1];
  double part[SPROJ_NLL_PARTIALS];
  const int nb = in->nb;
  int k = 0, nh[2];
  for (int q = 0; q < 2; q++)
    nh[q] = piece_buffers(in, q, in->p[q], STARPU_R, NULL, listmode, 0, h[q], d, &k);
  starpu_vector_data_register(&out, STARPU_MAIN_RAM, (uintptr_t)part, SPROJ_NLL_PARTIALS, sizeof(double));
  d[k++] = (struct starpu_data_descr){.handle = out, .mode = STARPU_W};
  struct sproj_ratio_arg *arg = malloc(sizeof *arg);
  *arg = (struct sproj_ratio_arg){.npieces = 2, .num_bins = nb, .has_y = !listmode, .has_m = 1, .has_a = 1,
                                  .kind = SPROJ_RATIO_EM};
  ck_assert_int_eq(starpu_task_insert(&sproj_em_nll_cl, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_DATA_MODE_ARRAY, d, k,
                                      STARPU_EXECUTE_WHERE, (unsigned long long)where, 0), 0);
  starpu_data_unregister(out);
  for (int q = 0; q < 2; q++)
    for (int j = 0; j < nh[q]; j++)
      starpu_data_unregister(h[q][j]);
  double sum = 0.0;
  for (int j = 0; j < SPROJ_NLL_PARTIALS; j++)
    sum += part[j];
  return sum;
}

void scene_ratio(unsigned where, const struct nll_input *in, int kind, int a_per_lor, float *const px[2], float cap,
                 const float *smax, float *out[2])
{
  starpu_data_handle_t h[2][5], hs = NULL;
  struct starpu_data_descr d[5 * 2 + 1];
  const int nb = in->nb;
  int k = 0, nh[2];
  for (int q = 0; q < 2; q++) {
    memcpy(out[q], in->p[q], (size_t)in->n[q] * nb * sizeof(float));
    nh[q] = piece_buffers(in, q, out[q], STARPU_RW, kind == SPROJ_RATIO_HESSIAN ? px[q] : NULL, 0, a_per_lor, h[q], d,
                          &k);
  }
  if (smax) {
    starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)smax, 2 * nb, sizeof(float));
    d[k++] = (struct starpu_data_descr){.handle = hs, .mode = STARPU_R};
  }
  struct sproj_ratio_arg *arg = malloc(sizeof *arg);
  *arg = (struct sproj_ratio_arg){.npieces = 2, .num_bins = nb, .has_y = 1, .has_m = 1, .has_a = 1,
                                  .a_per_lor = a_per_lor, .kind = kind, .max_ratio = cap, .has_small = smax != NULL,
                                  .small_fraction = 0.25f, .slot = {0, 1}};
  ck_assert_int_eq(starpu_task_insert(&sproj_em_ratio_cl, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_DATA_MODE_ARRAY, d,
                                      k, STARPU_EXECUTE_WHERE, (unsigned long long)where, 0), 0);
  for (int q = 0; q < 2; q++)
    for (int j = 0; j < nh[q]; j++)
      starpu_data_unregister(h[q][j]);
  if (hs)
    starpu_data_unregister(hs);
}

int scene_expected_blurred(const struct scene *s, const float *img, const float fwhm[3], int tof, float *out)
{
  float *blurred = scene_copy(img, tu_nvox(&s->g));
  scene_blur(&s->g, fwhm, img, blurred, STARPU_CPU);
  int ret = scene_expected(s, blurred, tof, out);
  free(blurred);
  return ret;
}
