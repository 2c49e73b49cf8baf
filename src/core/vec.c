/* SPDX-License-Identifier: Apache-2.0 */
/* vec.c: per-LOR vectors (projection values, listmode TOF bins, per-LOR TOF sigma and offset) and the chunkings
 * applied to them as StarPU partition plans. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* A vector child covering elements first .. first+len-1 of its father (any elemsize). */
static void range_child(const struct starpu_vector_interface *father, struct starpu_vector_interface *child,
                        int64_t first, uint32_t len)
{
  size_t offset = (size_t)first * father->elemsize;
  child->id = father->id;
  child->nx = len;
  child->elemsize = father->elemsize;
  child->allocsize = (size_t)len * father->elemsize;
  if (father->dev_handle) {
    if (father->ptr)
      child->ptr = father->ptr + offset;
    child->offset = father->offset + offset;
    child->dev_handle = father->dev_handle;
  }
}

/* StarPU filters: child id is piece (run) id of the chunking passed in filter_arg_ptr. */
static void piece_filter(void *father_interface, void *child_interface, struct starpu_data_filter *f, unsigned id,
                         unsigned nparts)
{
  (void)nparts;
  const struct sproj_chunks *ch = f->filter_arg_ptr;
  range_child(father_interface, child_interface, ch->piece_first[id], ch->piece_len[id]);
}

static void run_filter(void *father_interface, void *child_interface, struct starpu_data_filter *f, unsigned id,
                       unsigned nparts)
{
  (void)nparts;
  const struct sproj_chunks *ch = f->filter_arg_ptr;
  range_child(father_interface, child_interface, ch->run_first[id], ch->run_len[id]);
}

static int plan(starpu_data_handle_t handle, const sproj_chunks *ch, unsigned n,
                void (*filter)(void *, void *, struct starpu_data_filter *, unsigned, unsigned),
                starpu_data_handle_t **children)
{
  starpu_data_handle_t *c = calloc(n, sizeof *c);
  if (!c)
    return SPROJ_ERR_NOMEM;
  struct starpu_data_filter f = {
    .filter_func = filter,
    .nchildren = n,
    .filter_arg_ptr = (void *)ch,
  };
  starpu_data_partition_plan(handle, &f, c);
  *children = c;
  return SPROJ_OK;
}

int sproj_plan_pieces(starpu_data_handle_t handle, const sproj_chunks *ch, starpu_data_handle_t **children)
{
  return plan(handle, ch, ch->npieces, piece_filter, children);
}

/* Groups of consecutive pieces whose LORs follow each other (plan_vec_pieces), and the pieces of each group as
 * children of the group (their first LOR counted from the group's). */
enum { GROUP_PIECES = 64, TWO_LEVEL_PIECES = 256 };
struct grouping {
  const sproj_chunks *ch;
  int64_t *first;   /* per group: first LOR and number of LORs */
  uint32_t *len;
  unsigned g;       /* the group whose pieces are being planned */
  const unsigned *group_start;
};

static void group_filter(void *father_interface, void *child_interface, struct starpu_data_filter *f, unsigned id,
                         unsigned nparts)
{
  (void)nparts;
  const struct grouping *gr = f->filter_arg_ptr;
  range_child(father_interface, child_interface, gr->first[id], gr->len[id]);
}

static void group_piece_filter(void *father_interface, void *child_interface, struct starpu_data_filter *f,
                               unsigned id, unsigned nparts)
{
  (void)nparts;
  const struct grouping *gr = f->filter_arg_ptr;
  unsigned p = gr->group_start[gr->g] + id;
  range_child(father_interface, child_interface, gr->ch->piece_first[p] - gr->first[gr->g], gr->ch->piece_len[p]);
}

static void plan_free(struct sproj_plan *plan)
{
  free(plan->children);
  free(plan->groups);
  free(plan->group_start);
  plan->children = plan->groups = NULL;
  plan->group_start = NULL;
}

/* Plans the chunking's pieces on the vector: directly, or through groups when there are many pieces and the groups
 * hold several each. */
