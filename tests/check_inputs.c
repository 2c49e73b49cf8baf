/* SPDX-License-Identifier: Apache-2.0 */
/* check_inputs.c: the checks of per-LOR inputs (codelets/input_check.h). The check codelet on CPU workers, and on
 * every GPU StarPU drives, finds the same first bad element, with its value, as the host's scan and as a plain
 * reference written here: coordinates NaN, infinite or beyond SPROJ_MAX_COORDINATE, negative bins (and the range of
 * the bins, also in libparallelproj's convention, which refuses none), sigma <= 0, not finite or out of its ratio
 * bounds, offsets not finite or too far. The registrations give the same status and message for host pointers,
 * host-homed vectors and GPU-homed ones, and leave a GPU-homed vector with no copy in main memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "starproj_parallelproj.h"
#include "testutil.h"
#include "../src/core/internal.h"

#define NLORS 100003 /* 300009 coordinates: more than one pass of a GPU check's grid */
#define NEVENTS 1000003
#define BIN_WIDTH 25.0f
#define NUM_SIGMAS 3.0f

/* ---- the reference: the rules of starproj.h, written out plainly ---- */
struct ref {
  int64_t first[2]; /* -1: none */
  float value[2];
  int min_bin, max_bin;
};

static void ref_note(struct ref *r, int f, int64_t i, float v)
{
  if (r->first[f] < 0) {
    r->first[f] = i;
    r->value[f] = v;
  }
}

static struct ref ref_floats(int kind, const float *v, int64_t n)
{
  struct ref r = {{-1, -1}, {0, 0}, 0, 0};
  for (int64_t i = 0; i < n; i++) {
    double x = v[i];
    int finite = !isnan(v[i]) && !isinf(v[i]);
    if (kind == SPROJ_INPUT_COORDS) {
      if (!finite)
        ref_note(&r, 0, i, v[i]);
      else if (fabs(x) > 1e7)
        ref_note(&r, 1, i, v[i]);
    } else if (kind == SPROJ_INPUT_SIGMA) {
      double ratio = x / BIN_WIDTH;
      if (!finite || !(x > 0) || ratio < 1e-6 || ratio > 1e6 || NUM_SIGMAS * ratio > 1e6)
        ref_note(&r, 0, i, v[i]);
    } else {
      if (!finite)
        ref_note(&r, 0, i, v[i]);
      else if (fabs(x) > 1e6 * BIN_WIDTH)
        ref_note(&r, 1, i, v[i]);
    }
  }
  return r;
}

/* Bins in starproj's convention (kind SPROJ_INPUT_BINS: a negative one is a fault) or libparallelproj's (any is
 * fine); the range holds 0 and every bin. */
static struct ref ref_bins(int kind, const int16_t *b, int64_t n)
{
  struct ref r = {{-1, -1}, {0, 0}, 0, 0};
  for (int64_t i = 0; i < n; i++) {
    if (kind == SPROJ_INPUT_BINS && b[i] < 0) {
      ref_note(&r, 0, i, b[i]);
      continue;
    }
    if (b[i] > r.max_bin)
      r.max_bin = b[i];
    if (b[i] < r.min_bin)
      r.min_bin = b[i];
  }
  return r;
}

/* A result against the reference: the first fault 1 and its value, the first fault 2 when there is no fault 1 (a
 * scan may stop at a fault 1), the largest bin when no bin is negative. */
static void expect_same(const char *who, int kind, const struct sproj_input_result *got, const struct ref *want)
{
  for (int f = 0; f < 2; f++) {
    if (f == 1 && want->first[0] >= 0)
      break;
    long long g = got->first[f] == SPROJ_INPUT_NONE ? -1 : (long long)got->first[f];
    ck_assert_msg(g == want->first[f], "%s, kind %d, fault %d: element %lld, expected %lld", who, kind, f + 1, g,
                  (long long)want->first[f]);
    if (g >= 0)
      ck_assert_msg((isnan(got->value[f]) && isnan(want->value[f])) || got->value[f] == want->value[f],
                    "%s, kind %d, fault %d: value %g, expected %g", who, kind, f + 1, got->value[f], want->value[f]);
  }
  if (sproj_input_is_bins(kind) && want->first[0] < 0) {
    ck_assert_msg(got->max_bin == want->max_bin, "%s: largest bin %d, expected %d", who, got->max_bin, want->max_bin);
    ck_assert_msg(got->min_bin == want->min_bin, "%s: smallest bin %d, expected %d", who, got->min_bin, want->min_bin);
  }
}

