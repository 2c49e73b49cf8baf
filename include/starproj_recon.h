/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_recon.h: scanner geometry, forward models and ML-EM / OS-EM reconstruction, phantoms and simulated
 * data (in libstarproj, beside the projector runtime of starproj.h). */
#ifndef STARPROJ_RECON_H
#define STARPROJ_RECON_H

#include "starproj.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scanner geometry -------------------------------------------------------------------------------- */
/* Cylindrical PET scanners: num_rings rings, each a regular polygon of num_modules flat modules (the polygon's sides,
 * at distance radius from the axis z) with detectors_per_module detectors each, detector_pitch apart, centred on
 * the module. Module m's centre lies at angle 2*pi*m/num_modules from the x axis; detector d of a ring
 * (0 .. num_modules*detectors_per_module - 1) is detector d % detectors_per_module of module d / detectors_per_module,
 * detectors numbered counter-clockwise (towards increasing angle) within and across modules. Ring r lies at
 * z = ring_z[r]. Units: those of the images (millimetres in the presets).
 *
 * Its sinogram (span 1, no arc correction, interleaved):
 * - views v = 0 .. D/2 - 1 (D = detectors per ring), radial bins k = 0 .. num_radial_bins - 1;
 *   with j = k - num_radial_bins/2 and h = floor(j/2), the LOR of (v, k) joins detector (v + h) mod D (at xstart)
 *   and detector (v + D/2 - (j - h)) mod D (at xend): bin num_radial_bins/2 passes through the axis and each
 *   radial step moves one of the two detectors by one;
 * - segments s = -max_ring_difference .. +max_ring_difference: the ring pairs with ring(xend) - ring(xstart) = s;
 *   axial positions a = 0 .. num_rings - |s| - 1 within a segment: ring(xstart) = a + max(0, -s), so a is the lower
 *   of the two rings (as STIR numbers them). The planes of a view are its (segment, axial) pairs.
 * - LOR index, by the layout's order (radial bins always fastest; segments in the layout's segment sequence):
 *     SPROJ_ORDER_VIEW_SEGMENT     [view][segment][axial][radial]  a view, and a viewgram, is one range
 *     SPROJ_ORDER_SEGMENT_VIEW     [segment][view][axial][radial]  STIR's "by view" order: a viewgram is one range
 *     SPROJ_ORDER_SEGMENT_AXIAL    [segment][axial][view][radial]  STIR's "by sinogram" order: a viewgram is one
 *                                                                  range of num_radial_bins LORs per axial position
 * Number of LORs: views x radial bins x planes, planes = sum over s of (num_rings - |s|).
 * A scanner object is immutable: every call on it may run from any number of threads at once. None of the calls
 * below needs sproj_init, except those that make chunkings. */
#define SPROJ_MAX_RINGS 256
#define SPROJ_MAX_DETECTORS_PER_RING (1 << 20)

enum sproj_lor_order {
  SPROJ_ORDER_VIEW_SEGMENT = 0,   /* [view][segment][axial][radial] (default; the benchmarks' order) */
  SPROJ_ORDER_SEGMENT_VIEW = 1,   /* [segment][view][axial][radial] */
  SPROJ_ORDER_SEGMENT_AXIAL = 2   /* [segment][axial][view][radial] (the "framework order") */
};
enum sproj_segment_sequence {
  SPROJ_SEGMENTS_ASCENDING = 0,   /* -max, ..., -1, 0, 1, ..., max (default) */
  SPROJ_SEGMENTS_ZERO_PLUS = 1,   /* 0, +1, -1, +2, -2, ... (STIR's standard sequence) */
  SPROJ_SEGMENTS_ZERO_MINUS = 2   /* 0, -1, +1, -2, +2, ... (ECAT / Siemens files) */
};

struct sproj_scanner_params {
  int num_modules;            /* sides of the polygon, >= 3 */
  int detectors_per_module;   /* >= 1; detectors per ring (num_modules * detectors_per_module) even, <= 2^20 */
  double detector_pitch;      /* > 0; a module's detectors must fit on its side: detectors_per_module * pitch <=
                               * 2 * radius * tan(pi / num_modules) */
  double radius;              /* distance of the modules from the axis, > 0 */
  int num_rings;              /* 1 .. SPROJ_MAX_RINGS */
  double ring_z[SPROJ_MAX_RINGS]; /* axial position of each ring, strictly increasing (entries past num_rings unused) */
  int num_radial_bins;        /* 1 .. D - 1, at most D - 1 so that no LOR joins a detector to itself */
  int max_ring_difference;    /* 0 .. num_rings - 1; -1: num_rings - 1 (every ring pair) */
  int order;                  /* enum sproj_lor_order */
  int segment_sequence;       /* enum sproj_segment_sequence */
};
typedef struct sproj_scanner sproj_scanner;

/* Fills params with a named scanner: "small" (16 modules x 8 detectors = 128 per ring, pitch 4, radius 90, 8 rings
 * 4 mm apart centred on 0, 65 radial bins: 64 views x 65 x 64 planes = 266240 LORs, for tests and the demo) or
 * "vision600" (parallelproj's benchmark scanner, Siemens Biograph Vision 600-like: 34 modules x 16 = 544 per ring,
 * pitch 4.03125 mm, radius 0.5 * (744.1 + 2 * 8.51) mm, 36 rings at 5.31556 * r + 2.8 * floor(r / 9) mm centred on 0
 * (their mean), 415 radial bins: 272 views x 415 x 1296 planes = 146292480 LORs). Every ring pair, order
 * SPROJ_ORDER_VIEW_SEGMENT, segments ascending; change fields before sproj_scanner_create as wanted.
 * Errors: NULL, INVALID (unknown name: params untouched). */
