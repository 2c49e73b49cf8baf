/* SPDX-License-Identifier: Apache-2.0 */
/* codelets.c: the CPU loop shared by every projection codelet. */
#include "config.h"
#include "codelets.h"

void sproj_cpu_run(void *buffers[], void *cl_arg, sproj_lor_fn fn)
{
  const struct sproj_proj_arg *arg = cl_arg;
  /* for back projections this is the worker's private reduction buffer (or, under tight memory limits, the image
   * that tasks take one at a time): no other thread writes it */
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece pc = sproj_piece_get(buffers, arg, p);
    for (uint32_t i = 0; i < pc.n; i++)
      fn(arg, img, &pc, i);
  }
}
