/* SPDX-License-Identifier: Apache-2.0 */
/* submit.c: turning projection requests (validated chunks of a LOR set) into StarPU tasks of a good size, and the
 * count of those tasks that wait for a worker. The requests come from merge.c, which holds some back. */
#include "config.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "submit.h"

static struct starpu_codelet *codelet_of(const struct sproj_request *rq)
{
  static struct starpu_codelet *const table[3][2] = {
    {&sproj_joseph3d_fwd_cl, &sproj_joseph3d_back_cl},
    {&sproj_joseph3d_tof_sino_fwd_cl, &sproj_joseph3d_tof_sino_back_cl},
    {&sproj_joseph3d_tof_lm_fwd_cl, &sproj_joseph3d_tof_lm_back_cl},
  };
  return table[rq->kind][rq->back];
}

#define MAX_BUFFERS_PER_PIECE 4 /* values, TOF bins, sigma, offset */

/* Pieces collected for one task. */
struct task_group {
  struct starpu_data_descr descr[2 + (MAX_BUFFERS_PER_PIECE + 2) * SPROJ_MAX_PIECES];
  struct sproj_proj_task task; /* task.arg.npieces counts the pieces collected, task.arg.nruns their runs */
  const sproj_chunks *ch;
  unsigned piece[SPROJ_MAX_PIECES]; /* which pieces of the chunking */
  unsigned run[SPROJ_MAX_PIECES];   /* which runs */
  int back;
  int64_t lors;
  starpu_data_handle_t copies; /* the image's scratch (principal-axis copies or shifted image), when this request's
                                * large tasks may use it */
  int64_t copies_min_lors;     /* the fewest LORs of a task that does */
  int shift;                   /* the scratch serves as the shifted image (listmode back projection) */
  int tiles;                   /* the scratch serves the projection by tiles (listmode) */
  int pairs;                   /* the scratch holds the pair layouts (TOF forward projections) */
  int home;                    /* the home device of the pieces collected (-1: none) */
  /* A back projection into an image of pieces homed on devices adds each task's sum into a partial image of the
   * worker that runs it (zeroed before its first task of the call), and sum_parts adds those up into the image after
   * the call's tasks, on the workers that hold them: placed by starproj under any policy, not by StarPU's reduction,
   * whose additions the policy places. */
  sproj_image *sums;           /* the image whose partials the homed tasks write, or NULL */
  struct starpu_data_descr image; /* the image as the other tasks access it */
  int nused;                   /* workers whose partial this call zeroed, in order of first use, and their devices */
  int used[STARPU_NMAXWORKERS], used_dev[STARPU_NMAXWORKERS];
};

/* A chunk listed several times in one request must not put a piece's handles several times into one task: StarPU
 * 1.4 never completes a task that holds the same handle four times. A repeated piece starts a new task instead,
 * which StarPU orders after the first: forward projection writes the same values again, back projection adds once
 * per listed copy. */
static int group_holds(const struct task_group *g, unsigned piece)
{
  for (int j = 0; j < g->task.arg.npieces; j++)
    if (g->piece[j] == piece)
      return 1;
  return 0;
}

/* Records where piece p's LORs are in the task being collected: in a run it already holds, else in a new one. */
static void add_run(struct task_group *g, int p)
{
  unsigned run = (unsigned)g->ch->piece_run[p];
  int n = g->task.arg.npieces, r = g->task.arg.nruns - 1;
  while (r >= 0 && g->run[r] != run)
    r--;
  if (r < 0) {
    r = g->task.arg.nruns++;
    g->run[r] = run;
  }
  g->task.map.run[n] = (uint8_t)r;
  g->task.map.first[n] = g->ch->piece_at[p];
}

/* ---- projection tasks submitted and not yet taken by a worker ---- */
static atomic_int waiting;
static void (*taken_hook)(int left);

int sproj_queued_tasks(void)
{
  return atomic_load(&waiting);
}

void sproj_queued_tasks_reset(void)
{
  atomic_store(&waiting, 0);
}

void sproj_on_task_taken(void (*hook)(int left))
{
  __atomic_store_n(&taken_hook, hook, __ATOMIC_RELEASE);
}

/* Runs on the worker that takes a projection task, when it takes it: counts the task and its LORs there
 * (sproj_worker_stats), so that the codelets need not know about statistics, and tells the layer above how many
 * wait now. (A callback at the end would run after StarPU has released the task's data, so a caller that has just
 * synchronised could still miss the last count.) */