/* ---- vectors in main memory and on GPUs ---- */
static int gpu_nodes(unsigned *nodes)
{
  int n = 0;
  for (int g = 0; g < sproj_num_gpus() && g < STARPU_MAXCUDADEVS; g++)
    nodes[n++] = sproj_rt.gpu_node[g];
  return n;
}

/* A copy of the host array on memory node `node` (or, for main memory, the array itself), registered with that
 * node as its home and valid there only, as a GPU array a caller registers: the copy is made through a handle that
 * its unregistration writes back home (StarPU's copy task may run on any worker), then the memory is registered
 * afresh. */
static starpu_data_handle_t vector_on(unsigned node, const void *host, uint32_t nx, size_t elem, uintptr_t *mem)
{
  starpu_data_handle_t h, src;
  if (node == STARPU_MAIN_RAM) {
    *mem = 0;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)host, nx, elem);
    return h;
  }
  *mem = starpu_malloc_on_node(node, (size_t)nx * elem);
  ck_assert(*mem != 0);
  starpu_vector_data_register(&h, (int)node, *mem, nx, elem);
  starpu_vector_data_register(&src, STARPU_MAIN_RAM, (uintptr_t)host, nx, elem);
  ck_assert_int_eq(starpu_data_cpy(h, src, 0, NULL, NULL), 0);
  starpu_data_unregister(src);
  starpu_data_unregister(h);
  starpu_vector_data_register(&h, (int)node, *mem, nx, elem);
  return h;
}

static void vector_free(starpu_data_handle_t h, unsigned node, uintptr_t mem)
{
  size_t bytes = (size_t)starpu_vector_get_nx(h) * starpu_vector_get_elemsize(h);
  starpu_data_unregister(h);
  if (mem)
    starpu_free_on_node(node, mem, bytes);
}

/* No copy of a GPU-homed vector was made in main memory. */
static void expect_not_on_host(starpu_data_handle_t h)
{
  int allocated, valid, requested;
  starpu_data_query_status(h, STARPU_MAIN_RAM, &allocated, &valid, &requested);
  ck_assert_msg(!allocated && !valid, "a GPU-homed vector was copied to main memory (allocated %d, valid %d)",
                allocated, valid);
}

/* One vector scanned everywhere: the host scan, the codelet on the CPU workers and on each GPU (a GPU-homed copy),
 * each against the reference. */
static void scan_everywhere(int kind, const void *data, uint32_t nx)
{
  size_t elem = kind == SPROJ_INPUT_COORDS      ? 3 * sizeof(float)
                : sproj_input_is_bins(kind) ? sizeof(int16_t)
                                            : sizeof(float);
  uint64_t n = sproj_input_elements(kind, nx);
  struct ref want = sproj_input_is_bins(kind) ? ref_bins(kind, data, (int64_t)n) : ref_floats(kind, data, (int64_t)n);
  struct sproj_input_arg a = sproj_input_limits(BIN_WIDTH, NUM_SIGMAS);
  a.nvectors = 1;
  a.kind[0] = kind;
  struct sproj_input_result r;
  sproj_input_scan(&a, kind, data, n, &r);
  expect_same("host scan", kind, &r, &want);
  unsigned nodes[STARPU_MAXCUDADEVS + 1] = {STARPU_MAIN_RAM};
  int nn = 1 + gpu_nodes(nodes + 1);
  for (int i = 0; i < nn; i++) {
    uintptr_t mem;
    starpu_data_handle_t h = vector_on(nodes[i], data, nx, elem, &mem);
    memset(&r, 0x5a, sizeof r); /* the task must write every field it reports */
    ck_assert_int_eq(sproj_inputs_check_on("check_inputs", &a, &h, &r, nodes[i]), SPROJ_OK);
    char who[64];
    snprintf(who, sizeof who, "codelet on memory node %u", nodes[i]);
    expect_same(who, kind, &r, &want);
    if (i > 0) {
      /* where they live: the same through the registrations' dispatcher, and nothing came to the host */
      memset(&r, 0x5a, sizeof r);
      ck_assert_int_eq(sproj_inputs_check("check_inputs", &a, &h, &r), SPROJ_OK);
      expect_same("dispatched to the GPU", kind, &r, &want);
      expect_not_on_host(h);
    }
    vector_free(h, nodes[i], mem);
  }
}

