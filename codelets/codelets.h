/* SPDX-License-Identifier: Apache-2.0 */
/* codelets.h: the StarPU codelets of starproj and the argument every projection task carries (runtime side). */
#ifndef SPROJ_CODELETS_H
#define SPROJ_CODELETS_H

#include <stdint.h>
#include <starpu.h>
#include "joseph3d_ray.h"
#include "tof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Codelets with CUDA implementations: real ones, or in simulation (STARPU_SIMGRID) simulated ones. */
#if defined(SPROJ_USE_CUDA) || defined(STARPU_SIMGRID)
#define SPROJ_GPU_CODELETS 1
#endif

/* Most LOR pieces one projection task may carry (bounded by the CUDA kernel parameter table). */
#define SPROJ_MAX_PIECES 64

/* The arguments every kernel of a projection task takes. The task's buffers are the image; then for each piece: its
 * values, and when present the TOF bin of each event (int16), the per-LOR sigma and the per-LOR centre offset; then
 * for each of the task's runs (sproj_piece_map): xstart, xend; then, with layout or shift, a scratch buffer of
 * 2 x sproj_layout_copy_stride(voxels) floats (the principal-axis copies, or the shifted image), or with tiles the
 * tiles' scratch, or with pairs the pair layouts. */
struct sproj_proj_arg {
  struct sproj_geom geom;
  struct sproj_tof_arg tof; /* num_bins 0: non-TOF */
  int npieces;
  int nruns;                /* LOR runs among the buffers */
  int lm;                   /* 1: listmode, pieces carry TOF bins */
  int fixed_point;          /* back projection into a fixed-point accumulator (reproducible mode), not the image */
  int layout;               /* 1: a CUDA task of the non-TOF projectors, one thread per LOR, that
                             * first copies the image into the scratch buffer in the principal-axis layouts
                             * (joseph3d_ray.h) and samples those (forward), or adds into them and then into the
                             * image (back) */
  int shift;                /* 1: a CUDA listmode back projection task that uses the scratch buffer as the image
                             * shifted by one float (sproj_add_pair), zeroed before and added into the image after */
  int tiles;                /* 1: a CUDA listmode projection task (forward or back) by image tiles (tof_tiles.h), the
                             * scratch buffer its bookkeeping, records and partial sums (sproj_tof_tiles_scratch_words
                             * 32-bit words) */
  int pairs;                /* 1: a CUDA listmode or sinogram TOF forward projection task that first fills the scratch
                             * buffer with the image's pair layouts (sproj_pairs_offset(geom, 2) floats,
                             * joseph3d_ray.h) and samples those */
};

/* Where each piece's LORs are. A chunking's pieces that follow each other in the LOR set share one StarPU child of
 * the LOR arrays (a run), so that a task of many small pieces holds two LOR handles per run instead of two per piece
 * (StarPU's submission cost grows with the handles). Host side only: the kernels get pointers (cuda_pieces.h). */
struct sproj_piece_map {
  uint8_t run[SPROJ_MAX_PIECES];    /* piece p's run, among the task's runs */
  uint32_t first[SPROJ_MAX_PIECES]; /* its first LOR in that run */
};

/* cl_arg of a projection task. arg comes first: the codelets read cl_arg as a struct sproj_proj_arg, and
 * sproj_piece_get finds the map behind it. */
struct sproj_proj_task {
  struct sproj_proj_arg arg;
  struct sproj_piece_map map;
};

/* Tasks of at least this many LORs run one CUDA thread per LOR; smaller ones share each ray between threads
 * (sproj_cuda_lanes). Only the former are worth the principal-axis copies. */
#define SPROJ_CUDA_ONE_LANE_LORS ((size_t)1 << 17)

/* Where a back projection task adds: its first buffer, as a float image or as a fixed-point accumulator. */
SPROJ_HD struct sproj_out sproj_out_of(void *buffer, const struct sproj_proj_arg *arg)
{
  struct sproj_out out = {0, 0, 0};
  if (arg->fixed_point)
    out.q = (unsigned long long *)buffer;
  else
    out.f = (float *)buffer;
  return out;
}

