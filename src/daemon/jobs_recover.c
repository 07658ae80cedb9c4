/* A restarted daemon takes up the jobs it left: queued ones go back in the queue, running
 * ones whose supervisor still lives are re-adopted (pid and start time, or the supervisor's
 * command line), the others end as their supervisor left them or as lost.  It goes no further
 * when a live supervisor runs a job attempt the database does not know (emptied, or an older
 * copy put back): that job's GPUs and id would be given again. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/pidfd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/observe.h"
#include "daemon/proc.h"
#include "daemon/sharing.h"
#include "daemon/training.h"

static int adopt(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        int fd = pidfd_open(j->shim_pid, 0);
        if (fd < 0)
                return -errno;
        /* The job's pid is recorded lazily; its shim knows it as its child. */
        if (!gw_proc_is(j->pid, j->pid_start)) {
                j->pid = gw_proc_first_child(j->shim_pid);
                if (j->pid > 0)
                        (void) gw_proc_start_time(j->pid, &j->pid_start);
        }
        int r = gw_job_watch_pidfd(d, dj, fd);
        if (r < 0)
                return r;
        gw_jobmap_put(&d->map, dj);
        gw_running_add(d, dj);
        gw_gpus_assign(d, j->gpu_mask, j->id);
        /* As at its start: the time limit from the recorded start, or its booking's end. */
        gw_sharing_job_limit(d, dj);
        return 0;
}

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
                         "are not known", (long long) dj->job->id, gw_store_errmsg(d->store));
                ev = NULL;
                n = 0;
        }
        gw_observe_faults_restore(dj, ev, n);
        gw_training_leak_restore(d, dj, ev, n); /* also from its recorded stop alone */
        gw_sharing_warned_restore(dj, ev, n);
        gw_job_limit_warned_restore(dj, ev, n);
        gw_reclaim_idle_restore(d, dj, ev, n);
        gw_job_events_free(ev, n);
}

/* How the previous attempt ended, for the crash-loop rule (recovery.c keeps it in memory at a
 * retry): its epoch and its newest checkpoint's identity, from its attempt row.  A row written
 * by an older version has no identity: it is "none" when the current attempt resumes from none,
 * otherwise unknown, and the rule waits for one more attempt (max_retries still bounds them). */
