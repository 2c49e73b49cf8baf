/* SPDX-License-Identifier: Apache-2.0 */
/* collectives.c: libstarproj-mpi's barrier, allreduce and gather: MPI's own on a machine; over SimGrid's SMPI built
 * from StarPU-MPI sends and receives, since there the program's thread is a SimGrid actor of its own that SMPI does
 * not count as an MPI process (only the rank's first actor, which StarPU-MPI's progression occupies, may call MPI). */
#include "config.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starpu_mpi.h>
#include "../core/shared.h"
#include "collectives.h"

static size_t type_size(int type)
{
  switch (type) {
  case SPROJ_MPI_INT: return sizeof(int);
  case SPROJ_MPI_INT64: return sizeof(int64_t);
  case SPROJ_MPI_FLOAT: return sizeof(float);
  case SPROJ_MPI_DOUBLE: return sizeof(double);
  default: return 0;
  }
}

#ifndef STARPU_SIMGRID
/* ---- on a machine: MPI ------------------------------------------------------------------------------------ */
int sproj_coll_barrier(struct sproj_coll *k)
{
  return MPI_Barrier(k->comm) == MPI_SUCCESS ? SPROJ_OK : SPROJ_ERR_STARPU;
}

int sproj_coll_allreduce(struct sproj_coll *k, void *values, int count, int type, int op)
{
  MPI_Datatype dt = type == SPROJ_MPI_INT ? MPI_INT : type == SPROJ_MPI_INT64 ? MPI_INT64_T
                  : type == SPROJ_MPI_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  MPI_Op mop = op == SPROJ_MPI_SUM ? MPI_SUM : op == SPROJ_MPI_MIN ? MPI_MIN : MPI_MAX;
  if (!type_size(type) || op < SPROJ_MPI_SUM || op > SPROJ_MPI_MAX)
    return SPROJ_ERR_INVALID;
  return MPI_Allreduce(MPI_IN_PLACE, values, count, dt, mop, k->comm) == MPI_SUCCESS ? SPROJ_OK : SPROJ_ERR_STARPU;
}

