/* SPDX-License-Identifier: Apache-2.0 */
/* devices.c: the devices that own work (a GPU with its CUDA workers, or a group of CPU workers), the homes of chunks
 * on them, and the workers a task on a piece may run on (its home device's, or the GPUs that hold its LORs). */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static struct sproj_devices *devices_new(unsigned long long where, int n, unsigned words)
{
  struct sproj_devices *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->bitmap = calloc((size_t)n * words, sizeof *d->bitmap);
  if (!d->bitmap) {
    free(d);
    return NULL;
  }
  d->n = n;
  d->where = where;
  d->words = words;
  for (int i = 0; i < n; i++)
    d->first_worker[i] = -1;
  return d;
}

static void devices_add(struct sproj_devices *d, int dev, int worker)
{
  d->bitmap[(size_t)dev * d->words + (unsigned)worker / 32] |= 1u << (worker % 32);
  if (d->nworkers[dev]++ == 0) {
    d->first_worker[dev] = worker;
    d->node[dev] = starpu_worker_get_memory_node(worker);
  }
}

static void devices_drop(struct sproj_devices **d)
{
  if (*d)
    free((*d)->bitmap);
  free(*d);
  *d = NULL;
}

/* Devices asked for by $SPROJ_DEVICES (1 .. SPROJ_MAX_DEVICES), else dflt. */
static int devices_asked(int dflt)
{
  const char *env = getenv("SPROJ_DEVICES");
  int n = env && *env ? atoi(env) : dflt;
  return n >= 1 && n <= SPROJ_MAX_DEVICES ? n : dflt;
}

/* n devices over the workers of one kind (ids[0 .. count-1], grouped by unit: unit[i] is worker ids[i]'s GPU, or
 * its own index for CPU workers). With as many units as devices or more, device d is unit d (units beyond n own no
 * work); with fewer, device d shares unit d % units with the others of that unit: what several devices compute (their
 * shares and their sums) then runs on a machine with fewer units, as stand-ins, and a GPU records the task sizes of
 * n GPUs. */
static struct sproj_devices *devices_over(unsigned long long where, int n, int units, const int *ids,
                                          const int *unit, int count, unsigned words)
{
  struct sproj_devices *d = devices_new(where, n, words);
  if (!d)
    return NULL;
  for (int dev = 0; dev < n; dev++)
    for (int i = 0; i < count; i++)
      if (unit[i] == dev % units)
        devices_add(d, dev, ids[i]);
  return d;
}

int sproj_devices_make(void)
{
  int nworkers = (int)starpu_worker_get_count(), ncpu = 0, ncuda = 0;
  unsigned words = (unsigned)(nworkers + 31) / 32;
  int *ids = malloc(2 * (size_t)(nworkers > 0 ? nworkers : 1) * sizeof *ids), *unit = ids + (nworkers > 0 ? nworkers : 1);
  if (!ids)
    return SPROJ_ERR_NOMEM;
  /* one device per GPU by default; more GPUs than devices can be named leave ownership off on GPUs (StarPU drives at
   * most STARPU_MAXCUDADEVS, 8 in the builds starproj uses) */
  for (int w = 0; w < nworkers; w++)
    if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER && starpu_worker_get_devid(w) >= 0) {
      ids[ncuda] = w;
      unit[ncuda++] = starpu_worker_get_devid(w);
    }
  int ret = SPROJ_OK;
  if (sproj_rt.ngpus > 0 && sproj_rt.ngpus <= SPROJ_MAX_DEVICES) {
    int n = devices_asked(sproj_rt.ngpus);
    if (!(sproj_rt.gpu_devices = devices_over(STARPU_CUDA, n, sproj_rt.ngpus, ids, unit, ncuda, words)))
      ret = SPROJ_ERR_NOMEM;
    /* a GPU number StarPU skipped (STARPU_WORKERS_CUDAID) has no worker: no ownership rather than lost tasks */
    for (int dev = 0; !ret && sproj_rt.gpu_devices && dev < sproj_rt.gpu_devices->n; dev++)
      if (sproj_rt.gpu_devices->nworkers[dev] == 0)
        devices_drop(&sproj_rt.gpu_devices);
  }
  for (int w = 0; w < nworkers; w++)
    if (starpu_worker_get_type(w) == STARPU_CPU_WORKER) {
      ids[ncpu] = w;
      unit[ncpu] = ncpu;
      ncpu++;
    }
  if (!ret && ncpu > 0) {
    /* one device of every CPU worker by default; asked for n of them, consecutive workers make each */
    int n = devices_asked(1);
    if (n <= ncpu)
      for (int i = 0; i < ncpu; i++)
        unit[i] = i * n / ncpu;
    if (!(sproj_rt.cpu_devices = devices_over(STARPU_CPU, n, n <= ncpu ? n : ncpu, ids, unit, ncpu, words)))
      ret = SPROJ_ERR_NOMEM;
  }
  free(ids);
  if (ret)
    sproj_devices_free();
  return ret;
}