static void task_taken(int64_t lors, int layout)
{
  sproj_stats_count(lors, layout);
  int left = atomic_fetch_sub(&waiting, 1) - 1;
  void (*hook)(int) = __atomic_load_n(&taken_hook, __ATOMIC_ACQUIRE);
  if (hook)
    hook(left);
}

static void count_task(void *lors_layout)
{
  /* the argument is 2 x the task's LORs, plus 1 when it works on an image layout (copies or shifted image) */
  int64_t v = (int64_t)(intptr_t)lors_layout;
  task_taken(v / 2, (int)(v % 2));
}

/* The same for a task whose kind the host picked (any.c), which also starts timing it. */
static void count_task_any(void *note)
{
  int64_t lors;
  int layout, cpu;
  sproj_any_taken(note, &lors, &layout, &cpu);
  task_taken(lors, layout);
}

/* A task on one worker writing dst (mode) from src (NULL: none) with codelet cl. */
static int on_worker(struct starpu_codelet *cl, int worker, starpu_data_handle_t dst, enum starpu_data_access_mode mode,
                     starpu_data_handle_t src)
{
  struct starpu_data_descr descr[2] = {{dst, mode}, {src, STARPU_R}};
  return starpu_task_insert(cl, STARPU_DATA_MODE_ARRAY, descr, src ? 2 : 1, STARPU_EXECUTE_WHERE,
                            (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                            STARPU_EXECUTE_ON_WORKER, worker, 0) == 0 ? SPROJ_OK : SPROJ_ERR_STARPU;
}

/* The image a task adds into: its worker's partial when its pieces are homed on a device (zeroed on the worker before
 * the worker's first task of the call), else the image itself. */
static int image_of_task(const char *func, struct task_group *g, int worker)
{
  if (!g->sums || worker < 0) {
    g->descr[0] = g->image;
    return SPROJ_OK;
  }
  starpu_data_handle_t h = sproj_image_part(g->sums, worker);
  if (!h)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory for a worker's partial image");
  int seen = 0;
  for (int i = 0; i < g->nused && !seen; i++)
    seen = g->used[i] == worker;
  if (!seen) {
    if (on_worker(&sproj_image_zero_cl, worker, h, STARPU_W, NULL))
      return sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused the task that zeroes a partial image");
    g->used[g->nused] = worker;
    g->used_dev[g->nused++] = g->home;
  }
  g->descr[0] = (struct starpu_data_descr){h, STARPU_RW};
  return SPROJ_OK;
}

/* Adds the partials idx[1..m-1] (indices into g->used) into idx[0]'s in a binary tree, each addition on the worker
 * of the partial it adds into. */
static int add_tree(struct task_group *g, const int *idx, int m)
{
  for (int step = 1; step < m; step *= 2)
    for (int i = 0; i + step < m; i += 2 * step) {
      int into = g->used[idx[i]];
      if (on_worker(&sproj_image_add_ordered_cl, into, g->sums->parts[into], STARPU_RW,
                    g->sums->parts[g->used[idx[i + step]]]))
        return SPROJ_ERR_STARPU;
    }
  return SPROJ_OK;
}

/* Sums the call's partials into the image where they are: each device's in a tree on that device (no copies), then
 * the devices' sums in a tree over the devices (one image-sized copy into a device per pair, log2 of the devices in a
 * row), then the first device's sum into the image on that device. The order of the additions follows from the
 * workers and devices used, not from the order the tasks end in (with one worker per device a call repeats bit for
 * bit; with several, which worker takes which task follows the devices' turns). */
static int sum_parts(const char *func, struct task_group *g)
{
  int order[STARPU_NMAXWORKERS], roots[STARPU_NMAXWORKERS], n = g->nused, nroots = 0;
  /* by device, then worker */
  for (int i = 0; i < n; i++) {
    int j = i;
    while (j > 0 && (g->used_dev[order[j - 1]] > g->used_dev[i] ||
                     (g->used_dev[order[j - 1]] == g->used_dev[i] && g->used[order[j - 1]] > g->used[i]))) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = i;
  }
  int ret = SPROJ_OK;
  for (int a = 0, b; a < n && !ret; a = b) {
    for (b = a; b < n && g->used_dev[order[b]] == g->used_dev[order[a]]; b++)
      ;
    ret = add_tree(g, order + a, b - a);
    roots[nroots++] = order[a];
  }
  if (!ret && nroots)
    ret = add_tree(g, roots, nroots);
  if (!ret && nroots)
    ret = on_worker(&sproj_image_add_cl, g->used[roots[0]], g->image.handle, STARPU_RW | STARPU_COMMUTE,
                    g->sums->parts[g->used[roots[0]]]);
  return ret ? sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused a task that sums partial images") : SPROJ_OK;
}

static int group_submit(const char *func, struct task_group *g, struct starpu_codelet *cl)
{
  if (g->task.arg.npieces == 0)
    return SPROJ_OK;
  struct sproj_proj_task *task = malloc(sizeof *task);
  if (!task)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory for a task's arguments");
  *task = g->task;
  struct sproj_proj_arg *arg = &task->arg;
  unsigned long long where = sproj_rt.where;
  unsigned ctx = sproj_rt.ctx;
  /* With both kinds selected the host picks one for each task (any.c): a CPU core when the task is small
   * (SPROJ_ANY_CPU_MAX_LORS), the GPUs have at least two tasks per CUDA worker queued, a core is free and would
   * finish it before the GPUs finish what is queued for them; else the GPUs. A core projects 1-2 M LORs/s (the SIMD
   * lanes), an H200 0.7-2.2 G, so a core only helps with small work that would otherwise wait behind a full GPU
   * queue. Each task then goes to the context of its kind: in the global context every push also involved every CPU
   * worker (30 beside 8 CUDA workers on a two-H200 node: ~25-40 us per small call, too slow for calls to merge, 3-23x
   * the time of GPUs alone). */
  int picked = where == (STARPU_CPU | STARPU_CUDA) && sproj_rt.ctx_cpu && sproj_rt.ctx_gpu;
  if (picked) {
    if (g->lors <= SPROJ_ANY_CPU_MAX_LORS &&
        sproj_any_core_takes(g->lors, g->back, sproj_rt.ncpu, sproj_queued_tasks(), (int)starpu_cuda_worker_get_count())) {
      where = STARPU_CPU;
      ctx = sproj_rt.ctx_cpu;
    } else {
      where = STARPU_CUDA;
      ctx = sproj_rt.ctx_gpu;
    }
  } else if (where == (STARPU_CPU | STARPU_CUDA) && g->lors > SPROJ_ANY_CPU_MAX_LORS) {
    where = STARPU_CUDA;
  }
  int nbuffers = sproj_runs_buffer(arg);
  for (int r = 0; r < arg->nruns; r++) {
    g->descr[nbuffers++] = (struct starpu_data_descr){.handle = g->ch->xs_runs[g->run[r]], .mode = STARPU_R};
    g->descr[nbuffers++] = (struct starpu_data_descr){.handle = g->ch->xe_runs[g->run[r]], .mode = STARPU_R};
  }
  /* a task bound for the GPUs, large enough to pay for making the copies (or zeroing the shifted image), works on
   * them */
  int scratch = g->copies && where == STARPU_CUDA && g->lors >= g->copies_min_lors;
  arg->layout = scratch && !g->shift && !g->tiles && !g->pairs;
  arg->shift = scratch && g->shift;
  arg->tiles = scratch && g->tiles;
  arg->pairs = scratch && g->pairs;
  if (scratch) {
    g->descr[nbuffers].handle = g->copies;
    g->descr[nbuffers++].mode = STARPU_SCRATCH;
  }
  /* on its pieces' home device; or on GPUs, where its first LORs are, when some GPUs hold them and others do not */
  unsigned nwords = 0;
  int worker;
  const uint32_t *workers = sproj_workers_holding(where, g->ch, (int)g->piece[0], &nwords, &worker);
  int ret = image_of_task(func, g, worker);
  if (ret) {
    free(task);
    return ret;
  }
  /* a picked task's note times it, for the rates the next picks use */
  struct sproj_any_note *note = NULL;
  if (picked && !(note = sproj_any_queued(g->lors, g->back, where == STARPU_CPU, scratch))) {
    free(task);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory for a task's note");
  }
  atomic_fetch_add(&waiting, 1);
  ret = starpu_task_insert(
    cl, STARPU_CL_ARGS, task, sizeof *task, STARPU_DATA_MODE_ARRAY, g->descr, nbuffers, STARPU_EXECUTE_WHERE, where,
    STARPU_SCHED_CTX, ctx, STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers,
    STARPU_PROLOGUE_CALLBACK_POP,
    note ? count_task_any : count_task, STARPU_PROLOGUE_CALLBACK_POP_ARG_NFREE,
    note ? (void *)note : (void *)(intptr_t)(2 * g->lors + scratch), STARPU_CALLBACK_WITH_ARG_NFREE,
    note ? sproj_any_done : NULL, note, 0);
  g->task.arg.npieces = 0;
  g->task.arg.nruns = 0;
  g->lors = 0;
  if (ret != 0) {
    atomic_fetch_sub(&waiting, 1);
    if (note)
      sproj_any_cancel(note);
  }
  return ret == 0 ? SPROJ_OK : sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused a task (%d)", ret);
}

/* How back projection tasks write the image. STARPU_REDUX gives every worker that runs one a private image buffer
 * on its memory node (the main copy needs one more on a GPU), so that tasks run side by side. Where a node's memory
 * limit (STARPU_LIMIT_*_MEM, or a GPU's size) cannot hold those buffers, StarPU would spin forever looking for
 * room: the tasks then add into the image itself, one at a time on it (STARPU_COMMUTE keeps their order free),
 * which needs no extra buffer on the host and one image on a GPU. An image that does not fit a GPU at all is
 * refused (NOMEM, naming the limit). */
static int back_mode(const char *func, const sproj_image *img, size_t elemsize, enum starpu_data_access_mode *mode)
{
  size_t bytes = (size_t)img->geom.n[0] * img->geom.n[1] * img->geom.n[2] * elemsize;
  if (img->owner >= 0) {
    *mode = STARPU_RW;
    return SPROJ_OK;
  }
  unsigned workers_on[STARPU_MAXNODES];
  sproj_workers_per_node(sproj_rt.where, workers_on);
  *mode = STARPU_REDUX;
  for (unsigned node = 0; node < starpu_memory_nodes_get_count() && node < STARPU_MAXNODES; node++) {
    if (!workers_on[node])
      continue;
    starpu_ssize_t total = starpu_memory_get_total(node);
    if (total < 0)
      continue; /* no limit */
    int host = starpu_node_get_kind(node) == STARPU_CPU_RAM;
    if (!host && (size_t)total < bytes)
      return sproj_fail(SPROJ_ERR_NOMEM, func, "the image (%zu bytes) does not fit in the %zd bytes of memory node %u",
                        bytes, total, node);
    if ((size_t)total < (workers_on[node] + (host ? 0 : 1)) * bytes)
      *mode = STARPU_RW | STARPU_COMMUTE;
  }
  return SPROJ_OK;
}

/* Submits the tasks of validated chunks. */
int sproj_submit_tasks(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                       const sproj_chunks *chunks, const int *list, int num)
{
  const sproj_chunks *ch;
  sproj_lors *lors = proj->vec.lors;
  starpu_data_handle_t *values, *bins = NULL, *sigma = NULL, *offset = NULL;
  int ret;

  if ((ret = sproj_resolve_chunks(func, lors, chunks, &ch)))
    return ret;
  int64_t total = 0;
  for (int i = 0; i < num; i++)
    total += ch->count[list[i]];
  /* a request on chunks that devices own is cut as for those devices, one task per device when it fits */
  int spread = sproj_request_spread(ch, sproj_rt.where, list, num);
  int64_t target = sproj_task_target_spread(total, spread);

  /* the read-only per-LOR vectors: their plans are activated once, under their own locks */
  if ((rq->kind == SPROJ_KIND_TOF_LM && sproj_vec_children(lors->bins, ch, &bins)) ||
      (rq->tof && rq->tof->sigma && sproj_vec_children(rq->tof->sigma, ch, &sigma)) ||
      (rq->tof && rq->tof->center_offset && sproj_vec_children(rq->tof->center_offset, ch, &offset)))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");

  struct task_group *g = calloc(1, sizeof *g);
  if (!g)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  g->ch = ch;
  g->back = rq->back;
  g->task.arg.geom = img->geom;
  g->task.arg.lm = rq->kind == SPROJ_KIND_TOF_LM;
  if (rq->tof) {
    const struct sproj_tof_params *p = &rq->tof->params;
    g->task.arg.tof = (struct sproj_tof_arg){p->bin_width, p->num_sigmas, p->sigma, p->center_offset, p->num_bins,
                                        sigma != NULL, offset != NULL, rq->tof->convention};
  }
  int bpp = sproj_buffers_per_piece(&g->task.arg);
  /* back projections add into the image, or in reproducible mode into its fixed-point accumulator */
  starpu_data_handle_t acc = NULL;
  g->task.arg.fixed_point = rq->back && img->reproducible;
  if (g->task.arg.fixed_point && (ret = sproj_image_accumulator(func, img, &acc))) {
    free(g);
    return ret;
  }
  g->descr[0].handle = acc ? acc : img->handle;
  g->descr[0].mode = STARPU_R;
  if (rq->back &&
      (ret = back_mode(func, img, acc ? sizeof(unsigned long long) : sizeof(float), &g->descr[0].mode))) {
    free(g);
    return ret;
  }
#ifdef SPROJ_GPU_CODELETS
  /* the reduction of a float image's buffers runs where its back projections ran: on GPUs alone, when they did */
  if (rq->back && !acc && g->descr[0].mode == STARPU_REDUX)
    starpu_data_set_reduction_methods(img->handle, sproj_rt.where == STARPU_CUDA ? &sproj_image_add_gpu_cl
                                                                                  : &sproj_image_add_cl,
                                      &sproj_image_zero_cl);
#endif
  g->image = g->descr[0];
  /* homed pieces of a back projection into the image (not into a device's own image, nor in fixed point, nor one task
   * at a time for want of memory) sum through the workers' partials */
  if (rq->back && !acc && g->image.mode == STARPU_REDUX && spread > 0) {
    g->sums = img;
    pthread_mutex_lock(&img->parts_lock);
  }
  struct starpu_codelet *cl = codelet_of(rq);
  enum starpu_data_access_mode values_mode = rq->back ? STARPU_R : STARPU_W;
  /* Principal-axis copies (joseph3d_ray.h) for the non-TOF projectors on GPUs, whose time goes into the image
   * gathers: on the benchmark they take the forward projection from 0.163 s to 0.067 s and the back projection from
   * 0.502 s to 0.400 s on an H200. The TOF-sinogram kernels spend theirs on the bins' erf and gained nothing (2% lost,
   * doc/benchmarks.md); listmode events come in no order that neighbouring threads could share. Making the copies
   * costs about three image-sized memory passes: a task pays for them when its LORs cross at least four times as
   * many samples as the image has voxels, and when one thread walks each LOR (smaller tasks share rays between
   * threads, cuda_pieces.h). */
  /* The TOF sinogram back projection takes the copies too when its copies variant is on (SPROJ_TOF_GPU, codelets.h:
   * on by default, measured against the direct adds in doc/benchmarks.md), with the warps' windows of the non-TOF
   * back projection: its samples are as many, each with the same adds. */
  unsigned gpu_variants = sproj_tof_variants(1);
  int tof_copies = rq->kind == SPROJ_KIND_TOF_SINO && rq->back && (gpu_variants & SPROJ_TOF_VARIANT_COPIES);
  if (__atomic_load_n(&sproj_rt.image_layouts, __ATOMIC_RELAXED) && (rq->kind == SPROJ_KIND_NONTOF || tof_copies) &&
      !acc && (sproj_rt.where & STARPU_CUDA)) {
    const int *n = img->geom.n;
    int64_t nmax = n[0] > n[1] ? n[0] : n[1];
    nmax = nmax > n[2] ? nmax : n[2];
    int64_t by_work = (4 * (int64_t)n[0] * n[1] * n[2] + nmax - 1) / nmax;
    g->copies_min_lors = by_work > (int64_t)SPROJ_CUDA_ONE_LANE_LORS ? by_work : (int64_t)SPROJ_CUDA_ONE_LANE_LORS;
    /* a request too small for one such task (every separate viewgram call) neither locks nor registers anything */
    if (total >= g->copies_min_lors)
      g->copies = sproj_image_copies(img);
  }
  /* The shifted image for listmode back projections on GPUs, bound by the L2's atomics on the image: a pair of a
   * sample's voxels that straddles an aligned group of four takes one float4 atomic there instead of two scalar
   * ones, 2 atomics per sample instead of 2.5 (the listmode back projection of the benchmark: 0.0183 -> 0.0157 s on
   * an H200). Zeroing it and adding it into the image cost about three image-sized passes (~17 us for 3.3 M
   * voxels), which a task's events repay from about nvox / 25 on: a task uses it from nvox / 8 events on.
   * With the variant tiles (SPROJ_TOF_GPU; starproj's TOF convention, whose samples need nothing of the rest of their
   * walk) such tasks, forward and back, go by image tiles instead (tof_tiles.h): their passes over the image cost
   * about what the shifted image's do, so from the same size on. */
  int lm_tiles = rq->kind == SPROJ_KIND_TOF_LM && (gpu_variants & SPROJ_TOF_VARIANT_TILES) &&
                 rq->tof->convention != SPROJ_TOF_ARG_PARALLELPROJ;
  /* With the variants pairs (listmode) and sinopairs (sinogram; SPROJ_TOF_GPU) TOF forward projections sample the
   * image's pair layouts (joseph3d_ray.h): a sample's corners at one place, ~1.25 L2 sectors and two loads instead of
   * ~2.25 and four. Filling them writes ~4.2 image sizes, which a task repays from the same size on. */
  int fwd_pairs = !rq->back &&
                  ((rq->kind == SPROJ_KIND_TOF_LM && !lm_tiles && (gpu_variants & SPROJ_TOF_VARIANT_PAIRS)) ||
                   (rq->kind == SPROJ_KIND_TOF_SINO && (gpu_variants & SPROJ_TOF_VARIANT_SINO_PAIRS)));
  if (__atomic_load_n(&sproj_rt.image_layouts, __ATOMIC_RELAXED) &&
      ((rq->kind == SPROJ_KIND_TOF_LM && (rq->back || lm_tiles)) || fwd_pairs) && !acc &&
      (sproj_rt.where & STARPU_CUDA)) {
    const int *n = img->geom.n;
    g->copies_min_lors = ((int64_t)n[0] * n[1] * n[2] + 7) / 8;
    g->tiles = lm_tiles;
    g->pairs = fwd_pairs;
    g->shift = !lm_tiles && !fwd_pairs;
    if (total >= g->copies_min_lors)
      g->copies = lm_tiles ? sproj_image_tiles(img) : fwd_pairs ? sproj_image_pairs(img) : sproj_image_copies(img);
  }

  /* the vector's partition may change with the chunking: one submitter of this vector at a time */
  pthread_mutex_lock(&proj->vec.lock);
  if ((ret = sproj_vec_children_locked(&proj->vec, ch, &values)))
    ret = sproj_fail(ret, func, "out of memory");
  for (int i = 0; i < num && !ret; i++) {
    for (int p = ch->piece_start[list[i]]; p < ch->piece_start[list[i] + 1] && !ret; p++) {
      int home = sproj_piece_home(ch, sproj_rt.where, p);
      if (sproj_task_full(g->task.arg.npieces, g->lors, ch->piece_len[p], target) || group_holds(g, (unsigned)p) ||
          (g->task.arg.npieces > 0 && home != g->home))
        ret = group_submit(func, g, cl);
      g->home = home;
      struct starpu_data_descr *d = g->descr + 1 + bpp * g->task.arg.npieces;
      starpu_data_handle_t h[MAX_BUFFERS_PER_PIECE] = {values[p]};
      int k = 1;
      if (bins)
        h[k++] = bins[p];
      if (sigma)
        h[k++] = sigma[p];
      if (offset)
        h[k++] = offset[p];
      for (int j = 0; j < bpp; j++) {
        d[j].handle = h[j];
        d[j].mode = j == 0 ? values_mode : STARPU_R;
      }
      add_run(g, p);
      g->piece[g->task.arg.npieces++] = (unsigned)p;
      g->lors += ch->piece_len[p];
    }
  }
  if (!ret)
    ret = group_submit(func, g, cl);
  /* a call that failed leaves its partials out of the image */
  if (g->sums) {
    if (!ret)
      ret = sum_parts(func, g);
    pthread_mutex_unlock(&img->parts_lock);
  }
  /* the call's fixed-point sum goes into the image once, in float, after all its tasks */
  if (!ret && acc &&
      starpu_task_insert(&sproj_fixed_flush_cl, STARPU_RW, img->handle, STARPU_RW, acc, STARPU_EXECUTE_WHERE,
                         (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0) != 0)
    ret = sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused a task");
  pthread_mutex_unlock(&proj->vec.lock);
  free(g);
  return ret;
}
