/* SPDX-License-Identifier: Apache-2.0 */
/* scanner_sets.c: a scanner's sinogram LORs as a LOR set made where it is used: by a task on a GPU (the endpoints
 * never exist on the host), or on the host's cores when there is no GPU. */
#include "config.h"
#include <stdlib.h>
#include "recon_internal.h"
#include "scanner_lors.h"

/* The endpoints of every LOR of the set written by one task on a worker of the kind `where`: the scanner's LORs in
 * order, or those of lor[] (one per element of the set); waits for it. */
static int fill_by_task(const char *func, const sproj_scanner *scanner, sproj_lors *lors, const int32_t *lor,
                        unsigned where)
{
  size_t bytes;
  const struct sproj_scanner_table *tab = sproj_scanner_table_of(scanner, &bytes);
  starpu_data_handle_t th;
  /* read only: the task never writes the scanner's table */
  starpu_vector_data_register(&th, STARPU_MAIN_RAM, (uintptr_t)tab, (uint32_t)bytes, 1);
  struct sproj_scanner_lors_arg *arg = malloc(sizeof *arg);
  if (!arg) {
    starpu_data_unregister(th);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  *arg = (struct sproj_scanner_lors_arg){0, lor != NULL};
  struct starpu_data_descr descr[4] = {{.handle = th, .mode = STARPU_R}, {.handle = lors->xs, .mode = STARPU_W},
                                       {.handle = lors->xe, .mode = STARPU_W}};
  starpu_data_handle_t lh = NULL;
  if (lor) {
    /* read only: the indices go where the task runs, and nothing comes back */
    starpu_vector_data_register(&lh, STARPU_MAIN_RAM, (uintptr_t)lor, (uint32_t)lors->num_lors, sizeof(int32_t));
    descr[3] = (struct starpu_data_descr){.handle = lh, .mode = STARPU_R};
  }
  int ret = starpu_task_insert(&sproj_scanner_lors_cl, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_DATA_MODE_ARRAY, descr,
                               lor ? 4 : 3, STARPU_EXECUTE_WHERE, (unsigned long long)where, STARPU_SCHED_CTX,
                               sproj_rt.ctx, STARPU_NAME, "scanner_lors", 0);
  if (ret != 0)
    free(arg);
  starpu_data_unregister(th); /* waits for the task */
  if (lh)
    starpu_data_unregister(lh);
  if (ret == -ENODEV)
    return sproj_fail(SPROJ_ERR_NO_DEVICE, func, "no worker can make the LORs");
  if (ret != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "starpu_task_insert failed (%d)", ret);
  return SPROJ_OK;
}

int sproj_scanner_lors_create(const sproj_scanner *scanner, int flags, sproj_lors **lors, sproj_chunks **views)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!scanner || !lors || !views)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, lors and views must not be NULL");
  if (flags & ~SPROJ_LORS_BY_TASK)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "flags %#x: only SPROJ_LORS_BY_TASK is known", (unsigned)flags);
  struct sproj_sinogram_info info;
  sproj_scanner_info(scanner, &info);
  int gpu = sproj_rt.ngpus > 0 && (sproj_rt.where & STARPU_CUDA);
  sproj_lors *set;
  if ((ret = sproj_lors_create_unfilled(__func__, &set, info.num_lors, gpu ? 0 : -1)))
    return ret;
  if (gpu || (flags & SPROJ_LORS_BY_TASK)) {
    ret = fill_by_task(__func__, scanner, set, NULL, gpu ? STARPU_CUDA : STARPU_CPU);
  } else {
    /* no GPU: the host's cores write the set's own memory before StarPU ever sees it used (StarPU's idle workers,
     * which poll, asleep meanwhile) */
    if (!(ret = sproj_pause())) {
      ret = sproj_scanner_lors(scanner, set->own_xs, set->own_xe, 0);
      sproj_resume();
    }
  }
  if (!ret)
    ret = sproj_scanner_chunks_views(views, scanner, set);
  if (ret) {
    char why[512]; /* reported under this call's name */
    snprintf(why, sizeof why, "%s", sproj_last_error());
    sproj_lors_unregister(set);
    return sproj_fail(ret, __func__, "%s", why);
  }
  *lors = set;
  return SPROJ_OK;
}

/* ---- listmode events of sinogram LORs ---------------------------------------------------------------------- */
enum { EVENT_BLOCK = 1 << 20 };
struct events_job {
  const struct sproj_scanner_table *tab;
  int64_t n, num_lors;
  const int32_t *lor;
  const int16_t *bin;
  int64_t *bad_lor, *bad_bin; /* per block: the first event with a LOR / bin outside, or -1 */
  int *max_bin;               /* per block: its largest bin */
  float *xs, *xe;             /* the host's fill, else NULL */
};