/* ---- the cases ---- */
static float *coords(void)
{
  float *v = tu_alloc(3 * NLORS);
  tu_fill_uniform(v, 3 * NLORS, -400.0f, 400.0f);
  /* fine at the limits: +-1e7 exactly, -0, a subnormal */
  v[7] = 1e7f;
  v[8] = -1e7f;
  v[9] = -0.0f;
  v[10] = 1e-40f;
  return v;
}

#define NCOORD_CASES 7
START_TEST(test_coordinates)
{
  float *v = coords();
  const int last = 3 * NLORS - 1;
  switch (_i) {
  case 0: /* all fine */
    break;
  case 1:
    v[150000] = NAN;
    break;
  case 2: /* a far one before a NaN: the NaN is reported */
    v[10] = 2e7f;
    v[200000] = NAN;
    break;
  case 3: /* infinities: the first */
    v[5] = INFINITY;
    v[3] = -INFINITY;
    break;
  case 4: /* far ones only: the first, which is just beyond */
    v[last] = 3e7f;
    v[77777] = -1.0000001e7f;
    break;
  case 5: /* several NaNs, one at the very start, and a far one at the end */
    v[0] = NAN;
    v[1000] = NAN;
    v[last] = 5e8f;
    break;
  case 6: /* the last coordinate alone */
    v[last] = -INFINITY;
    break;
  }
  scan_everywhere(SPROJ_INPUT_COORDS, v, NLORS);
  free(v);
}
END_TEST

/* Each case in starproj's convention (a negative bin is reported) and in libparallelproj's (none is: the range of
 * the bins, smallest and largest, is). */
#define NBIN_CASES 5
START_TEST(test_bins)
{
  int16_t *b = malloc(NEVENTS * sizeof *b);
  for (int64_t i = 0; i < NEVENTS; i++)
    b[i] = (int16_t)tu_randint(0, 27);
  b[NEVENTS / 3] = 28; /* the largest, once */
  switch (_i) {
  case 1:
    b[999999] = -1;
    b[500000] = -3;
    break;
  case 2:
    b[0] = INT16_MIN;
    break;
  case 3:
    b[NEVENTS - 1] = -1;
    b[12] = INT16_MAX; /* a large bin before the negative one: the negative one is reported */
    break;
  case 4: /* negative bins everywhere (libparallelproj's package draws -2 .. 2), the smallest once at the end */
    for (int64_t i = 0; i < NEVENTS; i++)
      b[i] = (int16_t)tu_randint(-2, 2);
    b[NEVENTS - 1] = -5;
    break;
  }
  scan_everywhere(SPROJ_INPUT_BINS, b, NEVENTS);
  scan_everywhere(SPROJ_INPUT_ANY_BINS, b, NEVENTS);
  free(b);
}
END_TEST

#define NSIGMA_CASES 8
START_TEST(test_sigma)
{
  float *s = tu_alloc(NLORS);
  tu_fill_uniform(s, NLORS, 0.8f * BIN_WIDTH, 1.2f * BIN_WIDTH);
  s[3] = 1e-6f * BIN_WIDTH * 1.01f; /* fine: just inside the ratio bounds */
  s[4] = 1e6f / NUM_SIGMAS * BIN_WIDTH * 0.99f;
  int at = 54321;
  const float bad[] = {0.0f, -1.0f, NAN, INFINITY, 1e-30f, 1e30f, 1e6f / NUM_SIGMAS * BIN_WIDTH * 1.01f};
  if (_i > 0) {
    s[at] = bad[_i - 1];
    s[NLORS - 1] = -5.0f; /* a later bad one never counts */
  }
  scan_everywhere(SPROJ_INPUT_SIGMA, s, NLORS);
  free(s);
}
END_TEST

