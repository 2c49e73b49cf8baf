/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_check.c: sproj_init's refusal of GPUs the library holds no kernel image for, with a message naming the GPU. */
#include "config.h"
#include "internal.h"

/* compute capabilities the CUDA code was built for (configure's --with-cuda-arch) */
#ifdef SPROJ_CUDA_ARCHS
#define BUILT_FOR SPROJ_CUDA_ARCHS
#else
#define BUILT_FOR "none (built without CUDA)"
#endif

int sproj_cuda_image_status(int device, const struct sproj_cuda_device_info *info)
{
  if (info->result == SPROJ_CUDA_IMAGE_OK)
    return SPROJ_OK;
  if (info->result == SPROJ_CUDA_IMAGE_MISSING)
    return sproj_fail(SPROJ_ERR_NO_DEVICE, "sproj_init",
                      "GPU %d (%s, compute capability %d.%d) cannot run starproj's CUDA kernels (%s): the library was "
                      "built for compute capabilities %s, with PTX of the last; rebuild it with --with-cuda-arch "
                      "including %d%d, or leave this GPU out (sproj_config.ncuda, STARPU_NCUDA, "
                      "CUDA_VISIBLE_DEVICES)",
                      device, info->name, info->major, info->minor, info->error, BUILT_FOR, info->major,
                      info->minor);
  return sproj_fail(SPROJ_ERR_NO_DEVICE, "sproj_init",
                    "could not check whether GPU %d (%s, compute capability %d.%d) can run starproj's CUDA kernels: "
                    "%s", device, info->name, info->major, info->minor, info->error);
}

int sproj_check_cuda_images(void)
{
#ifdef SPROJ_USE_CUDA
  unsigned nworkers = starpu_worker_get_count();
  int checked[STARPU_MAXCUDADEVS] = {0};
  for (unsigned w = 0; w < nworkers; w++) {
    if (starpu_worker_get_type((int)w) != STARPU_CUDA_WORKER)
      continue;
    int devid = starpu_worker_get_devid((int)w);
    if (devid < 0 || devid >= STARPU_MAXCUDADEVS || checked[devid])
      continue;
    checked[devid] = 1;
    struct sproj_cuda_device_info info;
    sproj_cuda_image_check(devid, &info);
    int ret = sproj_cuda_image_status(devid, &info);
    if (ret)
      return ret;
  }
#endif
  return SPROJ_OK;
}
