/* SPDX-License-Identifier: Apache-2.0 */
/* image.c: registering images as StarPU vector handles, their residency on GPUs, sync and unregistration. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include "internal.h"
#include "tof_tiles.h"

int sproj_check_voxel_size(const char *func, const float voxel_size[3])
{
  for (int k = 0; k < 3; k++)
    if (!isfinite(voxel_size[k]) || !(voxel_size[k] > 0.0f))
      return sproj_fail(SPROJ_ERR_VOXEL_SIZE, func, "voxel_size[%d] = %g must be finite and > 0", k, voxel_size[k]);
  return SPROJ_OK;
}

int sproj_check_geometry(const char *func, const int dims[3], const float voxel_size[3], const float origin[3],
                         uint64_t max_voxels, uint64_t *nvox)
{
  if (!dims || !voxel_size)
    return sproj_fail(SPROJ_ERR_NULL, func, "dims and voxel_size must not be NULL");
  uint64_t total = 1;
  for (int k = 0; k < 3; k++) {
    if (dims[k] <= 0)
      return sproj_fail(SPROJ_ERR_DIMS, func, "dims[%d] = %d must be > 0", k, dims[k]);
    total *= (uint64_t)dims[k]; /* < 2^93 never: each factor < 2^31 and the bound is checked after each */
    if (total > max_voxels)
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "%d x %d x %d voxels exceed the %llu this call can hold", dims[0],
                        dims[1], dims[2], (unsigned long long)max_voxels);
  }
  int ret = sproj_check_voxel_size(func, voxel_size);
  if (ret)
    return ret;
  for (int k = 0; origin && k < 3; k++)
    if (!isfinite(origin[k]))
      return sproj_fail(SPROJ_ERR_NONFINITE, func, "origin[%d] is not finite", k);
  for (int k = 0; k < 3; k++) {
    /* the far face of the box must be finite too (in float, as the projectors compute it) */
    float far = (origin ? origin[k] : 0.0f) + (float)dims[k] * voxel_size[k];
    if (!isfinite(far))
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "the image's extent along axis %d is not finite", k);
  }
  if (nvox)
    *nvox = total;
  return SPROJ_OK;
}

/* An image handle holds at most 2^32-1 voxels (StarPU vectors count their elements in 32 bits). */
static int check_geometry(const char *func, const int dims[3], const float voxel_size[3], const float origin[3],
                          struct sproj_geom *geom)
{
  if (!origin)
    return sproj_fail(SPROJ_ERR_NULL, func, "origin must not be NULL");
  int ret = sproj_check_geometry(func, dims, voxel_size, origin, UINT32_MAX, NULL);
  if (ret)
    return ret;
  for (int k = 0; k < 3; k++) {
    geom->n[k] = dims[k];
    geom->voxel_size[k] = voxel_size[k];
    geom->origin[k] = origin[k];
  }
  return SPROJ_OK;
}

static int image_new(const char *func, sproj_image **out, starpu_data_handle_t handle, int owns,
                     const struct sproj_geom *geom)
{
  sproj_image *img = calloc(1, sizeof *img);
  if (!img)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  img->handle = handle;
  img->owns_handle = owns;
  img->geom = *geom;
  img->reproducible = sproj_rt.reproducible;
  img->owner = -1;
  pthread_mutex_init(&img->parts_lock, NULL);
  /* back projections accumulate through StarPU's reduction mode */
  starpu_data_set_reduction_methods(handle, &sproj_image_add_cl, &sproj_image_zero_cl);
  sproj_count_object(1);
  *out = img;
  return SPROJ_OK;
}

int sproj_image_register(sproj_image **img, float *data, const int dims[3], const float voxel_size[3],
                         const float origin[3])
{
  struct sproj_geom geom;
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!img || !data)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img and data must not be NULL");
  if ((ret = check_geometry(__func__, dims, voxel_size, origin, &geom)))
    return ret;
  uint32_t nvox = (uint32_t)dims[0] * (uint32_t)dims[1] * (uint32_t)dims[2];
  starpu_data_handle_t handle;
  starpu_vector_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)data, nvox, sizeof(float));
  ret = image_new(__func__, img, handle, 1, &geom);
  if (ret)
    starpu_data_unregister_no_coherency(handle);
  return ret;
}