#define NOFFSET_CASES 5
START_TEST(test_offset)
{
  float *o = tu_alloc(NLORS);
  tu_fill_uniform(o, NLORS, -2.0f * BIN_WIDTH, 2.0f * BIN_WIDTH);
  o[6] = 1e6f * BIN_WIDTH; /* fine: at the bound */
  switch (_i) {
  case 1:
    o[90000] = NAN;
    break;
  case 2:
    o[90000] = -INFINITY;
    break;
  case 3:
    o[90000] = 1.001e6f * BIN_WIDTH;
    break;
  case 4: /* a far one before a NaN: the NaN is reported */
    o[100] = -2e7f * BIN_WIDTH;
    o[90000] = NAN;
    break;
  }
  scan_everywhere(SPROJ_INPUT_OFFSET, o, NLORS);
  free(o);
}
END_TEST

/* Several vectors of different kinds and lengths in one task, on every node: each result is its vector's own. */
START_TEST(test_one_task_many_vectors)
{
  float *xs = coords(), *xe = coords(), *sig = tu_alloc(NLORS);
  tu_fill_uniform(sig, NLORS, BIN_WIDTH, 2 * BIN_WIDTH);
  int16_t *b = calloc(7, sizeof *b);
  xe[4444] = NAN;
  sig[999] = 0.0f;
  b[5] = 9;
  const void *data[4] = {xs, xe, b, sig};
  const uint32_t nx[4] = {NLORS, NLORS, 7, NLORS};
  const size_t elem[4] = {3 * sizeof(float), 3 * sizeof(float), sizeof(int16_t), sizeof(float)};
  struct sproj_input_arg a = sproj_input_limits(BIN_WIDTH, NUM_SIGMAS);
  a.nvectors = 4;
  a.kind[0] = a.kind[1] = SPROJ_INPUT_COORDS;
  a.kind[2] = SPROJ_INPUT_BINS;
  a.kind[3] = SPROJ_INPUT_SIGMA;
  struct ref want[4] = {ref_floats(SPROJ_INPUT_COORDS, xs, 3 * NLORS), ref_floats(SPROJ_INPUT_COORDS, xe, 3 * NLORS),
                        ref_bins(SPROJ_INPUT_BINS, b, 7), ref_floats(SPROJ_INPUT_SIGMA, sig, NLORS)};
  ck_assert_int_eq(want[1].first[0], 4444);
  ck_assert_int_eq(want[2].max_bin, 9);
  unsigned nodes[STARPU_MAXCUDADEVS + 1] = {STARPU_MAIN_RAM};
  int nn = 1 + gpu_nodes(nodes + 1);
  for (int i = 0; i < nn; i++) {
    starpu_data_handle_t h[4];
    uintptr_t mem[4];
    for (int k = 0; k < 4; k++)
      h[k] = vector_on(nodes[i], data[k], nx[k], elem[k], &mem[k]);
    struct sproj_input_result r[4];
    ck_assert_int_eq(sproj_inputs_check_on("check_inputs", &a, h, r, nodes[i]), SPROJ_OK);
    for (int k = 0; k < 4; k++)
      expect_same("one task", a.kind[k], &r[k], &want[k]);
    for (int k = 0; k < 4; k++)
      vector_free(h[k], nodes[i], mem[k]);
  }
  free(xs);
  free(xe);
  free(sig);
  free(b);
}
END_TEST

/* ---- the registrations: the same status and message wherever the arrays are ---- */
/* The message less the names of the calls that report it ("sproj_x: sproj_y: what" -> "what"). */
static const char *what(const char *msg)
{
  while (strncmp(msg, "sproj_", 6) == 0 && strstr(msg, ": "))
    msg = strstr(msg, ": ") + 2;
  return msg;
}

/* The bins events were registered with: their range, as the reference finds it in that convention. */
static void expect_bin_range(const sproj_lors *lors, const int16_t *bins, int convention)
{
  if (!bins)
    return;
  int kind = convention == SPROJ_TOF_CONVENTION_PARALLELPROJ ? SPROJ_INPUT_ANY_BINS : SPROJ_INPUT_BINS;
  struct ref want = ref_bins(kind, bins, NLORS);
  ck_assert_int_eq(lors->min_bin, want.min_bin);
  ck_assert_int_eq(lors->max_bin, want.max_bin);
}

