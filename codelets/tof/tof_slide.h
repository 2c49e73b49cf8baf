/* SPDX-License-Identifier: Apache-2.0 */
/* tof_slide.h: a LOR's TOF bins kept beside its samples, sliding along with their windows (host + CUDA).
 *
 * The window of the sample in plane k starts at floor(k * at + bt - max_diff), which never decreases with k when at
 * > 0 and never increases when at < 0: along a LOR the windows slide one way over the bins, a bin every 1 / |at|
 * planes (7-9 planes on the benchmark scanner). So a thread can hold `width` bins from the current window's first
 * in registers: the forward projection adds each sample into them and writes a bin out once, when the windows have
 * slid past it (instead of a read-modify-write per sample and bin: ~1,100 per LOR of the benchmark subset); the back
 * projection reads a bin once, when the windows reach it (instead of once per sample: ~1,100 reads of 29 values).
 * `width` must be a constant after inlining (CUDA keeps the bins in registers only when every index is known); a
 * sample whose window holds more bins is projected the ordinary way. */
#ifndef SPROJ_TOF_SLIDE_H
#define SPROJ_TOF_SLIDE_H

#include "tof.h"

/* Most bins a thread keeps. */
#define SPROJ_TOF_SLIDE_MAX 16
/* Where the bins start before the first sample: so far below any window that the first one replaces them all. */
#define SPROJ_TOF_SLIDE_NOWHERE (-(1 << 30))

#ifdef __CUDA_ARCH__
#define SPROJ_TOF_SLIDE_UNROLL _Pragma("unroll")
#else
#define SPROJ_TOF_SLIDE_UNROLL
#endif

/* The widths the projectors are built for (a GPU kernel per width). */
#define SPROJ_TOF_SLIDE_NARROW 8
/* Bins a window of half-width max_diff holds at most, besides rounding: ceil(2 max_diff) + 2. */
#define SPROJ_TOF_SLIDE_EXTRA 2.0f

/* The width for a task's windows: SPROJ_TOF_SLIDE_NARROW when its windows (of one sigma) fit, else
 * SPROJ_TOF_SLIDE_MAX (per-LOR sigma, wider windows; those wider still are projected the ordinary way). */
SPROJ_HD int sproj_tof_slide_width(const struct sproj_tof_arg *tof)
{
  if (!tof->per_lor_sigma &&
      ceilf(2.0f * sproj_tof_max_diff(tof, tof->sigma)) + SPROJ_TOF_SLIDE_EXTRA <= (float)SPROJ_TOF_SLIDE_NARROW)
    return SPROJ_TOF_SLIDE_NARROW;
  return SPROJ_TOF_SLIDE_MAX;
}

/* bin[q] is bin first + q of the LOR. */
struct sproj_tof_slide {
  float bin[SPROJ_TOF_SLIDE_MAX];
  int first;
};

SPROJ_HD void sproj_tof_slide_start(struct sproj_tof_slide *w, int width)
{
  SPROJ_TOF_SLIDE_UNROLL
  for (int q = 0; q < width; q++)
    w->bin[q] = 0.0f;
  w->first = SPROJ_TOF_SLIDE_NOWHERE;
}

/* Bin q moves to q - 1 (down: the windows slide up the bins) or q + 1; the bin that comes in is `in`. */
SPROJ_HD void sproj_tof_slide_down(struct sproj_tof_slide *w, int width, float in)
{
  SPROJ_TOF_SLIDE_UNROLL
  for (int q = 0; q + 1 < width; q++)
    w->bin[q] = w->bin[q + 1];
  w->bin[width - 1] = in;
}

SPROJ_HD void sproj_tof_slide_up(struct sproj_tof_slide *w, int width, float in)
{
  SPROJ_TOF_SLIDE_UNROLL
  for (int q = width - 1; q > 0; q--)
    w->bin[q] = w->bin[q - 1];
  w->bin[0] = in;
}

