/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_mpi.h: the distributed layer (libstarproj-mpi): projections and OSEM over MPI ranks with StarPU-MPI. */
#ifndef STARPROJ_MPI_H
#define STARPROJ_MPI_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "starproj.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The model: one MPI rank per node (or per GPU), each running starproj on its own devices.
 *  - The image is replicated: every rank registers the same image (same values, same geometry) with
 *    sproj_image_register and keeps it identical by taking part in every collective call below.
 *  - A LOR set (and every per-LOR vector on it: projection values, data, factors, TOF parameters) is cut into
 *    global chunks, consecutive ranges of the global LOR numbering. A distribution (sproj_mpi_dist) gives each
 *    chunk to one rank; a rank registers only the LORs of its own chunks, one after the other in increasing chunk
 *    order (its "local" LOR set), and works on them with the ordinary starproj calls.
 *  - Forward projection runs where the LORs live and needs no communication. Back projection is the sum of every
 *    rank's part: each rank back-projects its LORs into an image of its own, the images are summed across ranks
 *    (StarPU-MPI's reduction or an MPI_Allreduce, sproj_mpi_set_reduce), and every rank adds the same sum.
 *  - OSEM / LM-OSEM (sproj_mpi_recon_*) run the single-process reconstruction of starproj.h on each rank's LORs,
 *    with the back projection of every subset (and every sensitivity) summed across ranks before the update, so that
 *    every rank applies the identical multiplicative update to its copy of the image. A rank with a power of two of
 *    devices (sproj_num_devices) runs them as sproj_recon_create describes, and sums across ranks each device's slab
 *    of the image, summed over the rank's devices first, instead of the whole image.
 *
 * Collective calls (marked so below) must be made by every rank of the communicator, in the same order, with the same
 * global arguments (chunk counts, owners, subsets, reduction method). They validate their arguments on each rank and
 * then agree: when a call fails on one rank (bad input there, out of memory), it fails on every rank with the same
 * status (the most negative of the ranks' statuses) before any collective work starts, and nothing waits for a
 * rank that has given up. A rank that did not fail itself gets the message "rank R failed: ..." naming the lowest
 * failing rank; that rank has its own message. A failed collective call changes nothing (out-pointers untouched),
 * except that a reconstruction's iterations done before the failure stay done (as in sproj_recon_iterate).
 *
 * Threads: MPI must provide MPI_THREAD_MULTIPLE (StarPU-MPI's progress thread and this library's collectives both
 * call MPI). Make the collective calls from one thread per rank.
 */

/* ---- communicator -------------------------------------------------------------------------------------- */
typedef struct sproj_mpi_comm sproj_mpi_comm;

/* How back projections are summed across ranks. */
enum sproj_mpi_reduce {
  SPROJ_MPI_REDUCE_DEFAULT = 0,   /* the faster of the two on the measurements in doc/scaling-model.md (allreduce) */
  SPROJ_MPI_REDUCE_ALLREDUCE = 1, /* wait for the local back projection, MPI_Allreduce of the image on the host */
  SPROJ_MPI_REDUCE_STARPU = 2     /* StarPU-MPI: the image is MPI data owned by rank 0, StarPU-MPI's reduction sums the
                                   * ranks' contributions there in a binary tree, and the sum goes back to every rank
                                   * down a binomial tree, all as part of the task graph (the submitting thread does
                                   * not wait) */
};

/* Creates the communicator: MPI (initialised here with MPI_THREAD_MULTIPLE if the caller has not initialised it,
 * and then finalised by sproj_mpi_comm_destroy), starproj (sproj_init(cfg), unless the caller already initialised
 * it: then it is used as it is, and left running by destroy) and StarPU-MPI (starpu_mpi_init_comm on a duplicate of
 * mpi_comm). Ranks are those of mpi_comm. Collective over mpi_comm.
 * Errors: NULL (comm), INVALID (MPI initialised with less than MPI_THREAD_MULTIPLE, a communicator exists already,
 * MPI_COMM_NULL), what sproj_init returns, STARPU (StarPU-MPI failed to start).
 * Built against StarPU-MPI over SimGrid's SMPI (doc/simulation.md), StarPU has initialised MPI before main and
 * finalises it at StarPU-MPI's shutdown, mpi_comm must be MPI_COMM_WORLD (INVALID otherwise), and the program's
 * thread may make no MPI call of its own (sproj_mpi_barrier and sproj_mpi_allreduce instead). */
SPROJ_API int sproj_mpi_comm_create(sproj_mpi_comm **comm, MPI_Comm mpi_comm, const struct sproj_config *cfg);
/* Stops StarPU-MPI, then starproj (if create started it), then MPI (if create initialised it), and frees comm
 * (NULL: no-op). Collective. Errors: BUSY (starproj objects are still registered while create started starproj:
 * nothing is stopped). */
SPROJ_API int sproj_mpi_comm_destroy(sproj_mpi_comm *comm);
/* This process's rank and the number of ranks. Errors: NULL. */
SPROJ_API int sproj_mpi_comm_rank(const sproj_mpi_comm *comm, int *rank);
SPROJ_API int sproj_mpi_comm_size(const sproj_mpi_comm *comm, int *size);

/* Chooses how back projections are summed from now on (enum sproj_mpi_reduce). Collective: every rank must pass
 * the same method. Errors: NULL, INVALID (unknown method, or not the same on every rank). */
SPROJ_API int sproj_mpi_set_reduce(sproj_mpi_comm *comm, int method);
/* The method in use (never SPROJ_MPI_REDUCE_DEFAULT: the one it stands for). Errors: NULL. */
SPROJ_API int sproj_mpi_get_reduce(const sproj_mpi_comm *comm, int *method);

/* Bytes of image and projection data this rank has sent to other ranks since create or the last reset, counted by
 * this library from the sizes it reduces and gathers: a StarPU-MPI reduction sends one image from every rank other
 * than 0 to rank 0 and one from rank 0 to each other rank; an MPI_Allreduce is counted as a ring allreduce sends,
 * 2 (P-1)/P images per rank (what OpenMPI's large-message algorithm moves; its small-message algorithms send
 * more); a gather, each rank's part once to the root (to every other rank for all ranks). Agreement messages (a few
 * ints per collective) are not counted. Errors: NULL. Not collective. */
SPROJ_API int sproj_mpi_bytes_sent(const sproj_mpi_comm *comm, int64_t *bytes);
SPROJ_API int sproj_mpi_bytes_reset(sproj_mpi_comm *comm);

/* Element types and operations of sproj_mpi_allreduce. */
enum sproj_mpi_type { SPROJ_MPI_INT = 1, SPROJ_MPI_INT64 = 2, SPROJ_MPI_FLOAT = 3, SPROJ_MPI_DOUBLE = 4 };
enum sproj_mpi_op { SPROJ_MPI_SUM = 1, SPROJ_MPI_MIN = 2, SPROJ_MPI_MAX = 3 };

/* A barrier and an in-place allreduce (values, count elements of type, become the element-wise op over the ranks)
 * over the communicator's ranks, for a program's own timing and totals: MPI_Barrier and MPI_Allreduce on a machine;
 * in a build against StarPU-MPI over SimGrid's SMPI, where the program's thread may not call MPI itself
 * (doc/simulation.md), the same through StarPU-MPI. Collective: every rank passes the same count, type and op.
 * Errors: NULL, DIMS (count < 0), INVALID (type, op, or the ranks passed different ones), STARPU. */
SPROJ_API int sproj_mpi_barrier(sproj_mpi_comm *comm);
SPROJ_API int sproj_mpi_allreduce(sproj_mpi_comm *comm, void *values, int count, int type, int op);

/* ---- distribution of LOR chunks ------------------------------------------------------------------------ */
typedef struct sproj_mpi_dist sproj_mpi_dist;

/* Which rank owns which chunk, when the library chooses. */
enum sproj_mpi_layout {
  SPROJ_MPI_BLOCKS = 0, /* consecutive chunks per rank, cut where the running LOR count passes k/P of the total
                         * (moved so that no rank is left without a chunk when there are at least P): balanced by
                         * LORs, and each rank's chunks are one range of the LOR numbering. With subsets
                         * that interleave chunks (OSEM over views: chunk c in subset c % S), every rank then holds
                         * about the same share of every subset. */
  SPROJ_MPI_CYCLIC = 1  /* chunk c to rank c % P (balanced by chunks; with S subsets interleaved as c % S, choose P
                         * and S without a common factor, or rank r only gets the subsets = r mod gcd(P, S)) */
};

/* A distribution of num_chunks global chunks; chunk c holds chunk_lors[c] > 0 LORs and covers the global LORs
 * [sum of chunk_lors[0..c-1], + chunk_lors[c]). owner NULL: the layout decides; else owner[c] (0 .. P-1) is the rank
 * of chunk c (layout ignored). Every rank must own at least one chunk. chunk_lors and owner are copied. Collective:
 * every rank passes the same arguments (checked).
 * Errors: NULL, DIMS (num_chunks < 1), EMPTY (a chunk of 0 LORs, a rank without chunks), RANGE (an owner outside
 * 0 .. P-1, negative LOR counts), OVERFLOW (more than 2^62 LORs), INVALID (layout, or arguments that differ between
 * ranks), NOMEM. */
SPROJ_API int sproj_mpi_dist_create(sproj_mpi_dist **dist, sproj_mpi_comm *comm, int num_chunks, const int64_t *chunk_lors,
                                    int layout, const int *owner);
/* Frees the distribution (NULL: no-op). Not collective. */
SPROJ_API int sproj_mpi_dist_destroy(sproj_mpi_dist *dist);
/* The rank of global chunk `chunk`. Errors: NULL, RANGE. */
SPROJ_API int sproj_mpi_dist_owner(const sproj_mpi_dist *dist, int chunk, int *rank);
/* This rank's share: number of chunks and of LORs (either pointer may be NULL). Errors: NULL (dist). */
SPROJ_API int sproj_mpi_dist_local(const sproj_mpi_dist *dist, int *num_chunks, int64_t *num_lors);
/* This rank's local chunk `local` (0 .. num_chunks-1, in increasing global order): its global chunk index, its
 * first global LOR and its LOR count, and where it starts in the local LOR set (any output pointer may be NULL).
 * Errors: NULL (dist), RANGE. */
SPROJ_API int sproj_mpi_dist_local_chunk(const sproj_mpi_dist *dist, int local, int *chunk, int64_t *global_first,
                                         int64_t *local_first, int64_t *count);
/* Copies this rank's part of a global per-LOR array (bytes_per_lor bytes per LOR: 12 for endpoints, 4 for values,
 * 4 * bins for a TOF sinogram, 2 for int16 TOF bins) into local, in the local order. For callers who hold the whole
 * array on every rank (tests, small data); large data is better produced rank by rank (sproj_scanner_view_lors
 * for the views of sproj_mpi_dist_local_chunk). Errors: NULL, DIMS (bytes_per_lor 0). Thread-safe, not collective. */
SPROJ_API int sproj_mpi_dist_select(const sproj_mpi_dist *dist, const void *global, size_t bytes_per_lor, void *local);
/* A chunking of this rank's local LOR set with one chunk per local chunk, in the local order (local chunk j is
 * chunk j); free it with sproj_chunks_destroy. Errors: NULL, NOT_INIT, MISMATCH (lors does not hold the rank's LOR
 * count), those of sproj_chunks_create_ranges. Not collective. */
SPROJ_API int sproj_mpi_dist_chunks(sproj_chunks **chunks, const sproj_mpi_dist *dist, sproj_lors *local_lors);

/* ---- projections --------------------------------------------------------------------------------------- */
/* The projector follows the arguments, as in sproj_model_create: tof NULL: non-TOF; tof given: TOF listmode when the
 * LOR set was registered with bins (sproj_lors_register_events), TOF sinogram otherwise. proj and chunks are this
 * rank's local objects (chunks NULL: the whole local set). */

/* Forward projection of every local chunk into proj (overwritten): each rank projects its own LORs with its copy of
 * img; no data moves between ranks. Returns once submitted (sproj_proj_sync or sproj_mpi_gather to read). Collective
 * (only for the agreement on errors). Errors: NULL, NOT_INIT, MISMATCH, what sproj_fwd_chunks and its TOF variants
 * return. */
SPROJ_API int sproj_mpi_fwd(sproj_mpi_comm *comm, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                            const sproj_tof *tof);
/* Back projection of every rank's LORs, ADDED to img on every rank: each rank back-projects its chunks into a
 * zeroed image of its own, these are summed across ranks with the communicator's method, and each rank adds the sum
 * to its img, so identical images stay identical. With SPROJ_MPI_REDUCE_ALLREDUCE the call returns after the
 * allreduce (the local back projection finished); with SPROJ_MPI_REDUCE_STARPU it returns once everything is
 * submitted. Collective. Errors: as sproj_mpi_fwd, NOMEM, STARPU. */
SPROJ_API int sproj_mpi_back(sproj_mpi_comm *comm, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                             const sproj_tof *tof);
/* Gathers the ranks' local projection values (proj: this rank's local vector on dist's local LOR set) into the
 * global order, on rank root (0 .. P-1) or on every rank (root -1): global holds num_values_per_lor floats per global
 * LOR (TOF sinograms: bins per LOR) and is only written on the receiving ranks (may be NULL elsewhere). Waits for
 * the pending tasks writing proj. Collective. Errors: NULL, NOT_INIT, MISMATCH (proj not on dist's local LOR
 * count, or another number of values per LOR than on other ranks), RANGE (root), OVERFLOW (more than 2^31-1 floats
 * from one rank), STARPU. */
SPROJ_API int sproj_mpi_gather(sproj_mpi_comm *comm, const sproj_mpi_dist *dist, sproj_proj *proj, int root, float *global);

/* ---- OSEM / LM-OSEM across ranks ----------------------------------------------------------------------- */
typedef struct sproj_mpi_recon sproj_mpi_recon;

/* A reconstruction of x (replicated) from the LORs of every rank. cfg is as for sproj_recon_create, with this rank's
 * local objects: cfg->model on the local LOR set (local factors and background, local TOF parameters), cfg->data
 * the local data, cfg->chunks the chunking of sproj_mpi_dist_chunks(dist, ...) of the same local LOR set. The
 * subsets are GLOBAL: cfg->subset_chunks / subset_sizes list global chunk indices (the same arrays on every rank),
 * NULL interleaves them (global chunk c in subset c % S), exactly as one process with the whole LOR set would; each
 * rank keeps the chunks of each subset it owns, and must own at least one chunk of every subset. Listmode:
 * cfg->sens_model is this rank's share of the sensitivity LORs (any split of the scanner's LORs in which each LOR is
 * on one rank; its sum over ranks is the sensitivity), used divided by S as in one process. Not supported here
 * (INVALID): cfg->objective, cfg->sens_chunks and the sensitivity subset lists. Per subset, each rank submits what one process
 * submits for its LORs (forward projection, ratio, back projection), then the back projection is summed across
 * ranks, and every rank applies the same update. The sensitivities are summed across ranks once, here.
 * Collective. Errors: those of sproj_recon_create, and NULL (comm, dist), MISMATCH (cfg->chunks has not the rank's
 * number of local chunks of dist), EMPTY (a rank owns no chunk of a subset), RANGE (a global chunk index), INVALID. */
SPROJ_API int sproj_mpi_recon_create(sproj_mpi_recon **recon, sproj_mpi_comm *comm, const sproj_mpi_dist *dist, sproj_image *x,
                                     const struct sproj_recon_config *cfg);
/* num_iterations iterations, as sproj_recon_iterate (the callback runs on every rank, with x on the host; the
 * iterations stop after the one where the callback of any rank asked to). Collective. Errors: those of
 * sproj_recon_iterate. */
SPROJ_API int sproj_mpi_recon_iterate(sproj_mpi_recon *recon, int num_iterations, sproj_recon_callback callback, void *user);
/* Waits for pending work and frees the reconstruction (NULL: no-op). Not collective (the communication of a
 * pending reduction is finished first). */
SPROJ_API int sproj_mpi_recon_destroy(sproj_mpi_recon *recon);

#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_MPI_H */