int sproj_image_register_handle(sproj_image **img, sproj_starpu_handle handle, const int dims[3],
                                const float voxel_size[3], const float origin[3])
{
  struct sproj_geom geom;
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!img || !handle)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img and handle must not be NULL");
  if ((ret = check_geometry(__func__, dims, voxel_size, origin, &geom)))
    return ret;
  if (starpu_data_get_interface_id(handle) != STARPU_VECTOR_INTERFACE_ID)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the handle is not a StarPU vector");
  uint32_t nvox = (uint32_t)dims[0] * (uint32_t)dims[1] * (uint32_t)dims[2];
  if (starpu_vector_get_nx(handle) != nvox || starpu_vector_get_elemsize(handle) != sizeof(float))
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the vector holds %u elements of %zu bytes, the image needs %u floats",
                      starpu_vector_get_nx(handle), starpu_vector_get_elemsize(handle), nvox);
  return image_new(__func__, img, handle, 0, &geom);
}

int sproj_image_create(sproj_image **img, const int dims[3], const float voxel_size[3], const float origin[3])
{
  struct sproj_geom geom;
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!img)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img must not be NULL");
  if ((ret = check_geometry(__func__, dims, voxel_size, origin, &geom)))
    return ret;
  uint32_t nvox = (uint32_t)dims[0] * (uint32_t)dims[1] * (uint32_t)dims[2];
  starpu_data_handle_t handle;
  /* no home: StarPU allocates it where a task first uses it */
  starpu_vector_data_register(&handle, -1, 0, nvox, sizeof(float));
  if (!handle)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "StarPU could not register the image");
  ret = image_new(__func__, img, handle, 1, &geom);
  if (ret)
    starpu_data_unregister_no_coherency(handle);
  return ret;
}

static int image_residency(const char *func, sproj_image *img, int gpu, int upload)
{
  unsigned nodes[STARPU_MAXCUDADEVS];
  /* not initialised comes first, as in every other call: no object can exist then */
  int init = sproj_check_init(func);
  if (init)
    return init;
  if (!img)
    return sproj_fail(SPROJ_ERR_NULL, func, "img is NULL");
  int n = sproj_gpu_nodes(func, gpu, nodes);
  if (n < 0)
    return n;
  return upload ? sproj_upload_handles(&img->handle, 1, nodes, n) : sproj_release_handles(&img->handle, 1, nodes, n);
}

int sproj_image_upload(sproj_image *img, int gpu)
{
  return image_residency(__func__, img, gpu, 1);
}

int sproj_image_release(sproj_image *img, int gpu)
{
  return image_residency(__func__, img, gpu, 0);
}

int sproj_image_sync(sproj_image *img, int mode)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!img)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img is NULL");
  if (mode != SPROJ_SYNC_READ && mode != SPROJ_SYNC_WRITE)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "mode %d must be SPROJ_SYNC_READ or SPROJ_SYNC_WRITE", mode);
  if (starpu_data_acquire(img->handle, mode == SPROJ_SYNC_WRITE ? STARPU_RW : STARPU_R) != 0)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
  starpu_data_release(img->handle);
  return SPROJ_OK;
}

int sproj_image_zero(sproj_image *img)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!img)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img is NULL");
  return sproj_image_submit_zero(__func__, img);
}

/* Unregisters an image's scratch handles (each waits for the tasks still using it) and frees the object. */
static void image_free(sproj_image *img)
{
  if (img->acc)
    starpu_data_unregister_no_coherency(img->acc);
  if (img->copies)
    starpu_data_unregister_no_coherency(img->copies);
  if (img->tiles)
    starpu_data_unregister_no_coherency(img->tiles);
  if (img->pairs)
    starpu_data_unregister_no_coherency(img->pairs);
  for (unsigned w = 0; w < img->nparts; w++)
    if (img->parts[w])
      starpu_data_unregister_no_coherency(img->parts[w]);
  free(img->parts);
  pthread_mutex_destroy(&img->parts_lock);
  sproj_count_object(-1);
  free(img);
}

int sproj_image_unregister(sproj_image *img)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!img)
    return SPROJ_OK;
  /* finishes pending back projections (their reduction) and brings the value home: to main memory, or to the GPU
   * of a caller's handle registered there (not through the host) */
  int home = starpu_data_get_home_node(img->handle);
  if (home < 0 && img->owns_handle) { /* sproj_image_create's: no host buffer to write back; unregistering waits for
                                      * its tasks */
    sproj_image_drop(img);
    return SPROJ_OK;
  }
  if (home < 0)
    home = STARPU_MAIN_RAM;
  if (starpu_data_acquire_on_node(img->handle, home, STARPU_R) != 0)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
  starpu_data_release_on_node(img->handle, home);
  if (img->owns_handle)
    starpu_data_unregister(img->handle);
  image_free(img);
  return SPROJ_OK;
}

