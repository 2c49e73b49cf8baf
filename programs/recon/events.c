/* SPDX-License-Identifier: Apache-2.0 */
/* events.c: listmode events made ready for LM-OSEM: each event's LOR, factor and background gathered, dealt into
 * chunks that every subset takes a share of, optionally ordered within each chunk; the event set made from the LORs
 * where the events are projected. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "recon.h"

/* event chunks per subset; events one thread handles at a time in the parallel loops */
#define CHUNKS_PER_SUBSET 4
#define EVENT_BLOCK (1 << 16)
_Static_assert(sizeof(int32_t) == sizeof(float), "a factor takes a LOR number's place");

/* Listmode: each event's LOR and TOF bin dealt into chunks, then its factor and background. */
struct events_job {
  const struct run *r;
  int tof;
  int release; /* the drawn events are the run's own: a band's pages go once it is dealt */
  int64_t bad; /* an event outside the sinogram (the first one a thread met), or -1 */
  int32_t bad_lor;
  int16_t bad_bin;
};

/* Gives back the whole pages inside bytes [from, to) of p: their contents are read no more (dealt). */
static void release_pages(const void *p, size_t from, size_t to)
{
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), b = (uintptr_t)p;
  uintptr_t lo = (b + from + page - 1) / page * page, hi = (b + to) / page * page;
  if (hi > lo)
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Each event's LOR and TOF bin in the chunked order: chunk c of the C = r->nchunks (the first n % C hold one event
 * more) holds events c, c + C, c + 2C, ... of the events as drawn or read, at places first(c) + i. A block is a band
 * of rows i: its events are a contiguous range of the drawn ones (read once, from cache, by every chunk), and each
 * chunk writes a contiguous stretch. */
enum { EVENT_ROWS = 512 };
static void deal_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  struct events_job *j = ctx;
  const struct run *r = j->r;
  const int64_t nlors = r->l.si.num_lors, nbins = r->l.nbins, C = r->nchunks, q = r->nevents / C;
  const int64_t rem = r->nevents % C;
  const int32_t *lor = r->ev_lor;
  const int16_t *bin = r->ev_bin;
  for (int64_t c = 0; c < C; c++) {
    const int64_t rows = q + (c < rem), base = c * q + (c < rem ? c : rem);
    for (int64_t i = first; i < end && i < rows; i++) {
      const int64_t e = i * C + c, d = base + i;
      if (lor[e] < 0 || lor[e] >= nlors || (j->tof && (bin[e] < 0 || bin[e] >= nbins))) {
        int64_t none = -1;
        if (__atomic_compare_exchange_n(&j->bad, &none, e, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
          j->bad_lor = lor[e];
          j->bad_bin = j->tof ? bin[e] : 0;
        }
        return;
      }
      r->ev_lor_chunked[d] = lor[e];
      if (r->ev_bin_chunked)
        r->ev_bin_chunked[d] = bin[e];
    }
  }
  /* the band's drawn events, a contiguous range, are dealt: their pages go now, so that the drawn and the dealt
   * copies are not both whole at once (1.44 GB at the benchmark's scale) */
  if (j->release) {
    const int64_t lo = first * C, hi = end * C < r->nevents ? end * C : r->nevents;
    release_pages(lor, (size_t)lo * sizeof *lor, (size_t)hi * sizeof *lor);
    if (bin)
      release_pages(bin, (size_t)lo * sizeof *bin, (size_t)hi * sizeof *bin);
  }
}

/* Each dealt event's background, from its LOR's (and TOF bin's); a simulation's flat one is the model's (run.c). */
static void background_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  struct events_job *j = ctx;
  const struct run *r = j->r;
  const int64_t nbins = r->l.nbins;
  for (int64_t d = first; d < end; d++) {
    const int64_t l = r->ev_lor_chunked[d];
    float a = 0.0f;
    if (r->add)
      a = r->add_per_bin ? r->add[l * nbins + r->ev_bin_chunked[d]] : j->tof ? r->add[l] / (float)nbins : r->add[l];
    r->ev_add[d] = a;
  }
}

/* Each dealt event's factor, written over its LOR number (the event set has been made from those): memcpy, as the
 * int32 and the float share the place. */
static void factor_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  const struct run *r = ctx;
  char *p = (char *)r->ev_lor_chunked;
  for (int64_t d = first; d < end; d++) {
    int32_t l;
    memcpy(&l, p + sizeof l * d, sizeof l);
    memcpy(p + sizeof l * d, &r->mult[l], sizeof l); /* the factor takes the LOR's place: both 4 bytes */
  }
}

