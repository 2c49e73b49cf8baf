/* SPDX-License-Identifier: Apache-2.0 */
/* init.c: starting and stopping starproj over StarPU: the configuration, the scheduler and its contexts, the
 * workers per GPU, the first state of the runtime (runtime.c) and its devices (devices.c). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SPROJ_USE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <hwloc.h>
#include "internal.h"

/* CUDA workers (streams) per GPU: small chunks leave most of the GPU idle unless several kernels run at once */
#define DEFAULT_WORKERS_PER_GPU 4
/* tasks a CUDA worker queues on its stream ahead: hides the per-task latency of small chunks (H200: 2.6x -> 1.8x
 * per LOR for 2414 segment-viewgram calls, doc/benchmarks.md) */
#define DEFAULT_CUDA_PIPELINE "32"
/* queued tasks above which submission waits (see sproj_config.max_queued_tasks) */
#define DEFAULT_MAX_QUEUED_TASKS 10000
/* the most CUDA workers per GPU one may ask for, and the most GPUs $SPROJ_SPLIT_GPUS may cut tasks for */
#define MAX_WORKERS_PER_GPU 64
#define MAX_SPLIT_GPUS 64

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
  if (c.workers_per_gpu < -1 || c.workers_per_gpu == 0 || c.workers_per_gpu > MAX_WORKERS_PER_GPU)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "workers_per_gpu %d must be -1 (default) or 1..%d", c.workers_per_gpu,
                      MAX_WORKERS_PER_GPU);
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
                                                              : sproj_default_task_lors();
  /* a StarPU the caller started runs the scheduler the caller chose */
  int sched_chosen = !owns || c.sched != NULL || (env_sched && *env_sched);
  make_contexts(sched_chosen);
  /* Projections go to the GPUs when there are any: measured on an H200 with 15 cores, the cores would add under 1%
   * of throughput while model-based scheduling over every worker costs ~25 us per task (see doc/benchmarks.md). */
  sproj_rt.where = sproj_rt.ngpus > 0 ? STARPU_CUDA : STARPU_CPU;
  sproj_rt.ctx = sproj_rt.ngpus > 0 ? sproj_rt.ctx_gpu : sproj_rt.ctx_cpu;
  sproj_stats_clear();
  sproj_rt.reproducible = c.reproducible != 0;
  sproj_rt.merge_calls = c.merge_calls != 0;
  sproj_rt.image_layouts = c.image_layouts != 0;
  /* Tasks cut as for this many GPUs: scripts/calibrate-models.sh records on one GPU the task sizes a simulation of
   * several will use (doc/simulation.md); not meant for anything else. */
  const char *split = getenv("SPROJ_SPLIT_GPUS");
  sproj_rt.split_gpus = split && atoi(split) > 0 && atoi(split) <= MAX_SPLIT_GPUS ? atoi(split) : 0;
  sproj_rt.layout_max_voxels = layout_max_voxels();
  if (!sched_chosen)
    sproj_gpu_sets_make();
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
  sproj_wait_everything();
  if ((ret = sproj_stop_held()))
    return ret;
  make_contexts_delete();
  if (sproj_rt.owns_starpu)
    starpu_shutdown();
  free(sproj_rt.gpu_set_workers);
  sproj_devices_free();
  memset(&sproj_rt, 0, sizeof sproj_rt);
  return SPROJ_OK;
}
