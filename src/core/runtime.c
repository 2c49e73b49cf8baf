/* SPDX-License-Identifier: Apache-2.0 */
/* runtime.c: starting and stopping StarPU, scheduler choice, GPUs, task granularity and per-worker statistics. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SPROJ_USE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <hwloc.h>
#include "internal.h"

struct sproj_runtime sproj_rt;

/* per-worker counters; each worker only adds to its own slot */
static struct {
  int64_t tasks, lors;
  int64_t layout_tasks;
} worker_stats[STARPU_NMAXWORKERS];

#define DEFAULT_TASK_LORS_GPU ((int64_t)1 << 20)
#define DEFAULT_TASK_LORS_CPU ((int64_t)1 << 15)
/* CUDA workers (streams) per GPU: small chunks leave most of the GPU idle unless several kernels run at once */
#define DEFAULT_WORKERS_PER_GPU 4
/* tasks a CUDA worker queues on its stream ahead: hides the per-task latency of small chunks (H200: 2.6x -> 1.8x
 * per LOR for 2414 segment-viewgram calls, doc/benchmarks.md) */
#define DEFAULT_CUDA_PIPELINE "32"
/* queued tasks above which submission waits (see sproj_config.max_queued_tasks) */
#define DEFAULT_MAX_QUEUED_TASKS 10000
/* below this many LORs a piece is not worth a task of its own */
#define MIN_PIECE_LORS 4096

void sproj_config_init(struct sproj_config *cfg)
{
  if (!cfg)
    return;
  cfg->ncpu = -1;
  cfg->ncuda = -1;
  cfg->sched = NULL;
  cfg->task_lors = 0;
  cfg->workers_per_gpu = -1;
  cfg->verbose = 0;
  cfg->max_queued_tasks = -1;
  cfg->reproducible = 0;
  cfg->merge_calls = -1;
  cfg->image_layouts = -1;
}

int sproj_check_init(const char *func)
{
  if (!sproj_rt.initialized)
    return sproj_fail(SPROJ_ERR_NOT_INIT, func, "starproj is not initialised (call sproj_init first)");
  if (__atomic_load_n(&sproj_rt.paused, __ATOMIC_ACQUIRE) > 0)
    return sproj_fail(SPROJ_ERR_BUSY, func, "the workers are paused (call sproj_resume first)");
  return SPROJ_OK;
}

static int (*held_flush)(void), (*held_stop)(void);

void sproj_register_held(int (*flush)(void), int (*stop)(void))
{
  __atomic_store_n(&held_stop, stop, __ATOMIC_RELEASE);
  __atomic_store_n(&held_flush, flush, __ATOMIC_RELEASE);
}

int sproj_flush_held(void)
{
  int (*flush)(void) = __atomic_load_n(&held_flush, __ATOMIC_ACQUIRE);
  return flush ? flush() : SPROJ_OK;
}

int sproj_check_init_flush(const char *func)
{
  int ret = sproj_check_init(func);
  return ret ? ret : sproj_flush_held();
}

/* GPUs StarPU will drive if started with ncuda (-1: default), to pick a scheduler before starting it. */
static int expected_gpus(int ncuda)
{
  const char *env = getenv("STARPU_NCUDA");
  if (env && *env)
    return atoi(env);
  if (ncuda >= 0)
    return ncuda;
#ifdef SPROJ_USE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess)
    return 0;
  return count;
#else
  return 0;
#endif
}

/* Number of hwloc objects of a type (cores, hardware threads) on this machine, or -1. */
static int count_hw(hwloc_obj_type_t type)
{
  hwloc_topology_t topo;
  int count = -1;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0)
      count = hwloc_get_nbobjs_by_type(topo, type);
    hwloc_topology_destroy(topo);
  }
  return count;
}

static int physical_cores(void)
{
  return count_hw(HWLOC_OBJ_CORE);
}

/* SPROJ_OK if StarPU knows a scheduling policy of that name, else INVALID (recorded as func) with the names it
 * knows. */
static int check_sched_name(const char *func, const char *name, const char *where)
{
  char known[512] = "";
  size_t len = 0;
  for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p; p++) {
    if ((*p)->policy_name && strcmp((*p)->policy_name, name) == 0)
      return SPROJ_OK;
    if ((*p)->policy_name && len + strlen((*p)->policy_name) + 2 < sizeof known)
      len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", len ? " " : "", (*p)->policy_name);
  }
  return sproj_fail(SPROJ_ERR_INVALID, func, "unknown scheduler '%s'%s%s%s; StarPU knows: %s", name,
                    where ? " (" : "", where ? where : "", where ? ")" : "", known);
}