/* Buffers of each piece: values, and the TOF bins, sigma and offset when present. */
static inline int sproj_buffers_per_piece(const struct sproj_proj_arg *arg)
{
  return 1 + arg->lm + arg->tof.per_lor_sigma + arg->tof.per_lor_offset;
}

/* Index of the first of the task's run buffers; the principal-axis scratch, when present, follows the runs. */
static inline int sproj_runs_buffer(const struct sproj_proj_arg *arg)
{
  return 1 + sproj_buffers_per_piece(arg) * arg->npieces;
}

static inline int sproj_copies_buffer(const struct sproj_proj_arg *arg)
{
  return sproj_runs_buffer(arg) + 2 * arg->nruns;
}

/* The LORs and values of piece p of a projection task, wherever the task runs. */
struct sproj_piece {
  const float *xs, *xe;
  float *values;
  const int16_t *bins;
  const float *sigma, *offset;
  uint32_t n;
};

/* arg must be the first member of the task's struct sproj_proj_task (its cl_arg). */
static inline struct sproj_piece sproj_piece_get(void *buffers[], const struct sproj_proj_arg *arg, int p)
{
  const struct sproj_piece_map *map = &((const struct sproj_proj_task *)(const void *)arg)->map;
  void **b = buffers + 1 + sproj_buffers_per_piece(arg) * p;
  void **run = buffers + sproj_runs_buffer(arg) + 2 * map->run[p];
  size_t at = 3 * (size_t)map->first[p];
  struct sproj_piece piece = {0};
  piece.values = (float *)STARPU_VECTOR_GET_PTR(b[0]);
  piece.n = STARPU_VECTOR_GET_NX(b[0]);
  piece.xs = (const float *)STARPU_VECTOR_GET_PTR(run[0]) + at;
  piece.xe = (const float *)STARPU_VECTOR_GET_PTR(run[1]) + at;
  int k = 1;
  if (arg->lm)
    piece.bins = (const int16_t *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->tof.per_lor_sigma)
    piece.sigma = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->tof.per_lor_offset)
    piece.offset = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  return piece;
}

/* What a CPU codelet does for one LOR of a piece (lor: its index in the piece); img is the task's image buffer. */
typedef void (*sproj_lor_fn)(const struct sproj_proj_arg *arg, float *img, const struct sproj_piece *piece,
                             uint32_t lor);
/* The CPU side of every projection codelet: calls fn for each LOR of each piece and counts the work. */
void sproj_cpu_run(void *buffers[], void *cl_arg, sproj_lor_fn fn);
/* SIMD lanes of the CPU projectors (joseph3d_lanes.h): 16 with AVX-512F, 8 with AVX2, 0 (scalar code) otherwise,
 * decided once from the CPU. The environment variable SPROJ_CPU_ISA = scalar, avx2 or avx512 asks for no more than
 * that (to compare the paths on one machine). */
int sproj_cpu_lanes(void);
/* A buffer of at least bytes that belongs to the calling thread (a CPU worker's scratch space, kept between tasks
 * and freed when the thread ends), or NULL when out of memory. */
void *sproj_cpu_scratch(size_t bytes);

/* ---- variants of the TOF projectors (doc/benchmarks.md, version 23), each a bit of sproj_tof_variants ---- */
#define SPROJ_TOF_VARIANT_TABLE 1u  /* the bin edges' erf from a table of cubic pieces (tof_table.h) */
#define SPROJ_TOF_VARIANT_SLIDE 2u  /* the sinogram projectors keep a LOR's bins beside its samples (tof_slide.h) */
#define SPROJ_TOF_VARIANT_COPIES 4u /* GPU sinogram back projection into the principal-axis copies, a warp's adds
                                     * combined (sproj_ray_scatter_warp) */
