/* The lifecycle of a job (lifecycle.h): submit, hold and release, the start's record, the
 * end, and the ends the store refused, kept and written again until it takes them.  Stops
 * (cancel, timeout, reclaim) and retries: lifecycle_stop.c; the hooks: lifecycle_hooks.c.
 * Every state change is written to the store with its reason before it is acted on.  One
 * that must be recorded (a hold, a release, a start, a cancel) and that the store refuses is
 * undone in memory by the function that made it; an end goes on and is written later. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/text.h"
#include "daemon/daemon.h"
#include "daemon/life/jobarray.h"
#include "daemon/life/lifecycle.h"
#include "daemon/sharing/sharing.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

/* ---- submit ---- */

int gw_job_record(struct gw_daemon *d, struct gw_job *j, struct gw_submit_error *err) {
        char msg[160];
        snprintf(msg, sizeof msg, "submitted by %s%s", j->user, j->state == GW_JOB_HELD ? ", held" : "");
        int r = gw_store_job_insert(d->store, j, msg);
        if (r < 0) {
                *err = (struct gw_submit_error){ .status = 503 };
                snprintf(err->message, sizeof err->message, "cannot record the job: %s", gw_store_errmsg(d->store));
                return -EINVAL;
        }
        return 0;
}

void gw_job_enqueue(struct gw_daemon *d, struct gw_job *j) {
        j->log_path = gw_job_log_path(d, j);
        struct gw_djob *dj = gw_djob_new(j);
        gw_jobmap_put(&d->jobs.map, dj);
        gw_queue_insert(d, dj);
        gw_lifecycle_publish(d, GW_HOOK_JOB_SUBMITTED, dj, false);
}

/* ---- start ---- */

/* A start the store refused (disk full, read-only) is tried again on its own: nothing else
 * may come along to make the scheduler look at the queue. */
#define START_RETRY_USEC (5 * GW_USEC_PER_SEC)

static void start_refused(struct gw_daemon *d) {
        if (!d->jobs.start_retry_at)
                d->jobs.start_retry_at = d->now + START_RETRY_USEC;
}

/* A start that did not happen: queued again with no GPUs, no clock and no cgroup, and the
 * scheduler asked to try again on its own a little later. */
static void back_to_queued(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        j->state = GW_JOB_PENDING;
        j->gpu_mask = 0;
        j->start_time = 0;
        dj->start_mono = 0;
        d->exec->release(d, dj, false);
        free(j->cgroup);
        j->cgroup = NULL;
        start_refused(d);
}

/* Records the start before launching: a daemon killed in between then finds the attempt at
 * restart (the executor's adopt) instead of starting the job a second time. */
static int record_start(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask) {
        struct gw_job *j = dj->job;
        enum gw_job_reason was_reason = j->wait_reason;
        j->gpu_mask = mask;
        j->state = GW_JOB_RUNNING;
        j->wait_reason = GW_REASON_NONE;
        /* The loop's instant, as its monotonic start (gw_job_clock_start) and its limit
         * (sharing's, at GW_HOOK_ATTEMPT_STARTED) are: labels and limits then agree to the
         * microsecond. */
        j->start_time = d->now_wall;
        gw_job_clock_start(d, dj);
        j->shim_pid = j->pid = 0;
        j->shim_start = j->pid_start = 0;
        free(j->cgroup);
        j->cgroup = NULL;
        d->exec->prepare(d, dj);
        char gpus[256], msg[512];
        gw_gpu_mask_format(mask, gpus, sizeof gpus);
        /* No GPU of this host (backend slurm): Slurm places it, and its events tell where. */
        snprintf(msg, sizeof msg, "started %s%s, attempt %d%s%s", mask ? "on GPU " : "through ",
                 mask ? gpus : d->exec->name, j->attempt, j->cgroup ? ", cgroup " : "", j->cgroup ? j->cgroup : "");
        int r = gw_store_job_update(d->store, j, "start", msg);
        if (r < 0) {
                log_err("job %lld: cannot record its start, not starting it: %s", (long long) j->id,
                        gw_store_errmsg(d->store));
                /* Back as it was: queued, waiting for the same reason; what the API shows
                 * is what the store holds. */
                back_to_queued(d, dj);
                j->wait_reason = was_reason;
                return r;
        }
        dj->limit_warned = false;
        gw_queue_remove(d, dj);
        gw_running_add(d, dj);
        gw_gpus_assign(d, j->mig_profile ? 0 : mask, j->id); /* slices: its GPU's others stay free */
        gw_lifecycle_publish(d, GW_HOOK_ATTEMPT_STARTED, dj, false); /* its limit first (sharing) */
        return 0;
}