int sproj_scheduler_check(const char *name)
{
  if (!name)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "name must not be NULL");
  return check_sched_name(__func__, name, NULL);
}

/* One scheduling context per kind of worker: a task restricted to one kind is then scheduled among those workers
 * only, and the scheduler's per-task cost does not grow with the others. A scheduler the caller chose (config or
 * $STARPU_SCHED) runs every context. Otherwise both run lws: the workers of one kind take tasks as they free up,
 * which needs no performance model. dmda, which stays StarPU's policy for projections on any device, placed
 * every back projection task of a request on one of two H200 after small test runs had calibrated its models
 * (doc/benchmarks.md); with lws both GPUs took half, and one GPU ran as fast as with dmda. */
static void make_contexts(int sched_chosen)
{
  int nworkers = (int)starpu_worker_get_count(), ncpu = 0, ngpu = 0;
  int *cpus = malloc(nworkers * sizeof *cpus), *gpus = malloc(nworkers * sizeof *gpus);
  const char *policy = starpu_sched_get_sched_policy()->policy_name;
  const char *kind_policy = sched_chosen ? policy : "lws";
  if (!cpus || !gpus) {
    free(cpus);
    free(gpus);
    return; /* projections then use the global context */
  }
  for (int w = 0; w < nworkers; w++) {
    if (starpu_worker_get_type(w) == STARPU_CPU_WORKER)
      cpus[ncpu++] = w;
    else if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER)
      gpus[ngpu++] = w;
  }
  if (ncpu > 0)
    sproj_rt.ctx_cpu = starpu_sched_ctx_create(cpus, ncpu, "starproj-cpus", STARPU_SCHED_CTX_POLICY_NAME,
                                               kind_policy, 0);
  if (ngpu > 0)
    sproj_rt.ctx_gpu = starpu_sched_ctx_create(gpus, ngpu, "starproj-gpus", STARPU_SCHED_CTX_POLICY_NAME,
                                               kind_policy, 0);
  free(cpus);
  free(gpus);
}

/* A variable of the caller's environment, set for starpu_init and restored afterwards. */
struct saved_env {
  const char *name;
  char *old; /* copy of the caller's value, NULL if it was unset */
  int changed;
};

static void env_push(struct saved_env *s, const char *name, const char *value, int overwrite)
{
  const char *old = getenv(name);
  s->name = name;
  s->old = old ? strdup(old) : NULL;
  s->changed = (!old || overwrite) && (!old || s->old) && setenv(name, value, 1) == 0;
}

static void env_pop(struct saved_env *s)
{
  if (s->changed) {
    if (s->old)
      setenv(s->name, s->old, 1);
    else
      unsetenv(s->name);
  }
  free(s->old);
}

/* StarPU carves GPU buffers of up to 4 MB (LOR pieces, values) out of 32 MB chunks and keeps up to four emptied
 * chunks for reuse; the chunks count as used memory and its eviction never gives them back. Under a small
 * STARPU_LIMIT_CUDA_MEM that leaves no room for a new chunk or for an image, and StarPU then retries that allocation
 * forever: on an H200 the benchmark stalled at 100, 150 and 200 MB with the suballocator and completed at each
 * without it (doc/benchmarks.md, version 10). Returns whether a CUDA memory limit of the environment
 * (STARPU_LIMIT_CUDA_MEM or STARPU_LIMIT_CUDA_<n>_MEM, in MB) is below SMALL_CUDA_LIMIT_MB, where the chunks
 * would matter. */
#define SMALL_CUDA_LIMIT_MB 512
static int small_cuda_limit(void)
{
  char name[64];
  for (int d = -1; d < STARPU_MAXCUDADEVS; d++) {
    if (d < 0)
      snprintf(name, sizeof name, "STARPU_LIMIT_CUDA_MEM");
    else
      snprintf(name, sizeof name, "STARPU_LIMIT_CUDA_%d_MEM", d);
    const char *v = getenv(name);
    if (v && *v && atol(v) >= 0 && atol(v) < SMALL_CUDA_LIMIT_MB)
      return 1;
  }
  return 0;
}

/* Automatic task size. Every CUDA worker of a GPU holds its task's LORs and values in the GPU's memory at once; when
 * a memory limit (STARPU_LIMIT_CUDA_MEM, or a small GPU) cannot hold that for every worker, StarPU's allocator
 * waits forever (an H200 limited to 100 MB hung on 2^20-LOR tasks, 4 workers, 13 MB image). Tasks are therefore
 * cut so that the workers' tasks take at most a quarter of the smallest GPU, at up to BYTES_PER_LOR each
 * (endpoints, and values for up to ~25 TOF bins). */