static int plan_vec_pieces(starpu_data_handle_t handle, const sproj_chunks *ch, struct sproj_plan *plan)
{
  memset(plan, 0, sizeof *plan);
  plan->chunking_id = ch->id;
  plan->npieces = ch->npieces;
  if (ch->npieces < TWO_LEVEL_PIECES)
    return sproj_plan_pieces(handle, ch, &plan->children);
  unsigned n = ch->npieces, ng = 0;
  /* about the square root of the pieces per group (at least GROUP_PIECES): both levels' steps stay small */
  unsigned per_group = GROUP_PIECES;
  while ((uint64_t)per_group * per_group < n)
    per_group++;
  unsigned *start = malloc(((size_t)n + 1) * sizeof *start);
  struct grouping gr = {ch, malloc((size_t)n * sizeof(int64_t)), malloc((size_t)n * sizeof(uint32_t)), 0, start};
  int ret = start && gr.first && gr.len ? SPROJ_OK : SPROJ_ERR_NOMEM;
  for (unsigned p = 0; !ret && p < n; p++) {
    int64_t end = ng ? gr.first[ng - 1] + (int64_t)gr.len[ng - 1] : -1;
    if (ng && ch->piece_first[p] == end && p - start[ng - 1] < per_group &&
        (int64_t)gr.len[ng - 1] + ch->piece_len[p] <= UINT32_MAX) {
      gr.len[ng - 1] += ch->piece_len[p];
    } else {
      start[ng] = p;
      gr.first[ng] = ch->piece_first[p];
      gr.len[ng++] = ch->piece_len[p];
    }
  }
  if (!ret && ng * 4 > n) { /* pieces that do not follow each other: groups would not help */
    ret = sproj_plan_pieces(handle, ch, &plan->children);
  } else if (!ret) {
    start[ng] = n;
    plan->children = calloc(n, sizeof *plan->children);
    plan->groups = calloc(ng, sizeof *plan->groups);
    if (plan->children && plan->groups) {
      plan->ngroups = ng;
      plan->group_start = start;
      start = NULL;
      struct starpu_data_filter f = {.filter_func = group_filter, .nchildren = ng, .filter_arg_ptr = &gr};
      starpu_data_partition_plan(handle, &f, plan->groups);
      for (unsigned g = 0; g < ng; g++) {
        gr.g = g;
        struct starpu_data_filter fp = {.filter_func = group_piece_filter,
                                        .nchildren = plan->group_start[g + 1] - plan->group_start[g],
                                        .filter_arg_ptr = &gr};
        starpu_data_partition_plan(plan->groups[g], &fp, plan->children + plan->group_start[g]);
      }
    } else {
      plan_free(plan);
      ret = SPROJ_ERR_NOMEM;
    }
  }
  free(start);
  free(gr.first);
  free(gr.len);
  return ret;
}

/* Activates the plan for reading (read-only vectors, once): both levels. */
static void plan_activate_readonly(starpu_data_handle_t handle, struct sproj_plan *plan)
{
  if (!plan->ngroups) {
    starpu_data_partition_readonly_submit(handle, plan->npieces, plan->children);
    return;
  }
  starpu_data_partition_readonly_submit(handle, plan->ngroups, plan->groups);
  for (unsigned g = 0; g < plan->ngroups; g++)
    starpu_data_partition_readonly_submit(plan->groups[g], plan->group_start[g + 1] - plan->group_start[g],
                                          plan->children + plan->group_start[g]);
}

/* Gathers group g's pieces into the group and forgets them. */
static void group_pieces_clean(struct sproj_plan *plan, unsigned g, int gather)
{
  starpu_data_partition_clean_node(plan->groups[g], plan->group_start[g + 1] - plan->group_start[g],
                                   plan->children + plan->group_start[g], gather);
}

/* Gathers the top level (pieces, or groups whose pieces are gathered already) into the vector and frees the plan. */
static void plan_release_top(starpu_data_handle_t handle, struct sproj_plan *plan, int gather)
{
  if (plan->ngroups)
    starpu_data_partition_clean_node(handle, plan->ngroups, plan->groups, gather);
  else
    starpu_data_partition_clean_node(handle, plan->npieces, plan->children, gather);
  plan_free(plan);
}

/* Where a vector's pieces are gathered: its home node. StarPU's starpu_data_partition_clean gathers in main memory
 * whatever the home, which for a vector homed on a GPU (a caller's CUDA array, a LOR set made there) would make a host
 * copy of it. */
