/* codelets.h: the StarPU codelets of starproj and the argument every projection task carries (runtime side). */
#ifndef SPROJ_CODELETS_H
#define SPROJ_CODELETS_H

#include <stdint.h>
#include <starpu.h>
#include "joseph3d_ray.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most LOR pieces one projection task may carry (bounded by the CUDA kernel parameter table). */
#define SPROJ_MAX_PIECES 64

/* cl_arg of a projection task. Its buffers are the image, then (xstart, xend, values) for each piece. */
struct sproj_proj_arg {
  struct sproj_geom geom;
  int npieces;
};

#define SPROJ_BUFFERS_PER_PIECE 3

/* The LORs and values of piece p of a projection task, wherever the task runs. */
struct sproj_piece {
  const float *xs, *xe;
  float *values;
  uint32_t n;
};

static inline struct sproj_piece sproj_piece_get(void *buffers[], int p)
{
  void **b = buffers + 1 + SPROJ_BUFFERS_PER_PIECE * p;
  struct sproj_piece piece;
  piece.xs = (const float *)STARPU_VECTOR_GET_PTR(b[0]);
  piece.xe = (const float *)STARPU_VECTOR_GET_PTR(b[1]);
  piece.values = (float *)STARPU_VECTOR_GET_PTR(b[2]);
  piece.n = STARPU_VECTOR_GET_NX(b[0]);
  return piece;
}

extern struct starpu_codelet sproj_joseph3d_fwd_cl;
extern struct starpu_codelet sproj_joseph3d_back_cl;
/* Reduction methods of image handles: zero a per-worker buffer; add one buffer into another. */
extern struct starpu_codelet sproj_image_zero_cl;
extern struct starpu_codelet sproj_image_add_cl;

/* Work of a projection task for the performance models: LORs times the largest image dimension. */
size_t sproj_proj_task_size(struct starpu_task *task, unsigned nimpl);
/* Counts an executed projection task on the calling worker (for sproj_worker_stats). */
void sproj_stats_count(int64_t lors);

#ifdef SPROJ_USE_CUDA
void sproj_joseph3d_fwd_cuda(void *buffers[], void *cl_arg);
void sproj_joseph3d_back_cuda(void *buffers[], void *cl_arg);
void sproj_image_zero_cuda(void *buffers[], void *cl_arg);
void sproj_image_add_cuda(void *buffers[], void *cl_arg);
#endif

#ifdef __cplusplus
}
#endif

#endif