#define BYTES_PER_LOR 128
static int64_t default_task_lors(void)
{
  if (sproj_rt.ngpus == 0)
    return DEFAULT_TASK_LORS_CPU;
  int64_t lors = DEFAULT_TASK_LORS_GPU;
  unsigned workers = starpu_cuda_worker_get_count() / (unsigned)sproj_rt.ngpus;
  for (int g = 0; g < sproj_rt.ngpus; g++) {
    starpu_ssize_t total = starpu_memory_get_total(sproj_rt.gpu_node[g]);
    if (total <= 0 || workers == 0)
      continue;
    int64_t fit = (int64_t)(total / 4) / ((int64_t)workers * BYTES_PER_LOR);
    while (lors > MIN_PIECE_LORS && lors > fit)
      lors /= 2;
  }
  return lors;
}

void sproj_workers_per_node(unsigned where, unsigned workers_on[STARPU_MAXNODES])
{
  memset(workers_on, 0, STARPU_MAXNODES * sizeof workers_on[0]);
  int nworkers = (int)starpu_worker_get_count();
  for (int w = 0; w < nworkers; w++) {
    enum starpu_worker_archtype type = starpu_worker_get_type(w);
    unsigned node = starpu_worker_get_memory_node(w);
    if (node < STARPU_MAXNODES && ((type == STARPU_CPU_WORKER && (where & STARPU_CPU)) ||
                                   (type == STARPU_CUDA_WORKER && (where & STARPU_CUDA))))
      workers_on[node]++;
  }
}

/* The worker bitmaps of sproj_workers_holding: one per set of GPUs, built once the workers are known, and only
 * under the scheduler starproj picks: a scheduler the caller names (sproj_config.sched, STARPU_SCHED, or a StarPU
 * the caller started) places every task itself, as one would want when comparing schedulers. */
static void make_gpu_sets(void)
{
  int ngpus = sproj_rt.ngpus, nworkers = (int)starpu_worker_get_count();
  if (ngpus < 2 || ngpus > SPROJ_MAX_STICKY_GPUS)
    return;
  unsigned words = (unsigned)(nworkers + 31) / 32, nsets = 1u << ngpus;
  uint32_t *sets = calloc((size_t)nsets * words, sizeof *sets);
  if (!sets)
    return; /* tasks then go wherever the scheduler puts them */
  for (int w = 0; w < nworkers; w++) {
    if (starpu_worker_get_type(w) != STARPU_CUDA_WORKER)
      continue;
    unsigned node = starpu_worker_get_memory_node(w);
    for (int gpu = 0; gpu < ngpus; gpu++)
      if (sproj_rt.gpu_node[gpu] == node)
        for (unsigned set = 0; set < nsets; set++)
          if (set & (1u << gpu))
            sets[set * words + (unsigned)w / 32] |= 1u << (w % 32);
  }
  sproj_rt.gpu_set_workers = sets;
  sproj_rt.words_per_set = words;
}

const uint32_t *sproj_workers_holding(unsigned long long where, const sproj_chunks *ch, int p, unsigned *len, int *worker)
{
  *len = 0;
  /* homes name devices of the kind projections run on; a task of a picked kind (both kinds selected) has none */
  int home = where == sproj_rt.where ? sproj_piece_home(ch, where, p) : -1;
  *worker = home >= 0 ? sproj_device_worker(home) : -1;
  if (home >= 0)
    return NULL;
  if (where != STARPU_CUDA || !sproj_rt.gpu_set_workers)
    return NULL;
  unsigned all = (1u << sproj_rt.ngpus) - 1u, set = __atomic_load_n(&ch->piece_gpus[p], __ATOMIC_RELAXED) & all;
  for (int gpu = 0; gpu < sproj_rt.ngpus && !set; gpu++)
    if (starpu_data_is_on_node(ch->xs_runs[ch->piece_run[p]], sproj_rt.gpu_node[gpu]))
      set |= 1u << gpu;
  if (set == 0 || set == all)
    return NULL;
  *len = sproj_rt.words_per_set;
  return sproj_rt.gpu_set_workers + (size_t)set * sproj_rt.words_per_set;
}

/* Largest image whose principal-axis copies (two images per CUDA worker, submit.c) take at most an eighth of every
 * GPU's memory (or of its STARPU_LIMIT_CUDA_MEM), in voxels; 0 without GPUs. */