static int gather_node(starpu_data_handle_t handle)
{
  int home = starpu_data_get_home_node(handle);
  return home >= 0 ? home : STARPU_MAIN_RAM;
}

/* Gathers the pieces (first: the lower level) and forgets the plan. */
static void plan_release(starpu_data_handle_t handle, struct sproj_plan *plan)
{
  int gather = gather_node(handle);
  for (unsigned g = 0; g < plan->ngroups; g++)
    group_pieces_clean(plan, g, gather);
  plan_release_top(handle, plan, gather);
}

int sproj_plan_runs(starpu_data_handle_t handle, const sproj_chunks *ch, starpu_data_handle_t **children)
{
  return plan(handle, ch, ch->nruns, run_filter, children);
}

int sproj_vec_init(struct sproj_vec *v, sproj_lors *lors, starpu_data_handle_t handle, int owns, int readonly,
                   int own)
{
  v->handle = handle;
  v->lors = lors;
  v->owns_handle = owns;
  v->readonly = readonly;
  v->plans = NULL;
  v->nplans = v->cap_plans = 0;
  v->last_chunking = 0;
  pthread_mutex_init(&v->lock, NULL);
  if (own)
    return SPROJ_OK;
  pthread_mutex_lock(&lors->lock);
  if (lors->nvecs == lors->cap_vecs) {
    int cap = lors->cap_vecs ? 2 * lors->cap_vecs : 4;
    struct sproj_vec **p = realloc(lors->vecs, cap * sizeof *p);
    if (!p) {
      pthread_mutex_unlock(&lors->lock);
      pthread_mutex_destroy(&v->lock);
      return SPROJ_ERR_NOMEM;
    }
    lors->vecs = p;
    lors->cap_vecs = cap;
  }
  lors->vecs[lors->nvecs++] = v;
  pthread_mutex_unlock(&lors->lock);
  return SPROJ_OK;
}

static void plan_clean(struct sproj_vec *v, struct sproj_plan *plan)
{
  /* gathers the pieces into the whole vector first if this plan is active */
  plan_release(v->handle, plan);
}

void sproj_vec_discard(struct sproj_vec *v)
{
  /* its pieces are invalidated before the partitions are cleaned, so that nothing is gathered: bringing a vector the
   * size of a TOF sinogram home cost 13 s (and 17 GB of host memory) on an H200 host for values nobody reads */
  sproj_lors *lors = v->lors;
  pthread_mutex_lock(&lors->lock);
  for (int i = 0; i < lors->nvecs; i++)
    if (lors->vecs[i] == v) {
      lors->vecs[i] = lors->vecs[--lors->nvecs];
      break;
    }
  pthread_mutex_unlock(&lors->lock);
  /* the tasks that use it end first (the library's own values are unmapped after this): their accesses come before
   * those of the pieces handed out last, which are waited for where they are, without moving them */
  struct sproj_plan *last = NULL;
  for (int i = 0; i < v->nplans; i++)
    if (v->plans[i].chunking_id == v->last_chunking)
      last = &v->plans[i];
  unsigned nwait = last ? last->npieces : 1;
  for (unsigned k = 0; k < nwait; k++) {
    starpu_data_handle_t h = last ? last->children[k] : v->handle;
    if (starpu_data_acquire_on_node(h, STARPU_ACQUIRE_NO_NODE, STARPU_RW) == 0)
      starpu_data_release_on_node(h, STARPU_ACQUIRE_NO_NODE);
  }
  /* and whatever is gathered is gathered at the vector's home (a GPU for values made there), not in main memory */
  int gather = gather_node(v->handle);
  for (int i = 0; i < v->nplans; i++) {
    struct sproj_plan *plan = &v->plans[i];
    for (unsigned k = 0; k < plan->npieces; k++)
      starpu_data_invalidate_submit(plan->children[k]);
    /* two levels: each group is gathered from its invalidated pieces, then invalidated itself, before the vector */
    for (unsigned g = 0; g < plan->ngroups; g++) {
      group_pieces_clean(plan, g, gather);
      starpu_data_invalidate_submit(plan->groups[g]);
    }
    plan_release_top(v->handle, plan, gather);
  }
  starpu_data_unregister_no_coherency(v->handle);
  pthread_mutex_destroy(&v->lock);
  free(v->plans);
}