void gw_job_start_undo(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        log_err("job %lld: its start was not recorded; not starting it", (long long) j->id);
        gw_gpus_assign(d, j->mig_profile ? 0 : j->gpu_mask, 0);
        gw_running_remove(d, dj);
        back_to_queued(d, dj);
        gw_queue_insert(d, dj);
}

int gw_job_start(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask) {
        int r = record_start(d, dj, mask);
        if (r < 0)
                return r;
        dj->job->queue_first = false; /* a preempted job's turn came */
        gw_job_text_set(&dj->job->preempted_by, NULL);
        if (d->jobs.in_batch) {
                /* Launched once the loop's transaction, which records this start with the
                 * ends that freed its GPUs, is committed (gw_jobs_batch_end). */
                if (d->jobs.n_to_launch == d->jobs.cap_to_launch) {
                        d->jobs.cap_to_launch = d->jobs.cap_to_launch ? 2 * d->jobs.cap_to_launch : 16;
                        d->jobs.to_launch =
                                gw_xrealloc(d->jobs.to_launch, d->jobs.cap_to_launch * sizeof *d->jobs.to_launch);
                }
                d->jobs.to_launch[d->jobs.n_to_launch++] = dj;
                return 0;
        }
        return gw_job_launch(d, dj);
}

/* ---- the loop's batch ---- */

void gw_jobs_batch_begin(struct gw_daemon *d) { d->jobs.in_batch = gw_store_begin(d->store) == 0; }

void gw_jobs_batch_end(struct gw_daemon *d) {
        if (!d->jobs.in_batch)
                return;
        bool committed = gw_store_commit(d->store) == 0;
        if (!committed) {
                log_err("cannot record this round's job events: %s", gw_store_errmsg(d->store));
                d->jobs.keep_exits = true;
                gw_jobs_unwritten_batch_failed(d);
        }
        for (struct gw_djob *dj = d->jobs.dead; dj; dj = dj->next_dead)
                dj->end_in_batch = false;
        d->jobs.in_batch = false;
        /* Starts recorded in the transaction: only a committed one may run (a crash must not
         * find a running job that the store says is still queued). */
        for (size_t i = 0; i < d->jobs.n_to_launch; i++)
                if (committed)
                        (void) gw_job_launch(d, d->jobs.to_launch[i]);
                else
                        gw_job_start_undo(d, d->jobs.to_launch[i]);
        d->jobs.n_to_launch = 0;
        d->exec->sync(d);
}

void gw_jobs_bury(struct gw_daemon *d) {
        while (d->jobs.dead) {
                struct gw_djob *dj = d->jobs.dead;
                d->jobs.dead = dj->next_dead;
                gw_djob_free(d, dj);
        }
}

/* ---- end ---- */

/* must_record (queued jobs only): the end happens only if the store takes it; otherwise the
 * job is left as it was and -errno returned. */