static uint64_t layout_max_voxels(void)
{
  unsigned workers_on[STARPU_MAXNODES];
  sproj_workers_per_node(STARPU_CUDA, workers_on);
  uint64_t best = 0;
  int any = 0;
  for (unsigned node = 0; node < STARPU_MAXNODES && node < starpu_memory_nodes_get_count(); node++) {
    if (!workers_on[node])
      continue;
    starpu_ssize_t total = starpu_memory_get_total(node);
    uint64_t fit = total < 0 ? UINT32_MAX : (uint64_t)total / 8 / (workers_on[node] * 2 * sizeof(float));
    best = any && best < fit ? best : fit;
    any = 1;
  }
  return best;
}

static void make_contexts_delete(void);

int sproj_init(const struct sproj_config *cfg)
{
  struct sproj_config c;
  int ret;
  if (sproj_rt.initialized)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "starproj is already initialised");
  sproj_config_init(&c);
  if (cfg)
    c = *cfg;
  if (c.max_queued_tasks < -1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "max_queued_tasks (%d) must be -1 (default), 0 (no limit) or > 0",
                      c.max_queued_tasks);
  if (c.reproducible != 0 && c.reproducible != 1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "reproducible (%d) must be 0 or 1", c.reproducible);
  if (c.merge_calls < -1 || c.merge_calls > 1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "merge_calls (%d) must be -1 (default), 0 or 1", c.merge_calls);
  if (c.image_layouts < -1 || c.image_layouts > 1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "image_layouts (%d) must be -1 (default), 0 or 1", c.image_layouts);
  if (c.ncpu < -1 || c.ncuda < -1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "ncpu (%d) and ncuda (%d) must be -1 (default) or >= 0", c.ncpu, c.ncuda);
  if (c.task_lors < 0 || c.task_lors > UINT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "task_lors %lld must be 0 (automatic) or 1..2^32-1", (long long)c.task_lors);
  if (c.ncpu == 0 && c.ncuda == 0)
    return SPROJ_FAIL(SPROJ_ERR_NO_DEVICE, "ncpu = ncuda = 0 leaves no worker");
  if (c.workers_per_gpu < -1 || c.workers_per_gpu == 0 || c.workers_per_gpu > 64)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "workers_per_gpu %d must be -1 (default) or 1..64", c.workers_per_gpu);
  int pus = count_hw(HWLOC_OBJ_PU);
  if (c.ncpu > STARPU_MAXCPUS || (pus > 0 && c.ncpu > pus))
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "ncpu = %d exceeds the %d hardware threads of this machine", c.ncpu,
                      pus > 0 && pus < STARPU_MAXCPUS ? pus : STARPU_MAXCPUS);
  const char *env_sched = getenv("STARPU_SCHED");
  if (c.sched && (ret = check_sched_name("sproj_init", c.sched, "config")))
    return ret;
  if (env_sched && *env_sched && (ret = check_sched_name("sproj_init", env_sched, "STARPU_SCHED")))
    return ret;

  int owns = 0;
  if (!starpu_is_initialized()) {
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    int gpus = expected_gpus(c.ncuda), per_gpu = c.workers_per_gpu > 0 ? c.workers_per_gpu : DEFAULT_WORKERS_PER_GPU;
    const char *env_per_gpu = getenv("STARPU_NWORKER_PER_CUDA");
    if (c.workers_per_gpu < 0 && env_per_gpu && atoi(env_per_gpu) > 0)
      per_gpu = atoi(env_per_gpu);
    if (c.ncpu >= 0) {
      conf.ncpus = c.ncpu;
    } else if (gpus > 0) {
      /* one core for each CUDA worker thread and one for the submitting thread: on the H200 machine 15 CPU
       * workers beside 4 CUDA workers and the main thread doubled the cost of 2414 small tasks */
      int cores = physical_cores();
      if (cores > 0)
        conf.ncpus = cores - gpus * per_gpu - 1 > 0 ? cores - gpus * per_gpu - 1 : 0;
    }
    if (c.ncuda >= 0)
      conf.ncuda = c.ncuda;
    /* StarPU's own variables (STARPU_SCHED, STARPU_NCPU, ...) keep their precedence over these fields */
    conf.sched_policy_name = c.sched ? c.sched : (gpus > 0 ? "dmda" : "lws");
    /* StarPU reads these two only from the environment, at starpu_init: set them for it, then put back what the
     * caller had */
    char per_gpu_str[16];
    snprintf(per_gpu_str, sizeof per_gpu_str, "%d", per_gpu);
    struct saved_env saved[3] = {{0}};
    env_push(&saved[0], "STARPU_NWORKER_PER_CUDA", per_gpu_str, c.workers_per_gpu > 0);
    env_push(&saved[1], "STARPU_CUDA_PIPELINE", DEFAULT_CUDA_PIPELINE, 0);
    if (small_cuda_limit())
      env_push(&saved[2], "STARPU_SUBALLOCATOR", "0", 0); /* a value the caller set wins */
    ret = starpu_init(&conf);
    env_pop(&saved[2]);
    env_pop(&saved[1]);
    env_pop(&saved[0]);
    if (ret == -ENODEV)
      return SPROJ_FAIL(SPROJ_ERR_NO_DEVICE, "StarPU found no worker to run on");
    if (ret != 0)
      return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_init failed (%d)", ret);
    owns = 1;
    /* Submission blocks while more tasks than this are queued, so memory stays bounded however many small calls
     * arrive (StarPU keeps ~8 KB per queued task); $STARPU_LIMIT_MAX_SUBMITTED_TASKS, read by StarPU, wins. */
    const char *env_limit = getenv("STARPU_LIMIT_MAX_SUBMITTED_TASKS");
    int limit = c.max_queued_tasks < 0 ? DEFAULT_MAX_QUEUED_TASKS : c.max_queued_tasks;
    if (!(env_limit && *env_limit) && limit > 0) {
      starpu_set_limit_max_submitted_tasks(limit);
      starpu_set_limit_min_submitted_tasks(limit / 2);
    }
  }

  memset(&sproj_rt, 0, sizeof sproj_rt);
  sproj_rt.owns_starpu = owns;
  unsigned nworkers = starpu_worker_get_count();
  for (unsigned w = 0; w < nworkers; w++) {
    if (starpu_worker_get_type((int)w) == STARPU_CUDA_WORKER) {
      int devid = starpu_worker_get_devid((int)w);
      if (devid >= 0 && devid < STARPU_MAXCUDADEVS && devid + 1 > sproj_rt.ngpus)
        sproj_rt.ngpus = devid + 1;
      if (devid >= 0 && devid < STARPU_MAXCUDADEVS)
        sproj_rt.gpu_node[devid] = starpu_worker_get_memory_node(w);
    } else if (starpu_worker_get_type((int)w) == STARPU_CPU_WORKER) {
      sproj_rt.ncpu++;
    }
  }
  /* a GPU the library has no kernel image for would fail every projection task: refuse it now, by name */
  if ((ret = sproj_check_cuda_images())) {
    if (owns)
      starpu_shutdown();
    memset(&sproj_rt, 0, sizeof sproj_rt);
    return ret;
  }
  /* SPROJ_TASK_LORS=N (1..2^32-1) in place of the automatic size, to compare task sizes without a program change */
  const char *env_task = getenv("SPROJ_TASK_LORS");
  long long task_env = env_task ? atoll(env_task) : 0;
  sproj_rt.task_lors = c.task_lors                            ? c.task_lors
                       : task_env > 0 && task_env <= UINT32_MAX ? task_env
                                                              : default_task_lors();
  /* a StarPU the caller started runs the scheduler the caller chose */
  int sched_chosen = !owns || c.sched != NULL || (env_sched && *env_sched);
  make_contexts(sched_chosen);
  /* Projections go to the GPUs when there are any: measured on an H200 with 15 cores, the cores would add under 1%
   * of throughput while model-based scheduling over every worker costs ~25 us per task (see doc/benchmarks.md). */
  sproj_rt.where = sproj_rt.ngpus > 0 ? STARPU_CUDA : STARPU_CPU;
  sproj_rt.ctx = sproj_rt.ngpus > 0 ? sproj_rt.ctx_gpu : sproj_rt.ctx_cpu;
  memset(worker_stats, 0, sizeof worker_stats);
  sproj_rt.reproducible = c.reproducible != 0;
  sproj_rt.merge_calls = c.merge_calls != 0;
  sproj_rt.image_layouts = c.image_layouts != 0;
  /* Tasks cut as for this many GPUs: scripts/calibrate-models.sh records on one GPU the task sizes a simulation of
   * several will use (doc/simulation.md); not meant for anything else. */
  const char *split = getenv("SPROJ_SPLIT_GPUS");
  sproj_rt.split_gpus = split && atoi(split) > 0 && atoi(split) <= 64 ? atoi(split) : 0;
  sproj_rt.layout_max_voxels = layout_max_voxels();
  if (!sched_chosen)
    make_gpu_sets();
  if (sproj_devices_make() != SPROJ_OK) {
    make_contexts_delete();
    if (owns)
      starpu_shutdown();
    free(sproj_rt.gpu_set_workers);
    memset(&sproj_rt, 0, sizeof sproj_rt);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  sproj_rt.initialized = 1;

  if (c.verbose)
    fprintf(stderr, "starproj: %d CPU workers, %d GPUs (%d CUDA workers), scheduler %s, %d physical cores, tasks of "
            "<= %lld LORs\n", sproj_rt.ncpu, sproj_rt.ngpus, (int)starpu_cuda_worker_get_count(), sproj_scheduler_name(),
            physical_cores(), (long long)sproj_rt.task_lors);
  return SPROJ_OK;
}