SPROJ_API int sproj_scanner_preset(const char *name, struct sproj_scanner_params *params);
/* Checks params and makes a scanner object (the caller frees it with sproj_scanner_destroy).
 * Errors: NULL, DIMS (a count < 1), NONFINITE (pitch, radius, ring_z), RANGE (a count too large, odd detectors per
 * ring, detectors that do not fit on a module, rings not increasing, too many radial bins, max_ring_difference),
 * INVALID (order, segment_sequence), NOMEM. */
SPROJ_API int sproj_scanner_create(sproj_scanner **scanner, const struct sproj_scanner_params *params);
/* Frees a scanner (NULL: no-op). Chunkings made from it stay valid. */
SPROJ_API int sproj_scanner_destroy(sproj_scanner *scanner);
/* The parameters the scanner was made with (max_ring_difference resolved: never -1). */
SPROJ_API int sproj_scanner_params(const sproj_scanner *scanner, struct sproj_scanner_params *params);

/* Sizes of a scanner's sinogram. */
struct sproj_sinogram_info {
  int num_detectors;          /* per ring (D) */
  int num_rings;
  int num_views;              /* D / 2 */
  int num_radial_bins;
  int max_ring_difference;    /* segments -max .. +max */
  int num_segments;           /* 2 * max + 1 */
  int num_planes;             /* (segment, axial) pairs of a view */
  int64_t lors_per_view;      /* num_planes * num_radial_bins */
  int64_t num_lors;           /* num_views * lors_per_view */
};
SPROJ_API int sproj_scanner_info(const sproj_scanner *scanner, struct sproj_sinogram_info *info);
/* Axial positions of segment s (num_rings - |s|). Errors: NULL, RANGE (segment). */
SPROJ_API int sproj_scanner_segment_planes(const sproj_scanner *scanner, int segment, int *num_planes);
/* LOR index of (view, segment, axial, radial) in the scanner's order, and back. Errors: NULL, RANGE (an index
 * outside the sinogram; outputs untouched). */
SPROJ_API int sproj_scanner_lor_index(const sproj_scanner *scanner, int view, int segment, int axial, int radial, int64_t *lor);
SPROJ_API int sproj_scanner_lor_position(const sproj_scanner *scanner, int64_t lor, int *view, int *segment, int *axial,
                                         int *radial);

/* Endpoints of LORs (3 floats per LOR each: xstart at the detector of ring(xstart), xend at the other), computed
 * in double and rounded to float:
 * - sproj_scanner_lors: the whole sinogram, num_lors LORs in the scanner's order;
 * - sproj_scanner_view_lors: the listed views one after the other, each view's lors_per_view LORs in the order
 *   [segment][axial][radial] (the same in every order): a view subset's own LOR set;
 * - sproj_scanner_lors_at: the LORs of n given indices.
 * nthreads: host threads that fill (0: one per online core). Errors: NULL, RANGE (a view or index), DIMS (n,
 * nthreads or num_views negative), NOMEM. */
SPROJ_API int sproj_scanner_lors(const sproj_scanner *scanner, float *xstart, float *xend, int nthreads);
SPROJ_API int sproj_scanner_view_lors(const sproj_scanner *scanner, const int *views, int num_views, float *xstart,
                                      float *xend, int nthreads);
SPROJ_API int sproj_scanner_lors_at(const sproj_scanner *scanner, int64_t n, const int64_t *lor, float *xstart, float *xend);

/* The scanner's sinogram LORs as a LOR set made where they are used: its endpoints are written by a task (the
 * per-LOR math of sproj_scanner_lors, the same floats) on a GPU when StarPU has one (the set's home is then the first
 * GPU's memory, which it holds until it is freed; the endpoints never exist on the host unless sproj_lors_copy asks
 * for them), else on the host's cores now. The set owns its memory; with it comes its
 * chunking of one chunk per view (sproj_scanner_chunks_views), on which the LORs are made. Free both with
 * sproj_chunks_destroy and sproj_lors_unregister. flags: 0, or SPROJ_LORS_BY_TASK (a task even without a GPU, on a
 * CPU worker: one core; for tests and small scanners). Errors: NULL, NOT_INIT, DIMS (more than 2^32-1 LORs), NOMEM,
 * STARPU. */
#define SPROJ_LORS_BY_TASK 1
SPROJ_API int sproj_scanner_lors_create(const sproj_scanner *scanner, int flags, sproj_lors **lors,
                                        sproj_chunks **views);
/* Listmode events of the scanner's sinogram LORs, made the same way: event e lies on LOR lor[e] (its endpoints written
 * by a task on a GPU from the indices, which go there instead of 24 bytes of endpoints per event; else on the host's
 * cores now), with TOF bin tof_bin[e] when tof_bin is not NULL (as sproj_lors_register_events: read, never written,
 * valid until the set is freed; lor may be freed on return). Every index and bin is checked first on the host's cores.
 * Errors: NULL, NOT_INIT, EMPTY, DIMS (more than 2^32-1 events), INVALID (flags), RANGE (an index outside the sinogram
 * or a negative bin: nothing made), NOMEM, STARPU. */
SPROJ_API int sproj_scanner_events_create(const sproj_scanner *scanner, const int32_t *lor, const int16_t *tof_bin,
                                          int64_t num_events, int flags, sproj_lors **events);