void event_arrays(const struct options *o, struct run *r)
{
  const int64_t n = r->nevents;
  if (n == 0) {
    fprintf(stderr, "starproj-recon: no listmode events to reconstruct\n");
    exit(1);
  }
  /* chunks of about equal size, a few per subset: each takes every C-th event, so that every subset holds a share of
   * every part of the data (events drawn in LOR order stay in LOR order within a chunk: neighbours share image
   * columns) */
  r->nchunks = o->subsets * CHUNKS_PER_SUBSET < n ? o->subsets * CHUNKS_PER_SUBSET : (int)n;
  if (o->subsets > r->nchunks) {
    fprintf(stderr, "starproj-recon: %d subsets but only %lld events\n", o->subsets, (long long)n);
    exit(1);
  }
  struct events_job j = {r, o->tof, r->phantom != NULL, -1, 0, 0};
  /* not faulted in beforehand: the passes below write every element, on every core */
  if (r->ev_bin)
    r->ev_bin_chunked = lazy_alloc((size_t)n * sizeof(int16_t));
  r->ev_lor_chunked = lazy_alloc((size_t)n * sizeof(int32_t));
  TRY(sproj_pause());
  /* rows of the chunked events: the first chunk's count */
  parallel_blocks("the events' LORs", n / r->nchunks + (n % r->nchunks != 0), EVENT_ROWS, deal_block, &j);
  TRY(sproj_resume());
  if (j.bad >= 0) {
    fprintf(stderr, "starproj-recon: event %lld has LOR %d / TOF bin %d outside the sinogram\n", (long long)j.bad,
            j.bad_lor, j.bad_bin);
    exit(1);
  }
  /* events a simulation drew are needed no more (saved, when asked, before): their memory goes before the factors'
   * arrays come (the host's peak) */
  if (r->phantom) {
    sproj_free(r->ev_lor);
    sproj_free(r->ev_bin);
    r->ev_lor = NULL;
    r->ev_bin = NULL;
  }
  /* a simulation's flat background per LOR (saved, when asked, before) is one number: the sensitivities take none */
  if (r->add_flat && r->add) {
    release(r->add, (size_t)r->l.si.num_lors * sizeof(float));
    r->add = NULL;
  }
  /* ... and so is each event's: the model takes it as one value (sproj_model_set_flat_background), not 4 bytes an event */
  if (r->add_flat)
    return;
  r->ev_add = lazy_alloc((size_t)n * sizeof(float));
  TRY(sproj_pause());
  parallel_blocks("the events' background", n, EVENT_BLOCK, background_block, &j);
  TRY(sproj_resume());
}

/* With --order-events: the events of one chunk (m of them from f on) in the order of sproj_lors_order, their
 * endpoints computed here for it. */
static void order_chunk(struct run *r, int64_t f, int64_t m, int64_t *order, int64_t *idx, float *xs, float *xe)
{
  for (int64_t i = 0; i < m; i++)
    idx[i] = r->ev_lor_chunked[f + i];
  TRY(sproj_scanner_lors_at(r->l.scanner, m, idx, xs, xe));
  TRY(sproj_lors_order(xs, xe, m, r->l.vs, order));
  TRY(sproj_reorder(r->ev_lor_chunked + f, sizeof(int32_t), m, order));
  if (r->ev_add)
    TRY(sproj_reorder(r->ev_add + f, sizeof(float), m, order));
  if (r->ev_bin_chunked)
    TRY(sproj_reorder(r->ev_bin_chunked + f, sizeof(int16_t), m, order));
}

/* Event chunks of about equal size, a few per subset, dealt out to the subsets in turn. With --order-events, each
 * chunk's events in the order of sproj_lors_order (neighbours run through the same image columns: faster GPU
 * projections); every chunk keeps its events, so the subsets stay what they were. The event set is made from the
 * events' LORs where they are projected. */
void event_chunks(const struct options *o, struct run *r)
{
  const int64_t n = r->nevents;
  const int nchunks = r->nchunks;
  const size_t most = (size_t)n / nchunks + 1;
  int64_t *first = malloc((size_t)nchunks * sizeof *first), *count = malloc((size_t)nchunks * sizeof *count);
  if (!first || !count)
    out_of_memory();
  int64_t *order = NULL, *idx = NULL;
  float *xs = NULL, *xe = NULL;
  if (o->order_events) {
    order = malloc(most * sizeof *order);
    idx = malloc(most * sizeof *idx);
    xs = malloc(most * 3 * sizeof *xs);
    xe = malloc(most * 3 * sizeof *xe);
    if (!order || !idx || !xs || !xe)
      out_of_memory();
  }
  double t_order = now();
  for (int c = 0; c < nchunks; c++) {
    first[c] = c * (n / nchunks) + (c < n % nchunks ? c : n % nchunks);
    count[c] = n / nchunks + (c < n % nchunks);
    if (o->order_events)
      order_chunk(r, first[c], count[c], order, idx, xs, xe);
  }
  free(order);
  free(idx);
  free(xs);
  free(xe);
  t_order = now() - t_order;
  TRY(sproj_scanner_events_create(r->l.scanner, r->ev_lor_chunked, r->ev_bin_chunked, n, 0, &r->events));
  /* the endpoints are made from the LOR numbers (on a GPU: taken there); each event's factor takes its number's place */
  TRY(sproj_pause());
  parallel_blocks("the events' factors", n, EVENT_BLOCK, factor_block, r);
  TRY(sproj_resume());
  r->ev_mult = (float *)r->ev_lor_chunked;
  r->ev_lor_chunked = NULL;
  TRY(sproj_chunks_create_ranges(&r->ev_chunks, r->events, nchunks, first, count));
  free(first);
  free(count);
  if (o->order_events)
    SAY("listmode: %lld events in %d chunks, each in the order of sproj_lors_order (%.2f s)\n", (long long)n,
        nchunks, t_order);
  else
    SAY("listmode: %lld events in %d chunks\n", (long long)n, nchunks);
}