static void restore_last_mark(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        struct gw_job_attempt *a = NULL;
        size_t n = 0;
        if (j->attempt < 2 || gw_store_attempts(d->store, j->id, &a, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (a[i].attempt == j->attempt - 1 && (a[i].ckpt_id || !j->resume_from)) {
                        dj->last_mark = (struct gw_attempt_mark) { .valid = true, .epoch = a[i].epoch };
                        snprintf(dj->last_mark.ckpt, sizeof dj->last_mark.ckpt, "%s", a[i].ckpt_id ? a[i].ckpt_id : "");
                }
        gw_job_attempts_free(a, n);
}

/* The live shim of a job attempt, found by its command line: "gpuward-shim --job ID
 * --attempt N"; else the recorded pid (with its start time), unless that process now says
 * it runs another attempt: a supervisor is reused from job to job. */
static pid_t find_shim(struct gw_daemon *d, const struct gw_job *j) {
        bool other = false;
        for (size_t i = 0; i < d->n_shims; i++)
                if (d->shims[i].job_id == j->id && d->shims[i].attempt == j->attempt)
                        return d->shims[i].pid;
                else if (d->shims[i].pid == j->shim_pid)
                        other = true;
        return !other && gw_proc_is(j->shim_pid, j->shim_start) ? j->shim_pid : 0;
}

static int recover_one(struct gw_job *j, void *userdata) {
        struct gw_daemon *d = userdata;
        struct gw_djob *dj = gw_djob_new(j);
        if (!j->log_path)
                j->log_path = gw_job_log_path(d, j);
        restore_last_mark(d, dj);
        if (j->state != GW_JOB_RUNNING) {
                gw_jobmap_put(&d->map, dj);
                gw_queue_insert(d, dj);
                /* A retry waiting out its backoff when the daemon stopped still waits for it. */
                d->n_backoff += j->not_before > 0;
                return 0;
        }
        gw_job_clock_adopt(d, dj);
        restore_evidence(d, dj); /* for every way the attempt ends below */
        if (j->stop_state != GW_JOB_PENDING)
                gw_job_stop_restore(dj);
        pid_t shim = find_shim(d, j);
        if (shim > 0 && shim != j->shim_pid) {
                j->shim_pid = shim;
                (void) gw_proc_start_time(shim, &j->shim_start);
        }
        if (shim > 0 && adopt(d, dj) == 0) {
                log_info("job %lld: still running (supervisor pid %d, job pid %d): re-adopted", (long long) j->id,
                         (int) j->shim_pid, (int) j->pid);
                (void) gw_store_job_event(d->store, j->id, j->state, "adopt", "daemon restarted; job still running, re-adopted");
                char why[256];
                int gone = gw_job_account_check(d, j, why, sizeof why);
                if (dj->terminating)
                        gw_job_stop_again(d, dj);
                else if (gone == -ENOENT || gone == -ESTALE) /* deleted while the daemon was down */
                        gw_job_terminate(d, dj, GW_JOB_CANCELLED, why);
                return 0;
        }
        /* Gone while we were down: its shim may have left the status behind. */
        gw_jobmap_put(&d->map, dj);
        gw_running_add(d, dj);
        if (gw_exits_has(d->exits, j->id, j->attempt)) {
                gw_job_exited(d, dj);
                return 0;
        }
        if (gw_proc_is(j->pid, j->pid_start)) {
                /* The job lives but its supervisor is gone: stop it rather than leave it untracked. */
                (void) kill(-j->pid, SIGKILL);
        }
        gw_recovery_attempt_ended(d, dj, true, 0, gw_job_clock_label(d, dj, d->now));
        return 0;
}

/* Job cgroups no job of ours uses any more: those of attempts that ended while no daemon
 * ran, or whose last processes were still dying when their end removed them. */
static void sweep_cgroups(struct gw_daemon *d) {
        char **keep = gw_xcalloc(d->n_running + 1, sizeof *keep);
        for (size_t i = 0; i < d->n_running; i++)
                keep[i] = d->running[i]->job->cgroup;
        size_t gone = gw_cgroup_sweep(&d->cg, keep, d->n_running);
        free(keep);
        if (gone)
                log_info("removed %zu empty job cgroup%s left under %s", gone, gone == 1 ? "" : "s", d->cg.base);
}

/* Whether the store's record of the job (NULL: it has none) accounts for a live supervisor of
 * one of its attempts.  Starts are recorded before their supervisor is spawned, so it does not
 * when the attempt is newer than the record's, or the record's is not started yet: the
 * database was emptied or replaced by an older copy.  An older attempt's supervisor is one
 * still finishing after that attempt's end.  Pure. */
static bool shim_accounted(const struct gw_job *j, const struct gw_shim_ref *s) {
        if (!j || j->attempt < s->attempt)
                return false;
        return j->attempt > s->attempt || (j->state != GW_JOB_PENDING && j->state != GW_JOB_HELD);
}

/* The first few supervisors' job attempts ("job N attempt A, ...") or pids ("P, ..."), and
 * how many more. */
static void shims_list(const struct gw_shim_ref *const *v, size_t n, bool pids, char *buf, size_t len) {
        size_t used = 0, shown = n <= 4 ? n : 3;
        buf[0] = '\0';
        for (size_t i = 0; i < shown && used < len; i++)
                if (pids)
                        used += (size_t) snprintf(buf + used, len - used, "%s%d", i ? ", " : "", (int) v[i]->pid);
                else
                        used += (size_t) snprintf(buf + used, len - used, "%sjob %lld attempt %d", i ? ", " : "",
                                                  (long long) v[i]->job_id, v[i]->attempt);
        if (n > shown && used < len)
                (void) snprintf(buf + used, len - used, " and %zu more", n - shown);
}

/* Refuses to go on when a supervisor of this state dir runs a job attempt the store does not
 * know: its job still holds GPUs the store has as free (they would be given again), and its
 * id would be given again too (its exit, in the journal, would end the new job).  Only the
 * supervisors found for re-adoption are looked up, one row each. */
static int check_shims(struct gw_daemon *d) {
        const struct gw_shim_ref **unknown = gw_xcalloc(d->n_shims + 1, sizeof *unknown);
        size_t n = 0;
        int r = 0;
        for (size_t i = 0; i < d->n_shims && r >= 0; i++) {
                const struct gw_shim_ref *s = &d->shims[i];
                _cleanup_(gw_job_freep) struct gw_job *j = NULL;
                if (s->job_id <= 0)
                        continue; /* idle: between jobs */
                r = gw_store_job_get(d->store, s->job_id, &j);
                if (r == -ENOENT)
                        r = 0;
                if (r >= 0 && !shim_accounted(j, s))
                        unknown[n++] = s;
        }
        if (r >= 0 && n) {
                char jobs[160], pids[96], msg[512];
                shims_list(unknown, n, false, jobs, sizeof jobs);
                shims_list(unknown, n, true, pids, sizeof pids);
                snprintf(msg, sizeof msg, "it knows no %s, yet %s (pid%s %s) %s still running: was gpuward.db "
                         "replaced or emptied? Stop %s, or put the database back", jobs,
                         n == 1 ? "its supervisor" : "their supervisors", n == 1 ? "" : "s", pids,
                         n == 1 ? "is" : "are", n == 1 ? "that process and its job" : "those processes and their jobs");
                r = gw_store_set_error(d->store, -ESTALE, msg);
        }
        free(unknown);
        return r;
}

int gw_jobs_recover(struct gw_daemon *d) {
        d->recovering = true;
        gw_proc_find_shims(d->exits_path, &d->shims, &d->n_shims);
        int r = check_shims(d);
        bool refused = r < 0;
        if (!refused)
                r = gw_store_jobs_active(d->store, recover_one, d);
        free(d->shims);
        d->shims = NULL;
        d->n_shims = 0;
        d->recovering = false;
        if (refused)
                return r; /* nothing touched: no job ended, no process signalled, the journal kept */
        gw_jobs_trim_exits(d);
        sweep_cgroups(d);
        return r;
}