/* Registers LORs (with bins: events; in a convention unless it is -1, else through the plain calls) from host
 * pointers (with `pointers`), then as vectors homed on each node; every attempt must give status `want` and the same
 * message as the first. (Events from pointers have their bins checked before their endpoints, from vectors after:
 * a case with both wrong leaves the pointers out.) */
static void register_everywhere(const float *xs, const float *xe, const int16_t *bins, int convention, int want,
                                int pointers)
{
  char first[512] = "";
  sproj_lors *lors = NULL;
  int ret;
  if (pointers) {
    ret = !bins              ? sproj_lors_register(&lors, xs, xe, NLORS)
          : convention < 0 ? sproj_lors_register_events(&lors, xs, xe, bins, NLORS)
                             : sproj_lors_register_events_convention(&lors, xs, xe, bins, NLORS, convention);
    ck_assert_int_eq(ret, want);
    if (!ret) {
      expect_bin_range(lors, bins, convention);
      ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
    }
    snprintf(first, sizeof first, "%s", what(sproj_last_error()));
  }
  unsigned nodes[STARPU_MAXCUDADEVS + 1] = {STARPU_MAIN_RAM};
  int nn = 1 + gpu_nodes(nodes + 1);
  for (int i = 0; i < nn; i++) {
    uintptr_t m[3] = {0, 0, 0};
    starpu_data_handle_t hs = vector_on(nodes[i], xs, NLORS, 3 * sizeof(float), &m[0]);
    starpu_data_handle_t he = vector_on(nodes[i], xe, NLORS, 3 * sizeof(float), &m[1]);
    starpu_data_handle_t hb = bins ? vector_on(nodes[i], bins, NLORS, sizeof(int16_t), &m[2]) : NULL;
    lors = NULL;
    ret = !bins              ? sproj_lors_register_handles(&lors, hs, he)
          : convention < 0 ? sproj_lors_register_events_handles(&lors, hs, he, hb)
                             : sproj_lors_register_events_handles_convention(&lors, hs, he, hb, convention);
    ck_assert_msg(ret == want, "memory node %u: status %d, expected %d (%s)", nodes[i], ret, want, sproj_last_error());
    if (!ret) {
      expect_bin_range(lors, bins, convention);
      ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
    } else {
      if (!pointers && i == 0)
        snprintf(first, sizeof first, "%s", what(sproj_last_error()));
      ck_assert_msg(strcmp(what(sproj_last_error()), first) == 0, "memory node %u: '%s', first '%s'", nodes[i],
                    sproj_last_error(), first);
      ck_assert_ptr_null(lors);
    }
    if (i > 0) {
      expect_not_on_host(hs);
      expect_not_on_host(he);
      if (hb)
        expect_not_on_host(hb);
    }
    vector_free(hs, nodes[i], m[0]);
    vector_free(he, nodes[i], m[1]);
    if (hb)
      vector_free(hb, nodes[i], m[2]);
  }
}