static void events_block(void *ctx, int64_t block)
{
  struct events_job *j = ctx;
  int64_t first = block * EVENT_BLOCK, end = first + EVENT_BLOCK < j->n ? first + EVENT_BLOCK : j->n;
  int max = 0;
  j->bad_lor[block] = j->bad_bin[block] = -1;
  for (int64_t i = first; i < end; i++) {
    if (j->lor[i] < 0 || j->lor[i] >= j->num_lors) {
      j->bad_lor[block] = i;
      return;
    }
    if (j->bin) {
      if (j->bin[i] < 0) {
        j->bad_bin[block] = i;
        return;
      }
      if (j->bin[i] > max)
        max = j->bin[i];
    }
    if (j->xs)
      scanner_lor_endpoints(j->tab, j->lor[i], j->xs + 3 * i, j->xe + 3 * i);
  }
  j->max_bin[block] = max;
}

/* Every event checked (its LOR in the sinogram, its bin >= 0; with xs, the endpoints written), on every core. */
static int events_pass(const char *func, struct events_job *j, int *max_bin)
{
  int64_t nblocks = (j->n + EVENT_BLOCK - 1) / EVENT_BLOCK;
  j->bad_lor = malloc((size_t)nblocks * sizeof(int64_t));
  j->bad_bin = malloc((size_t)nblocks * sizeof(int64_t));
  j->max_bin = malloc((size_t)nblocks * sizeof(int));
  int ret = SPROJ_OK;
  if (!j->bad_lor || !j->bad_bin || !j->max_bin) {
    ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    goto done;
  }
  sproj_run_blocks("checking the events", 0, nblocks, events_block, j);
  *max_bin = 0;
  for (int64_t b = 0; b < nblocks && !ret; b++) {
    if (j->bad_lor[b] >= 0)
      ret = sproj_fail(SPROJ_ERR_RANGE, func, "lor[%lld] = %d outside the sinogram's 0 .. %lld",
                       (long long)j->bad_lor[b], j->lor[j->bad_lor[b]], (long long)j->num_lors - 1);
    else if (j->bad_bin[b] >= 0)
      ret = sproj_fail(SPROJ_ERR_RANGE, func, "tof_bin of event %lld is %d: bins are numbered from 0",
                       (long long)j->bad_bin[b], j->bin[j->bad_bin[b]]);
    else if (j->max_bin[b] > *max_bin)
      *max_bin = j->max_bin[b];
  }
done:
  free(j->bad_lor);
  free(j->bad_bin);
  free(j->max_bin);
  return ret;
}

int sproj_scanner_events_create(const sproj_scanner *scanner, const int32_t *lor, const int16_t *tof_bin,
                                int64_t num_events, int flags, sproj_lors **events)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!scanner || !lor || !events)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, lor and events must not be NULL");
  if (flags & ~SPROJ_LORS_BY_TASK)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "flags %#x: only SPROJ_LORS_BY_TASK is known", (unsigned)flags);
  if (num_events <= 0 || num_events > UINT32_MAX)
    return SPROJ_FAIL(num_events == 0 ? SPROJ_ERR_EMPTY : SPROJ_ERR_DIMS, "num_events = %lld: 1 .. 2^32-1 fit in one "
                      "set", (long long)num_events);
  struct sproj_sinogram_info info;
  sproj_scanner_info(scanner, &info);
  size_t bytes;
  struct events_job j = {.tab = sproj_scanner_table_of(scanner, &bytes), .n = num_events, .num_lors = info.num_lors,
                        .lor = lor, .bin = tof_bin};
  int gpu = sproj_rt.ngpus > 0 && (sproj_rt.where & STARPU_CUDA), by_task = gpu || (flags & SPROJ_LORS_BY_TASK);
  sproj_lors *set;
  if ((ret = sproj_lors_create_unfilled(__func__, &set, num_events, gpu ? 0 : -1)))
    return ret;
  if (!by_task) {
    j.xs = set->own_xs;
    j.xe = set->own_xe;
  }
  int max_bin = 0;
  /* the host checks every index and bin (and, without a task, writes the endpoints in the same pass) */
  if (!(ret = sproj_pause())) {
    ret = events_pass(__func__, &j, &max_bin);
    sproj_resume();
  }
  if (!ret && by_task)
    ret = fill_by_task(__func__, scanner, set, lor, gpu ? STARPU_CUDA : STARPU_CPU);
  if (!ret && tof_bin) {
    set->max_bin = max_bin;
    if (sproj_vec_register_ro(&set->bins, set, tof_bin, sizeof(int16_t), 1))
      ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  if (ret) {
    sproj_lors_unregister(set);
    return ret;
  }
  *events = set;
  return SPROJ_OK;
}
