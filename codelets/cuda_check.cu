/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_check.cu: asks the CUDA runtime whether this build of the library holds a kernel image a given GPU can run. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "codelets.h"

/* Never launched. Every .cu file of the library is compiled with the same -gencode list, so this kernel has an
 * image for a GPU (machine code, or PTX the driver can compile for it) exactly when the projectors have one. */
__global__ static void sproj_probe_kernel(int *out)
{
  if (out)
    *out = 0;
}

extern "C" int sproj_cuda_image_check(int device, struct sproj_cuda_device_info *info)
{
  memset(info, 0, sizeof *info);
  int previous = 0;
  cudaError_t err = cudaGetDevice(&previous);
  if (err == cudaSuccess)
    err = cudaSetDevice(device);
  if (err == cudaSuccess) {
    cudaDeviceGetAttribute(&info->major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&info->minor, cudaDevAttrComputeCapabilityMinor, device);
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
      snprintf(info->name, sizeof info->name, "%s", prop.name);
    struct cudaFuncAttributes attr;
    err = cudaFuncGetAttributes(&attr, sproj_probe_kernel);
    cudaSetDevice(previous);
  }
  if (err == cudaSuccess) {
    info->result = SPROJ_CUDA_IMAGE_OK;
  } else {
    /* the runtime reports a missing image as one of two codes, depending on its version */
    info->result = err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction
                     ? SPROJ_CUDA_IMAGE_MISSING : SPROJ_CUDA_IMAGE_ERROR;
    snprintf(info->error, sizeof info->error, "%s", cudaGetErrorName(err));
    cudaGetLastError(); /* leave no sticky error behind for StarPU's next CUDA call on this thread */
  }
  return info->result;
}