void sproj_devices_free(void)
{
  devices_drop(&sproj_rt.gpu_devices);
  devices_drop(&sproj_rt.cpu_devices);
}

const struct sproj_devices *sproj_devices_for(unsigned long long where)
{
  if (where == STARPU_CUDA)
    return sproj_rt.gpu_devices;
  if (where == STARPU_CPU)
    return sproj_rt.cpu_devices;
  return NULL;
}

int sproj_device_count(void)
{
  const struct sproj_devices *d = sproj_devices_for(sproj_rt.where);
  return d ? d->n : 0;
}

int sproj_num_devices(void)
{
  return sproj_rt.initialized ? sproj_device_count() : 0;
}

const uint32_t *sproj_device_workers(int dev, unsigned *len)
{
  const struct sproj_devices *d = sproj_devices_for(sproj_rt.where);
  *len = 0;
  if (!d || dev < 0 || dev >= d->n)
    return NULL;
  *len = d->words;
  return d->bitmap + (size_t)dev * d->words;
}

int sproj_device_worker(int dev)
{
  const struct sproj_devices *d = sproj_devices_for(sproj_rt.where);
  if (!d || dev < 0 || dev >= d->n)
    return -1;
  /* the k-th worker of its bitmap, k taking turns: tasks of a device with several workers (a GPU's CUDA workers)
   * spread over them without asking the scheduler */
  unsigned k = __atomic_fetch_add((unsigned *)&d->turn[dev], 1u, __ATOMIC_RELAXED) % (unsigned)d->nworkers[dev];
  const uint32_t *bits = d->bitmap + (size_t)dev * d->words;
  for (unsigned w = 0; w < d->words * 32; w++)
    if (bits[w / 32] & (1u << (w % 32)) && k-- == 0)
      return (int)w;
  return d->first_worker[dev];
}

unsigned sproj_device_node(int dev)
{
  const struct sproj_devices *d = sproj_devices_for(sproj_rt.where);
  return d && dev >= 0 && dev < d->n ? d->node[dev] : STARPU_MAIN_RAM;
}

int sproj_piece_home(const sproj_chunks *ch, unsigned long long where, int p)
{
  const struct sproj_devices *d = sproj_devices_for(where);
  int home = __atomic_load_n(&ch->piece_home[p], __ATOMIC_RELAXED);
  return d && home >= 0 && home < d->n ? home : -1;
}


/* The worker bitmaps of sproj_workers_holding: one per set of GPUs, built once the workers are known, and only
 * under the scheduler starproj picks: a scheduler the caller names (sproj_config.sched, STARPU_SCHED, or a StarPU
 * the caller started) places every task itself, as one would want when comparing schedulers. */
void sproj_gpu_sets_make(void)
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

/* Adds the homes of pieces first .. end-1 to *homes; 0 when one has none. */
static int add_homes(const sproj_chunks *ch, unsigned long long where, int first, int end, unsigned *homes)
{
  for (int p = first; p < end; p++) {
    int home = sproj_piece_home(ch, where, p);
    if (home < 0)
      return 0;
    *homes |= 1u << home;
  }
  return 1;
}

int sproj_request_spread(const sproj_chunks *ch, unsigned long long where, const int *list, int num)
{
  unsigned homes = 0;
  for (int i = 0; i < num; i++)
    if (!add_homes(ch, where, ch->piece_start[list[i]], ch->piece_start[list[i] + 1], &homes))
      return 0; /* a piece without a home: the request is spread over every worker */
  return __builtin_popcount(homes);
}

int sproj_chunking_spread(const sproj_chunks *ch, unsigned long long where)
{
  unsigned homes = 0;
  return add_homes(ch, where, 0, (int)ch->npieces, &homes) ? __builtin_popcount(homes) : 0;
}
