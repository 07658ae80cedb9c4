/* Job arrays (sweeps) in the daemon.  An array is one job row and one queue entry that
 * never runs itself: the scheduler plans it as any job of its size, and each start it is
 * given hands out its next task, which becomes a job of its own (its row, its djob) only
 * then.  Waiting tasks cost nothing but their place in the spec; the array leaves the queue
 * when the last of its tasks ended (docs/DESIGN.md, "Job arrays"). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

struct gw_array;

/* Frees what gw_djob_free finds in dj->array; accepts NULL, returns NULL. */
struct gw_array *gw_array_free(struct gw_array *a);

/* Whether the array dj may hand out a task now: tasks left and fewer than its %N running.
 * Sets its wait reason when not. */
bool gw_array_may_start(struct gw_daemon *d, struct gw_djob *dj);

/* Hands out the array's next task on the GPUs of mask: records it, queues it and starts it.
 * Returns 0 (also when no task was left), or -errno when the store refused it (nothing
 * changed). */
int gw_array_start_task(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask);

/* After any job ended: when it was a task and its array has no task left to hand out and
 * none live, the array ends too (COMPLETED when every task did). */
void gw_array_job_ended(struct gw_daemon *d, const struct gw_job *j);

/* Ends the array dj when it hands out no more tasks and none is live (after a restart, or
 * once its last waiting tasks were cancelled); else nothing. */
void gw_array_end_if_done(struct gw_daemon *d, struct gw_djob *dj);

/* Cancels the array dj: no more tasks are handed out, its running tasks are stopped (unless
 * waiting_only: then they run on to their end), its retries waiting in the queue end; it ends
 * itself once its tasks did.  Returns -errno when the store refused it (nothing changed). */
int gw_array_cancel(struct gw_daemon *d, struct gw_djob *dj, const char *reason, bool waiting_only);

/* Cancels task index of the array array_id before it started: its row is written as
 * CANCELLED, and the array skips it.  -ENOENT: not one of its tasks; -EALREADY: it has a row
 * already (started or cancelled). */
int gw_array_cancel_waiting(struct gw_daemon *d, struct gw_djob *dj, int64_t index, const char *reason,
                            int64_t *ret_id);

/* Whether index is one of the array dj's tasks. */
bool gw_array_has_task(struct gw_djob *dj, int64_t index);

/* The job id of task index of array array_id: 0 with *ret_id, -ENOENT when it has none (it
 * waits, or it is not one of the array's), -errno from the store. */
int gw_array_task_id(struct gw_daemon *d, int64_t array_id, int64_t index, int64_t *ret_id);

/* The array j's tasks, for the API: counts per state (waiting ones as PENDING, those that
 * never ran under a cancelled or ended array as CANCELLED) and the waiting ones folded
 * ("17_[5-49%4]"; NULL when none).  Owns what it points at: gw_array_summary_done(). */
struct gw_array_summary {
        struct gw_job_array_view view;
        char *waiting;
        uint32_t *waiting_ids; /* ascending, n_waiting of them */
        size_t n_waiting;
};
int gw_array_summarize(struct gw_daemon *d, const struct gw_job *j, struct gw_array_summary *ret);
void gw_array_summary_done(struct gw_array_summary *s);

/* For quotas, which count a task as a job: the tasks of array j not handed out yet (its
 * whole size for one not queued yet), 1 for any other job. */
uint32_t gw_array_jobs_waiting(struct gw_daemon *d, const struct gw_job *j);

/* A task's variables (GPUWARD_ARRAY_JOB_ID, _INDEX, _TASK_COUNT and Slurm's names), written
 * to env (room for 6); returns how many. */
size_t gw_array_task_environment(const struct gw_job *j, char **env);
