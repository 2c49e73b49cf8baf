/* SPDX-License-Identifier: Apache-2.0 */
/* merge.c: requests held back before they become tasks: calls merged while the workers are busy (the count of
 * queued projection tasks, submit.c's, decides when) and this thread's batch (sproj_batch_begin / _end). */
#include "config.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "submit.h"

/* ---- chunks held back: the pending lists of merged calls and of this thread's batch ---- */
/* Chunks of one kind of request (projector, direction, image, vector, chunking and TOF parameters), in call order. */
struct held {
  struct sproj_request rq;
  sproj_image *img;
  sproj_proj *proj;
  const sproj_chunks *chunks;
  int *list;
  int num, cap;
};

static int held_same(const struct held *h, const struct sproj_request *rq, const sproj_image *img, const sproj_proj *proj,
                     const sproj_chunks *chunks)
{
  return h->rq.back == rq->back && h->rq.kind == rq->kind && h->rq.tof == rq->tof && h->img == img &&
         h->proj == proj && h->chunks == chunks;
}

/* Makes h hold the kind of request given (keeping its list buffer, emptied). */
static void held_set(struct held *h, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                     const sproj_chunks *chunks)
{
  h->rq = *rq;
  h->img = img;
  h->proj = proj;
  h->chunks = chunks;
  h->num = 0;
}

static int held_append(const char *func, struct held *h, const int *list, int num)
{
  if (h->num + num > h->cap) {
    int cap = 2 * (h->num + num);
    int *l = realloc(h->list, (size_t)cap * sizeof *l);
    if (!l)
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    h->list = l;
    h->cap = cap;
  }
  memcpy(h->list + h->num, list, (size_t)num * sizeof *list);
  h->num += num;
  return SPROJ_OK;
}

/* Submits what h holds and empties it. */
static int held_submit(const char *func, struct held *h)
{
  if (h->num == 0)
    return SPROJ_OK;
  int ret = sproj_submit_tasks(func, &h->rq, h->img, h->proj, h->chunks, h->list, h->num);
  h->num = 0;
  return ret;
}

static void held_free(struct held *h)
{
  free(h->list);
  *h = (struct held){0};
}

/* ---- merging: calls that arrive while the workers are still busy with earlier ones ----
 * A framework that projects one viewgram per call makes thousands of small tasks, and StarPU's cost per task (about
 * 8 us of a CUDA worker's host thread, and as much again to submit it) then outweighs the kernels. A call whose
 * request matches one made just before (same projector, direction, image, vector, chunking, TOF parameters) is
 * therefore not turned into tasks while at least two projection tasks per worker are still waiting for a worker:
 * its chunks join a pending list, which becomes tasks of the usual size as soon as the queue runs low (a helper
 * thread, woken by the workers as they take tasks), when the list is large enough, when a call touches the same
 * data in another way, or at any call that waits on, moves or frees data (sproj_flush_pending). The first call of
 * a kind is always submitted at once, after all its checks, so a merged call cannot fail in a way its first
 * could not: what StarPU or the allocator refuse at the deferred submission is reported by the next call that
 * waits (sproj_wait_all, the syncs). */
#define MERGE_SLOTS 8
/* a pending list is submitted once it holds this many chunks */
#define MERGE_MAX_CHUNKS 4096

struct merge_slot {
  int used;
  uint64_t last_use;
  struct held h;
  int64_t lors;   /* LORs of the chunks held */
};

static struct {
  pthread_mutex_t lock;
  struct merge_slot slot[MERGE_SLOTS];
  uint64_t clock;
  int error;              /* a deferred submission's status and message, for the next sync */
  char message[256];
  atomic_int threshold;   /* merge while waiting >= threshold; 0: merging off */
  atomic_int pending;     /* some slot holds chunks */
  sem_t wake;
  pthread_t flusher;
  int running;            /* the helper thread runs */
  int started;            /* registered with the runtime since sproj_init (merge_stop clears it) */
} merge = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Runs on the worker that takes a projection task (through sproj_on_task_taken), with the count of those left
 * waiting: wakes the helper thread when merged calls wait and the queue runs low. A worker never submits tasks
 * itself, since a submission may have to wait for tasks to finish. */
static void task_taken(int left)
{
  if (atomic_load(&merge.pending) && left < atomic_load(&merge.threshold))
    sem_post(&merge.wake);
}

/* Whether two requests touch the same data with a write on one side: then their order matters. */
static int conflicts(const struct merge_slot *m, int back, const sproj_image *img, const sproj_proj *proj)
{
  if (m->h.proj == proj)
    return 1; /* forward writes the vector, back projection reads it; two forwards write it */
  return m->h.img == img && (m->h.rq.back || back);
}