START_TEST(test_lors_registrations)
{
  float *xs = coords(), *xe = coords();
  int16_t *b = calloc(NLORS, sizeof *b);
  const int plain = -1, own = SPROJ_TOF_CONVENTION_STARPROJ, pp = SPROJ_TOF_CONVENTION_PARALLELPROJ;
  b[777] = 40;
  register_everywhere(xs, xe, NULL, plain, SPROJ_OK, 1);
  register_everywhere(xs, xe, b, plain, SPROJ_OK, 1);
  register_everywhere(xs, xe, b, pp, SPROJ_OK, 1);
  xe[3 * 500 + 1] = 3e7f;
  register_everywhere(xs, xe, NULL, plain, SPROJ_ERR_RANGE, 1);
  ck_assert_str_eq(what(sproj_last_error()), "xend of LOR 500 has a coordinate 3e+07 beyond 1e+07");
  xe[3 * 400 + 2] = NAN;
  register_everywhere(xs, xe, NULL, plain, SPROJ_ERR_NONFINITE, 1);
  ck_assert_str_eq(what(sproj_last_error()), "xend of LOR 400 is not finite");
  register_everywhere(xs, xe, b, plain, SPROJ_ERR_NONFINITE, 1);
  register_everywhere(xs, xe, b, pp, SPROJ_ERR_NONFINITE, 1);
  xe[3 * 400 + 2] = 1.0f;
  xe[3 * 500 + 1] = 1.0f;
  b[NLORS - 2] = -7;
  register_everywhere(xs, xe, b, plain, SPROJ_ERR_RANGE, 1);
  ck_assert_str_eq(what(sproj_last_error()), "tof_bin of event 100001 is -7: bins are numbered from 0");
  register_everywhere(xs, xe, b, own, SPROJ_ERR_RANGE, 1);
  ck_assert_str_eq(what(sproj_last_error()), "tof_bin of event 100001 is -7: bins are numbered from 0");
  /* libparallelproj's convention takes every bin and notes their range, -7 .. 40 */
  b[3] = -2;
  register_everywhere(xs, xe, b, pp, SPROJ_OK, 1);
  xs[3 * 99 + 0] = -INFINITY; /* vectors: the endpoints are reported before the bins */
  register_everywhere(xs, xe, b, plain, SPROJ_ERR_NONFINITE, 0);
  ck_assert_str_eq(what(sproj_last_error()), "xstart of LOR 99 is not finite");
  /* neither convention */
  sproj_lors *lors = (sproj_lors *)0x1234;
  ck_assert_int_eq(sproj_lors_register_events_convention(&lors, xs, xe, b, NLORS, 2), SPROJ_ERR_INVALID);
  ck_assert_int_eq(sproj_lors_register_events_handles_convention(&lors, NULL, NULL, NULL, -1), SPROJ_ERR_INVALID);
  ck_assert_ptr_eq(lors, (sproj_lors *)0x1234);
  free(xs);
  free(xe);
  free(b);
}
END_TEST

/* A set large enough that its coordinates are scanned in parts on several threads (2^24 values a part): the message
 * is the one-thread scan's. A coordinate out of range in an early part and a NaN in a later one: the NaN is reported
 * (non-finite values come first); out of range alone, in two parts: the first one; clean again: registered. */
START_TEST(test_large_set_scan)
{
  const int64_t n = 12000000; /* 36 M floats per endpoint vector: three parts */
  float *xs = calloc(3 * (size_t)n, sizeof *xs), *xe = calloc(3 * (size_t)n, sizeof *xe);
  ck_assert_ptr_nonnull(xs);
  ck_assert_ptr_nonnull(xe);
  for (int64_t i = 0; i < 3 * n; i++)
    xe[i] = 1.0f;
  sproj_lors *lors = NULL;
  xs[3 * 3000000 + 1] = 5e7f;
  xs[3 * 11000000 + 2] = NAN;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_ERR_NONFINITE);
  ck_assert_str_eq(what(sproj_last_error()), "xstart of LOR 11000000 is not finite");
  xs[3 * 11000000 + 2] = 0.0f;
  xs[3 * 9000000] = -6e7f;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_ERR_RANGE);
  ck_assert_str_eq(what(sproj_last_error()), "xstart of LOR 3000000 has a coordinate 5e+07 beyond 1e+07");
  xs[3 * 3000000 + 1] = 0.0f;
  xs[3 * 9000000] = 0.0f;
  xe[3 * 7000000 + 2] = INFINITY;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_ERR_NONFINITE);
  ck_assert_str_eq(what(sproj_last_error()), "xend of LOR 7000000 is not finite");
  xe[3 * 7000000 + 2] = 1.0f;
  ck_assert_ptr_null(lors);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  free(xs);
  free(xe);
}
END_TEST

