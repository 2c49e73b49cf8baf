/* submit.c: turning projection requests (chunks of a LOR set) into StarPU tasks of a good size. */
#include "config.h"
#include <stdlib.h>
#include "internal.h"

size_t sproj_proj_task_size(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct sproj_proj_arg *arg = task->cl_arg;
  int nmax = arg->geom.n[0];
  if (arg->geom.n[1] > nmax)
    nmax = arg->geom.n[1];
  if (arg->geom.n[2] > nmax)
    nmax = arg->geom.n[2];
  size_t lors = 0;
  for (int p = 0; p < arg->npieces; p++)
    lors += starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 1 + SPROJ_BUFFERS_PER_PIECE * p));
  /* work grows with the LORs times the planes each crosses, at most the largest dimension */
  return lors * (size_t)nmax;
}

/* Pieces collected for one task. */
struct task_group {
  struct starpu_data_descr descr[1 + SPROJ_BUFFERS_PER_PIECE * SPROJ_MAX_PIECES];
  int npieces;
  int64_t lors;
};

static int group_submit(struct task_group *g, struct starpu_codelet *cl, const struct sproj_image *img)
{
  if (g->npieces == 0)
    return SPROJ_OK;
  struct sproj_proj_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  arg->geom = img->geom;
  arg->npieces = g->npieces;
  int ret = starpu_task_insert(cl, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_DATA_MODE_ARRAY, g->descr,
                               1 + SPROJ_BUFFERS_PER_PIECE * g->npieces, STARPU_EXECUTE_WHERE,
                               (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0);
  g->npieces = 0;
  g->lors = 0;
  return ret == 0 ? SPROJ_OK : SPROJ_ERR_STARPU;
}

/* Submits the tasks of validated chunks. */
static int submit(const char *func, int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                  const int *list, int num)
{
  const sproj_chunks *ch;
  starpu_data_handle_t *values;
  int ret;

  if ((ret = sproj_resolve_chunks(func, proj->lors, chunks, &ch)))
    return ret;
  int64_t total = 0;
  for (int i = 0; i < num; i++)
    total += ch->count[list[i]];
  int64_t target = sproj_task_target(total);

  struct task_group *g = malloc(sizeof *g);
  if (!g)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  g->npieces = 0;
  g->lors = 0;
  g->descr[0].handle = img->handle;
  g->descr[0].mode = back ? STARPU_REDUX : STARPU_R;
  struct starpu_codelet *cl = back ? &sproj_joseph3d_back_cl : &sproj_joseph3d_fwd_cl;
  enum starpu_data_access_mode values_mode = back ? STARPU_R : STARPU_W;

  /* the vector's partition may change with the chunking: one submitter of this vector at a time */
  pthread_mutex_lock(&proj->lock);
  if ((ret = sproj_proj_children(proj, ch, &values)))
    ret = sproj_fail(ret, func, "out of memory");
  for (int i = 0; i < num && !ret; i++) {
    for (int p = ch->piece_start[list[i]]; p < ch->piece_start[list[i] + 1] && !ret; p++) {
      if (g->npieces == SPROJ_MAX_PIECES || (g->npieces > 0 && g->lors + ch->piece_len[p] > target))
        if ((ret = group_submit(g, cl, img)))
          ret = sproj_fail(ret, func, "StarPU refused a task");
      struct starpu_data_descr *d = g->descr + 1 + SPROJ_BUFFERS_PER_PIECE * g->npieces;
      d[0].handle = ch->xs_children[p];
      d[0].mode = STARPU_R;
      d[1].handle = ch->xe_children[p];
      d[1].mode = STARPU_R;
      d[2].handle = values[p];
      d[2].mode = values_mode;
      g->npieces++;
      g->lors += ch->piece_len[p];
    }
  }
  if (!ret && (ret = group_submit(g, cl, img)))
    ret = sproj_fail(ret, func, "StarPU refused a task");
  pthread_mutex_unlock(&proj->lock);
  free(g);
  return ret;
}

static int check_args(const char *func, const sproj_image *img, const sproj_proj *proj, const sproj_chunks *chunks,
                      int chunk)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!img || !proj)
    return sproj_fail(SPROJ_ERR_NULL, func, "img and proj must not be NULL");
  if (!chunks && chunk != 0 && chunk != SPROJ_ALL_CHUNKS)
    return sproj_fail(SPROJ_ERR_RANGE, func, "without a chunking, chunk must be 0 or SPROJ_ALL_CHUNKS");
  if (chunks && chunks->lors != proj->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the chunking belongs to another LOR set than proj");
  if (chunks && chunk != SPROJ_ALL_CHUNKS && (chunk < 0 || chunk >= chunks->num_chunks))
    return sproj_fail(SPROJ_ERR_RANGE, func, "chunk %d outside 0..%d", chunk, chunks->num_chunks - 1);
  return SPROJ_OK;
}