/* Chunkings of a LOR set registered from sproj_scanner_lors (its LOR count must be the sinogram's, else MISMATCH):
 * - views: chunk v = view v (one range in SPROJ_ORDER_VIEW_SEGMENT; num_planes ranges in the others);
 * - viewgrams: chunk v * num_segments + (s + max_ring_difference) = view v of segment s;
 * - subsets: chunk t (0 .. num_subsets - 1) = views t, t + num_subsets, t + 2 * num_subsets, ... (RANGE if
 *   num_subsets > num_views). sproj_scanner_subset_views gives those views (= chunk indices of the views chunking,
 *   for sproj_fwd_chunks lists) in views[] (room for (num_views + num_subsets - 1) / num_subsets) and their number.
 * Errors: NULL, NOT_INIT, MISMATCH, RANGE / DIMS (num_subsets, subset), those of sproj_chunks_create_lists. */
SPROJ_API int sproj_scanner_chunks_views(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors);
SPROJ_API int sproj_scanner_chunks_viewgrams(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors);
SPROJ_API int sproj_scanner_chunks_subsets(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors,
                                           int num_subsets);
SPROJ_API int sproj_scanner_subset_views(const sproj_scanner *scanner, int num_subsets, int subset, int *views, int *num_views);

/* Detector pairs (listmode events): detector det_a of ring ring_a and detector det_b of ring ring_b.
 * - sproj_scanner_pair_lors: xstart = detector a's position, xend = detector b's, for n pairs, exactly the floats
 *   of the sinogram LOR of the same detectors (when it is one). A TOF bin of an event given as such a pair is
 *   numbered from detector a's side: it needs no change (see sproj_tof_bins_from_centered for other numberings).
 * - sproj_scanner_lor_pairs: the detector pair of n sinogram LOR indices (a at xstart, b at xend).
 * - sproj_scanner_pair_lor: the sinogram LOR of one pair and *swapped = 1 when its xstart is detector b (the
 *   pair's TOF bins then count from the other end: b' = num_tof_bins - 1 - b); RANGE when the pair is in no LOR of
 *   the sinogram (radial bin or ring difference outside it, or both detectors the same).
 * Errors: NULL, DIMS (n < 0), RANGE (a ring, detector or LOR index outside the scanner; outputs untouched). */
struct sproj_det_pair {
  int32_t ring_a, det_a, ring_b, det_b;
};
SPROJ_API int sproj_scanner_pair_lors(const sproj_scanner *scanner, int64_t n, const struct sproj_det_pair *pairs,
                                      float *xstart, float *xend);
SPROJ_API int sproj_scanner_lor_pairs(const sproj_scanner *scanner, int64_t n, const int64_t *lor,
                                      struct sproj_det_pair *pairs);
SPROJ_API int sproj_scanner_pair_lor(const sproj_scanner *scanner, const struct sproj_det_pair *pair, int64_t *lor,
                                     int *swapped);

/* TOF bin numbering. starproj numbers the num_tof_bins bins 0 .. num_tof_bins - 1 from xstart's side; frameworks
 * (STIR) number them around the centre: c = b - num_tof_bins / 2 (integer division), i.e. -(n-1)/2 .. (n-1)/2 for
 * odd n. reverse = 1: the centred numbering counts from xend's side (c = (n - 1 - b) - n/2). n values are converted
 * from in to out (which may be the same array). Errors: NULL, DIMS (n < 0), TOF (num_tof_bins outside
 * 1 .. SPROJ_MAX_TOF_BINS), RANGE (a value outside its numbering: nothing written). Thread-safe. */
SPROJ_API int sproj_tof_bins_from_centered(int64_t n, const int16_t *centered, int16_t *bins, int num_tof_bins, int reverse);
SPROJ_API int sproj_tof_bins_to_centered(int64_t n, const int16_t *bins, int16_t *centered, int num_tof_bins, int reverse);

/* ---- forward model and reconstruction ---------------------------------------------------------------- */
/* A forward model: expected counts ybar = m * (A G x) + a for the LORs of a set, where A is the non-TOF, TOF-sinogram
 * or TOF-listmode projector, m a multiplicative factor per LOR (attenuation x normalisation; NULL: 1), a an additive
 * background (randoms + scatter; NULL: 0) with one value per LOR, or per LOR and TOF bin ([lor][bin]) for a TOF
 * sinogram, and G an optional image-space Gaussian resolution model (separable, zero outside the image, kernel cut
 * at 3 sigma, normalised to sum 1; applied before forward and, as its own adjoint, after back projection). */
typedef struct sproj_model sproj_model;

/* Creates a model on the LORs of lors (a sinogram LOR set, or listmode events). tof NULL: non-TOF projector (events
 * registered with bins are then projected without them); tof given: TOF listmode for events registered with
 * sproj_lors_register_events, TOF sinogram otherwise. mult (one float per LOR) and add (one per LOR, or tof's
 * num_bins per LOR for a TOF sinogram) may be NULL; they are read, never written, registered as read-only per-LOR
 * vectors chunked like the LORs, and must stay valid until sproj_model_destroy. fwhm_mm: NULL or the FWHM of the
 * resolution model along the three image axes, in the units of the LORs (0: no blur along that axis). The model
 * keeps lors and tof in use (unregister them after sproj_model_destroy). Thread safety: create and destroy one
 * model from one thread; a model may serve several reconstructions.
 * Errors: NULL (model, lors), NOT_INIT, NONFINITE (a NaN / infinite factor, background or FWHM), RANGE (a negative
 * factor, background or FWHM; an event bin beyond tof's bins), MISMATCH (tof's per-LOR parameters of another set),
 * NOMEM. */
SPROJ_API int sproj_model_create(sproj_model **model, sproj_lors *lors, const float *mult, const float *add, const sproj_tof *tof,
                                 const float fwhm_mm[3]);