#define SPROJ_TOF_VARIANT_LANES 8u  /* CPU: one LOR per SIMD lane (tof_lanes.h) */
#define SPROJ_TOF_VARIANT_SINO_TABLE 16u /* the table for the sinogram projectors only (listmode keeps erff) */
#define SPROJ_TOF_VARIANT_TILES 32u /* GPU listmode projections by image tiles in shared memory (tof_tiles.h) */
#define SPROJ_TOF_VARIANT_PAIRS 64u /* GPU listmode forward projections from the image's pair layouts (joseph3d_ray.h);
                                     * off: slower on an H100, whose L2 does not hold both layouts (benchmarks.md) */
#define SPROJ_TOF_VARIANT_SINO_PAIRS 128u /* the same for GPU sinogram forward projections (off: slower, too) */
/* The variants the TOF projectors of CUDA workers (gpu 1) or CPU workers (gpu 0) run, decided once: the environment
 * variable SPROJ_TOF_GPU or SPROJ_TOF_CPU, a comma-separated list of table, sinotable, slide, copies, lanes, tiles,
 * pairs and sinopairs ("old": none), replaces the default (codelets.c: table, slide and copies on GPUs, table and lanes on CPU workers);
 * names it does not know are ignored. */
unsigned sproj_tof_variants(int gpu);
/* The edges' table of a TOF task on a CPU worker, kept by the calling thread for its parameters, or NULL (erff): when
 * the table variant is off, the task has per-LOR sigma, no table serves its windows (sproj_tof_table_plan_for) or
 * memory is short. */
const struct sproj_tof_table *sproj_cpu_tof_table(const struct sproj_proj_arg *arg);

extern struct starpu_codelet sproj_joseph3d_fwd_cl;
extern struct starpu_codelet sproj_joseph3d_back_cl;
extern struct starpu_codelet sproj_joseph3d_tof_sino_fwd_cl;
extern struct starpu_codelet sproj_joseph3d_tof_sino_back_cl;
extern struct starpu_codelet sproj_joseph3d_tof_lm_fwd_cl;
extern struct starpu_codelet sproj_joseph3d_tof_lm_back_cl;
/* Reduction methods of image handles: zero a per-worker buffer; add one buffer into another. */
extern struct starpu_codelet sproj_image_zero_cl;
extern struct starpu_codelet sproj_image_add_cl;
extern struct starpu_codelet sproj_image_add_ordered_cl; /* the same add, STARPU_RW without STARPU_COMMUTE */
#ifdef SPROJ_GPU_CODELETS
extern struct starpu_codelet sproj_image_add_gpu_cl; /* sproj_image_add_cl on CUDA workers only */
#endif
/* Reproducible mode: reduction methods of fixed-point accumulators, and image += accumulator, accumulator = 0. */
extern struct starpu_codelet sproj_fixed_zero_cl;
extern struct starpu_codelet sproj_fixed_add_cl;
extern struct starpu_codelet sproj_fixed_flush_cl;

/* Work of a projection task for the performance models: LORs times the largest image dimension. */
size_t sproj_proj_task_size(struct starpu_task *task, unsigned nimpl);

/* A performance model of a projection codelet (regression on sproj_proj_task_size). */
#define SPROJ_PROJ_MODEL(var, sym)                                                                                   \
  static struct starpu_perfmodel var = {                                                                             \
    .type = STARPU_NL_REGRESSION_BASED,                                                                              \
    .symbol = sym,                                                                                                   \
    .size_base = sproj_proj_task_size,                                                                               \
  }

/* Whether the library holds a kernel image a GPU can run (cuda_check.cu), and what the GPU is. */
enum sproj_cuda_image { SPROJ_CUDA_IMAGE_OK = 0, SPROJ_CUDA_IMAGE_MISSING = 1, SPROJ_CUDA_IMAGE_ERROR = 2 };
struct sproj_cuda_device_info {
  char name[256];  /* e.g. "NVIDIA H200" */
  int major, minor; /* compute capability */
  int result;       /* enum sproj_cuda_image */
  char error[64];   /* the CUDA error's name when result is not OK */
};