int sproj_coll_sum_parts(struct sproj_coll *k, float *const *parts, const int *counts, int n)
{
  MPI_Request *req = malloc((size_t)(n > 0 ? n : 1) * sizeof *req);
  if (!req)
    return SPROJ_ERR_NOMEM;
  int started = 0, ok = 1;
  for (; started < n && ok; started++)
    ok = MPI_Iallreduce(MPI_IN_PLACE, parts[started], counts[started], MPI_FLOAT, MPI_SUM, k->comm,
                        &req[started]) == MPI_SUCCESS;
  /* the ones started are finished whatever happened to the others */
  if (!ok)
    started--;
  ok = MPI_Waitall(started, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS && ok;
  free(req);
  return ok ? SPROJ_OK : SPROJ_ERR_STARPU;
}

int sproj_coll_gatherv(struct sproj_coll *k, const float *mine, float *all, const int *counts, const int *displs,
                       int root)
{
  int ret = root < 0 ? MPI_Allgatherv(mine, counts[k->rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT, k->comm)
                     : MPI_Gatherv(mine, counts[k->rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT, root, k->comm);
  return ret == MPI_SUCCESS ? SPROJ_OK : SPROJ_ERR_STARPU;
}

#else
/* ---- over SMPI: StarPU-MPI point to point ----------------------------------------------------------------- */
/* One step of a collective: send_bytes of send to dest and recv_bytes from src into recv (NULL or 0 bytes: that
 * direction is left out), under the step's tag, waiting for both. The buffers are registered with StarPU for the
 * step only. The send is synchronous (issend): a message that reaches a rank before its receive is posted is then
 * only announced, and the data follow into the receive itself. A plain isend's early data land in a buffer of
 * StarPU-MPI's, copied into the receive once StarPU-MPI's progression sees their transfer end; over SMPI (StarPU
 * 1.4.10) that progression can sleep through the end, and an 8-rank bench_mpi deadlocked there (doc/simulation.md,
 * "Several nodes"). */
static int exchange(struct sproj_coll *k, int step, const void *send, size_t send_bytes, int dest, void *recv,
                    size_t recv_bytes, int src)
{
  if ((send && send_bytes > UINT32_MAX) || (recv && recv_bytes > UINT32_MAX))
    return SPROJ_ERR_OVERFLOW;
  int64_t tag = k->tag + (int64_t)(k->seq % (SPROJ_COLL_TAGS / SPROJ_COLL_STEPS)) * SPROJ_COLL_STEPS + step;
  starpu_data_handle_t hs = NULL, hr = NULL;
  starpu_mpi_req rs, rr;
  int failed = 0, sending = 0, receiving = 0;
  if (recv && recv_bytes) {
    starpu_vector_data_register(&hr, STARPU_MAIN_RAM, (uintptr_t)recv, (uint32_t)recv_bytes, 1);
    receiving = starpu_mpi_irecv(hr, &rr, src, tag, k->comm) == 0;
    failed |= !receiving;
  }
  if (send && send_bytes) {
    starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)send, (uint32_t)send_bytes, 1);
    sending = starpu_mpi_issend(hs, &rs, dest, tag, k->comm) == 0;
    failed |= !sending;
  }
  MPI_Status st;
  if (receiving)
    failed |= starpu_mpi_wait(&rr, &st) != 0;
  if (sending)
    failed |= starpu_mpi_wait(&rs, &st) != 0;
  if (hr)
    starpu_data_unregister(hr);
  if (hs)
    starpu_data_unregister(hs);
  return failed ? SPROJ_ERR_STARPU : SPROJ_OK;
}

#define COMBINE(T)                                                                                              \
  do {                                                                                                          \
    T *d = dst;                                                                                                 \
    const T *s = src;                                                                                           \
    for (int i = 0; i < count; i++)                                                                             \
      d[i] = op == SPROJ_MPI_SUM ? d[i] + s[i] : op == SPROJ_MPI_MIN ? (s[i] < d[i] ? s[i] : d[i])          \
                                                                      : (s[i] > d[i] ? s[i] : d[i]);           \
  } while (0)

/* dst = dst op src, element-wise */
static void combine(void *dst, const void *src, int count, int type, int op)
{
  switch (type) {
  case SPROJ_MPI_INT: COMBINE(int); break;
  case SPROJ_MPI_INT64: COMBINE(int64_t); break;
  case SPROJ_MPI_FLOAT: COMBINE(float); break;
  default: COMBINE(double); break;
  }
}

/* The tree allreduce's broadcast starts at this step, past its reduction's (one per bit of the ranks, an int's). */
#define TREE_BROADCAST_STEP 64
/* Bytes per rank from which an allreduce takes the ring or halving and doubling instead of the tree (64 KiB). */
#define LARGE_BLOCK_BYTES 65536

/* Rank 0's buf (bytes) to every rank down a binomial tree: at step first_step + b the ranks below 2^b that hold it
 * send it 2^b ranks up. */
static int broadcast_tree(struct sproj_coll *k, void *buf, size_t bytes, int first_step)
{
  int ret = SPROJ_OK;
  for (int mask = 1, step = first_step; mask < k->size && !ret; mask <<= 1, step++) {
    if (k->rank < mask && k->rank + mask < k->size)
      ret = exchange(k, step, buf, bytes, k->rank + mask, NULL, 0, 0);
    else if (k->rank >= mask && k->rank < 2 * mask)
      ret = exchange(k, step, NULL, 0, 0, buf, bytes, k->rank - mask);
  }
  return ret;
}

/* Binomial tree: the reduction travels to rank 0 (step b: ranks whose lowest set bit is b send), then the result
 * back out from rank 0; 2 log2(P) steps of the whole array. For small arrays (the layer's agreements, small
 * images on many ranks). */
static int allreduce_tree(struct sproj_coll *k, void *values, int count, int type, int op)
{
  size_t bytes = (size_t)count * type_size(type);
  void *tmp = malloc(bytes ? bytes : 1);
  if (!tmp)
    return SPROJ_ERR_NOMEM;
  int ret = SPROJ_OK, step = 0, mask;
  for (mask = 1; mask < k->size && !ret; mask <<= 1, step++) {
    if (k->rank & mask) {
      ret = exchange(k, step, values, bytes, k->rank - mask, NULL, 0, 0);
      break;
    }
    if (k->rank + mask < k->size && !(ret = exchange(k, step, NULL, 0, 0, tmp, bytes, k->rank + mask)))
      combine(values, tmp, count, type, op);
  }
  if (!ret)
    ret = broadcast_tree(k, values, bytes, TREE_BROADCAST_STEP);
  free(tmp);
  return ret;
}

/* Ring: P-1 steps of reduce-scatter, each rank sending one P-th of the array to its right neighbour and adding the
 * one from its left, then P-1 steps passing the summed P-ths around; each rank sends 2 (P-1)/P arrays, as the
 * large-message algorithm of OpenMPI's MPI_Allreduce. For large images. */
static int allreduce_ring(struct sproj_coll *k, void *values, int count, int type, int op)
{
  int P = k->size, right = (k->rank + 1) % P, left = (k->rank + P - 1) % P;
  size_t es = type_size(type);
  char *v = values;
  int max_block = (count + P - 1) / P;
  void *tmp = malloc((size_t)max_block * es);
  if (!tmp)
    return SPROJ_ERR_NOMEM;
#define BLOCK_FIRST(b) ((int)((int64_t)count * (b) / P))
#define BLOCK_LEN(b) (BLOCK_FIRST((b) + 1) - BLOCK_FIRST(b))
  int ret = SPROJ_OK;
  for (int s = 0; s < P - 1 && !ret; s++) {
    int out = (k->rank - s + P) % P, in = (k->rank - s - 1 + 2 * P) % P;
    ret = exchange(k, s, v + (size_t)BLOCK_FIRST(out) * es, (size_t)BLOCK_LEN(out) * es, right, tmp,
                   (size_t)BLOCK_LEN(in) * es, left);
    if (!ret)
      combine(v + (size_t)BLOCK_FIRST(in) * es, tmp, BLOCK_LEN(in), type, op);
  }
  /* rank r now holds the whole sum of block r+1 */
  for (int s = 0; s < P - 1 && !ret; s++) {
    int out = (k->rank + 1 - s + P) % P, in = (k->rank - s + P) % P;
    ret = exchange(k, P - 1 + s, v + (size_t)BLOCK_FIRST(out) * es, (size_t)BLOCK_LEN(out) * es, right,
                   v + (size_t)BLOCK_FIRST(in) * es, (size_t)BLOCK_LEN(in) * es, left);
  }
#undef BLOCK_FIRST
#undef BLOCK_LEN
  free(tmp);
  return ret;
}

/* Recursive halving and doubling (Rabenseifner's algorithm), for a power of two of ranks: log2(P) steps of
 * reduce-scatter, at step j each rank swapping half of its current range with the rank P / 2^(j+1) away and adding the
 * half it keeps, then log2(P) steps of all-gather that swap the summed ranges back in the reverse order. Each rank
 * sends 2 (P-1)/P arrays, as in the ring, in 2 log2(P) steps instead of 2 (P-1): 6 instead of 14 on 8 ranks, each
 * step a message's latency through StarPU-MPI. MPI libraries use it for large arrays too. */
static int allreduce_halving(struct sproj_coll *k, void *values, int count, int type, int op)
{
  int P = k->size, levels = 0;
  while ((1 << levels) < P)
    levels++;
  size_t es = type_size(type);
  char *v = values;
  void *tmp = malloc(((size_t)count / 2 + 1) * es);
  if (!tmp)
    return SPROJ_ERR_NOMEM;
  int lo[32], hi[32], ret = SPROJ_OK; /* the range before halving step j */
  int a = 0, b = count;
  for (int j = 0; j < levels && !ret; j++) {
    int d = P >> (j + 1), partner = k->rank ^ d, mid = a + (b - a) / 2;
    lo[j] = a;
    hi[j] = b;
    int keep_lo = (k->rank & d) ? mid : a, keep_hi = (k->rank & d) ? b : mid;
    int give_lo = (k->rank & d) ? a : mid, give_hi = (k->rank & d) ? mid : b;
    ret = exchange(k, j, v + (size_t)give_lo * es, (size_t)(give_hi - give_lo) * es, partner, tmp,
                   (size_t)(keep_hi - keep_lo) * es, partner);
    if (!ret)
      combine(v + (size_t)keep_lo * es, tmp, keep_hi - keep_lo, type, op);
    a = keep_lo;
    b = keep_hi;
  }
  /* this rank holds the whole sum of [a, b): the ranges come back together in the reverse order */
  for (int j = levels - 1; j >= 0 && !ret; j--) {
    int d = P >> (j + 1), partner = k->rank ^ d;
    int other_lo = a == lo[j] ? b : lo[j], other_hi = a == lo[j] ? hi[j] : a;
    ret = exchange(k, levels + (levels - 1 - j), v + (size_t)a * es, (size_t)(b - a) * es, partner,
                   v + (size_t)other_lo * es, (size_t)(other_hi - other_lo) * es, partner);
    a = lo[j];
    b = hi[j];
  }
  free(tmp);
  return ret;
}

int sproj_coll_barrier(struct sproj_coll *k)
{
  return starpu_mpi_barrier(k->comm) == 0 ? SPROJ_OK : SPROJ_ERR_STARPU;
}

int sproj_coll_allreduce(struct sproj_coll *k, void *values, int count, int type, int op)
{
  if (!type_size(type) || op < SPROJ_MPI_SUM || op > SPROJ_MPI_MAX)
    return SPROJ_ERR_INVALID;
  if (k->size == 1 || count < 1)
    return SPROJ_OK;
  /* By size, as MPI libraries choose: for blocks of 64 KiB or more per rank (and steps whose tags fit) recursive
   * halving and doubling on a power of two of ranks, the ring on others; else the tree. The ring's 2 (P-1) steps
   * each cost a message's latency (tens of us through StarPU-MPI), which small blocks do not repay: a 256 KiB image
   * on 64 ranks took 126 steps of 4 KiB, and the simulation of them 10 minutes, where the tree takes 12 steps of the
   * whole image. */
  int large = (size_t)count * type_size(type) >= (size_t)LARGE_BLOCK_BYTES * k->size &&
              2 * (k->size - 1) <= SPROJ_COLL_STEPS;
  int ret = !large                          ? allreduce_tree(k, values, count, type, op)
            : (k->size & (k->size - 1)) == 0 ? allreduce_halving(k, values, count, type, op)
                                             : allreduce_ring(k, values, count, type, op);
  k->seq++;
  return ret;
}

int sproj_coll_sum_parts(struct sproj_coll *k, float *const *parts, const int *counts, int n)
{
  /* packed: the collectives here are blocking, and n allreduces one after the other would pay n times the steps;
   * one part, or parts too many for one count, are summed in place one after the other */
  size_t total = 0;
  for (int i = 0; i < n; i++)
    total += (size_t)counts[i];
  if (n == 1 || total > (size_t)INT_MAX) {
    int ret = SPROJ_OK;
    for (int i = 0; i < n && !ret; i++)
      ret = sproj_coll_allreduce(k, parts[i], counts[i], SPROJ_MPI_FLOAT, SPROJ_MPI_SUM);
    return ret;
  }
  float *all = malloc((total ? total : 1) * sizeof *all);
  if (!all)
    return SPROJ_ERR_NOMEM;
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    memcpy(all + at, parts[i], (size_t)counts[i] * sizeof *all);
    at += (size_t)counts[i];
  }
  int ret = sproj_coll_allreduce(k, all, (int)total, SPROJ_MPI_FLOAT, SPROJ_MPI_SUM);
  at = 0;
  for (int i = 0; i < n && !ret; i++) {
    memcpy(parts[i], all + at, (size_t)counts[i] * sizeof *all);
    at += (size_t)counts[i];
  }
  free(all);
  return ret;
}

int sproj_coll_gatherv(struct sproj_coll *k, const float *mine, float *all, const int *counts, const int *displs,
                       int root)
{
  int to = root < 0 ? 0 : root, ret = SPROJ_OK;
  /* the root receives the ranks' parts one after the other; each is told apart by its sender */
  if (k->rank == to) {
    memcpy(all + displs[k->rank], mine, (size_t)counts[k->rank] * sizeof *mine);
    for (int r = 0; r < k->size && !ret; r++)
      if (r != to)
        ret = exchange(k, 0, NULL, 0, 0, all + displs[r], (size_t)counts[r] * sizeof *all, r);
  } else {
    ret = exchange(k, 0, mine, (size_t)counts[k->rank] * sizeof *mine, to, NULL, 0, 0);
  }
  k->seq++;
  if (ret || root >= 0)
    return ret;
  /* every rank: rank 0 passes the whole array down a binomial tree */
  size_t bytes = 0;
  for (int r = 0; r < k->size; r++)
    if ((size_t)displs[r] + (size_t)counts[r] > bytes)
      bytes = (size_t)displs[r] + (size_t)counts[r];
  ret = broadcast_tree(k, all, bytes * sizeof *all, 0);
  k->seq++;
  return ret;
}
#endif