/* A background of one value for every value of the model (every LOR, TOF bin or listmode event) in place of an
 * array: for a model created without one (add NULL), before a reconstruction uses it. A flat randoms estimate of a
 * listmode simulation then takes no 4 bytes per event. Errors: NULL, NOT_INIT, INVALID (the model has a background
 * array), NONFINITE, RANGE (negative), BUSY (a reconstruction uses the model). */
SPROJ_API int sproj_model_set_flat_background(sproj_model *model, float value);
/* As sproj_model_create, for a TOF sinogram whose background is uniform along the LOR's time axis: add holds one
 * value per LOR, the LOR's background summed over its TOF bins, and each bin's background is add[l] / num_bins (in
 * float). Randoms are uniform in time, a smooth scatter estimate nearly so; one float per LOR instead of one per
 * bin saves 16 GB host memory on the benchmark scanner's 146 M LORs x 29 bins. For non-TOF and listmode models
 * (one value per LOR anyway) it is sproj_model_create. Errors: as sproj_model_create. */
SPROJ_API int sproj_model_create_tof_uniform_add(sproj_model **model, sproj_lors *lors, const float *mult,
                                                 const float *add, const sproj_tof *tof, const float fwhm_mm[3]);
/* dst = G src, G the resolution model's Gaussian (separable, FWHM fwhm_mm along the three axes in the units of the
 * images, 0: none along that axis; zero outside the image, cut at 3 sigma, normalised to sum 1), computed by a task
 * on the devices, as the models apply it: to simulate data blurred as a model with that FWHM assumes. Returns at once
 * (sync dst to read it); dst is overwritten. Errors: NULL, NOT_INIT, INVALID (dst == src), MISMATCH (sizes or voxel
 * sizes differ), NONFINITE, RANGE (a negative FWHM, or one whose kernel spans more than 64 voxels each side), NOMEM,
 * STARPU. */
SPROJ_API int sproj_image_blur(sproj_image *dst, sproj_image *src, const float fwhm_mm[3]);
/* Frees the model (NULL: no-op). SPROJ_ERR_BUSY while a reconstruction uses it. */
SPROJ_API int sproj_model_destroy(sproj_model *model);

/* Simulated sinogram data through a model (not a listmode model), computed where the data live: with GPUs the data
 * never need to exist on the host. out and chunks belong to the model's LOR set, out holds the model's values per LOR.
 *
 * sproj_model_expected: out = A G img, the projection of img (blurred by the model's resolution G when it has one) by
 * the model's projector (TOF sinogram with its TOF parameters), over every chunk; the image must be finite and >= 0
 * (checked on the host first). With trues non-NULL it waits and returns sum(m A G img), the trues img yields, in
 * double (partial sums added in a fixed order: the same value on every run of the same workers).
 * sproj_model_draw: data = Poisson(scale * m * data + a) per value (float operations in that order; a as the model
 * spreads it over TOF bins), or with noise 0 those expected counts; the draws are those of sproj_poisson (exact
 * samplers, one counter-based stream per value from seed and the value's index), so they depend on the seed and the
 * expected counts only: the same on CPU cores and GPUs, whatever the chunking or the number of workers. With lor_sums
 * (a projection vector of one value per LOR of the model's LORs) each LOR's data summed over its bins go there too.
 * Asynchronous: sync data (or lor_sums) to read them on the host; sproj_proj_discard drops data without bringing it
 * home. Data drawn from sproj_model_expected's projection need no check on the host in sproj_recon_create.
 * Errors: NULL, INVALID (listmode model; lor_sums is data), MISMATCH (LOR sets, values per LOR), NONFINITE and RANGE
 * (image values; scale not finite or < 0; a FWHM too wide for the image), NOMEM, STARPU. */
SPROJ_API int sproj_model_expected(const sproj_model *model, sproj_image *img, sproj_proj *out, const sproj_chunks *chunks,
                                   double *trues);
SPROJ_API int sproj_model_draw(const sproj_model *model, sproj_proj *data, const sproj_chunks *chunks, float scale,
                               uint64_t seed, int noise, sproj_proj *lor_sums);
/* Listmode events drawn where the data live: sproj_model_draw(model, data, chunks, scale, seed, 1, ...) (data become the
 * Poisson counts), then one event per count, in the order of the values (LOR, then TOF bin) as
 * sproj_sample_listmode_sorted gives them for the same expected counts: each LOR's number of events comes home (one
 * value per LOR), each event's TOF bin is written by tasks where the counts are (for a TOF sinogram model and a
 * non-NULL tof_bin; else *tof_bin is NULL), so the counts themselves never come home. The chunks must not overlap.
 * *lor and *tof_bin: new arrays of *num_events elements (sproj_free). Waits. Errors: as sproj_model_draw, plus NULL
 * (lor, num_events), OVERFLOW (more than 2^31-1 LORs, or events in one piece), INVALID (overlapping chunks). */
SPROJ_API int sproj_model_draw_events(const sproj_model *model, sproj_proj *data, const sproj_chunks *chunks, float scale,
                                      uint64_t seed, int32_t **lor, int16_t **tof_bin, int64_t *num_events);

/* An ML-EM / OS-EM reconstruction: x <- x / s_k * G^T A^T (m y / ybar) over the LORs of subset k, one update per
 * subset, S subsets per iteration (MLEM: S = 1). Sinogram data y (non-TOF or TOF) or listmode (y = 1 per event, with
 * per-event m and a). Every step of a subset (blur, forward projection, ratio, back projection into a zeroed image,
 * blur, update) is a StarPU task with CPU and CUDA implementations; a whole iteration is submitted at once and
 * ordered by StarPU's sequential consistency, so the image and every intermediate stay where they are computed
 * (on the GPUs) until the caller asks for them. The sensitivities s_k = G^T A^T m are computed once, at create,
 * with the non-TOF back projector (TOF weights are normalised, so this equals the sum over TOF bins where the bins
 * cover the part of each LOR inside the image) and stay resident. Where ybar <= 0 the ratio m y / ybar is taken as
 * 0 (the limit 0/0 = 0 for y = 0; for y > 0 such a value has an infinite likelihood term and no direction to move);
 * voxels where s_k is 0 (no LOR of subset k reaches them) are set to 0; the image never becomes negative. */