void sproj_vec_fini(struct sproj_vec *v, int own)
{
  if (!own) {
    sproj_lors *lors = v->lors;
    pthread_mutex_lock(&lors->lock);
    for (int i = 0; i < lors->nvecs; i++)
      if (lors->vecs[i] == v) {
        lors->vecs[i] = lors->vecs[--lors->nvecs];
        break;
      }
    pthread_mutex_unlock(&lors->lock);
  }
  for (int i = 0; i < v->nplans; i++)
    plan_clean(v, &v->plans[i]);
  if (v->owns_handle) {
    starpu_data_unregister(v->handle);
  } else {
    /* the caller keeps the handle, coherent where it lives: in main memory, or on the GPU that holds a GPU array
     * (acquiring it on the host would copy a GPU array there at every unregistration) */
    int home = starpu_data_get_home_node(v->handle);
    if (home < 0)
      home = STARPU_MAIN_RAM;
    if (starpu_data_acquire_on_node(v->handle, home, STARPU_R) == 0)
      starpu_data_release_on_node(v->handle, home);
  }
  pthread_mutex_destroy(&v->lock);
  free(v->plans);
}

int sproj_vec_children_locked(struct sproj_vec *v, const sproj_chunks *ch, starpu_data_handle_t **children)
{
  v->last_chunking = ch->id;
  for (int i = 0; i < v->nplans; i++)
    if (v->plans[i].chunking_id == ch->id) {
      *children = v->plans[i].children;
      return SPROJ_OK;
    }
  if (v->nplans == v->cap_plans) {
    int cap = v->cap_plans ? 2 * v->cap_plans : 4;
    struct sproj_plan *p = realloc(v->plans, cap * sizeof *p);
    if (!p)
      return SPROJ_ERR_NOMEM;
    v->plans = p;
    v->cap_plans = cap;
  }
  struct sproj_plan *plan = &v->plans[v->nplans];
  if (plan_vec_pieces(v->handle, ch, plan))
    return SPROJ_ERR_NOMEM;
  v->nplans++;
  /* read-only data: activate the partition once, now, so that concurrent submissions never race to do it */
  if (v->readonly)
    plan_activate_readonly(v->handle, plan);
  *children = plan->children;
  return SPROJ_OK;
}

int sproj_vec_children(struct sproj_vec *v, const sproj_chunks *ch, starpu_data_handle_t **children)
{
  pthread_mutex_lock(&v->lock);
  int ret = sproj_vec_children_locked(v, ch, children);
  pthread_mutex_unlock(&v->lock);
  return ret;
}

void sproj_vec_forget(struct sproj_vec *v, uint64_t chunking_id)
{
  pthread_mutex_lock(&v->lock);
  for (int i = 0; i < v->nplans; i++)
    if (v->plans[i].chunking_id == chunking_id) {
      plan_clean(v, &v->plans[i]);
      v->plans[i] = v->plans[--v->nplans];
      break;
    }
  pthread_mutex_unlock(&v->lock);
}

int sproj_vec_init_ro(struct sproj_vec *v, sproj_lors *lors, const void *data, size_t elemsize, int own)
{
  starpu_data_handle_t h;
  /* only ever read: StarPU never writes through this pointer */
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)data, (uint32_t)lors->num_lors, elemsize);
  if (sproj_vec_init(v, lors, h, 1, 1, own)) {
    starpu_data_unregister_no_coherency(h);
    return SPROJ_ERR_NOMEM;
  }
  return SPROJ_OK;
}

void sproj_vec_free(struct sproj_vec *v, int own)
{
  if (!v)
    return;
  sproj_vec_fini(v, own);
  free(v);
}

int sproj_vec_register_ro(struct sproj_vec **out, sproj_lors *lors, const void *data, size_t elemsize, int own)
{
  struct sproj_vec *v = malloc(sizeof *v);
  if (!v)
    return SPROJ_ERR_NOMEM;
  if (sproj_vec_init_ro(v, lors, data, elemsize, own)) {
    free(v);
    return SPROJ_ERR_NOMEM;
  }
  *out = v;
  return SPROJ_OK;
}
