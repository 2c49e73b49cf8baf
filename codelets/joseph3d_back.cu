/* joseph3d_back.cu: CUDA kernel and StarPU launcher of the non-TOF back projection (one thread per LOR). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_back.h"

__global__ static void joseph3d_back_kernel(float *img, const struct sproj_geom g,
                                            const __grid_constant__ struct sproj_piece_table t)
{
  unsigned i;
  int p = sproj_piece_of_thread(&t, &i);
  if (i < t.n[p])
    joseph3d_back_lor(img, &g, t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i, t.values[p][i]);
}

extern "C" void sproj_joseph3d_back_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  struct sproj_piece_table t;
  unsigned blocks = sproj_piece_table_fill(&t, buffers, arg->npieces);
  if (blocks > 0) {
    joseph3d_back_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(img, arg->geom, t);
    SPROJ_CUDA_CHECK_LAUNCH();
  }
  int64_t total = 0;
  for (int p = 0; p < arg->npieces; p++)
    total += t.n[p];
  sproj_stats_count(total);
}