#ifdef SPROJ_USE_CUDA
/* Fills info for CUDA device `device` and returns info->result. Restores the calling thread's current device. */
int sproj_cuda_image_check(int device, struct sproj_cuda_device_info *info);
void sproj_joseph3d_fwd_cuda(void *buffers[], void *cl_arg);
void sproj_joseph3d_back_cuda(void *buffers[], void *cl_arg);
void sproj_joseph3d_tof_sino_fwd_cuda(void *buffers[], void *cl_arg);
void sproj_joseph3d_tof_sino_back_cuda(void *buffers[], void *cl_arg);
void sproj_joseph3d_tof_lm_fwd_cuda(void *buffers[], void *cl_arg);
void sproj_joseph3d_tof_lm_back_cuda(void *buffers[], void *cl_arg);
void sproj_image_zero_cuda(void *buffers[], void *cl_arg);
void sproj_image_add_cuda(void *buffers[], void *cl_arg);
void sproj_fixed_zero_cuda(void *buffers[], void *cl_arg);
void sproj_fixed_add_cuda(void *buffers[], void *cl_arg);
void sproj_fixed_flush_cuda(void *buffers[], void *cl_arg);
#define SPROJ_CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(STARPU_SIMGRID)
/* Simulation (StarPU over SimGrid): CUDA workers are simulated and do not call a task's codelet function; their tasks
 * take the time the codelet's performance model gives, calibrated with the real kernels under the same symbol. A
 * codelet needs a CUDA function for StarPU to hand its tasks to those workers: this one, which does nothing. */
void sproj_simulated_cuda(void *buffers[], void *cl_arg);
/* Not STARPU_CUDA_ASYNC: with StarPU 1.4.10 over SimGrid 3.32 the reduction of an image whose per-worker buffers are
 * on simulated GPUs then never ended (SimGrid reported a deadlock at the image's sync); each simulated GPU worker
 * runs its tasks one after the other. */
#define SPROJ_CUDA_IMPL(fn) .cuda_funcs = {sproj_simulated_cuda},
#else
#define SPROJ_CUDA_IMPL(fn)
#endif

