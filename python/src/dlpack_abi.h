/* dlpack_abi.h: the DLPack C structures the extension consumes: DLPack 1.x ("dltensor_versioned" capsules) and the
 * legacy 0.x layout ("dltensor" capsules). */
#ifndef STARPROJ_PY_DLPACK_ABI_H
#define STARPROJ_PY_DLPACK_ABI_H

#include <stdint.h>

/* Written from the DLPack specification rather than vendored, so the extension builds without dlpack.h. A producer
 * asked with max_version=(1, 0) returns the versioned layout (which can say that the memory is read-only); older
 * producers, and __dlpack__() called without max_version, return the legacy one. */

enum sp_dl_device_type {
  SP_DL_CPU = 1,
  SP_DL_CUDA = 2,
  SP_DL_CUDA_HOST = 3,
  SP_DL_CUDA_MANAGED = 13
};

enum sp_dl_type_code {
  SP_DL_INT = 0,
  SP_DL_UINT = 1,
  SP_DL_FLOAT = 2
};

typedef struct {
  int32_t device_type;
  int32_t device_id;
} sp_dl_device;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} sp_dl_dtype;

typedef struct {
  void *data;
  sp_dl_device device;
  int32_t ndim;
  sp_dl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL means compact C order */
  uint64_t byte_offset;
} sp_dl_tensor;

typedef struct sp_dl_managed {
  sp_dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct sp_dl_managed *self);
} sp_dl_managed;

/* DLPack 1.x: the version comes first, so that a consumer can refuse a major version it does not know */
typedef struct {
  uint32_t major;
  uint32_t minor;
} sp_dl_version;

enum {
  SP_DL_FLAG_READ_ONLY = 1u << 0,
  SP_DL_FLAG_IS_COPIED = 1u << 1
};

typedef struct sp_dl_managed_v {
  sp_dl_version version;
  void *manager_ctx;
  void (*deleter)(struct sp_dl_managed_v *self);
  uint64_t flags;
  sp_dl_tensor dl_tensor;
} sp_dl_managed_v;

#endif
