/* SPDX-License-Identifier: Apache-2.0 */
/* submit.h: what submission (submit.c) and the requests held back before it (merge.c) say to each other (not
 * installed). A call goes: public entry point (submit.c: checks) -> sproj_request_chunks (merge.c: into this
 * thread's batch, a merged list, or on) -> sproj_submit_tasks (submit.c: tasks). */
#ifndef SPROJ_SUBMIT_H
#define SPROJ_SUBMIT_H

#include <stdint.h>
#include "internal.h"

/* What is asked: direction and kind of projector. */
enum sproj_kind { SPROJ_KIND_NONTOF, SPROJ_KIND_TOF_SINO, SPROJ_KIND_TOF_LM };
struct sproj_request {
  int back;
  enum sproj_kind kind;
  const sproj_tof *tof;
};

/* submit.c: turns validated chunks (list[num] of chunks, NULL chunks: the whole set) into tasks now. */
int sproj_submit_tasks(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                       const sproj_chunks *chunks, const int *list, int num);

/* merge.c: checks the chunk indices, then collects validated chunks into this thread's open batch, merges them
 * into a pending list while the workers are busy, or submits them at once. */
int sproj_request_chunks(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                         const sproj_chunks *chunks, const int *list, int num);
/* merge.c: the count of projection tasks submitted and not yet taken by a worker, which decides when calls merge.
 * sproj_task_taken runs on the worker that takes a task (its prologue): it also counts the task's LORs for
 * sproj_worker_stats and wakes the helper thread that submits merged calls when the queue runs low. */
void sproj_task_queued(int delta);
int sproj_queued_tasks(void);
void sproj_task_taken(int64_t lors, int layout);

#endif
