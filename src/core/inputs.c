/* SPDX-License-Identifier: Apache-2.0 */
/* inputs.c: per-LOR inputs checked where they live: a caller's vectors homed on a GPU by a check task there (only
 * the few bytes of the results cross to the host), the others on the host in the calling thread. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "input_check.h"

/* The workers of memory node `node` (CPU workers for main memory, CUDA workers for a GPU's) as a StarPU worker
 * bitmap of *nwords words; their kind in *where. Returns 0, or -1 when no worker serves the node. */
static int node_workers(unsigned node, uint32_t *bits, unsigned *nwords, unsigned *where)
{
  int nworkers = (int)starpu_worker_get_count(), found = 0;
  unsigned words = (unsigned)(nworkers + 31) / 32;
  memset(bits, 0, words * sizeof *bits);
  *where = 0;
  for (int w = 0; w < nworkers; w++) {
    enum starpu_worker_archtype type = starpu_worker_get_type(w);
    if (starpu_worker_get_memory_node(w) != node || (type != STARPU_CPU_WORKER && type != STARPU_CUDA_WORKER))
      continue;
    bits[w / 32] |= 1u << (w % 32);
    *where |= type == STARPU_CPU_WORKER ? STARPU_CPU : STARPU_CUDA;
    found = 1;
  }
  *nwords = words;
  return found ? 0 : -1;
}

int sproj_inputs_check_on(const char *func, const struct sproj_input_arg *arg, const starpu_data_handle_t *h,
                          struct sproj_input_result *res, unsigned node)
{
  unsigned nwords, where;
  if (arg->nvectors < 1 || arg->nvectors > SPROJ_INPUT_MAX_VECTORS)
    return sproj_fail(SPROJ_ERR_INVALID, func, "%d vectors to check: 1 .. %d", arg->nvectors, SPROJ_INPUT_MAX_VECTORS);
  /* StarPU keeps the task's pointer to its worker bitmap: the bitmap goes with the task (freed by its callback) */
  uint32_t *bits = malloc(((STARPU_NMAXWORKERS + 31) / 32) * sizeof *bits);
  struct sproj_input_arg *a = malloc(sizeof *a);
  if (!bits || !a) {
    free(bits);
    free(a);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  if (node_workers(node, bits, &nwords, &where) < 0) {
    free(bits);
    free(a);
    return sproj_fail(SPROJ_ERR_NO_DEVICE, func, "no worker serves memory node %u to check the inputs there", node);
  }
  *a = *arg;
  /* the results come home when their handle is unregistered, after the task: a few bytes per vector */
  starpu_data_handle_t out;
  starpu_vector_data_register(&out, STARPU_MAIN_RAM, (uintptr_t)res, (uint32_t)arg->nvectors, sizeof *res);
  struct starpu_data_descr descr[1 + SPROJ_INPUT_MAX_VECTORS] = {{.handle = out, .mode = STARPU_W}};
  for (int k = 0; k < arg->nvectors; k++)
    descr[1 + k] = (struct starpu_data_descr){.handle = h[k], .mode = STARPU_R};
  unsigned ctx = where == STARPU_CUDA ? sproj_rt.ctx_gpu : where == STARPU_CPU ? sproj_rt.ctx_cpu : 0;
  int ret = starpu_task_insert(&sproj_input_check_cl, STARPU_CL_ARGS, a, sizeof *a, STARPU_DATA_MODE_ARRAY, descr,
                               1 + arg->nvectors, STARPU_EXECUTE_WHERE, (unsigned long long)where, STARPU_SCHED_CTX,
                               ctx, STARPU_TASK_WORKERIDS, nwords, bits, STARPU_CALLBACK_WITH_ARG_NFREE, free, bits,
                               STARPU_NAME, "input_check", 0);
  if (ret != 0) {
    free(a);
    free(bits);
  }
  starpu_data_unregister(out); /* waits for the task */
  if (ret == -ENODEV)
    return sproj_fail(SPROJ_ERR_NO_DEVICE, func, "no worker of memory node %u can check the inputs", node);
  if (ret != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused the task that checks the inputs (%d)", ret);
  return SPROJ_OK;
}

/* The memory node of the GPU a caller's vector is homed on, or -1 (main memory, no home, no CUDA worker there, or a
 * build without CUDA code: simulated GPUs run no kernel). */
static int gpu_home(starpu_data_handle_t h)
{
#ifdef SPROJ_USE_CUDA
  uint32_t bits[(STARPU_NMAXWORKERS + 31) / 32];
  unsigned nwords, where;
  int home = starpu_data_get_home_node(h);
  if (home >= 0 && starpu_node_get_kind((unsigned)home) == STARPU_CUDA_RAM &&
      node_workers((unsigned)home, bits, &nwords, &where) == 0)
    return home;
#else
  (void)h;
#endif
  return -1;
}

int sproj_inputs_check(const char *func, const struct sproj_input_arg *arg, const starpu_data_handle_t *h,
                       struct sproj_input_result *res)
{
  int done[SPROJ_INPUT_MAX_VECTORS] = {0};
  int ret;
  /* the vectors homed on each GPU, one task per GPU */
  for (int k = 0; k < arg->nvectors; k++) {
    int node = gpu_home(h[k]);
    if (node < 0 || done[k])
      continue;
    struct sproj_input_arg sub = *arg;
    starpu_data_handle_t hs[SPROJ_INPUT_MAX_VECTORS];
    int which[SPROJ_INPUT_MAX_VECTORS];
    sub.nvectors = 0;
    for (int j = k; j < arg->nvectors; j++)
      if (!done[j] && gpu_home(h[j]) == node) {
        sub.kind[sub.nvectors] = arg->kind[j];
        hs[sub.nvectors] = h[j];
        which[sub.nvectors++] = j;
      }
    struct sproj_input_result r[SPROJ_INPUT_MAX_VECTORS];
    if ((ret = sproj_inputs_check_on(func, &sub, hs, r, (unsigned)node)))
      return ret;
    for (int i = 0; i < sub.nvectors; i++) {
      res[which[i]] = r[i];
      done[which[i]] = 1;
    }
  }
  /* the others in main memory, where they live (or are brought, as before GPU-homed vectors were checked there) */
  for (int k = 0; k < arg->nvectors; k++) {
    if (done[k])
      continue;
    if (starpu_data_acquire_on_node(h[k], STARPU_MAIN_RAM, STARPU_R) != 0)
      return sproj_fail(SPROJ_ERR_STARPU, func, "starpu_data_acquire failed");
    sproj_input_scan(arg, arg->kind[k], (const void *)starpu_vector_get_local_ptr(h[k]),
                     sproj_input_elements(arg->kind[k], starpu_vector_get_nx(h[k])), &res[k]);
    starpu_data_release_on_node(h[k], STARPU_MAIN_RAM);
  }
  return SPROJ_OK;
}