void sproj_image_drop(sproj_image *img)
{
  if (!img)
    return;
  /* without these two, each dropped image left its buffers on every GPU that back-projected into it until StarPU
   * stopped (and a simulated 8-GPU node never finished stopping: its CUDA workers freed them side by side) */
  starpu_data_unregister_no_coherency(img->handle);
  image_free(img);
}

int sproj_image_set_reproducible(sproj_image *img, int on)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!img)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img is NULL");
  if (on != 0 && on != 1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "on = %d must be 0 or 1", on);
  img->reproducible = on;
  return SPROJ_OK;
}

int sproj_image_accumulator(const char *func, sproj_image *img, starpu_data_handle_t *acc)
{
  /* one submitter creates it: the image's first reproducible back projection */
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  int ret = SPROJ_OK;
  if (!img->acc) {
    uint32_t nvox = (uint32_t)img->geom.n[0] * img->geom.n[1] * img->geom.n[2];
    starpu_data_handle_t h;
    /* StarPU allocates it where it is used; it starts at zero and every flush leaves it at zero */
    starpu_vector_data_register(&h, -1, 0, nvox, sizeof(unsigned long long));
    starpu_data_set_reduction_methods(h, &sproj_fixed_add_cl, &sproj_fixed_zero_cl);
    if (starpu_task_insert(&sproj_fixed_zero_cl, STARPU_W, h, 0) != 0) {
      starpu_data_unregister_no_coherency(h);
      ret = sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused a task");
    } else {
      img->acc = h;
    }
  }
  *acc = img->acc;
  pthread_mutex_unlock(&lock);
  return ret;
}

/* An image's scratch handle *h of len elements of elemsize bytes, registered on first use: StarPU allocates one per
 * worker that runs a task with it, on its device, and keeps it for the next. */
static starpu_data_handle_t image_scratch(starpu_data_handle_t *h, uint32_t len, size_t elemsize)
{
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  if (!*h)
    starpu_vector_data_register(h, -1, 0, len, elemsize);
  starpu_data_handle_t out = *h;
  pthread_mutex_unlock(&lock);
  return out;
}

starpu_data_handle_t sproj_image_copies(sproj_image *img)
{
  uint64_t nvox = (uint64_t)img->geom.n[0] * img->geom.n[1] * img->geom.n[2];
  uint64_t len = 2 * sproj_layout_copy_stride(nvox);
  if (nvox > sproj_rt.layout_max_voxels || len > UINT32_MAX)
    return NULL;
  return image_scratch(&img->copies, (uint32_t)len, sizeof(float));
}

starpu_data_handle_t sproj_image_tiles(sproj_image *img)
{
  size_t words = sproj_tof_tiles_scratch_words(sproj_rt.task_lors);
  /* one per CUDA worker: on a GPU too small to hold its workers' many times over, the tasks go the per-event way */
  size_t per_gpu = starpu_cuda_worker_get_count() / (unsigned)(sproj_rt.ngpus > 0 ? sproj_rt.ngpus : 1);
  if (words > UINT32_MAX || sproj_gpu_memory_below(16 * words * sizeof(uint32_t) * per_gpu))
    return NULL;
  return image_scratch(&img->tiles, (uint32_t)words, sizeof(uint32_t));
}

starpu_data_handle_t sproj_image_pairs(sproj_image *img)
{
  /* about 4.2 images per CUDA worker: at most what the copies (two images per worker) may take, an eighth of the GPU */
  uint64_t len = sproj_pairs_offset(&img->geom, 2);
  if (len > 2 * sproj_rt.layout_max_voxels || len > UINT32_MAX)
    return NULL;
  return image_scratch(&img->pairs, (uint32_t)len, sizeof(float));
}

starpu_data_handle_t sproj_image_part(sproj_image *img, int w)
{
  unsigned nworkers = starpu_worker_get_count();
  if (w < 0 || (unsigned)w >= nworkers)
    return NULL;
  if (!img->parts) {
    if (!(img->parts = calloc(nworkers, sizeof *img->parts)))
      return NULL;
    img->nparts = nworkers;
  }
  if (!img->parts[w]) {
    uint32_t nvox = (uint32_t)img->geom.n[0] * img->geom.n[1] * img->geom.n[2];
    starpu_vector_data_register(&img->parts[w], -1, 0, nvox, sizeof(float));
  }
  return img->parts[w];
}

sproj_starpu_handle sproj_image_handle(const sproj_image *img)
{
  /* the caller may use the handle directly: what this thread collected must be in StarPU's order first */
  if (sproj_rt.initialized)
    sproj_flush_held();
  return img ? img->handle : NULL;
}

