/* SPDX-License-Identifier: Apache-2.0 */
/* proj.c: projection vectors (one value, or one per TOF bin, for each LOR of a set): registration, residency,
 * sync and unregistration. */
#include "config.h"
#include <stdlib.h>
#include <sys/mman.h>
#include "internal.h"

static int proj_new(const char *func, sproj_proj **out, starpu_data_handle_t handle, sproj_lors *lors, int owns,
                    int num_bins)
{
  sproj_proj *proj = calloc(1, sizeof *proj);
  if (!proj)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  if (sproj_vec_init(&proj->vec, lors, handle, owns, 0, 0)) {
    free(proj);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  proj->num_bins = num_bins;
  sproj_count_object(1);
  *out = proj;
  return SPROJ_OK;
}

int sproj_proj_register_ro(sproj_proj **out, sproj_lors *lors, const float *values)
{
  sproj_proj *proj = calloc(1, sizeof *proj);
  if (!proj)
    return SPROJ_ERR_NOMEM;
  if (sproj_vec_init_ro(&proj->vec, lors, values, sizeof(float), 0)) {
    free(proj);
    return SPROJ_ERR_NOMEM;
  }
  proj->num_bins = 1;
  *out = proj;
  return SPROJ_OK;
}

void sproj_proj_release_ro(sproj_proj *proj)
{
  if (!proj)
    return;
  sproj_vec_fini(&proj->vec, 0);
  free(proj);
}

/* The values per LOR every projection vector takes: 1, or a TOF sinogram's 1 .. SPROJ_MAX_TOF_BINS bins. */
static int check_num_bins(const char *func, int num_bins)
{
  if (num_bins == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "num_tof_bins is 0");
  if (num_bins < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_tof_bins = %d is negative", num_bins);
  if (num_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_tof_bins = %d exceeds %d", num_bins, SPROJ_MAX_TOF_BINS);
  return SPROJ_OK;
}

static int proj_register(const char *func, sproj_proj **proj, float *values, sproj_lors *lors, int num_bins)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!proj || !values || !lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "proj, values and lors must not be NULL");
  if ((ret = check_num_bins(func, num_bins)))
    return ret;
  starpu_data_handle_t handle;
  /* one element per LOR: its num_bins values, so that chunks of LORs are chunks of the vector */
  starpu_vector_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)values, (uint32_t)lors->num_lors,
                              (size_t)num_bins * sizeof(float));
  /* Where a GPU cannot hold the LORs and their values together (a small GPU, or STARPU_LIMIT_CUDA_MEM), StarPU must
   * evict written values to make room, and evicting data that is only on the GPU stalled StarPU for good on the
   * H200 (forward projections at 100-150 MB limits never finished). Written through to main memory as each task
   * ends, the values on the GPU stay clean copies that StarPU can drop like the LORs. */
  size_t bytes = (size_t)lors->num_lors * (6 * sizeof(float) + (size_t)num_bins * sizeof(float));
  if (sproj_gpu_memory_below(bytes))
    starpu_data_set_wt_mask(handle, 1u << STARPU_MAIN_RAM);
  ret = proj_new(func, proj, handle, lors, 1, num_bins);
  if (ret)
    starpu_data_unregister_no_coherency(handle);
  return ret;
}

/* Values of the library's own in host memory mapped lazily: a page exists once a task on the host writes it or
 * values come home into it. (Homed on the GPU of a set made there instead, StarPU 1.4 gave their forward projection
 * 6 - 19 GB of host buffers on the H200 host: doc/benchmarks.md.) */
int sproj_proj_create(sproj_proj **proj, sproj_lors *lors, int num_tof_bins)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!proj || !lors)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "proj and lors must not be NULL");
  if ((ret = check_num_bins(__func__, num_tof_bins)))
    return ret;
  size_t elem = (size_t)num_tof_bins * sizeof(float), bytes = (size_t)lors->num_lors * elem;
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no room for %zu bytes of values", bytes);
  starpu_data_handle_t handle;
  starpu_vector_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)m, (uint32_t)lors->num_lors, elem);
  ret = proj_new(__func__, proj, handle, lors, 1, num_tof_bins);
  if (ret) {
    starpu_data_unregister_no_coherency(handle);
    munmap(m, bytes);
    return ret;
  }
  (*proj)->own = (uintptr_t)m;
  (*proj)->own_bytes = bytes;
  return SPROJ_OK;
}

/* Frees the values of a sproj_proj_create projection (its handle unregistered) and the object. */
static void proj_free(sproj_proj *proj)
{
  if (proj->own)
    munmap((void *)proj->own, proj->own_bytes);
  free(proj);
  sproj_count_object(-1);
}

int sproj_proj_register(sproj_proj **proj, float *values, sproj_lors *lors)
{
  return proj_register(__func__, proj, values, lors, 1);
}