/* A projection codelet: a CPU function, the CUDA function when built, a variable number of buffers. */
#define SPROJ_PROJ_CODELET(var, cpu_fn, cuda_fn, perfmodel, cl_name)                                                     \
  struct starpu_codelet var = {                                                                                      \
    .cpu_funcs = {cpu_fn},                                                                                           \
    .cpu_funcs_name = {#cpu_fn},                                                                                     \
    SPROJ_CUDA_IMPL(cuda_fn)                                                                                         \
    .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                                            \
    .model = &perfmodel,                                                                                             \
    .name = cl_name,                                                                                                 \
  }

/* ---- reconstruction codelets (em_ratio, em_update, gauss3d) ---- */
/* cl_arg of an EM ratio task. Its buffers are, for each piece of LORs: the forward values p (overwritten), for a
 * Hessian the forward values px of its image, then when present the data y, the per-LOR factor m and the background
 * a (num_bins values per LOR for p, px, y and a, one for m). What it writes over p (em_ratio.h): the EM ratio
 * m y / ybar (the gradient's data term), or the data term of the Hessian of the negative log-likelihood applied to
 * the forward projection p of a direction: exactly at the image whose forward projection is px (m^2 y p / ybar^2),
 * or in the data's approximation (m^2 p / y). */
enum sproj_ratio_kind { SPROJ_RATIO_EM = 0, SPROJ_RATIO_HESSIAN = 1, SPROJ_RATIO_APPROX_HESSIAN = 2 }; /* = em_ratio.h's */
struct sproj_ratio_arg {
  int npieces;
  int num_bins;
  int has_y, has_m, has_a;
  int a_per_lor;  /* the background holds one value per LOR, spread over its num_bins bins (em_background) */
  int kind;       /* enum sproj_ratio_kind; SPROJ_RATIO_HESSIAN adds a buffer px after p in every piece */
  float max_ratio; /* > 0: quotients capped there, expected counts floored at y / max_ratio (em_ratio.h); 0: none */
  float a_flat;    /* without a background buffer (has_a 0): the background of every value (em_background) */
  /* STIR's small-value rule (em_small_zero): with has_small the task's last buffer (after the objective's partial
   * sums) holds the largest numerators of each group, num_bins floats per group, piece q's group being slot[q] */
  int has_small;
  float small_fraction;
  int32_t slot[SPROJ_MAX_PIECES];
};
static inline int sproj_ratio_buffers_per_piece(const struct sproj_ratio_arg *arg)
{
  return 1 + (arg->kind == SPROJ_RATIO_HESSIAN) + arg->has_y + arg->has_m + arg->has_a;
}
/* Work of a ratio (or objective) task, for its performance model: the values of every piece. */
static inline size_t sproj_ratio_task_values(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct sproj_ratio_arg *arg = (const struct sproj_ratio_arg *)task->cl_arg;
  size_t values = 0;
  for (int q = 0; q < arg->npieces; q++)
    values += starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, sproj_ratio_buffers_per_piece(arg) * q));
  return values * (size_t)arg->num_bins;
}
/* The buffers of piece q of a ratio task, wherever the task runs. */
struct sproj_ratio_piece {
  float *p;
  const float *px, *y, *m, *a;
  uint32_t n;
};
static inline struct sproj_ratio_piece sproj_ratio_piece_get(void *buffers[], const struct sproj_ratio_arg *arg, int q)
{
  void **b = buffers + sproj_ratio_buffers_per_piece(arg) * q;
  struct sproj_ratio_piece pc = {0};
  int k = 1;
  pc.p = (float *)STARPU_VECTOR_GET_PTR(b[0]);
  pc.n = STARPU_VECTOR_GET_NX(b[0]);
  if (arg->kind == SPROJ_RATIO_HESSIAN)
    pc.px = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->has_y)
    pc.y = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->has_m)
    pc.m = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->has_a)
    pc.a = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  return pc;
}
/* piece q's largest numerators (em_small_zero), the task's buffer `last` holding them; NULL without the rule */
static inline const float *sproj_ratio_small(void *buffers[], const struct sproj_ratio_arg *arg, int last, int q)
{
  if (!arg->has_small)
    return NULL;
  return (const float *)STARPU_VECTOR_GET_PTR(buffers[last]) + (size_t)arg->slot[q] * (size_t)arg->num_bins;
}
/* cl_arg of a task of the small-value rule's maxima (em_small.h): for each piece its forward values p (R, with
 * has_p) and its data y (R, with has_y); the last buffer, in STARPU_REDUX mode, num_bins floats per group, takes the
 * largest numerator (at least 0) of kind (enum sproj_ratio_kind) over the values of each TOF bin of piece q, in
 * group slot[q]. Its reduction keeps the larger of two values (sproj_vec_max_cl). */
struct sproj_small_arg {
  int npieces;
  int num_bins;
  int kind;
  int has_p, has_y;
  int32_t slot[SPROJ_MAX_PIECES];
};
/* cl_arg of a simulation task (sim_counts.h) over pieces of a data vector. Its buffers are, for each piece: the
 * values p (forward values; replaced by the data in a draw task, read in a sum task), then when present the per-LOR
 * factor m, the background a (as a ratio task's) and, in a draw task with has_sums, the per-LOR sums of the data over
 * its bins (W). A sum task has one more buffer: SPROJ_NLL_PARTIALS doubles W, the partial sums of m p. */
