/* SPDX-License-Identifier: Apache-2.0 */
/* values_gather.h: one value taken from its place in another order (host + CUDA): out[i] = the source value at
 * position pos[i] of the sources read one after the other, where the sources are the pieces of a whole-set chunking
 * (equal pieces, the first `extra` of them one value longer). What a LOR set's held order (src/core/held.c) uses to
 * bring values projected in its order into the caller's, and the caller's into its order. */
#ifndef SPROJ_VALUES_GATHER_H
#define SPROJ_VALUES_GATHER_H
#include <stdint.h>
#include "host_device.h"

/* Most source pieces one gather task reads (bounded by the CUDA kernel parameter table). */
#define SPROJ_GATHER_MAX_SOURCES 256

/* The pieces of the sources: `pieces` of base values each, the first `extra` of them base + 1. */
struct sproj_gather_arg {
  uint64_t base, extra;
  int nsources;
};

/* Position pos of the sources as (piece, place in it): the piece is returned, the place written to *at. */
SPROJ_HD unsigned sproj_gather_piece(uint64_t pos, uint64_t base, uint64_t extra, uint64_t *at)
{
  uint64_t long_end = extra * (base + 1u);
  if (pos < long_end) {
    uint64_t q = pos / (base + 1u);
    *at = pos - q * (base + 1u);
    return (unsigned)q;
  }
  /* base > 0 here: with base 0 every piece is one of the `extra` long ones, and every position lies below long_end */
  uint64_t q = (pos - long_end) / base;
  *at = pos - long_end - q * base;
  return (unsigned)(extra + q);
}

/* The value at position pos of the sources src[0 .. nsources-1]. */
SPROJ_HD float sproj_gather_value(const float *const *src, uint64_t base, uint64_t extra, uint32_t pos)
{
  uint64_t at;
  unsigned q = sproj_gather_piece(pos, base, extra, &at);
  return src[q][at];
}
#endif
