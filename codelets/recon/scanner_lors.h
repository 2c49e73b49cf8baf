/* SPDX-License-Identifier: Apache-2.0 */
/* scanner_lors.h: a cylindrical scanner's sinogram LORs from their indices (host + CUDA): an index decoded into
 * (view, segment, axial, radial), the detector pair of that position, and the detectors' centres as endpoints. */
#ifndef SPROJ_SCANNER_LORS_H
#define SPROJ_SCANNER_LORS_H
#include <stdint.h>
#include "host_device.h"

#define SPROJ_TABLE_MAX_RINGS 256
#define SPROJ_TABLE_MAX_SEGMENTS (2 * SPROJ_TABLE_MAX_RINGS - 1)

/* Orders of the sinogram's LOR indices (the scanner's enum sproj_lor_order, as the table stores it). */
enum { SPROJ_TABLE_VIEW_SEGMENT = 0, SPROJ_TABLE_SEGMENT_VIEW = 1, SPROJ_TABLE_SEGMENT_AXIAL = 2 };

/* Everything the per-LOR math needs of a scanner, in one block of memory that tasks read (a StarPU vector of bytes):
 * this struct, followed by the detectors' transaxial centres det_x[num_detectors] and det_y[num_detectors]. */
struct sproj_scanner_table {
  int32_t num_detectors, num_rings, num_views, num_radial_bins, num_segments, num_planes, max_ring_difference, order;
  int32_t seg_at[SPROJ_TABLE_MAX_SEGMENTS];       /* segment stored at position i of the segment sequence */
  int32_t seg_pos[SPROJ_TABLE_MAX_SEGMENTS];      /* position of segment s, at s + max_ring_difference */
  int32_t plane_start[SPROJ_TABLE_MAX_SEGMENTS + 1]; /* planes of a view stored before position i */
  float ring_z[SPROJ_TABLE_MAX_RINGS];
};

SPROJ_HD const float *scanner_det_x(const struct sproj_scanner_table *scanner)
{
  return (const float *)(scanner + 1);
}

SPROJ_HD const float *scanner_det_y(const struct sproj_scanner_table *scanner)
{
  return (const float *)(scanner + 1) + scanner->num_detectors;
}

/* Index of a valid (view, segment, axial, radial). */
SPROJ_HD int64_t scanner_lor_index(const struct sproj_scanner_table *scanner, int v, int s, int a, int k)
{
  int64_t before = scanner->plane_start[scanner->seg_pos[s + scanner->max_ring_difference]];
  int64_t planes = scanner->num_rings - (s < 0 ? -s : s);
  if (scanner->order == SPROJ_TABLE_SEGMENT_VIEW)
    return (before * scanner->num_views + v * planes + a) * scanner->num_radial_bins + k;
  if (scanner->order == SPROJ_TABLE_SEGMENT_AXIAL)
    return ((before + a) * scanner->num_views + v) * scanner->num_radial_bins + k;
  return ((int64_t)v * scanner->num_planes + before + a) * scanner->num_radial_bins + k;
}

/* Position in the segment sequence of the segment whose planes (times per_plane) hold q. */
SPROJ_HD int scanner_sequence_position(const struct sproj_scanner_table *scanner, int64_t q, int64_t per_plane)
{
  int lo = 0, hi = scanner->num_segments - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (scanner->plane_start[mid] * per_plane <= q)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* (view, segment, axial, radial) of a valid index. */
SPROJ_HD void scanner_lor_position(const struct sproj_scanner_table *scanner, int64_t lor, int *v, int *s, int *a,
                                   int *k)
{
  int64_t q = lor / scanner->num_radial_bins;
  int pos;
  *k = (int)(lor % scanner->num_radial_bins);
  if (scanner->order == SPROJ_TABLE_SEGMENT_VIEW) {
    pos = scanner_sequence_position(scanner, q, scanner->num_views);
    int64_t rest = q - (int64_t)scanner->plane_start[pos] * scanner->num_views;
    int seg = scanner->seg_at[pos], planes = scanner->num_rings - (seg < 0 ? -seg : seg);
    *v = (int)(rest / planes);
    *a = (int)(rest % planes);
  } else if (scanner->order == SPROJ_TABLE_SEGMENT_AXIAL) {
    int64_t plane = q / scanner->num_views;
    *v = (int)(q % scanner->num_views);
    pos = scanner_sequence_position(scanner, plane, 1);
    *a = (int)(plane - scanner->plane_start[pos]);
  } else {
    int64_t plane = q % scanner->num_planes;
    *v = (int)(q / scanner->num_planes);
    pos = scanner_sequence_position(scanner, plane, 1);
    *a = (int)(plane - scanner->plane_start[pos]);
  }
  *s = scanner->seg_at[pos];
}

SPROJ_HD int scanner_floor_half(int j)
{
  return j >= 0 ? j / 2 : -((1 - j) / 2);
}

SPROJ_HD int scanner_wrap(int d, int n)
{
  return ((d % n) + n) % n;
}

/* The detector pair of a valid (view, segment, axial, radial): (ring_a, det_a) at xstart, (ring_b, det_b) at xend. */
SPROJ_HD void scanner_lor_pair(const struct sproj_scanner_table *scanner, int v, int s, int a, int k, int *ring_a,
                               int *det_a, int *ring_b, int *det_b)
{
  const int ndet = scanner->num_detectors;
  int j = k - scanner->num_radial_bins / 2, h = scanner_floor_half(j);
  *ring_a = a + (s < 0 ? -s : 0);
  *ring_b = *ring_a + s;
  *det_a = scanner_wrap(v + h, ndet);
  *det_b = scanner_wrap(v + ndet / 2 - (j - h), ndet);
}

/* A detector's centre. */
SPROJ_HD void scanner_point(const struct sproj_scanner_table *scanner, int ring, int det, float *x)
{
  x[0] = scanner_det_x(scanner)[det];
  x[1] = scanner_det_y(scanner)[det];
  x[2] = scanner->ring_z[ring];
}

/* The endpoints of a valid LOR index. */
SPROJ_HD void scanner_lor_endpoints(const struct sproj_scanner_table *scanner, int64_t lor, float *xs, float *xe)
{
  int v, s, a, k, ra, da, rb, db;
  scanner_lor_position(scanner, lor, &v, &s, &a, &k);
  scanner_lor_pair(scanner, v, s, a, k, &ra, &da, &rb, &db);
  scanner_point(scanner, ra, da, xs);
  scanner_point(scanner, rb, db, xe);
}
#endif
