/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h: what a long-running program says while it works: phases timed and named, a bar that redraws on a
 * terminal and plain lines with the time spent and an estimate of what remains in a log; and work spread over the
 * cores in fixed blocks (results independent of the number of threads). */
#ifndef SPROJ_PROGRAMS_PROGRESS_H
#define SPROJ_PROGRAMS_PROGRESS_H

#include <stdint.h>

/* Starts the reporter (quiet: phases and progress print nothing); hooks the library's long calls
 * (sproj_set_progress). prog names the program in the lines it prints. */
void progress_start(const char *prog, int quiet);
/* Every step of a phase gets its line when it ends, however short, with the host memory the process holds then and
 * its peak so far (starproj-recon --verbose); by default only steps of a second or more, with their time alone. */
void progress_detail(int on);
/* Begins phase name (ending the one before); a progress line appears once it has run a second. */
void progress_phase(const char *name);
/* Step what (NULL: the phase itself) of the current phase is fraction (0 .. 1) done. Any thread. */
void progress_step(const char *what, double fraction);
/* Ends the current phase and returns its seconds; its time is kept for progress_summary. */
double progress_end(void);
/* One line with every phase's time. */
void progress_summary(void);
/* Stops the reporter. */
void progress_stop(void);

/* Runs fn(ctx, first, end, block) on the blocks [block * block_size, min(n, (block + 1) * block_size)) of 0 .. n-1,
 * on one thread per online core, reporting the share of blocks done as step `what`. Which block a thread takes
 * varies; what a block computes must not (per-block results are then combined in block order by the caller). */
void parallel_blocks(const char *what, int64_t n, int64_t block_size,
                     void (*fn)(void *ctx, int64_t first, int64_t end, int64_t block), void *ctx);

#endif