struct sproj_sim_arg {
  int npieces;
  int num_bins;
  int has_m, has_a, a_per_lor, has_sums;
  int noise;      /* draw: Poisson counts (else the expected counts) */
  float scale;    /* draw: the expected counts are scale * m * p + a */
  float a_flat;   /* without a background buffer (has_a 0): the background of every value (em_background) */
  uint64_t seed;
  int64_t first_value[SPROJ_MAX_PIECES]; /* per piece: index of its first value in the whole vector */
};
static inline int sproj_sim_buffers_per_piece(const struct sproj_sim_arg *arg)
{
  return 1 + arg->has_m + arg->has_a + arg->has_sums;
}
/* Work of a simulation task, for its performance model: the values of every piece. */
static inline size_t sproj_sim_task_values(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct sproj_sim_arg *arg = (const struct sproj_sim_arg *)task->cl_arg;
  size_t values = 0;
  for (int q = 0; q < arg->npieces; q++)
    values += starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, sproj_sim_buffers_per_piece(arg) * q));
  return values * (size_t)arg->num_bins;
}
/* The buffers of piece q of a simulation task, wherever the task runs. */
struct sproj_sim_piece {
  float *p, *sums;
  const float *m, *a;
  uint32_t n;
};
static inline struct sproj_sim_piece sproj_sim_piece_get(void *buffers[], const struct sproj_sim_arg *arg, int q)
{
  void **b = buffers + sproj_sim_buffers_per_piece(arg) * q;
  struct sproj_sim_piece pc = {0};
  int k = 1;
  pc.p = (float *)STARPU_VECTOR_GET_PTR(b[0]);
  pc.n = STARPU_VECTOR_GET_NX(b[0]);
  if (arg->has_m)
    pc.m = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->has_a)
    pc.a = (const float *)STARPU_VECTOR_GET_PTR(b[k++]);
  if (arg->has_sums)
    pc.sums = (float *)STARPU_VECTOR_GET_PTR(b[k++]);
  return pc;
}
/* cl_arg of an event emission task (sim_emit_lor): buffers per piece: the drawn counts (R), the per-LOR place of
 * each LOR's first event in the piece's events (int32, R), the piece's events' TOF bins (int16, W). */
struct sproj_emit_arg {
  int npieces;
  int num_bins;
};
/* cl_arg of an update task (buffers: image RW, back-projected ratio or gradient R, sensitivity or denominator R):
 * EM's rule (em_update_value), OSMAPOSL's with kind SPROJ_UPDATE_OSL (osl_update_value, relative change within
 * [lo, hi], the sensitivity times sens_factor), or the separable paraboloidal surrogates' additive step with kind
 * SPROJ_UPDATE_SPS (sps_update_value: num_scale and step, the result within [lo, hi]). */
enum sproj_update_kind { SPROJ_UPDATE_EM = 0, SPROJ_UPDATE_OSL = 1, SPROJ_UPDATE_SPS = 2 };
struct sproj_update_arg {
  float sens_factor;
  int kind;
  float lo, hi;
  float num_scale, step;
};
/* cl_arg of an image axpy task (buffers: y RW, x R): y <- y + alpha * x. */
struct sproj_axpy_arg {
  float alpha;
};
/* Fills a blur task's argument for an image of n voxels of voxel_size: per axis a sampled Gaussian of the given FWHM
 * (same units as voxel_size; 0: no blur) cut at 3 sigma and normalised to sum 1. Returns -1, or the first axis whose
 * kernel would exceed SPROJ_GAUSS_MAX_RADIUS. */
struct sproj_gauss_arg;
int sproj_gauss_arg_init(struct sproj_gauss_arg *gauss, const int n[3], const float voxel_size[3], const float fwhm[3]);
/* ---- an image's slabs (image_slabs.h): several devices' back projections summed slab by slab ---- */
#define SPROJ_MAX_SLABS 8
/* cl_arg of the tasks that cut an image into slabs (buffers: image R, nslabs slabs W) or put it together from them
 * (buffers: image W, nslabs slabs R that cover it): slab s starts at voxel first[s]. */
struct sproj_slabs_arg {
  int nslabs;
  uint32_t first[SPROJ_MAX_SLABS];
};
/* cl_arg of the update of one slab of the OS-EM image (buffers: the image's slab RW, the sensitivity's slab R, then
 * nparts partial back projections of it R, added in that order). */