/* Per-LOR sigma and offset from host pointers and as vectors homed on each node: the same status and message. */
static void tof_everywhere(sproj_lors *lors, const float *sigma, const float *offset, int want)
{
  struct sproj_tof_params par = {BIN_WIDTH, 29, NUM_SIGMAS, 1.1f * BIN_WIDTH, 0.0f};
  char first[512];
  sproj_tof *tof = NULL;
  int ret = sproj_tof_register(&tof, &par, lors, sigma, offset);
  ck_assert_int_eq(ret, want);
  if (!ret)
    ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  snprintf(first, sizeof first, "%s", what(sproj_last_error()));
  unsigned nodes[STARPU_MAXCUDADEVS + 1] = {STARPU_MAIN_RAM};
  int nn = 1 + gpu_nodes(nodes + 1);
  for (int i = 0; i < nn; i++) {
    uintptr_t m[2] = {0, 0};
    starpu_data_handle_t hs = sigma ? vector_on(nodes[i], sigma, NLORS, sizeof(float), &m[0]) : NULL;
    starpu_data_handle_t ho = offset ? vector_on(nodes[i], offset, NLORS, sizeof(float), &m[1]) : NULL;
    tof = NULL;
    ret = sproj_tof_register_handles(&tof, &par, lors, hs, ho);
    ck_assert_msg(ret == want, "memory node %u: status %d, expected %d (%s)", nodes[i], ret, want, sproj_last_error());
    if (!ret) {
      ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
    } else {
      ck_assert_msg(strcmp(what(sproj_last_error()), first) == 0, "memory node %u: '%s', from pointers '%s'", nodes[i],
                    sproj_last_error(), first);
      ck_assert_ptr_null(tof);
    }
    if (hs) {
      if (i > 0)
        expect_not_on_host(hs);
      vector_free(hs, nodes[i], m[0]);
    }
    if (ho) {
      if (i > 0)
        expect_not_on_host(ho);
      vector_free(ho, nodes[i], m[1]);
    }
  }
}

START_TEST(test_tof_registrations)
{
  float *xs = coords(), *xe = coords(), *s = tu_alloc(NLORS), *o = tu_alloc(NLORS);
  tu_fill_uniform(s, NLORS, 0.9f * BIN_WIDTH, 1.1f * BIN_WIDTH);
  tu_fill_uniform(o, NLORS, -BIN_WIDTH, BIN_WIDTH);
  sproj_lors *lors;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NLORS), SPROJ_OK);
  tof_everywhere(lors, s, o, SPROJ_OK);
  tof_everywhere(lors, s, NULL, SPROJ_OK);
  tof_everywhere(lors, NULL, o, SPROJ_OK);
  o[70000] = 1e8f * BIN_WIDTH;
  tof_everywhere(lors, NULL, o, SPROJ_ERR_TOF);
  ck_assert_str_eq(what(sproj_last_error()), "|center_offset| of LOR 70000 = 2.5e+09 exceeds 1e+06 bin widths");
  o[80000] = NAN;
  tof_everywhere(lors, s, o, SPROJ_ERR_NONFINITE);
  ck_assert_str_eq(what(sproj_last_error()), "center_offset of LOR 80000 is not finite");
  s[90000] = 0.0f; /* sigma before offset */
  tof_everywhere(lors, s, o, SPROJ_ERR_TOF);
  ck_assert_str_eq(what(sproj_last_error()), "sigma of LOR 90000 = 0 must be finite and > 0");
  s[1234] = 1e-30f;
  tof_everywhere(lors, s, NULL, SPROJ_ERR_TOF);
  ck_assert_msg(strncmp(what(sproj_last_error()), "sigma of LOR 1234 / bin_width = ", 32) == 0, "%s",
                sproj_last_error());
  s[1234] = 4e5f * BIN_WIDTH; /* the ratio is within bounds, num_sigmas times it is not */
  tof_everywhere(lors, s, NULL, SPROJ_ERR_TOF);
  ck_assert_msg(strncmp(what(sproj_last_error()), "num_sigmas * sigma of LOR 1234 / bin_width = ", 45) == 0, "%s",
                sproj_last_error());
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  free(xs);
  free(xe);
  free(s);
  free(o);
}
END_TEST

int main(void)
{
  /* one CPU worker at least, for the CPU codelet; every GPU there is */
  if (tu_init(1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  tu_seed(4242);
  printf("check_inputs: the check codelet on the CPU workers and on %d GPU(s)\n", sproj_num_gpus());
  Suite *s = suite_create("inputs");
  TCase *tc = tcase_create("inputs");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_coordinates, 0, NCOORD_CASES);
  tcase_add_loop_test(tc, test_bins, 0, NBIN_CASES);
  tcase_add_loop_test(tc, test_sigma, 0, NSIGMA_CASES);
  tcase_add_loop_test(tc, test_offset, 0, NOFFSET_CASES);
  tcase_add_test(tc, test_one_task_many_vectors);
  tcase_add_test(tc, test_lors_registrations);
  tcase_add_test(tc, test_large_set_scan);
  tcase_add_test(tc, test_tof_registrations);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