/* Submits a slot's pending chunks (merge.lock held). */
static int slot_flush(struct merge_slot *m)
{
  int ret = held_submit("sproj_flush", &m->h);
  m->lors = 0;
  if (ret && !merge.error) {
    merge.error = ret;
    snprintf(merge.message, sizeof merge.message, "%s", sproj_last_error());
  }
  return ret;
}

static void pending_update(void)
{
  int any = 0;
  for (int i = 0; i < MERGE_SLOTS; i++)
    any |= merge.slot[i].used && merge.slot[i].h.num > 0;
  atomic_store(&merge.pending, any);
}

/* Submits every pending list and forgets which calls came before: after a sync the next call is submitted at once
 * (every object is freed only after a sync, so no slot outlives what it names). */
static int merge_flush_all(void)
{
  pthread_mutex_lock(&merge.lock);
  for (int i = 0; i < MERGE_SLOTS; i++)
    if (merge.slot[i].used) {
      slot_flush(&merge.slot[i]);
      merge.slot[i].used = 0;
    }
  atomic_store(&merge.pending, 0);
  int ret = merge.error;
  merge.error = 0;
  if (ret)
    sproj_fail(ret, "sproj_flush", "a merged call could not be submitted: %s", merge.message);
  pthread_mutex_unlock(&merge.lock);
  return ret;
}

static void *flusher_main(void *unused)
{
  (void)unused;
  for (;;) {
    sem_wait(&merge.wake);
    pthread_mutex_lock(&merge.lock);
    if (!merge.running) {
      pthread_mutex_unlock(&merge.lock);
      return NULL;
    }
    if (sproj_queued_tasks() < atomic_load(&merge.threshold)) {
      for (int i = 0; i < MERGE_SLOTS; i++)
        if (merge.slot[i].used)
          slot_flush(&merge.slot[i]);
      atomic_store(&merge.pending, 0);
    }
    pthread_mutex_unlock(&merge.lock);
  }
}

/* Merge while at least two projection tasks per worker that may run them wait (0: merging off). With GPUs and CPU
 * cores both selected (SPROJ_DEVICE_ANY) only the CUDA workers count: the cores take only tasks of at most
 * SPROJ_ANY_CPU_MAX_LORS and together project about 1% of what one H200 does, so counting them (15 cores beside
 * 4 CUDA workers on an H200 node) kept the queue below the threshold and left thousands of small calls unmerged. */
static int merge_threshold(void)
{
  if (!__atomic_load_n(&sproj_rt.merge_calls, __ATOMIC_RELAXED) || !merge.running)
    return 0;
  int workers = 0;
  if (sproj_rt.where & STARPU_CUDA)
    workers = (int)starpu_cuda_worker_get_count();
  if (workers == 0 && (sproj_rt.where & STARPU_CPU))
    workers = sproj_rt.ncpu;
  return 2 * (workers > 0 ? workers : 1);
}

/* Submits what is held, forgets the slots, stops the helper thread: sproj_shutdown, through sproj_register_held. */
static int merge_stop(void)
{
  int ret = sproj_flush_pending();
  pthread_mutex_lock(&merge.lock);
  int running = merge.running;
  merge.running = 0;
  atomic_store(&merge.threshold, 0);
  for (int i = 0; i < MERGE_SLOTS; i++) {
    held_free(&merge.slot[i].h);
    merge.slot[i] = (struct merge_slot){0};
  }
  merge.started = 0;
  sproj_on_task_taken(NULL);
  pthread_mutex_unlock(&merge.lock);
  if (running) {
    sem_post(&merge.wake);
    pthread_join(merge.flusher, NULL);
    sem_destroy(&merge.wake);
  }
  return ret;
}

/* Registers the flush and the stop with the runtime and starts the helper thread, once per sproj_init (merge.lock
 * held). Without the thread, calls are submitted at once. */
static void merge_start_locked(void)
{
  if (merge.started)
    return;
  merge.started = 1;
  merge.error = 0;
  atomic_store(&merge.pending, 0);
  sproj_queued_tasks_reset();
  sproj_any_reset();
  sproj_register_held(sproj_flush_pending, merge_stop);
  sproj_on_task_taken(task_taken);
#ifdef STARPU_SIMGRID
  /* simulated (SimGrid): a thread StarPU did not start cannot submit tasks into the simulation */
  return;
#endif
  if (sem_init(&merge.wake, 0, 0) != 0)
    return;
  if (pthread_create(&merge.flusher, NULL, flusher_main, NULL) != 0) {
    sem_destroy(&merge.wake);
    return;
  }
  merge.running = 1;
}