static int end_job(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                   const char *kind, bool must_record, gw_usec_t end_time) {
        struct gw_job *j = dj->job;
        bool was_running = j->state == GW_JOB_RUNNING;
        assert(!must_record || !was_running);
        _cleanup_free_ char *said = gw_text_private_render(reason, true, NULL); /* for the daemon's log */
        struct gw_job before = { .state = j->state,
                                 .wait_reason = j->wait_reason,
                                 .end_reason = j->end_reason,
                                 .end_time = j->end_time };
        j->state = state;
        j->wait_reason = GW_REASON_NONE;
        j->end_reason = gw_xstrdup(reason);
        j->end_time = end_time;
        /* Before the write: what a subscriber adds to the job (its telemetry summary) is
         * written with the end, in the same row. */
        gw_lifecycle_publish(d, GW_HOOK_JOB_ENDING, dj, was_running);
        int r = gw_store_job_update(d->store, j, kind, reason);
        if (r < 0 && must_record) {
                free(j->end_reason);
                j->state = before.state;
                j->wait_reason = before.wait_reason;
                j->end_reason = before.end_reason;
                j->end_time = before.end_time;
                return r;
        }
        free(before.end_reason);
        d->loop.stats.state_counts[state]++;
        snprintf(dj->end_kind, sizeof dj->end_kind, "%s", kind);
        dj->end_in_batch = d->jobs.in_batch;
        if (r < 0) {
                /* Not lost: the next daemon reads a running job's end from the kept exits
                 * journal (and its recorded stop), and this one writes it again (below). */
                log_err("job %lld: cannot record its end (%s: %s): %s; kept until it can be written", (long long) j->id,
                        gw_job_state_name(state), said, gw_store_errmsg(d->store));
                d->jobs.keep_exits = true;
                dj->end_unwritten = true;
        }
        log_info("job %lld: %s: %s", (long long) j->id, gw_job_state_name(state), said);
        if (was_running)
                gw_job_release_gpus(d, dj);
        else
                gw_queue_remove(d, dj);
        d->jobs.sched_dirty = true;
        d->jobs.deps_changed = true;
        gw_lifecycle_publish(d, GW_HOOK_JOB_ENDED, dj, was_running);
        gw_job_forget(d, dj);
        gw_array_job_ended(d, j); /* a task's end may be its array's */
        return r;
}

/* A running job's end is labelled its start + the monotonic time it ran, so that end - start
 * is its runtime whatever the wall clock did meanwhile (jobclock.c). */
static gw_usec_t end_label_now(const struct gw_daemon *d, const struct gw_djob *dj) {
        return dj->job->state == GW_JOB_RUNNING ? gw_job_clock_label(d, dj, d->now) : d->now_wall;
}

int gw_job_end(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason, const char *kind) {
        return end_job(d, dj, state, reason, kind, false, end_label_now(d, dj));
}

int gw_job_end_at(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                  const char *kind, gw_usec_t end_time) {
        return end_job(d, dj, state, reason, kind, false, end_time);
}

int gw_job_end_recorded(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                        const char *kind) {
        return end_job(d, dj, state, reason, kind, true, end_label_now(d, dj));
}

/* ---- hold and release ---- */

int gw_job_hold(struct gw_daemon *d, struct gw_djob *dj, bool hold, const char *who) {
        struct gw_job *j = dj->job;
        if (j->state != (hold ? GW_JOB_PENDING : GW_JOB_HELD))
                return -EBUSY;
        enum gw_job_state was = j->state;
        enum gw_job_reason reason = j->wait_reason;
        uint32_t why = j->wait_why;
        j->state = hold ? GW_JOB_HELD : GW_JOB_PENDING;
        j->wait_reason = hold ? GW_REASON_HELD : GW_REASON_RESOURCES;
        j->wait_why = 0; /* the last pass's were for the other state: the next one tells */
        char msg[160];
        snprintf(msg, sizeof msg, "%s by %s", hold ? "held" : "released", who);
        int r = gw_store_job_update(d->store, j, hold ? "hold" : "release", msg);
        if (r < 0) {
                /* Not recorded: not done either, so that what the API says is what a
                 * restarted daemon will find. */
                j->state = was;
                j->wait_reason = reason;
                j->wait_why = why;
                return r;
        }
        d->jobs.sched_dirty = true;
        return 0;
}

/* ---- ends the store refused (disk full, read-only state dir), kept and written again ---- */

/* How often an unwritten end is tried again: a full disk is freed by a person, not at once. */
#define UNWRITTEN_RETRY (5 * GW_USEC_PER_SEC)

