/* Stopping and retrying jobs (lifecycle.h): stops recorded before the first signal (so
 * that a daemon that goes down in between ends the job as stopped, not as lost), time
 * limits and SIGKILL deadlines, and a failed attempt queued again. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/text.h"
#include "base/time.h"
#include "daemon/daemon.h"
#include "daemon/life/jobarray.h"
#include "daemon/life/lifecycle.h"
#include "daemon/life/migslots.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

/* The stop is written before any signal, with the job's row (one transaction): a daemon that
 * goes down before the processes are gone then ends the job as stopped when it comes back
 * (recover_one) instead of finding it lost and retrying it.  must_record (a cancel): nothing
 * is signalled when the store refuses the write, the caller is told and may try again; else
 * (a time limit, a booking's end, a reclaim) the job is stopped anyway. */
static int terminate(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                     gw_usec_t grace, bool must_record) {
        if (dj->terminating)
                return 0;
        struct gw_job *j = dj->job;
        char msg[512];
        snprintf(msg, sizeof msg, "%s: SIGTERM to every process of the job, SIGKILL in %llds", reason,
                 (long long) (grace / GW_USEC_PER_SEC));
        j->stop_state = state;
        free(j->stop_reason);
        j->stop_reason = gw_xstrdup(reason);
        int r = gw_store_job_update(d->store, j, "terminate", msg);
        if (r < 0 && must_record) {
                j->stop_state = GW_JOB_PENDING;
                free(j->stop_reason);
                j->stop_reason = NULL;
                return r;
        }
        if (r < 0)
                log_err("job %lld: cannot record its stop (%s): %s; stopping it anyway", (long long) j->id, reason,
                        gw_store_errmsg(d->store));
        dj->terminating = true;
        dj->end_state = state;
        free(dj->end_reason);
        dj->end_reason = gw_xstrdup(reason);
        /* From the SIGTERM below, not from the loop's instant: an iteration that ran long (a
         * loaded host) would otherwise have the next tick send SIGKILL sooner than said. */
        gw_usec_t now = gw_now_mono();
        dj->kill_at = (now > d->now ? now : d->now) + grace;
        log_info("job %lld: %s", (long long) j->id, msg);
        gw_job_signal(d, dj, grace > 0 ? SIGTERM : SIGKILL);
        return r;
}

void gw_job_terminate_within(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                             gw_usec_t grace) {
        (void) terminate(d, dj, state, reason, grace, false);
}

void gw_job_terminate(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason) {
        (void) terminate(d, dj, state, reason, d->cfg->grace, false);
}

int gw_job_cancel(struct gw_daemon *d, struct gw_djob *dj, const char *reason) {
        int r = dj->job->array_spec                ? gw_array_cancel(d, dj, reason, false)
                : dj->job->state == GW_JOB_RUNNING ? terminate(d, dj, GW_JOB_CANCELLED, reason, d->cfg->grace, true)
                                                   : gw_job_end_recorded(d, dj, GW_JOB_CANCELLED, reason, "cancel");
        if (r < 0)
                log_warn("job %lld: not cancelled (%s): the cancel cannot be recorded: %s", (long long) dj->job->id,
                         reason, gw_store_errmsg(d->store));
        return r;
}

int gw_job_cancel_waiting(struct gw_daemon *d, struct gw_djob *dj, const char *reason) {
        if (dj->job->state == GW_JOB_RUNNING && !dj->job->array_spec)
                return -EBUSY;
        int r = dj->job->array_spec ? gw_array_cancel(d, dj, reason, true)
                                    : gw_job_end_recorded(d, dj, GW_JOB_CANCELLED, reason, "cancel");
        if (r < 0)
                log_warn("job %lld: not cancelled (%s): the cancel cannot be recorded: %s", (long long) dj->job->id,
                         reason, gw_store_errmsg(d->store));
        return r;
}

/* Retries waiting out their backoff: due ones become eligible; returns the next due time.  The
 * stored not_before is a wall-clock label; the wait itself is on the monotonic clock, set at
 * the requeue (recovery.c), or from the label once after a restart, so a step of the wall
 * clock neither skips a backoff nor stretches it by the step. */
static gw_usec_t backoff_tick(struct gw_daemon *d) {
        if (!d->jobs.n_backoff)
                return GW_USEC_INFINITY;
        gw_usec_t wall = d->now_wall, next = GW_USEC_INFINITY;
        size_t waiting = 0;
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                struct gw_job *j = dj->job;
                if (!j->not_before) {
                        dj->backoff_due = 0;
                        continue;
                }
                if (!dj->backoff_due)
                        dj->backoff_due = d->now + (j->not_before > wall ? j->not_before - wall : 0);
                if (dj->backoff_due <= d->now) {
                        j->not_before = 0;
                        dj->backoff_due = 0;
                        if (j->wait_reason == GW_REASON_BACKOFF)
                                j->wait_reason = GW_REASON_RESOURCES;
                        j->wait_why = 0; /* the backoff was one of them */
                        d->jobs.sched_dirty = true;
                        continue;
                }
                waiting++;
                if (dj->backoff_due < next)
                        next = dj->backoff_due;
        }
        d->jobs.n_backoff = waiting;
        return next;
}