/* Submits validated chunks at once or, while the workers are busy, adds them to a matching pending list. */
static int merge_request(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                         const sproj_chunks *chunks, const int *list, int num)
{
  pthread_mutex_lock(&merge.lock);
  merge_start_locked();
  int threshold = merge_threshold();
  atomic_store(&merge.threshold, threshold);
  struct merge_slot *same = NULL, *lru = NULL, *empty = NULL;
  int ret = SPROJ_OK;
  for (int i = 0; i < MERGE_SLOTS; i++) {
    struct merge_slot *m = &merge.slot[i];
    if (!m->used) {
      if (!empty)
        empty = m;
      continue;
    }
    if (held_same(&m->h, rq, img, proj, chunks))
      same = m;
    else if (conflicts(m, rq->back, img, proj))
      slot_flush(m); /* its failure is the next sync's; this call goes on */
    if (!lru || m->last_use < lru->last_use)
      lru = m;
  }
  int64_t lors = 0;
  for (int i = 0; i < num && chunks; i++)
    lors += chunks->count[list[i]];
  /* A reproducible image's back projections are summed exactly within a call, then added to the image in float
   * once per call: merging calls would make that rounding depend on timing, so they are never merged. */
  int mergeable = chunks && !(rq->back && img->reproducible);
  if (same && threshold > 0 && sproj_queued_tasks() >= threshold && mergeable) {
    if ((ret = held_append(func, &same->h, list, num))) {
      pthread_mutex_unlock(&merge.lock);
      return ret;
    }
    same->lors += lors;
    same->last_use = ++merge.clock;
    atomic_store(&merge.pending, 1);
    if (same->h.num >= MERGE_MAX_CHUNKS || same->lors >= sproj_rt.task_lors)
      slot_flush(same);
    pending_update();
    /* A worker that took the last waiting task before `pending` was set saw nothing to wake the helper for; the
     * queue it left is seen here (both flags are sequentially consistent), so one of the two always wakes it. */
    if (atomic_load(&merge.pending) && sproj_queued_tasks() < threshold)
      sem_post(&merge.wake);
    pthread_mutex_unlock(&merge.lock);
    return SPROJ_OK;
  }
  /* submitted at once: what this kind of call held back goes first */
  if (same)
    slot_flush(same);
  ret = sproj_submit_tasks(func, rq, img, proj, chunks, list, num);
  if (!ret && mergeable && threshold > 0) {
    struct merge_slot *m = same ? same : empty ? empty : lru;
    if (m != same) {
      slot_flush(m);
      held_set(&m->h, rq, img, proj, chunks);
      m->used = 1;
      m->lors = 0;
    }
    m->last_use = ++merge.clock;
  }
  pending_update();
  pthread_mutex_unlock(&merge.lock);
  return ret;
}

/* ---- batches: this thread's requests collected until sproj_batch_end ---- */
struct batch {
  int depth;
  struct held h;
};
static _Thread_local struct batch batch;


int sproj_flush_pending(void)
{
  /* calls merged before this thread's batch began come first */
  int ret = merge_flush_all();
  int r = held_submit("sproj_batch_end", &batch.h);
  return ret ? ret : r;
}

/* Adds validated chunks to this thread's batch (submitting what it held if they belong to other objects). */
static int batch_add(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                     const sproj_chunks *chunks, const int *list, int num)
{
  int ret = SPROJ_OK;
  if (batch.h.num > 0 && !held_same(&batch.h, rq, img, proj, chunks))
    ret = sproj_flush_pending();
  if (batch.h.num == 0)
    held_set(&batch.h, rq, img, proj, chunks);
  int r = held_append(func, &batch.h, list, num);
  return ret ? ret : r;
}

int sproj_batch_begin(void)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  /* what the batch collects must reach the runtime's sync points */
  pthread_mutex_lock(&merge.lock);
  merge_start_locked();
  pthread_mutex_unlock(&merge.lock);
  batch.depth++;
  return SPROJ_OK;
}

int sproj_batch_end(void)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (batch.depth == 0)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "no batch is open on this thread");
  if (--batch.depth > 0)
    return SPROJ_OK;
  ret = sproj_flush_pending();
  held_free(&batch.h);
  return ret;
}

/* Submits (or, inside a batch, collects) validated chunks. */
int sproj_request_chunks(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                   const sproj_chunks *chunks, const int *list, int num)
{
  for (int i = 0; i < num; i++) {
    int nchunks = chunks ? chunks->num_chunks : 1;
    if (list[i] < 0 || list[i] >= nchunks)
      return sproj_fail(SPROJ_ERR_RANGE, func, "chunk %d outside 0..%d", list[i], nchunks - 1);
  }
  if (batch.depth > 0)
    return batch_add(func, rq, img, proj, chunks, list, num);
  return merge_request(func, rq, img, proj, chunks, list, num);
}