/* ---- batches: this thread's requests collected until sproj_batch_end ---- */
struct batch {
  int depth;
  int back;
  sproj_image *img;
  sproj_proj *proj;
  const sproj_chunks *chunks;
  int *list;
  int num, cap;
};
static _Thread_local struct batch batch;

int sproj_flush_pending(void)
{
  if (batch.num == 0)
    return SPROJ_OK;
  int ret = submit("sproj_batch_end", batch.back, batch.img, batch.proj, batch.chunks, batch.list, batch.num);
  batch.num = 0;
  return ret;
}

/* Adds validated chunks to this thread's batch (submitting what it held if they belong to other objects). */
static int batch_add(const char *func, int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                     const int *list, int num)
{
  int ret = SPROJ_OK;
  if (batch.num > 0 && (batch.back != back || batch.img != img || batch.proj != proj || batch.chunks != chunks))
    ret = sproj_flush_pending();
  if (batch.num + num > batch.cap) {
    int cap = 2 * (batch.num + num);
    int *l = realloc(batch.list, cap * sizeof *l);
    if (!l)
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    batch.list = l;
    batch.cap = cap;
  }
  batch.back = back;
  batch.img = img;
  batch.proj = proj;
  batch.chunks = chunks;
  for (int i = 0; i < num; i++)
    batch.list[batch.num++] = list[i];
  return ret;
}

int sproj_batch_begin(void)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  batch.depth++;
  return SPROJ_OK;
}

int sproj_batch_end(void)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (batch.depth == 0)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "no batch is open on this thread");
  if (--batch.depth > 0)
    return SPROJ_OK;
  ret = sproj_flush_pending();
  free(batch.list);
  batch.list = NULL;
  batch.cap = 0;
  return ret;
}

/* Submits (or, inside a batch, collects) validated chunks. */
static int request(const char *func, int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                   const int *list, int num)
{
  for (int i = 0; i < num; i++) {
    int nchunks = chunks ? chunks->num_chunks : 1;
    if (list[i] < 0 || list[i] >= nchunks)
      return sproj_fail(SPROJ_ERR_RANGE, func, "chunk %d outside 0..%d", list[i], nchunks - 1);
  }
  if (batch.depth > 0)
    return batch_add(func, back, img, proj, chunks, list, num);
  return submit(func, back, img, proj, chunks, list, num);
}

static int submit_one(const char *func, int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                      int chunk)
{
  int ret = check_args(func, img, proj, chunks, chunk);
  if (ret)
    return ret;
  if (chunks && chunk == SPROJ_ALL_CHUNKS) {
    int *list, num;
    if ((ret = sproj_chunk_list(func, chunks, chunk, &list, &num)))
      return ret;
    ret = request(func, back, img, proj, chunks, list, num);
    free(list);
    return ret;
  }
  int c = chunks ? chunk : 0;
  return request(func, back, img, proj, chunks, &c, 1);
}

static int submit_list(const char *func, int back, sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks,
                       const int *list, int num)
{
  int ret = check_args(func, img, proj, chunks, 0);
  if (ret)
    return ret;
  if (!list)
    return sproj_fail(SPROJ_ERR_NULL, func, "chunk_list is NULL");
  if (num == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "num is 0");
  if (num < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num = %d is negative", num);
  return request(func, back, img, proj, chunks, list, num);
}

int sproj_fwd(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk)
{
  return submit_one(__func__, 0, img, proj, chunks, chunk);
}

int sproj_back(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, int chunk)
{
  return submit_one(__func__, 1, img, proj, chunks, chunk);
}

int sproj_fwd_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list, int num)
{
  return submit_list(__func__, 0, img, proj, chunks, chunk_list, num);
}

int sproj_back_chunks(sproj_image *img, sproj_proj *proj, const sproj_chunks *chunks, const int *chunk_list, int num)
{
  return submit_list(__func__, 1, img, proj, chunks, chunk_list, num);
}
