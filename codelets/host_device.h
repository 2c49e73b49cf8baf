/* SPDX-License-Identifier: Apache-2.0 */
/* host_device.h: SPROJ_HD, which compiles the per-LOR and per-value functions of the codelet headers for the host
 * and, under nvcc, for the device too (the one source of truth of CPU and CUDA codelets alike), and the warp's shape
 * that device code shares. */
#ifndef SPROJ_HOST_DEVICE_H
#define SPROJ_HOST_DEVICE_H

#ifdef __CUDACC__
#define SPROJ_HD __host__ __device__ static inline
#else
#define SPROJ_HD static inline
#endif

/* Threads of a CUDA warp, and the mask of all of them for the *_sync intrinsics. */
#define SPROJ_WARP 32u
#define SPROJ_WARP_ALL 0xffffffffu

#endif