typedef struct sproj_recon sproj_recon;

struct sproj_recon_config {
  const sproj_model *model;   /* forward model of the data (required) */
  sproj_proj *data;           /* measured counts y on model's LOR set: one value per LOR, or [lor][bin] for a TOF
                               * sinogram; finite and >= 0. NULL: listmode, y = 1 per LOR (event) */
  const sproj_chunks *chunks; /* chunking of model's LOR set (required); subsets are lists of its chunks */
  int num_subsets;            /* S >= 1, at most the number of chunks */
  const int *subset_chunks;   /* NULL: interleaved, chunk c belongs to subset c % S (e.g. one chunk per view: subset s
                               * = views s, s + S, ...). Else the chunk indices of subset 0, then of subset 1, ... */
  const int *subset_sizes;    /* with subset_chunks: the number of chunks of each of the S subsets (each >= 1) */
  const sproj_model *sens_model;   /* LORs and m the sensitivity is back-projected from (listmode: the scanner's
                                    * sinogram LOR set with its m; required). NULL with sinogram data: model */
  const sproj_chunks *sens_chunks; /* NULL: one sensitivity of the whole sens_model LOR set, used divided by S (with
                                    * sinogram data and no sens_model: the data's own subsets, one each). Else a
                                    * chunking of sens_model's LOR set: one sensitivity per subset, from the lists below */
  const int *sens_subset_chunks;   /* with sens_chunks: as subset_chunks (NULL: interleaved) */
  const int *sens_subset_sizes;    /* as subset_sizes */
  int objective;                   /* 1: compute the objective after every iteration and pass it to the callback */
  float max_ratio;                 /* 0 (default): the quotients below as written. > 0, finite: the rule STIR's
                                    * Poisson objective functions follow (STIR uses 10000): y = 0 gives a quotient of
                                    * 0, every quotient is at most max_ratio, and the objective takes ybar as at least
                                    * y / max_ratio (so no term is infinite) */
  float small_fraction;            /* 0 (default): no rule. In [0, 1) (STIR: 1e-6), sinogram data only: STIR's
                                    * small-value rule (its divide_and_truncate and accumulate_loglikelihood, applied
                                    * per viewgram): a term whose numerator as STIR writes it -- the count y for the
                                    * gradient's ratio and the objective, y times the direction's forward value for
                                    * the Hessian, that forward value for the approximate Hessian -- is at or below
                                    * small_fraction times the largest such numerator of its chunk (per TOF bin)
                                    * counts as having a zero numerator: 0 in the ratios and Hessians, ybar alone in
                                    * the objective. The data's largest values are taken at create, the Hessians' at
                                    * each call (a pass over the subset's values and a reduction before its terms).
                                    * The reconstruction then keeps the caller's chunks on several devices (no
                                    * owned shares, below) */
  const float *const *sensitivities; /* NULL (default): the sensitivities are computed at create, as above. Else the
                                      * caller's own (computed before, read from files): num_sensitivities host arrays
                                      * of x's shape and voxel order, used as they are (no blur, no factor): one per
                                      * subset, which subset k divides by and its gradient subtracts, or one for every
                                      * subset. Read, never written; valid until sproj_recon_destroy; finite, >= 0.
                                      * Nothing is then back projected at create (sens_model still gives a listmode
                                      * objective's background terms) */
  int num_sensitivities;             /* with sensitivities or sensitivity_images: 1 or num_subsets */
  sproj_image *const *sensitivity_images; /* NULL (default). Else, instead of sensitivities, num_sensitivities images
                                      * of x's geometry holding the caller's sensitivities, typically back projections
                                      * it submitted before reading its data (sproj_image_create, sproj_image_zero,
                                      * sproj_back_chunks of the factors over each subset's chunks), so that they run
                                      * on the devices while it reads: create copies each into an image of the
                                      * reconstruction's own by a task after the tasks that write it (nothing waits
                                      * for them), so the caller may unregister them once create has returned. Used
                                      * as they are (no blur, no factor, not checked: the caller's projections) */
};
/* Fills cfg with zeros / NULL (num_subsets 1). */
SPROJ_API void sproj_recon_config_init(struct sproj_recon_config *cfg);