int sproj_proj_register_tof(sproj_proj **proj, float *values, sproj_lors *lors, int num_tof_bins)
{
  return proj_register(__func__, proj, values, lors, num_tof_bins);
}

/* Checks shared by the handle registrations: num_bins floats per element, one element per LOR. */
static int proj_register_handle(const char *func, sproj_proj **proj, starpu_data_handle_t handle, sproj_lors *lors,
                                int num_bins)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!proj || !handle || !lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "proj, handle and lors must not be NULL");
  if ((ret = check_num_bins(func, num_bins)))
    return ret;
  if (starpu_data_get_interface_id(handle) != STARPU_VECTOR_INTERFACE_ID)
    return sproj_fail(SPROJ_ERR_INVALID, func, "the handle is not a StarPU vector");
  size_t elemsize = (size_t)num_bins * sizeof(float);
  if (starpu_vector_get_elemsize(handle) != elemsize || starpu_vector_get_nx(handle) != lors->num_lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the vector holds %u elements of %zu bytes, the LOR set needs %lld of "
                      "%zu", starpu_vector_get_nx(handle), starpu_vector_get_elemsize(handle), (long long)lors->num_lors,
                      elemsize);
  return proj_new(func, proj, handle, lors, 0, num_bins);
}

int sproj_proj_register_handle(sproj_proj **proj, sproj_starpu_handle handle, sproj_lors *lors)
{
  return proj_register_handle(__func__, proj, handle, lors, 1);
}

int sproj_proj_register_tof_handle(sproj_proj **proj, sproj_starpu_handle handle, sproj_lors *lors, int num_tof_bins)
{
  return proj_register_handle(__func__, proj, handle, lors, num_tof_bins);
}

/* The piece handles of proj for the given chunks of a resolved chunking (proj->vec.lock held). */
static int proj_piece_handles(const char *func, sproj_proj *proj, const sproj_chunks *ch, int chunk,
                              starpu_data_handle_t **handles, int *nh)
{
  starpu_data_handle_t *children;
  int *list, num, ret;
  if ((ret = sproj_chunk_list(func, ch, chunk, &list, &num)))
    return ret;
  if ((ret = sproj_vec_children_locked(&proj->vec, ch, &children))) {
    free(list);
    return sproj_fail(ret, func, "out of memory");
  }
  *handles = sproj_piece_handles(ch, list, num, &children, 1, nh);
  free(list);
  return *handles ? SPROJ_OK : sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
}

static int proj_residency(const char *func, sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu,
                          int upload)
{
  unsigned nodes[STARPU_MAXCUDADEVS];
  const sproj_chunks *ch;
  starpu_data_handle_t *h;
  int nh, ret;
  /* not initialised comes first, as in every other call: no object can exist then */
  int init = sproj_check_init(func);
  if (init)
    return init;
  if (!proj)
    return sproj_fail(SPROJ_ERR_NULL, func, "proj is NULL");
  int nnodes = sproj_gpu_nodes(func, gpu, nodes);
  if (nnodes < 0)
    return nnodes;
  if (!chunks && chunk != 0 && chunk != SPROJ_ALL_CHUNKS)
    return sproj_fail(SPROJ_ERR_RANGE, func, "without a chunking, chunk must be 0 or SPROJ_ALL_CHUNKS");
  if ((ret = sproj_resolve_chunks(func, proj->vec.lors, chunks, &ch)))
    return ret;
  pthread_mutex_lock(&proj->vec.lock);
  if (!(ret = proj_piece_handles(func, proj, ch, chunks ? chunk : SPROJ_ALL_CHUNKS, &h, &nh))) {
    ret = upload ? sproj_upload_handles(h, nh, nodes, nnodes) : sproj_release_handles(h, nh, nodes, nnodes);
    free(h);
  }
  pthread_mutex_unlock(&proj->vec.lock);
  return ret;
}

int sproj_proj_upload(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu)
{
  return proj_residency(__func__, proj, chunks, chunk, gpu, 1);
}

int sproj_proj_release(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int gpu)
{
  return proj_residency(__func__, proj, chunks, chunk, gpu, 0);
}

/* Counts the pieces of a sync that have arrived (their acquire callbacks) until all it asked for are there. */
struct piece_wait {
  starpu_pthread_mutex_t lock; /* StarPU's threads: simulated ones under SimGrid */
  starpu_pthread_cond_t cond;
  int arrived;
};

static void piece_wait_init(struct piece_wait *w)
{
  starpu_pthread_mutex_init(&w->lock, NULL);
  starpu_pthread_cond_init(&w->cond, NULL);
  w->arrived = 0;
}

static void piece_arrived(void *arg)
{
  struct piece_wait *w = arg;
  starpu_pthread_mutex_lock(&w->lock);
  w->arrived++;
  starpu_pthread_cond_signal(&w->cond);
  starpu_pthread_mutex_unlock(&w->lock);
}