gw_usec_t gw_jobs_tick(struct gw_daemon *d) {
        gw_usec_t next = backoff_tick(d), unwritten = gw_jobs_unwritten_tick(d);
        if (d->jobs.start_retry_at && d->now >= d->jobs.start_retry_at) {
                d->jobs.start_retry_at = 0;
                d->jobs.sched_dirty = true;
        }
        if (d->jobs.start_retry_at && d->jobs.start_retry_at < next)
                next = d->jobs.start_retry_at;
        if (unwritten < next)
                next = unwritten;
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                if (!dj->terminating && d->now >= dj->limit_at) {
                        char a[32], why[96];
                        if (dj->limit_by_booking)
                                snprintf(why, sizeof why, "its booking ended");
                        else
                                snprintf(why, sizeof why, "time limit %s reached",
                                         gw_format_duration(dj->job->time_limit, a, sizeof a));
                        gw_job_terminate(d, dj, GW_JOB_TIMEOUT, why);
                }
                if (dj->terminating && dj->kill_at && d->now >= dj->kill_at) {
                        log_info("job %lld: grace period over, SIGKILL", (long long) dj->job->id);
                        (void) gw_store_job_event(d->store, dj->job->id, dj->job->state, "kill",
                                                  "grace period over: SIGKILL to every process of the job");
                        gw_job_signal(d, dj, SIGKILL);
                        dj->kill_at = 0;
                }
                gw_usec_t t = dj->terminating ? (dj->kill_at ? dj->kill_at : GW_USEC_INFINITY) : dj->limit_at;
                gw_usec_t warn = gw_job_limit_warn_tick(d, dj);
                if (warn < t)
                        t = warn;
                if (t < next)
                        next = t;
        }
        return next;
}

/* The attempt failed and is retried: the job goes back to its place in the queue, waiting
 * out its backoff, to resume from ckpt (taken; NULL: from scratch).  The retry is recorded;
 * a store that refuses it does not stop it (the next daemon finds the attempt still RUNNING
 * and its exit, kept in the journal, makes the same decision again). */
void gw_job_requeue(struct gw_daemon *d, struct gw_djob *dj, char *ckpt, gw_usec_t not_before, gw_usec_t backoff,
                    const char *msg) {
        struct gw_job *j = dj->job;
        gw_job_release_gpus(d, dj);
        free(j->resume_from);
        j->resume_from = ckpt;
        j->attempt++;
        j->state = GW_JOB_PENDING;
        j->wait_reason = not_before ? GW_REASON_BACKOFF : GW_REASON_RESOURCES; /* none: a preemption's */
        j->wait_why = 0;
        j->not_before = not_before;
        /* The wait itself on the monotonic clock, from now: taken later from the wall-clock
         * label, a step in between would stretch or skip it. */
        dj->backoff_due = d->now + backoff;
        j->gpu_mask = 0;
        gw_mig_forget_slices(j); /* the next attempt's, once it starts */
        j->start_time = j->end_time = 0; /* the next attempt's, once it starts */
        j->pid = j->shim_pid = 0;
        j->pid_start = j->shim_start = 0;
        j->has_exit = false;
        j->exit_code = j->signal = 0;
        free(j->log_path);
        j->log_path = gw_attempt_log_path(d, j, j->attempt);
        dj->terminating = false;
        dj->kill_at = 0;
        free(dj->end_reason);
        dj->end_reason = NULL;
        j->stop_state = GW_JOB_PENDING; /* that stop was this attempt's */
        free(j->stop_reason);
        j->stop_reason = NULL;
        dj->n_events = 0;
        dj->sigkill_why[0] = '\0';
        gw_lifecycle_publish(d, GW_HOOK_ATTEMPT_REQUEUED, dj, false); /* the attempt's telemetry goes */
        if (gw_store_job_update(d->store, j, "retry", msg) < 0) {
                /* The next daemon finds the attempt still RUNNING: its exit, kept in the
                 * journal, makes the same decision again. */
                log_err("job %lld: cannot record the retry: %s", (long long) j->id, gw_store_errmsg(d->store));
                d->jobs.keep_exits = true;
        }
        _cleanup_free_ char *said = gw_text_private_render(msg, true, NULL);
        log_info("job %lld: %s", (long long) j->id, said);
        if (not_before)
                d->jobs.n_backoff++;
        gw_queue_insert(d, dj);
}