/* Sets up a reconstruction of x (the initial image, finite and >= 0, usually 1 inside the field of view; updated
 * in place) from cfg, computes and keeps the sensitivities, and checks x and the data on the host (the only time
 * they are read there). x, the models, the data and the chunkings must outlive the reconstruction. Memory: the
 * sensitivities (one image per subset, or one), two or three working images (on the devices only) and one vector of
 * the data's shape for the expected counts (resident where the tasks run, with a host buffer of its size as its home
 * in main memory). With two or more devices (sproj_num_devices: GPUs, or groups of CPU workers with SPROJ_DEVICES),
 * no chunk in two subsets, no reproducible image, no small_fraction, and no distributed reduction unless their number is
 * a power of two (starproj_mpi.h's reconstruction), each device owns an
 * equal share of every subset's LORs for the whole run (uploaded to its GPU once when it can hold its share four times over), with
 * a back projection and a copy of the estimate of its own, and pieces of images for the sums (memory: up to about
 * five images more per device).
 * The devices' back projections of a subset are summed by recursive halving when their number is a power of two,
 * the two devices of each pair updating the pair's two slabs of the image, and the updated slabs gathered by
 * recursive doubling (2 log2 n - 1 image pieces received per device and subset); other counts send every slab to its
 * device directly (2 (n - 1) pieces; the environment variable SPROJ_SLAB_EXCHANGE=direct forces that on any count,
 * to compare). The order of the sums is
 * fixed by the device count, so a run repeats bit for bit; the image differs from one device's by the rounding of
 * the sums (about 1e-6 relative).
 * Errors (nothing is created): NULL (recon, x, cfg, model, chunks; listmode without sens_model; a NULL array in
 * cfg->sensitivities or image in cfg->sensitivity_images), NOT_INIT,
 * MISMATCH (chunkings or data of another LOR set, data with another number of values per LOR than the model, a
 * sensitivity image of another geometry than x),
 * RANGE (S < 1 or more than the chunks, a chunk index out of range or twice in one subset, max_ratio < 0, small_fraction
 * outside [0, 1), a blur kernel wider than 2*64+1 voxels, a negative value in x, the data or a given sensitivity,
 * num_sensitivities neither 1 nor S with sensitivities or sensitivity_images), NONFINITE (NaN / infinite in x, the
 * data, a given sensitivity, max_ratio or small_fraction), EMPTY (a subset of 0 chunks),
 * INVALID (a sens_model on listmode events; both sensitivities and sensitivity_images), NOMEM, STARPU. */
SPROJ_API int sproj_recon_create(sproj_recon **recon, sproj_image *x, const struct sproj_recon_config *cfg);

/* Progress after each iteration. */
struct sproj_recon_progress {
  int iteration;     /* iterations done by this reconstruction so far (1, 2, ...) */
  int num_subsets;   /* updates per iteration */
  double elapsed;    /* seconds since this sproj_recon_iterate call began, the iteration's work finished */
  int has_objective; /* 1 when cfg.objective asked for it */
  double objective;  /* Poisson negative log-likelihood of x after this iteration (see sproj_recon_objective) */
};
/* Called after each iteration with x's current value in its host buffer (read it or save it; do not modify it).
 * Return 0 to go on, anything else to stop after this iteration. */
typedef int (*sproj_recon_callback)(const struct sproj_recon_progress *progress, void *user);

/* Runs num_iterations iterations (continuing from the previous ones). Without a callback (and without objective) it
 * returns once the work is submitted: x is current after sproj_image_sync. With a callback, each iteration is
 * waited for and x brought to the host before the call. One thread per reconstruction at a time.
 * Errors: NULL, NOT_INIT, DIMS (num_iterations < 0), STARPU, NOMEM, or what a submission returned. */
SPROJ_API int sproj_recon_iterate(sproj_recon *recon, int num_iterations, sproj_recon_callback callback, void *user);

/* Poisson negative log-likelihood of x, sum(ybar - y log ybar) in double over the LORs of the subsets (terms with
 * y = 0 contribute ybar; y > 0 with ybar <= 0 gives +infinity). A forward projection of every subset, whose terms
 * are summed by tasks where the projections ran (partial sums in double, added on the host in a fixed order, so the
 * value does not depend on which worker ran what): only the partial sums reach the host. Listmode: sum over the
 * events of -log(ybar) plus <s, x> + sum of sens_model's background, s the sum of the sensitivities (so the
 * subsets' sensitivities must cover the sensitivity LORs once). Waits. Errors: NULL, NOT_INIT, STARPU, NOMEM. */
SPROJ_API int sproj_recon_objective(sproj_recon *recon, double *nll);

/* Copies the sensitivity image subset k uses (already divided by S when one serves all) into out (as many floats
 * as x). Waits. Errors: NULL, NOT_INIT, RANGE (k). */
SPROJ_API int sproj_recon_sensitivity(sproj_recon *recon, int subset, float *out);

/* Flags of sproj_recon_sensitivity_image. */
#define SPROJ_SENSITIVITY_TO_HOST 1 /* also start copying out to its host buffer once written, without waiting: a
                                     * later sproj_image_sync(out, SPROJ_SYNC_READ) finds it there */

/* out = the sensitivity image subset k uses (divided by S when one serves all): the floats sproj_recon_sensitivity
 * copies, bit for bit, written by tasks where the sensitivity is, so that no host copy of the reconstruction's own
 * image is made (a caller that reads many, e.g. STIR's subset sensitivities, copies each through one image of its
 * own and keeps no host copy of each). out's previous values are replaced. Asynchronous: sync out (sproj_image_sync)
 * to read it on the host. Errors: NULL, NOT_INIT, RANGE (k), MISMATCH (out of another geometry), INVALID (unknown
 * flags), NOMEM, STARPU. */
SPROJ_API int sproj_recon_sensitivity_image(sproj_recon *recon, int subset, sproj_image *out, int flags);

/* Waits for pending work, frees the reconstruction's data (x keeps its current value) (NULL: no-op). */
SPROJ_API int sproj_recon_destroy(sproj_recon *recon);

