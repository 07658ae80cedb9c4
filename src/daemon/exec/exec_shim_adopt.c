/* The local executor at a restart: the supervisors still running are found by their command
 * lines ("gpuward-shim --job ID --attempt N") and re-adopted through their pidfds; a job
 * whose supervisor is gone ends as the exits journal says, else as lost.  It goes no further
 * when a live supervisor runs a job attempt the database does not know (emptied, or an older
 * copy put back): that job's GPUs and id would be given again. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/pidfd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/exec/exec_shim.h"

/* Watches the live supervisor of a running job found at a restart. */
static int watch(struct gw_daemon *d, struct gw_djob *dj) {
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
        int r = gw_exec_shim_watch_pidfd(d, dj, fd);
        return r;
}

/* The live shim of a job attempt, found by its command line: "gpuward-shim --job ID
 * --attempt N"; else the recorded pid (with its start time), unless that process now says
 * it runs another attempt: a supervisor is reused from job to job. */
static pid_t find_shim(struct gw_daemon *d, const struct gw_job *j) {
        bool other = false;
        for (size_t i = 0; i < exec_shim_of(d)->n_shims; i++)
                if (exec_shim_of(d)->shims[i].job_id == j->id && exec_shim_of(d)->shims[i].attempt == j->attempt)
                        return exec_shim_of(d)->shims[i].pid;
                else if (exec_shim_of(d)->shims[i].pid == j->shim_pid)
                        other = true;
        return !other && gw_proc_is(j->shim_pid, j->shim_start) ? j->shim_pid : 0;
}

static void shims_forget(struct gw_exec_shim *s) {
        free(s->shims);
        s->shims = NULL;
        s->n_shims = 0;
}

/* Job cgroups no job of ours uses any more: those of attempts that ended while no daemon
 * ran, or whose last processes were still dying when their end removed them. */
static void sweep_cgroups(struct gw_daemon *d) {
        struct gw_exec_shim *s = exec_shim_of(d);
        char **keep = gw_xcalloc(d->jobs.n_running + 1, sizeof *keep);
        for (size_t i = 0; i < d->jobs.n_running; i++)
                keep[i] = d->jobs.running[i]->job->cgroup;
        size_t gone = gw_cgroup_sweep(&s->cg, keep, d->jobs.n_running);
        free(keep);
        if (gone)
                log_info("removed %zu empty job cgroup%s left under %s", gone, gone == 1 ? "" : "s", s->cg.base);
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
        const struct gw_exec_shim *x = exec_shim_of(d);
        const struct gw_shim_ref **unknown = gw_xcalloc(x->n_shims + 1, sizeof *unknown);
        size_t n = 0;
        int r = 0;
        for (size_t i = 0; i < x->n_shims && r >= 0; i++) {
                const struct gw_shim_ref *s = &x->shims[i];
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
                snprintf(msg, sizeof msg,
                         "it knows no %s, yet %s (pid%s %s) %s still running: was gpuward.db "
                         "replaced or emptied? Stop %s, or put the database back",
                         jobs, n == 1 ? "its supervisor" : "their supervisors", n == 1 ? "" : "s", pids,
                         n == 1 ? "is" : "are", n == 1 ? "that process and its job" : "those processes and their jobs");
                r = gw_store_set_error(d->store, -ESTALE, msg);
        }
        free(unknown);
        return r;
}

int gw_exec_shim_adopt(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        pid_t shim = find_shim(d, j);
        if (shim > 0 && shim != j->shim_pid) {
                j->shim_pid = shim;
                (void) gw_proc_start_time(shim, &j->shim_start);
        }
        if (shim > 0 && watch(d, dj) == 0) {
                (void) gw_exec_shim_tty(d, j); /* its session goes on: the same socket */
                return 1;
        }
        /* Gone while we were down: its shim may have left the status behind. */
        if (gw_exits_has(exec_shim_of(d)->exits, j->id, j->attempt)) {
                (void) gw_exec_shim_exited(d, dj);
                return 0;
        }
        gw_exec_shim_kill_orphans(d, j);
        d->exec->ended(d, dj, &(struct gw_exec_end){ .kind = GW_EXEC_LOST });
        return 0;
}

int gw_exec_shim_adopt_begin(struct gw_daemon *d) {
        struct gw_exec_shim *s = exec_shim_of(d);
        gw_proc_find_shims(s->exits_path, &s->shims, &s->n_shims);
        int r = check_shims(d);
        if (r < 0)
                shims_forget(s); /* nothing touched: no job ended, no process signalled, the journal kept */
        return r;
}

void gw_exec_shim_adopt_end(struct gw_daemon *d) {
        shims_forget(exec_shim_of(d));
        gw_exec_shim_trim_exits(d);
        sweep_cgroups(d);
}
