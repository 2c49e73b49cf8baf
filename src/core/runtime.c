/* SPDX-License-Identifier: Apache-2.0 */
/* runtime.c: the running runtime: its state (sproj_rt) and the calls that read or change it between sproj_init and
 * sproj_shutdown (devices, switches, task granularity, waits and pauses), per-worker statistics, GPU memory in use
 * and host memory. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#ifdef SPROJ_USE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "internal.h"

struct sproj_runtime sproj_rt;

/* per-worker counters; each worker only adds to its own slot */
static struct {
  int64_t tasks, lors;
  int64_t layout_tasks;
} worker_stats[STARPU_NMAXWORKERS];

#define DEFAULT_TASK_LORS_GPU ((int64_t)1 << 20)
#define DEFAULT_TASK_LORS_CPU ((int64_t)1 << 15)
/* below this many LORs a piece is not worth a task of its own */
#define MIN_PIECE_LORS 4096

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

/* sproj_shutdown: stops the submission layer's held work (its helper thread) and forgets it. */
int sproj_stop_held(void)
{
  int (*stop)(void) = __atomic_load_n(&held_stop, __ATOMIC_ACQUIRE);
  int ret = stop ? stop() : SPROJ_OK;
  if (!ret)
    sproj_register_held(NULL, NULL);
  return ret;
}

/* Automatic task size. Every CUDA worker of a GPU holds its task's LORs and values in the GPU's memory at once; when
 * a memory limit (STARPU_LIMIT_CUDA_MEM, or a small GPU) cannot hold that for every worker, StarPU's allocator
 * waits forever (an H200 limited to 100 MB hung on 2^20-LOR tasks, 4 workers, 13 MB image). Tasks are therefore
 * cut so that the workers' tasks take at most a quarter of the smallest GPU, at up to BYTES_PER_LOR each
 * (endpoints, and values for up to ~25 TOF bins). */
#define BYTES_PER_LOR 128
int64_t sproj_default_task_lors(void)
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
/* Waits for the tasks of starproj's contexts and of every other context. */
void sproj_wait_everything(void)
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
  sproj_rt.task_lors = task_lors ? task_lors : sproj_default_task_lors();
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
  sproj_wait_everything();
  return SPROJ_OK;
}

/* StarPU counts nested pauses in a plain int, which starpu_pause increments without a lock: every pause and resume
 * starproj makes goes through this lock, so that calls from several threads (sproj_pause, the ordering calls of
 * other threads) keep the count exact. */
static pthread_mutex_t starpu_pause_lock = PTHREAD_MUTEX_INITIALIZER;

static void pause_starpu(void)
{
  pthread_mutex_lock(&starpu_pause_lock);
  starpu_pause();
  pthread_mutex_unlock(&starpu_pause_lock);
}

static void resume_starpu(void)
{
  pthread_mutex_lock(&starpu_pause_lock);
  starpu_resume();
  pthread_mutex_unlock(&starpu_pause_lock);
}

int sproj_pause(void)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret && !(ret == SPROJ_ERR_BUSY && sproj_rt.initialized))
    return ret;
  if (!ret)
    sproj_wait_everything(); /* nothing may be left to run once the workers sleep */
  if (__atomic_fetch_add(&sproj_rt.paused, 1, __ATOMIC_ACQ_REL) == 0)
    pause_starpu();
  return SPROJ_OK;
}

int sproj_host_work_begin(void)
{
  if (!__atomic_load_n(&sproj_rt.initialized, __ATOMIC_ACQUIRE))
    return 0;
  pause_starpu(); /* nested: sproj_pause's and other threads' host work may overlap this one */
  return 1;
}

void sproj_host_work_end(int paused)
{
  if (paused)
    resume_starpu();
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
    resume_starpu();
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

void sproj_stats_clear(void)
{
  memset(worker_stats, 0, sizeof worker_stats);
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

int sproj_gpu_memory(int gpu, int64_t *used_bytes, int64_t *total_bytes)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!used_bytes)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "used_bytes is NULL");
  if (gpu < 0 || gpu >= sproj_rt.ngpus)
    return SPROJ_FAIL(SPROJ_ERR_NO_DEVICE, "GPU %d does not exist (StarPU drives %d GPUs)", gpu, sproj_rt.ngpus);
  unsigned node = sproj_rt.gpu_node[gpu];
  *used_bytes = (int64_t)starpu_memory_get_used(node);
  if (total_bytes)
    *total_bytes = (int64_t)starpu_memory_get_total(node);
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