static void make_contexts_delete(void)
{
  if (sproj_rt.ctx_cpu)
    starpu_sched_ctx_delete(sproj_rt.ctx_cpu);
  if (sproj_rt.ctx_gpu)
    starpu_sched_ctx_delete(sproj_rt.ctx_gpu);
}

/* Waits for the tasks of starproj's contexts and of every other context. */
static void wait_everything(void)
{
  if (sproj_rt.ctx_cpu)
    starpu_task_wait_for_all_in_ctx(sproj_rt.ctx_cpu);
  if (sproj_rt.ctx_gpu)
    starpu_task_wait_for_all_in_ctx(sproj_rt.ctx_gpu);
  starpu_task_wait_for_all();
}

void sproj_count_object(int delta)
{
  __atomic_add_fetch(&sproj_rt.live_objects, delta, __ATOMIC_RELAXED);
}

int sproj_live_objects(void)
{
  return __atomic_load_n(&sproj_rt.live_objects, __ATOMIC_RELAXED);
}

int sproj_is_initialized(void)
{
  return sproj_rt.initialized != 0;
}

int sproj_shutdown(void)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  int live = __atomic_load_n(&sproj_rt.live_objects, __ATOMIC_RELAXED);
  if (live > 0)
    return SPROJ_FAIL(SPROJ_ERR_BUSY, "%d images, LOR sets or projection vectors are still registered", live);
  /* everything held back was submitted above: once every task has ended (none can wake the helper thread then),
   * the submission layer stops */
  wait_everything();
  int (*stop)(void) = __atomic_load_n(&held_stop, __ATOMIC_ACQUIRE);
  if (stop && (ret = stop()))
    return ret;
  sproj_register_held(NULL, NULL);
  make_contexts_delete();
  if (sproj_rt.owns_starpu)
    starpu_shutdown();
  free(sproj_rt.gpu_set_workers);
  sproj_devices_free();
  memset(&sproj_rt, 0, sizeof sproj_rt);
  return SPROJ_OK;
}

