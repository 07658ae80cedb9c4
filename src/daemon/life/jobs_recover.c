/* A restarted daemon takes up the jobs it left: queued ones go back in the queue, running
 * ones are offered to the executor, which re-adopts those still running and tells the end of
 * the others (executor.h; the local one: exec_shim_adopt.c).  The executor may refuse to go on
 * (a live supervisor runs a job attempt the database does not know). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/life/lifecycle.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

/* What the previous daemon kept in memory for the classifier and the retry decision at the
 * attempt's end, rebuilt from the attempt's events in the store: the GPU faults seen on its
 * GPUs (without them a job hit by an Xid before the restart is taken for a user error and not
 * retried) and a leak the detector flagged (without it an oom the leak explains is not
 * retried, and a stop by leak_policy restart is taken for a plain failure).  Also whether it
 * was warned of its booking's end or of its own (without it the warning is given twice), and
 * since when its GPUs were idle (without it the idle timeout starts again with the daemon). */
static void restore_evidence(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        if (gw_store_job_attempt_events(d->store, dj->job->id, &ev, &n) < 0) {
                log_warn("job %lld: cannot read its events: %s; GPU faults and leaks seen before the restart "
                         "are not known",
                         (long long) dj->job->id, gw_store_errmsg(d->store));
                ev = NULL;
                n = 0;
        }
        gw_lifecycle_publish_recovered(d, dj, ev, n); /* the features' (lifecycle_features.c) */
        gw_job_limit_warned_restore(dj, ev, n);
        gw_job_events_free(ev, n);
}

/* What recovery.c kept in memory from the attempts before the current one, read back from
 * their rows.  How the previous attempt ended, for the crash-loop rule (kept at a retry): its
 * epoch and its newest checkpoint's identity.  A row written by an older version has no
 * identity: it is "none" when the current attempt resumes from none, otherwise unknown, and
 * the rule waits for one more attempt (max_retries still bounds them).  The attempts lost to
 * preemption, which use none of its retries; and a job queued again as preempted waits first
 * of its priority still, as it had its turn. */
/* Who preempted it, from the evidence gw_preempt_take wrote: "preempted by BY; ...". */
static void preempted_by_restore(struct gw_job *j, const char *evidence) {
        static const char head[] = "preempted by ";
        if (!evidence || strncmp(evidence, head, strlen(head)))
                return;
        const char *by = evidence + strlen(head), *end = strstr(by, "; ");
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int) (end ? (size_t) (end - by) : strlen(by)), by);
        gw_job_text_set(&j->preempted_by, buf);
}

static void restore_attempts(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        struct gw_job_attempt *a = NULL;
        size_t n = 0;
        if (j->attempt < 2 || gw_store_attempts(d->store, j->id, &a, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                bool preempted = a[i].class_name && !strcmp(a[i].class_name, "preempted");
                dj->n_preempted += preempted && a[i].attempt < j->attempt;
                if (a[i].attempt != j->attempt - 1)
                        continue;
                j->queue_first = preempted && j->state == GW_JOB_PENDING;
                if (j->queue_first)
                        preempted_by_restore(j, a[i].evidence);
                if (a[i].ckpt_id || !j->resume_from) {
                        dj->last_mark = (struct gw_attempt_mark){ .valid = true, .epoch = a[i].epoch };
                        snprintf(dj->last_mark.ckpt, sizeof dj->last_mark.ckpt, "%s", a[i].ckpt_id ? a[i].ckpt_id : "");
                }
        }
        gw_job_attempts_free(a, n);
}

static int recover_one(struct gw_job *j, void *userdata) {
        struct gw_daemon *d = userdata;
        struct gw_djob *dj = gw_djob_new(j);
        if (!j->log_path)
                j->log_path = gw_job_log_path(d, j);
        restore_attempts(d, dj);
        if (j->state != GW_JOB_RUNNING) {
                gw_jobmap_put(&d->jobs.map, dj);
                gw_queue_insert(d, dj);
                /* A retry waiting out its backoff when the daemon stopped still waits for it. */
                d->jobs.n_backoff += j->not_before > 0;
                return 0;
        }
        gw_job_clock_adopt(d, dj);
        restore_evidence(d, dj); /* for every way the attempt ends below */
        if (j->stop_state != GW_JOB_PENDING)
                gw_job_stop_restore(dj);
        gw_jobmap_put(&d->jobs.map, dj);
        gw_running_add(d, dj);
        if (d->exec->adopt(d, dj) <= 0)
                return 0; /* gone while we were down: its end was told */
        gw_gpus_assign(d, j->mig_profile ? 0 : j->gpu_mask, j->id); /* slices: found from mig_slices */
        /* As at its start: the time limit from the recorded start, or its booking's end. */
        gw_lifecycle_publish(d, GW_HOOK_ATTEMPT_ADOPTED, dj, false);
        log_info("job %lld: still running (supervisor pid %d, job pid %d): re-adopted", (long long) j->id,
                 (int) j->shim_pid, (int) j->pid);
        (void) gw_store_job_event(d->store, j->id, j->state, "adopt",
                                  "daemon restarted; job still running, re-adopted");
        char why[256];
        int gone = gw_job_account_check(d, j, why, sizeof why);
        if (dj->terminating)
                gw_job_stop_again(d, dj);
        else if (gone == -ENOENT || gone == -ESTALE) /* deleted while the daemon was down */
                gw_job_terminate(d, dj, GW_JOB_CANCELLED, why);
        return 0;
}

int gw_jobs_recover(struct gw_daemon *d) {
        d->jobs.recovering = true;
        int r = d->exec->adopt_begin(d);
        bool refused = r < 0;
        if (!refused)
                r = gw_store_jobs_active(d->store, recover_one, d);
        d->jobs.recovering = false;
        if (refused)
                return r; /* nothing touched: no job ended, no process signalled */
        d->exec->adopt_end(d);
        return r;
}