static void piece_wait_for(struct piece_wait *w, int count)
{
  starpu_pthread_mutex_lock(&w->lock);
  while (w->arrived < count)
    starpu_pthread_cond_wait(&w->cond, &w->lock);
  starpu_pthread_mutex_unlock(&w->lock);
}

static void piece_wait_fini(struct piece_wait *w)
{
  starpu_pthread_cond_destroy(&w->cond);
  starpu_pthread_mutex_destroy(&w->lock);
}

int sproj_proj_sync(sproj_proj *proj, const sproj_chunks *chunks, int chunk, int mode)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!proj)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "proj is NULL");
  if (mode != SPROJ_SYNC_READ && mode != SPROJ_SYNC_WRITE)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "mode %d must be SPROJ_SYNC_READ or SPROJ_SYNC_WRITE", mode);
  if (proj->own)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "proj was made by sproj_proj_create: its values have no host array");
  enum starpu_data_access_mode m = mode == SPROJ_SYNC_WRITE ? STARPU_RW : STARPU_R;
  proj->model_made = 0;
  if (!chunks && chunk != 0 && chunk != SPROJ_ALL_CHUNKS)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "without a chunking, chunk must be 0 or SPROJ_ALL_CHUNKS");
  if (chunks && chunks->lors != proj->vec.lors)
    return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "the chunking belongs to another LOR set");
  pthread_mutex_lock(&proj->vec.lock);
  if (!chunks) {
    if (starpu_data_acquire(proj->vec.handle, m) == 0) {
      /* StarPU gathers the active chunking's pieces into the whole vector first */
      starpu_data_release(proj->vec.handle);
    } else {
      ret = SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
    }
    pthread_mutex_unlock(&proj->vec.lock);
    return ret;
  }
  starpu_data_handle_t *h;
  int nh;
  if ((ret = proj_piece_handles(__func__, proj, chunks, chunk, &h, &nh))) {
    pthread_mutex_unlock(&proj->vec.lock);
    return ret;
  }
  /* Every piece is asked for before the first wait, so that the transfers of thousands of small pieces overlap
   * instead of running one after another. The requests take their place in the pieces' order of access under the
   * lock (a later change of the vector's partition comes after them); the waits are outside it: a thread waiting
   * for its projections to finish held every other thread's submissions and syncs on this vector back (16 threads
   * of STIR, one viewgram each: about 40 us of each submission went into waiting for this lock). An acquire with a
   * callback activates the chunking's partition; a plain fetch does not, and StarPU aborts on a piece of a chunking
   * no task has used yet (found by the fuzz target). */
  struct piece_wait w;
  piece_wait_init(&w);
  int asked = 0;
  for (int i = 0; i < nh; i++) {
    if (starpu_data_acquire_cb(h[i], m, piece_arrived, &w) == 0) {
      asked++;
    } else {
      ret = SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire_cb failed");
      break;
    }
  }
  pthread_mutex_unlock(&proj->vec.lock);
  piece_wait_for(&w, asked);
  for (int i = 0; i < asked; i++)
    starpu_data_release(h[i]);
  piece_wait_fini(&w);
  free(h);
  return ret;
}

int sproj_proj_unregister(sproj_proj *proj)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!proj)
    return SPROJ_OK;
  sproj_vec_fini(&proj->vec, 0);
  proj_free(proj);
  return SPROJ_OK;
}

int sproj_proj_discard(sproj_proj *proj)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!proj)
    return SPROJ_OK;
  if (!proj->vec.owns_handle)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "proj was made from the caller's StarPU handle: use sproj_proj_unregister");
  sproj_vec_discard(&proj->vec);
  proj_free(proj);
  return SPROJ_OK;
}

int sproj_proj_count(const sproj_proj *proj, int64_t *num_lors, int *values_per_lor)
{
  if (!proj)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "proj must not be NULL");
  if (num_lors)
    *num_lors = proj->vec.lors->num_lors;
  if (values_per_lor)
    *values_per_lor = proj->num_bins;
  return SPROJ_OK;
}

int sproj_proj_acquire(const char *func, sproj_proj *proj, const float **values)
{
  int ret = sproj_check_init_flush(func);
  if (ret)
    return ret;
  /* the lock keeps submitters from changing the vector's partition while it is held whole */
  pthread_mutex_lock(&proj->vec.lock);
  if (starpu_data_acquire_on_node(proj->vec.handle, STARPU_MAIN_RAM, STARPU_R) != 0) {
    pthread_mutex_unlock(&proj->vec.lock);
    return sproj_fail(SPROJ_ERR_STARPU, func, "StarPU could not make the values available on the host");
  }
  *values = (const float *)starpu_vector_get_local_ptr(proj->vec.handle);
  return SPROJ_OK;
}

void sproj_proj_release_acquired(sproj_proj *proj)
{
  starpu_data_release_on_node(proj->vec.handle, STARPU_MAIN_RAM);
  pthread_mutex_unlock(&proj->vec.lock);
}