void gw_jobs_unwritten_keep(struct gw_daemon *d, struct gw_djob *dj) {
        dj->end_unwritten = true;
        dj->next_unwritten = d->jobs.unwritten;
        d->jobs.unwritten = dj;
        if (d->jobs.unwritten_retry_at <= d->now)
                d->jobs.unwritten_retry_at = d->now + UNWRITTEN_RETRY;
}

const struct gw_djob *gw_jobs_unwritten_find(const struct gw_daemon *d, int64_t id) {
        for (const struct gw_djob *dj = d->jobs.unwritten; dj; dj = dj->next_unwritten)
                if (dj->job->id == id)
                        return dj;
        return NULL;
}

void gw_jobs_unwritten_batch_failed(struct gw_daemon *d) {
        struct gw_djob **p = &d->jobs.dead;
        while (*p) {
                struct gw_djob *dj = *p;
                if (!dj->end_in_batch) {
                        p = &dj->next_dead;
                        continue;
                }
                *p = dj->next_dead;
                _cleanup_free_ char *said = gw_text_private_render(dj->job->end_reason, true, NULL);
                log_err("job %lld: cannot record its end (%s: %s): the transaction was not committed; kept until "
                        "it can be written",
                        (long long) dj->job->id, gw_job_state_name(dj->job->state), said);
                gw_jobs_unwritten_keep(d, dj);
        }
}

/* Writes the kept ends, oldest first; stops at the first refusal (the store still cannot
 * be written).  Written ones are freed with the loop iteration's other ended jobs. */
static void unwritten_flush(struct gw_daemon *d) {
        struct gw_djob *order = NULL;
        while (d->jobs.unwritten) { /* the list is newest first */
                struct gw_djob *dj = d->jobs.unwritten;
                d->jobs.unwritten = dj->next_unwritten;
                dj->next_unwritten = order;
                order = dj;
        }
        while (order) {
                struct gw_djob *dj = order;
                const struct gw_job *j = dj->job;
                /* Its attempt's row first (written again if it was: the same row). */
                if (dj->end_attempt && gw_store_attempt_add(d->store, j->id, dj->end_attempt) < 0)
                        break;
                if (gw_store_job_update(d->store, j, dj->end_kind, j->end_reason) < 0)
                        break;
                log_info("job %lld: its end (%s) is recorded now", (long long) j->id, gw_job_state_name(j->state));
                order = dj->next_unwritten;
                dj->end_unwritten = false;
                dj->end_in_batch = false;
                dj->next_dead = d->jobs.dead;
                d->jobs.dead = dj;
        }
        while (order) {
                struct gw_djob *dj = order;
                order = dj->next_unwritten;
                dj->next_unwritten = d->jobs.unwritten;
                d->jobs.unwritten = dj;
        }
}

gw_usec_t gw_jobs_unwritten_tick(struct gw_daemon *d) {
        if (!d->jobs.unwritten)
                return GW_USEC_INFINITY;
        if (d->now < d->jobs.unwritten_retry_at)
                return d->jobs.unwritten_retry_at;
        unwritten_flush(d);
        d->jobs.unwritten_retry_at = d->now + UNWRITTEN_RETRY;
        return d->jobs.unwritten ? d->jobs.unwritten_retry_at : GW_USEC_INFINITY;
}

void gw_jobs_unwritten_close(struct gw_daemon *d) {
        unwritten_flush(d);
        gw_jobs_bury(d); /* the ones written now */
        while (d->jobs.unwritten) {
                struct gw_djob *dj = d->jobs.unwritten;
                d->jobs.unwritten = dj->next_unwritten;
                _cleanup_free_ char *said = gw_text_private_render(dj->job->end_reason, true, NULL);
                log_warn("job %lld: its end (%s: %s) could not be recorded before the daemon stopped; the next start "
                         "works it out again (the job's row, its recorded stop, the kept exits journal)",
                         (long long) dj->job->id, gw_job_state_name(dj->job->state), said);
                gw_djob_free(d, dj);
        }
}