const char *sproj_scheduler_name(void)
{
  if (!sproj_rt.initialized)
    return NULL;
  struct starpu_sched_policy *policy = starpu_sched_ctx_get_sched_policy(sproj_rt.ctx);
  return policy && policy->policy_name ? policy->policy_name : "unknown";
}

int sproj_num_cpu_workers(void)
{
  return sproj_rt.initialized ? sproj_rt.ncpu : 0;
}

int sproj_num_gpus(void)
{
  return sproj_rt.initialized ? sproj_rt.ngpus : 0;
}

int sproj_gpu_nodes(const char *func, int gpu, unsigned nodes[STARPU_MAXCUDADEVS])
{
  int ret = sproj_check_init_flush(func);
  if (ret)
    return ret;
  if (gpu == SPROJ_ALL_GPUS) {
    for (int g = 0; g < sproj_rt.ngpus; g++)
      nodes[g] = sproj_rt.gpu_node[g];
    return sproj_rt.ngpus;
  }
  if (gpu < 0 || gpu >= sproj_rt.ngpus)
    return sproj_fail(SPROJ_ERR_NO_DEVICE, func, "GPU %d does not exist (StarPU drives %d GPUs)", gpu, sproj_rt.ngpus);
  nodes[0] = sproj_rt.gpu_node[gpu];
  return 1;
}

int sproj_set_task_lors(int64_t task_lors)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (task_lors < 0 || task_lors > UINT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "task_lors %lld must be 0 (automatic) or 1..2^32-1", (long long)task_lors);
  sproj_rt.task_lors = task_lors ? task_lors : default_task_lors();
  return SPROJ_OK;
}

int64_t sproj_get_task_lors(void)
{
  return sproj_rt.initialized ? sproj_rt.task_lors : 0;
}

/* Sets a 0/1 switch of the submission layer, after submitting what it holds back under the old setting. */
static int set_switch(const char *func, int *flag, int on)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (on != 0 && on != 1)
    return sproj_fail(SPROJ_ERR_INVALID, func, "on (%d) must be 0 or 1", on);
  if ((ret = sproj_flush_held()))
    return ret;
  __atomic_store_n(flag, on, __ATOMIC_RELAXED);
  return SPROJ_OK;
}