/* Adds v into bin b of out (bin b at out[b * stride]) when b is one of its num_bins. */
SPROJ_HD void sproj_tof_slide_put(float *out, unsigned stride, int num_bins, int b, float v)
{
  if (b >= 0 && b < num_bins)
    out[b * stride] += v;
}

/* Forward: moves the bins to start at `first`, adding those that leave into out. Each bin leaves once (the windows
 * never come back), so out gets 0 + its sum over the samples, in the samples' order. */
SPROJ_HD void sproj_tof_slide_flush_to(struct sproj_tof_slide *w, int first, int width, int num_bins, float *out,
                                       unsigned stride)
{
  if (w->first == first)
    return;
  if (first - w->first >= width || w->first - first >= width) {
    SPROJ_TOF_SLIDE_UNROLL
    for (int q = 0; q < width; q++) {
      sproj_tof_slide_put(out, stride, num_bins, w->first + q, w->bin[q]);
      w->bin[q] = 0.0f;
    }
    w->first = first;
    return;
  }
  for (; w->first < first; w->first++) {
    sproj_tof_slide_put(out, stride, num_bins, w->first, w->bin[0]);
    sproj_tof_slide_down(w, width, 0.0f);
  }
  for (; w->first > first; w->first--) {
    sproj_tof_slide_put(out, stride, num_bins, w->first + width - 1, w->bin[width - 1]);
    sproj_tof_slide_up(w, width, 0.0f);
  }
}

SPROJ_HD void sproj_tof_slide_flush_all(struct sproj_tof_slide *w, int width, int num_bins, float *out,
                                        unsigned stride)
{
  SPROJ_TOF_SLIDE_UNROLL
  for (int q = 0; q < width; q++)
    sproj_tof_slide_put(out, stride, num_bins, w->first + q, w->bin[q]);
}

/* Bin b of p, 0 outside its num_bins. */
SPROJ_HD float sproj_tof_slide_get(const float *p, int num_bins, int b)
{
  return b >= 0 && b < num_bins ? p[b] : 0.0f;
}

/* Back: moves the bins to start at `first`, reading those that come in from p. */
SPROJ_HD void sproj_tof_slide_load_to(struct sproj_tof_slide *w, int first, int width, int num_bins, const float *p)
{
  if (w->first == first)
    return;
  if (first - w->first >= width || w->first - first >= width) {
    SPROJ_TOF_SLIDE_UNROLL
    for (int q = 0; q < width; q++)
      w->bin[q] = sproj_tof_slide_get(p, num_bins, first + q);
    w->first = first;
    return;
  }
  for (; w->first < first; w->first++)
    sproj_tof_slide_down(w, width, sproj_tof_slide_get(p, num_bins, w->first + width));
  for (; w->first > first; w->first--)
    sproj_tof_slide_up(w, width, sproj_tof_slide_get(p, num_bins, w->first - 1));
}

/* Edges 0 .. n of the sample's window into e (a GPU computes all width + 1, those past n left unused, so that every
 * index is a constant); returns edge n. With the table a GPU reads edge n once more (one load and a cubic, the same
 * bits) instead of picking it out of the width + 1 (a compare and a select each); with erff it picks. */
SPROJ_HD float sproj_tof_slide_edges(const struct sproj_tof_sample *s, const struct sproj_tof_line *l, int width,
                                     float e[SPROJ_TOF_SLIDE_MAX + 1])
{
#ifdef __CUDA_ARCH__
  float last = 0.0f;
  SPROJ_TOF_SLIDE_UNROLL
  for (int q = 0; q <= width; q++) {
    e[q] = sproj_tof_sample_edge(s, l, q);
    if (!l->tabbed && q == s->n)
      last = e[q];
  }
  return l->tabbed ? sproj_tof_sample_edge(s, l, s->n) : last;
#else
  (void)width;
  for (int q = 0; q <= s->n; q++)
    e[q] = sproj_tof_sample_edge(s, l, q);
  return e[s->n];
#endif
}

#endif