struct sproj_slab_update_arg {
  int nparts;
  float sens_factor;
};
/* cl_arg of one step of the recursive halving (buffers: this device's partial sums R, the partner's partial sums of
 * the step's voxels R, then nout sums W: the half sent on and the half kept, or all of the step's voxels): this
 * device's sums of the step's voxels start at its element own_at; the first sum written is the step's voxels from
 * out_at, the second those from keep_at. */
struct sproj_slab_halve_arg {
  uint32_t own_at, out_at, keep_at;
  int nout;
};
extern struct starpu_codelet sproj_slab_split_cl;
extern struct starpu_codelet sproj_slab_gather_cl;
extern struct starpu_codelet sproj_slab_update_cl;
extern struct starpu_codelet sproj_slab_halve_cl;

/* EM ratio (pieces of LORs), EM update (an image) and separable Gaussian blur (buffers: in R, out W, scratch). The
 * Poisson objective (em_nll.h) takes a ratio task's buffers, all read, and one more: SPROJ_NLL_PARTIALS doubles W. */
extern struct starpu_codelet sproj_em_ratio_cl;
extern struct starpu_codelet sproj_em_nll_cl;
extern struct starpu_codelet sproj_em_small_cl;
extern struct starpu_codelet sproj_vec_max_cl;
extern struct starpu_codelet sproj_em_update_cl;
extern struct starpu_codelet sproj_image_axpy_cl;
extern struct starpu_codelet sproj_gauss3d_cl;
/* Simulated data (sim_counts.h): the sum of m p over pieces, and the counts drawn in place. */
extern struct starpu_codelet sproj_sim_sum_cl;
extern struct starpu_codelet sproj_sim_draw_cl;
extern struct starpu_codelet sproj_sim_emit_cl;
/* A scanner's LOR endpoints (scanner_lors.h). Buffers: the scanner's table (bytes, R), xstart and xend (W), and with
 * indexed the LOR index of each (int32, R); else the LORs first, first + 1, ... */
struct sproj_scanner_lors_arg {
  int64_t first;
  int indexed;
};
extern struct starpu_codelet sproj_scanner_lors_cl;
/* Checks of per-LOR inputs where they live (input_check.h). Buffers: one struct sproj_input_result per vector (W),
 * then the vectors (R); cl_arg: struct sproj_input_arg. */
extern struct starpu_codelet sproj_input_check_cl;
/* Values gathered into another order (values_gather.h). Buffers: out (float, W), the position of each of its values
 * among the sources (uint32, R), the sources (float, R); cl_arg: struct sproj_gather_arg. */
extern struct starpu_codelet sproj_values_gather_cl;
#ifdef SPROJ_USE_CUDA
void sproj_values_gather_cuda(void *buffers[], void *cl_arg);
void sproj_input_check_cuda(void *buffers[], void *cl_arg);
void sproj_em_ratio_cuda(void *buffers[], void *cl_arg);
void sproj_em_nll_cuda(void *buffers[], void *cl_arg);
void sproj_em_small_cuda(void *buffers[], void *cl_arg);
void sproj_vec_max_cuda(void *buffers[], void *cl_arg);
void sproj_em_update_cuda(void *buffers[], void *cl_arg);
void sproj_image_axpy_cuda(void *buffers[], void *cl_arg);
void sproj_gauss3d_cuda(void *buffers[], void *cl_arg);
void sproj_sim_sum_cuda(void *buffers[], void *cl_arg);
void sproj_sim_draw_cuda(void *buffers[], void *cl_arg);
void sproj_sim_emit_cuda(void *buffers[], void *cl_arg);
void sproj_scanner_lors_cuda(void *buffers[], void *cl_arg);
void sproj_slab_split_cuda(void *buffers[], void *cl_arg);
void sproj_slab_gather_cuda(void *buffers[], void *cl_arg);
void sproj_slab_update_cuda(void *buffers[], void *cl_arg);
void sproj_slab_halve_cuda(void *buffers[], void *cl_arg);
#endif

#ifdef __cplusplus
}
#endif

#endif
