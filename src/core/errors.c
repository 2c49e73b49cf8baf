/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c: status codes, their descriptions and the per-thread message of the last failure. */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include "shared.h"

static _Thread_local char last_error[512];

int sproj_fail(int code, const char *func, const char *fmt, ...)
{
  va_list ap;
  int len = snprintf(last_error, sizeof last_error, "%s: ", func);
  if (len < 0 || (size_t)len >= sizeof last_error)
    len = 0;
  va_start(ap, fmt);
  vsnprintf(last_error + len, sizeof last_error - (size_t)len, fmt, ap);
  va_end(ap);
  return code;
}

int sproj_fail_as(int code, const char *func)
{
  char why[sizeof last_error]; /* sproj_fail writes the message it reads */
  snprintf(why, sizeof why, "%s", last_error);
  return sproj_fail(code, func, "%s", why);
}

const char *sproj_last_error(void)
{
  return last_error;
}

const char *sproj_strerror(int status)
{
  switch (status) {
  case SPROJ_OK: return "success";
  case SPROJ_ERR_NULL: return "a required pointer argument is NULL";
  case SPROJ_ERR_DIMS: return "a dimension or count is zero or negative";
  case SPROJ_ERR_VOXEL_SIZE: return "a voxel size is not a finite number greater than 0";
  case SPROJ_ERR_NONFINITE: return "a coordinate or origin is NaN or infinite";
  case SPROJ_ERR_MISMATCH: return "objects that must belong together do not";
  case SPROJ_ERR_EMPTY: return "nothing to work on (zero LORs, chunks or elements)";
  case SPROJ_ERR_OVERFLOW: return "a size is too large";
  case SPROJ_ERR_RANGE: return "an index or range is outside its bounds, or ranges overlap";
  case SPROJ_ERR_NOT_INIT: return "starproj is not initialised (call sproj_init)";
  case SPROJ_ERR_NO_DEVICE: return "no such GPU or no worker of the requested kind";
  case SPROJ_ERR_NOMEM: return "out of host memory";
  case SPROJ_ERR_STARPU: return "StarPU refused or failed an operation";
  case SPROJ_ERR_BUSY: return "the object is still used by other objects";
  case SPROJ_ERR_INVALID: return "invalid argument";
  case SPROJ_ERR_TOF: return "a TOF parameter is out of its range";
  case SPROJ_ERR_IO: return "a file could not be read or written";
  case SPROJ_ERR_FORMAT: return "a file is not in the expected format";
  default: return "unknown status code";
  }
}