/* ---- the objective function's pieces ----------------------------------------------------------------- */
/* For frameworks that run algorithms of their own (STIR's objective functions: OSMAPOSL, OSSPS, gradient methods) on
 * a reconstruction's resident data, LORs, factors and sensitivities: the Poisson log-likelihood of subset k,
 * L_k(x) = sum over its LORs (and TOF bins) of y log ybar - ybar, ybar = m A G x + a, and its derivatives, at any
 * image x of the reconstruction's geometry (the reconstruction's own image, or another). Every step is a task on
 * the devices, ordered by StarPU like the iterations: nothing comes to the host but what the caller syncs (an
 * image), and the objective's partial sums. The images passed must have x's dimensions, voxel size and origin and be
 * distinct from each other. Quotients follow cfg.max_ratio (sproj_recon_config). subset: 0 .. S - 1 (the
 * objective also takes -1: every subset). The back projections of a distributed reconstruction are summed over its
 * ranks, as the iterations' are. One thread per reconstruction at a time, as sproj_recon_iterate.
 * Listmode (cfg.data NULL): the sums over LORs are sums over the subset's events (y = 1 each, with their own m and
 * a), and the subset's expected counts are <s_k, x> plus its share of sens_model's background (below).
 * Errors: NULL, NOT_INIT, RANGE (subset), MISMATCH (an image of another geometry), INVALID (the same image twice; a
 * listmode approximate Hessian, below), NOMEM, STARPU. */

/* Flags of sproj_recon_gradient. */
#define SPROJ_GRADIENT_ADD_SENSITIVITY 1 /* leave the sensitivity in: grad = G^T A^T (m y / ybar), the EM numerator */

/* grad = the gradient of L_k at x: G^T A^T (m y / ybar) - s_k, s_k the sensitivity subset k uses (divided by S when
 * one serves all; sproj_recon_sensitivity), or with SPROJ_GRADIENT_ADD_SENSITIVITY the first term alone (STIR's
 * "gradient plus sensitivity", from which OSMAPOSL makes its update). grad's previous values are replaced.
 * Asynchronous: sync grad (sproj_image_sync) to read it on the host. */
SPROJ_API int sproj_recon_gradient(sproj_recon *recon, int subset, sproj_image *x, sproj_image *grad, int flags);

/* Flags of sproj_recon_hessian_times. */
#define SPROJ_HESSIAN_APPROXIMATE 1 /* ybar taken as the data y (STIR's "approximate sub-Hessian"; x not used) */

/* out = the Hessian of -L_k at x times the image v (positive semi-definite):
 *   G^T A^T (m^2 y / ybar^2 * A G v),
 * or with SPROJ_HESSIAN_APPROXIMATE G^T A^T (m^2 / y * A G v) (0 where y = 0, or max_ratio there when it is set;
 * x may be NULL; sinogram data only: it needs each LOR's counts, which listmode events do not give, so a listmode
 * reconstruction refuses it with INVALID). STIR's sub-Hessian products are -out. out's previous values are replaced. The exact product keeps
 * a second vector of the data's shape resident, made at its first call. Asynchronous, as sproj_recon_gradient. */
SPROJ_API int sproj_recon_hessian_times(sproj_recon *recon, int subset, sproj_image *x, sproj_image *v, sproj_image *out,
                                        int flags);

/* *nll = -L_k(x) (as sproj_recon_objective: sum of ybar - y log ybar over subset k's LORs, in double, the same
 * whatever ran where), or over every subset with subset = -1. Listmode: the sum over subset k's events of -log ybar,
 * plus <s_k, x> with s_k the sensitivity its gradient subtracts, plus the background of subset k's sensitivity LORs
 * (sens_chunks given: those of its sensitivity chunks; else sens_model's whole background / S), so that the
 * subsets' objectives add up to the whole when the sensitivity subsets cover the sensitivity LORs once. Waits. */
SPROJ_API int sproj_recon_subset_objective(sproj_recon *recon, int subset, sproj_image *x, double *nll);

/* x <- x * min(max(num / den, lo), hi) voxel by voxel (0 where den is 0), by a task where the images are: the
 * multiplicative update of OSMAPOSL-like algorithms, with num a gradient plus sensitivity (sproj_recon_gradient with
 * SPROJ_GRADIENT_ADD_SENSITIVITY) and den the sensitivity, so that a framework's iterations keep the estimate on the
 * devices. lo = -INFINITY and hi = INFINITY: no bounds. Asynchronous; needs sproj_init.
 * Errors: NULL, NOT_INIT, MISMATCH (images of different geometries), INVALID (an image twice), NONFINITE (lo or hi
 * NaN), RANGE (lo > hi), NOMEM, STARPU. */
SPROJ_API int sproj_image_update_multiplicative(sproj_image *x, sproj_image *num, sproj_image *den, float lo, float hi);
/* x <- min(max(x + ((num * num_scale) / den) * step, lo), hi) voxel by voxel (in that order of float operations; x
 * kept, then bounded, where den is not positive), by a task where the images are: the additive step of separable
 * paraboloidal surrogates (STIR's OSSPS: num a subset gradient, sproj_recon_gradient without the sensitivity,
 * num_scale the number of subsets, den the precomputed denominator from the approximate Hessian, made positive,
 * step the relaxation, lo 0 and hi the upper bound). Asynchronous; needs sproj_init.
 * Errors: those of sproj_image_update_multiplicative, and NONFINITE (num_scale or step not finite). */
SPROJ_API int sproj_image_update_additive(sproj_image *x, sproj_image *num, sproj_image *den, float num_scale, float step,
                                          float lo, float hi);
/* One OSMAPOSL update of subset k with the reconstruction's own sensitivity s_k (sproj_recon_sensitivity): work <-
 * the gradient plus sensitivity at x (sproj_recon_gradient with SPROJ_GRADIENT_ADD_SENSITIVITY), then x <- x *
 * min(max(work / s_k, lo), hi) (0 where s_k is 0), all tasks: nothing crosses to the host. With lo = 0 and hi =
 * INFINITY this is the iterations' EM update on x. Errors: as sproj_recon_gradient, and NONFINITE / RANGE for the
 * bounds as sproj_image_update_multiplicative. */