int sproj_set_image_layouts(int on)
{
  return set_switch(__func__, &sproj_rt.image_layouts, on);
}

int sproj_set_merge_calls(int on)
{
  return set_switch(__func__, &sproj_rt.merge_calls, on);
}

/* Workers a single request should be spread over: every GPU, or every CPU core when there is none; or the devices
 * that own its chunks (spread > 0). */
static int64_t split_target(int spread)
{
  if (spread > 0)
    return spread;
  if (sproj_rt.ngpus > 0 && (sproj_rt.where & STARPU_CUDA))
    return sproj_rt.split_gpus > 0 ? sproj_rt.split_gpus : sproj_rt.ngpus;
  return sproj_rt.ncpu > 0 ? 2 * (int64_t)sproj_rt.ncpu : 1;
}

int64_t sproj_pieces_for_spread(int64_t n, int spread)
{
  int64_t by_size = (n + sproj_rt.task_lors - 1) / sproj_rt.task_lors;
  int64_t by_workers = (n + MIN_PIECE_LORS - 1) / MIN_PIECE_LORS;
  if (by_workers > split_target(spread))
    by_workers = split_target(spread);
  int64_t pieces = by_size > by_workers ? by_size : by_workers;
  return pieces > 0 ? pieces : 1;
}

int64_t sproj_pieces_for(int64_t n)
{
  return sproj_pieces_for_spread(n, 0);
}

int64_t sproj_task_target_spread(int64_t total, int spread)
{
  int64_t target = total / split_target(spread);
  if (target < MIN_PIECE_LORS)
    target = MIN_PIECE_LORS;
  if (target > sproj_rt.task_lors)
    target = sproj_rt.task_lors;
  return target;
}

int64_t sproj_task_target(int64_t total)
{
  return sproj_task_target_spread(total, 0);
}

int sproj_gpu_memory_below(size_t bytes)
{
  int nworkers = (int)starpu_worker_get_count();
  for (int w = 0; w < nworkers; w++) {
    if (starpu_worker_get_type(w) != STARPU_CUDA_WORKER)
      continue;
    starpu_ssize_t total = starpu_memory_get_total(starpu_worker_get_memory_node(w));
    if (total >= 0 && (size_t)total < bytes)
      return 1;
  }
  return 0;
}

int sproj_set_devices(unsigned device_mask)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (device_mask == 0 || (device_mask & ~(unsigned)SPROJ_DEVICE_ANY))
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "device mask 0x%x must combine SPROJ_DEVICE_CPU and SPROJ_DEVICE_CUDA", device_mask);
  unsigned where = 0;
  if ((device_mask & SPROJ_DEVICE_CPU) && sproj_rt.ncpu > 0)
    where |= STARPU_CPU;
  if ((device_mask & SPROJ_DEVICE_CUDA) && sproj_rt.ngpus > 0)
    where |= STARPU_CUDA;
  if (!where)
    return SPROJ_FAIL(SPROJ_ERR_NO_DEVICE, "no worker of the kinds in mask 0x%x (%d CPU workers, %d GPUs)", device_mask,
                      sproj_rt.ncpu, sproj_rt.ngpus);
  sproj_rt.where = where;
  sproj_rt.ctx = where == STARPU_CUDA ? sproj_rt.ctx_gpu : where == STARPU_CPU ? sproj_rt.ctx_cpu : 0;
  return SPROJ_OK;
}

unsigned sproj_get_devices(void)
{
  if (!sproj_rt.initialized)
    return 0;
  return ((sproj_rt.where & STARPU_CPU) ? SPROJ_DEVICE_CPU : 0u) | ((sproj_rt.where & STARPU_CUDA) ? SPROJ_DEVICE_CUDA : 0u);
}

int sproj_wait_all(void)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  wait_everything();
  return SPROJ_OK;
}

int sproj_pause(void)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret && !(ret == SPROJ_ERR_BUSY && sproj_rt.initialized))
    return ret;
  if (!ret)
    wait_everything(); /* nothing may be left to run once the workers sleep */
  if (__atomic_fetch_add(&sproj_rt.paused, 1, __ATOMIC_ACQ_REL) == 0)
    starpu_pause();
  return SPROJ_OK;
}

