/* SPDX-License-Identifier: Apache-2.0 */
/* submit.h: what the public projection calls (projectors.c), the requests held back (merge.c) and the submission of
 * tasks (submit.c) say to each other, each layer to the one below (not installed). A call goes: public entry point
 * (projectors.c: checks) -> sproj_request_chunks (merge.c: into this thread's batch, a merged list, or on) ->
 * sproj_submit_tasks (submit.c: tasks). */
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

/* held.c: a whole-set request (chunks NULL) of listmode events whose order the library holds, on the ordered copy:
 * *served 1 when it took the request (its status returned), 0 when the request goes the ordinary way (no order held,
 * or whole-set chunkings the gather does not serve). */
int sproj_held_request(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                       int *served);

/* submit.c: the count of projection tasks submitted and not yet taken by a worker, which decides when calls merge;
 * its reset (once per sproj_init); and a hook (NULL: none) that runs on the worker that takes a task, with the count
 * left, after the task's statistics are counted: merge.c's wake-up of its helper thread when the queue runs low. */
int sproj_queued_tasks(void);
void sproj_queued_tasks_reset(void);
void sproj_on_task_taken(void (*hook)(int left));

/* merge.c: checks the chunk indices, then collects validated chunks into this thread's open batch, merges them
 * into a pending list while the workers are busy, or submits them at once. */
int sproj_request_chunks(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                         const sproj_chunks *chunks, const int *list, int num);
#endif