int sproj_image_geometry(const sproj_image *img, int dims[3], float voxel_size[3], float origin[3])
{
  if (!img)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "img must not be NULL");
  for (int k = 0; k < 3; k++) {
    if (dims)
      dims[k] = img->geom.n[k];
    if (voxel_size)
      voxel_size[k] = img->geom.voxel_size[k];
    if (origin)
      origin[k] = img->geom.origin[k];
  }
  return SPROJ_OK;
}

int sproj_image_submit_zero(const char *func, sproj_image *img)
{
  if (starpu_task_insert(&sproj_image_zero_cl, STARPU_W, img->handle, STARPU_EXECUTE_WHERE,
                         (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0) != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused the task that zeroes the image");
  return SPROJ_OK;
}

int sproj_image_submit_add(const char *func, sproj_image *dst, sproj_starpu_handle src)
{
  if (starpu_task_insert(&sproj_image_add_cl, STARPU_RW | STARPU_COMMUTE, dst->handle, STARPU_R, src,
                         STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                         0) != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused the task that adds an image into another");
  return SPROJ_OK;
}

/* How many of the handles (in order) to copy to a node: those that fit in half of its memory (or of its
 * STARPU_LIMIT_*_MEM). An upload is a placement hint: copying more than the node can keep would only make StarPU
 * evict the first copies to make room for the last ones, and on the H200 a 100 MB limit with gigabytes of uploads
 * left it stalled. */
static int handles_that_fit(starpu_data_handle_t *handles, int nhandles, unsigned node)
{
  starpu_ssize_t total = starpu_memory_get_total(node);
  if (total < 0)
    return nhandles;
  size_t room = (size_t)total / 2, used = 0;
  for (int h = 0; h < nhandles; h++) {
    used += starpu_data_get_size(handles[h]);
    if (used > room)
      return h;
  }
  return nhandles;
}

int sproj_upload_handles(starpu_data_handle_t *handles, int nhandles, const unsigned *nodes, int nnodes)
{
  int fit[STARPU_MAXCUDADEVS];
  for (int g = 0; g < nnodes; g++)
    fit[g] = handles_that_fit(handles, nhandles, nodes[g]);
  /* after the tasks submitted on them: a fetch waits only for those already running, so a handle still to be
   * written, or a piece of a partition still to be made (a vector repartitioned for other chunks while the tasks that
   * wrote it on the GPUs are pending), has no value to fetch yet (StarPU 1.4 then aborts). Acquired on no node, they
   * wait for those tasks and move nothing. */
  for (int h = 0; h < nhandles; h++) {
    if (starpu_data_acquire_on_node(handles[h], STARPU_ACQUIRE_NO_NODE, STARPU_R) != 0)
      return sproj_fail(SPROJ_ERR_STARPU, "upload", "starpu_data_acquire_on_node failed");
    starpu_data_release_on_node(handles[h], STARPU_ACQUIRE_NO_NODE);
  }
  /* queue every copy first so that they overlap, then wait for each */
  for (int g = 0; g < nnodes; g++)
    for (int h = 0; h < fit[g]; h++)
      if (starpu_data_fetch_on_node(handles[h], nodes[g], 1) != 0)
        return sproj_fail(SPROJ_ERR_STARPU, "upload", "starpu_data_fetch_on_node failed");
  for (int g = 0; g < nnodes; g++)
    for (int h = 0; h < fit[g]; h++)
      if (starpu_data_fetch_on_node(handles[h], nodes[g], 0) != 0)
        return sproj_fail(SPROJ_ERR_STARPU, "upload", "starpu_data_fetch_on_node failed");
  return SPROJ_OK;
}

int sproj_release_handles(starpu_data_handle_t *handles, int nhandles, const unsigned *nodes, int nnodes)
{
  for (int h = 0; h < nhandles; h++) {
    /* wait for the tasks writing it and bring the value home, then drop the device copies */
    if (starpu_data_acquire(handles[h], STARPU_R) != 0)
      return sproj_fail(SPROJ_ERR_STARPU, "release", "starpu_data_acquire failed");
    starpu_data_release(handles[h]);
    for (int g = 0; g < nnodes; g++)
      if (starpu_data_is_on_node(handles[h], nodes[g]) && starpu_data_evict_from_node(handles[h], nodes[g]) != 0)
        starpu_data_wont_use(handles[h]); /* still read by a running task: evict it first when memory is short */
  }
  return SPROJ_OK;
}
