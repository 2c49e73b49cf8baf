/* scanner.h: a polygonal ring PET scanner and its sinogram LORs, for the demo and the benchmarks (not part of the
 * library's API). */
#ifndef SPROJ_EXAMPLES_SCANNER_H
#define SPROJ_EXAMPLES_SCANNER_H

#include <stdint.h>

#define SCANNER_MAX_RINGS 128

struct scanner {
  int nsides, per_side;     /* regular polygon of nsides modules with per_side detectors each */
  double spacing, radius;   /* detector pitch along a module; distance of the modules from the axis */
  int nrings;
  double ring_z[SCANNER_MAX_RINGS];
  int nrad;                 /* radial bins of the sinogram (odd) */
};

/* parallelproj's benchmark scanner (Siemens Biograph Vision 600-like): 544 detectors x 36 rings, 415 radial bins */
void scanner_vision600(struct scanner *s);
/* a small scanner for the demo: 128 detectors x 8 rings, 65 radial bins */
void scanner_small(struct scanner *s);

int scanner_detectors_per_ring(const struct scanner *s);
int scanner_views(const struct scanner *s);
/* planes of the sinogram: every ring pair, grouped by ring difference (segment) -(nrings-1) .. nrings-1 */
int scanner_planes(const struct scanner *s);
int scanner_segments(const struct scanner *s);
/* planes in segment seg (0 .. segments-1, ring difference seg - (nrings-1)) */
int scanner_segment_planes(const struct scanner *s, int seg);
int64_t scanner_num_lors(const struct scanner *s);
int64_t scanner_lors_per_view(const struct scanner *s);
/* first LOR of (view, segment) in the sinogram order [view][segment][axial][radial] */
int64_t scanner_first_lor(const struct scanner *s, int view, int seg);

/* Fills xstart/xend (3 floats per LOR) for the whole sinogram, using nthreads threads. */
void scanner_sinogram_lors(const struct scanner *s, float *xstart, float *xend, int nthreads);
/* The same for the listed views only, one after the other. */
void scanner_views_lors(const struct scanner *s, const int *views, int nviews, float *xstart, float *xend,
                        int nthreads);
/* n LORs of the sinogram drawn at random (view, ring pair, radial bin). */
void scanner_random_lors(const struct scanner *s, int64_t n, uint64_t seed, float *xstart, float *xend);

#endif