int sproj_resume(void)
{
  if (!sproj_rt.initialized)
    return SPROJ_FAIL(SPROJ_ERR_NOT_INIT, "starproj is not initialised (call sproj_init first)");
  int depth = __atomic_load_n(&sproj_rt.paused, __ATOMIC_ACQUIRE);
  do {
    if (depth == 0)
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "the workers are not paused");
  } while (!__atomic_compare_exchange_n(&sproj_rt.paused, &depth, depth - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  if (depth == 1)
    starpu_resume();
  return SPROJ_OK;
}

int sproj_flush(void)
{
  return sproj_check_init_flush(__func__);
}

/* ---- statistics ---- */
void sproj_stats_count(int64_t lors, int layout)
{
  int w = starpu_worker_get_id();
  if (w < 0 || w >= STARPU_NMAXWORKERS)
    return;
  __atomic_add_fetch(&worker_stats[w].tasks, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&worker_stats[w].lors, lors, __ATOMIC_RELAXED);
  if (layout)
    __atomic_add_fetch(&worker_stats[w].layout_tasks, 1, __ATOMIC_RELAXED);
}

int sproj_num_workers(void)
{
  return sproj_rt.initialized ? (int)starpu_worker_get_count() : 0;
}

int sproj_worker_stats(int worker, struct sproj_worker_stats *stats)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!stats)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "stats is NULL");
  if (worker < 0 || worker >= (int)starpu_worker_get_count())
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "worker %d outside 0..%u", worker, starpu_worker_get_count() - 1);
  memset(stats, 0, sizeof *stats);
  starpu_worker_get_name(worker, stats->name, sizeof stats->name);
  stats->is_gpu = starpu_worker_get_type(worker) == STARPU_CUDA_WORKER;
  stats->gpu = stats->is_gpu ? starpu_worker_get_devid(worker) : -1;
  stats->tasks = __atomic_load_n(&worker_stats[worker].tasks, __ATOMIC_RELAXED);
  stats->lors = __atomic_load_n(&worker_stats[worker].lors, __ATOMIC_RELAXED);
  stats->layout_tasks = __atomic_load_n(&worker_stats[worker].layout_tasks, __ATOMIC_RELAXED);
  return SPROJ_OK;
}

int sproj_stats_reset(void)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  for (int w = 0; w < STARPU_NMAXWORKERS; w++) {
    __atomic_store_n(&worker_stats[w].tasks, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&worker_stats[w].lors, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&worker_stats[w].layout_tasks, 0, __ATOMIC_RELAXED);
  }
  return SPROJ_OK;
}

/* ---- host memory ---- */
void sproj_free(void *ptr)
{
  free(ptr);
}

int sproj_malloc_pinned(void **ptr, size_t bytes)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!ptr)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "ptr is NULL");
  if (bytes == 0)
    return SPROJ_FAIL(SPROJ_ERR_EMPTY, "bytes is 0");
  void *p = NULL;
#ifdef SPROJ_USE_CUDA
  /* StarPU's pinned allocation aborts the process when CUDA refuses: ask CUDA ourselves and report it */
  if (sproj_rt.ngpus > 0) {
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess || !p) {
      (void)cudaGetLastError();
      return SPROJ_FAIL(SPROJ_ERR_NOMEM, "could not allocate %zu bytes of pinned memory", bytes);
    }
    *ptr = p;
    return SPROJ_OK;
  }
#endif
  if (starpu_malloc(&p, bytes) != 0 || !p)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "could not allocate %zu bytes", bytes);
  *ptr = p;
  return SPROJ_OK;
}

int sproj_free_pinned(void *ptr, size_t bytes)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!ptr)
    return SPROJ_OK;
#ifdef SPROJ_USE_CUDA
  if (sproj_rt.ngpus > 0) {
    if (cudaFreeHost(ptr) != cudaSuccess) {
      (void)cudaGetLastError();
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "ptr was not allocated by sproj_malloc_pinned");
    }
    return SPROJ_OK;
  }
#endif
  if (starpu_free_noflag(ptr, bytes) != 0)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_free_noflag failed");
  return SPROJ_OK;
}

/* Pins (pin = 1) or unpins a caller's host range. */
static int pin_range(const char *func, void *ptr, size_t bytes, int pin)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!ptr)
    return sproj_fail(SPROJ_ERR_NULL, func, "ptr is NULL");
  if (bytes == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "bytes is 0");
  if ((pin ? starpu_memory_pin(ptr, bytes) : starpu_memory_unpin(ptr, bytes)) != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "StarPU could not %spin the range", pin ? "" : "un");
  return SPROJ_OK;
}

int sproj_pin(void *ptr, size_t bytes)
{
  return pin_range(__func__, ptr, bytes, 1);
}

int sproj_unpin(void *ptr, size_t bytes)
{
  return pin_range(__func__, ptr, bytes, 0);
}