SPROJ_API int sproj_recon_update(sproj_recon *recon, int subset, sproj_image *x, sproj_image *work, float lo, float hi);


/* ---- simulation ---------------------------------------------------------------------------------------- */
/* Host-side calls: they need neither sproj_init nor StarPU, and are safe from several threads at once (each call
 * works on its own arguments). Arrays they allocate for the caller are freed with sproj_free. */

/* A phantom: a cylinder along axis 2 with spheres in it. Spheres replace the cylinder's value where they lie
 * (a later sphere replaces an earlier one), so a cold sphere (value 0) is a hole; outside the cylinder and the
 * spheres the image is 0. Coordinates in mm, in the image's world frame. */
#define SPROJ_PHANTOM_MAX_SPHERES 16
struct sproj_phantom_sphere {
  float centre[3];
  float radius;         /* > 0 */
  float value;
};
struct sproj_phantom {
  float centre[3];      /* centre of the cylinder (its axis is parallel to axis 2) */
  float radius;         /* cylinder radius, > 0 */
  float length;         /* cylinder length along axis 2, > 0 */
  float value;          /* activity in the cylinder */
  int num_spheres;      /* 0 .. SPROJ_PHANTOM_MAX_SPHERES */
  struct sproj_phantom_sphere spheres[SPROJ_PHANTOM_MAX_SPHERES];
};
/* Defaults scaled to an image (dims, voxel_size, origin as for sproj_image_register): a cylinder centred in the
 * image box, radius 0.8 x half the smaller transaxial extent (axes 0, 1), length 0.8 x the axial extent (axis 2),
 * value 1; six spheres in the central transaxial plane on a ring of 0.55 x the cylinder radius, 60 degrees
 * apart: four hot (value 4, radii 0.18, 0.15, 0.12, 0.09 x the cylinder radius) and two cold (value 0, radii
 * 0.18, 0.12 x the cylinder radius). Errors: NULL, DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW. */
SPROJ_API int sproj_phantom_default(struct sproj_phantom *phantom, const int dims[3], const float voxel_size[3],
                                    const float origin[3]);
/* Fills (overwrites) image[n0][n1][n2] with the phantom: each voxel holds the mean of the phantom's values at
 * supersample^3 points spread evenly over the voxel (the centres of a regular sub-grid), which approximates
 * its partial-volume fractions (supersample 1: the value at the voxel centre). supersample: 1 .. 16.
 * Errors: NULL, DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW, INVALID (phantom: radius or length not > 0, too many
 * spheres, non-finite values; supersample out of range). */
SPROJ_API int sproj_phantom_fill(const struct sproj_phantom *phantom, float *image, const int dims[3],
                                 const float voxel_size[3], const float origin[3], int supersample);

/* Random numbers: each Poisson count draws from a counter-based stream of its own (splitmix64 from a hash of the seed
 * and the value's index), so that the counts depend only on the seed and the expected values, never on num_threads
 * (0: one thread per online core; otherwise 1 .. 1024) nor on the device (sproj_model_draw makes the same draws on
 * GPUs). The work is cut into fixed blocks of SPROJ_RNG_BLOCK elements; the listmode shuffle draws from xoshiro256**
 * streams seeded through splitmix64 per block. */
#define SPROJ_RNG_BLOCK 65536

/* counts[i] ~ Poisson(expected[i]), exact samplers (inversion for means below 10, Hoermann's PTRS above, with the
 * library's own exp and log, so that every device rounds alike),
 * returned as whole numbers in floats (exact up to 2^24). counts may equal expected (in place). expected[i]
 * must be finite and >= 0 (0 gives 0); they are all checked before any count is written. Errors: NULL, DIMS
 * (n < 0), NONFINITE, RANGE (a negative mean), INVALID (num_threads), NOMEM. */
SPROJ_API int sproj_poisson(const float *expected, float *counts, int64_t n, uint64_t seed, int num_threads);

/* Listmode events from expected counts: expected[lor*T + t] for num_lors LORs and T = max(num_tof_bins, 1) TOF
 * bins. Draws c ~ Poisson(expected[e]) for every element e, exactly as sproj_poisson(expected, ..., seed) would
 * (the same numbers for the same seed), emits c events of element e (LOR e / T, TOF bin e % T), and shuffles them
 * into a uniformly random order: each event goes to a bucket drawn from a stream of its chunk of events, then each
 * bucket is shuffled with a stream of its own, so the order depends on the seed only, never on num_threads (and
 * every step runs on num_threads threads). *lor and *tof_bin are new arrays of *num_events elements (free with
 * sproj_free; NULL when no event was drawn); tof_bin may be NULL if the bins are not wanted. Takes 6 bytes per event
 * of scratch memory while shuffling. Errors: NULL, DIMS, OVERFLOW (num_lors > 2^31-1 or too many events), TOF
 * (bins), NONFINITE, RANGE (negative mean), INVALID (num_threads), NOMEM. */
SPROJ_API int sproj_sample_listmode(const float *expected, int64_t num_lors, int num_tof_bins, uint64_t seed, int num_threads,
                                    int32_t **lor, int16_t **tof_bin, int64_t *num_events);
/* The same events without the shuffle: in the order of their elements (LOR, then TOF bin), each element's events
 * together, as sproj_sample_listmode draws them before shuffling; no scratch memory. For a caller that deals events
 * to subsets itself (starproj-recon interleaves them: event e to chunk e mod C) and wants neighbouring events to share
 * LORs. */
SPROJ_API int sproj_sample_listmode_sorted(const float *expected, int64_t num_lors, int num_tof_bins, uint64_t seed,
                                           int num_threads, int32_t **lor, int16_t **tof_bin, int64_t *num_events);


#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_RECON_H */
