/* Following the Slurm jobs the daemon started (exec_slurm.h): at most once a second (four
 * times in the seconds after a submission, POLL_STARTING_USEC), one squeue of the whole
 * cluster runs as a child whose output is read as its pipe is readable, so the loop never
 * waits on slurmctld.  Once it has exited with status 0, its lines tell
 * each job's state: changes become "slurm" events (PENDING with Slurm's reason, RUNNING on
 * its node), final states the attempt's end (core/slurm.h's mapping). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/slurm.h"
#include "daemon/exec/exec_slurm.h"

#define POLL_EVERY_USEC GW_USEC_PER_SEC
/* A job just handed to Slurm starts at the controller's next pass (once a second on Slurm
 * 22.05): polled at one second from its submission, its "RUNNING on NODE" came a second after
 * the submission whatever Slurm did (docs/CLUSTER-PERF.md).  While a job submitted in the last
 * few seconds has not been seen started, the poll comes four times as often. */
#define POLL_STARTING_USEC (GW_USEC_PER_SEC / 4)
#define STARTING_FOR_USEC (5 * GW_USEC_PER_SEC)
/* A squeue that has not answered by then is killed; the next poll tries again. */
#define POLL_TIMEOUT_USEC (30 * GW_USEC_PER_SEC)

static void poll_stop(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (s->poll_fd >= 0) {
                (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, s->poll_fd, NULL);
                (void) close(s->poll_fd);
                s->poll_fd = -1;
        }
        s->poll_len = 0;
        if (s->poll_out)
                s->poll_out[0] = '\0';
        s->poll_eof = s->poll_reaped = false;
}

static void poll_start(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        char *argv[] = { s->squeue, "--states=all", "--noheader", GW_SLURM_SQUEUE_FORMAT, NULL };
        s->poll_src = (struct gw_source){ GW_SRC_EXEC, s };
        if (gw_slurm_read_start(d, argv, "squeue", &s->poll_src, &s->poll_fd, &s->poll_pid) == 0)
                s->poll_started = d->now;
}

/* Records what changed (PENDING with its reason, RUNNING on its node) as a "slurm" event. */
static void seen(struct gw_daemon *d, struct gw_djob *dj, struct gw_slurm_job *sj, const struct gw_slurm_squeue_row *r,
                 const struct gw_slurm_state *st) {
        char msg[sizeof sj->seen];
        sj->pending_in_slurm = st->state == GW_JOB_PENDING || st->state == GW_JOB_HELD;
        if (sj->pending_in_slurm) {
                /* An empty reason (none told) reads as not yet scheduled. */
                struct gw_slurm_reason why = { .reason = GW_REASON_NONE };
                if (r->reason[0] && gw_slurm_reason_parse(r->reason, &why) > 0)
                        log_info("job %lld: Slurm's reason '%s'", (long long) dj->job->id, r->reason);
                snprintf(msg, sizeof msg, "Slurm job %" PRIu32 ": %s, %s (%s)", sj->slurm_id, r->state,
                         why.reason == GW_REASON_NONE ? "not yet scheduled" : why.what, r->reason);
        } else {
                snprintf(msg, sizeof msg, "Slurm job %" PRIu32 ": %s on %s", sj->slurm_id, r->state, r->nodes);
                snprintf(sj->node, sizeof sj->node, "%s", r->nodes);
        }
        if (!strcmp(msg, sj->seen))
                return;
        snprintf(sj->seen, sizeof sj->seen, "%s", msg);
        if (gw_store_job_event(d->store, dj->job->id, dj->job->state, "slurm", msg) < 0)
                log_warn("job %lld: %s, not recorded: %s", (long long) dj->job->id, msg, gw_store_errmsg(d->store));
}

static void apply_one(struct gw_daemon *d, int64_t id, const struct gw_slurm_squeue_row *rows, size_t n) {
        struct gw_exec_slurm *s = slurm_of(d);
        struct gw_slurm_job *sj = gw_slurm_job_find(s, id);
        struct gw_djob *dj = sj ? sj->dj : NULL;
        if (!sj || !dj || dj->dead || dj->job->state != GW_JOB_RUNNING || sj->submitted >= s->poll_started)
                return; /* a job submitted while this squeue ran need not be in it yet */
        const struct gw_slurm_squeue_row *r = NULL;
        for (size_t i = 0; i < n && !r; i++)
                if (rows[i].job_id == sj->slurm_id)
                        r = &rows[i];
        struct gw_exec_end end = { .kind = GW_EXEC_LOST };
        struct gw_slurm_state st;
        if (!r) {
                log_warn("job %lld: Slurm job %" PRIu32 " is gone from squeue; lost", (long long) id, sj->slurm_id);
        } else if (gw_slurm_state_parse(r->state, &st) < 0) {
                log_warn("job %lld: Slurm job %" PRIu32 " in state '%s', unknown here", (long long) id, sj->slurm_id,
                         r->state);
                return;
        } else if (!gw_job_state_is_final(st.state)) {
                seen(d, dj, sj, r, &st);
                return;
        } else if (st.cls != GW_FAILURE_LOST)
                end = (struct gw_exec_end){ .kind = GW_EXEC_EXITED,
                                            .status = gw_slurm_end_status(&st, r->exit_status) };
        /* The node too: a job that started and ended between two polls was never seen running,
         * and the API's attempts read their node from these events (handlers_slurm.c). */
        const char *ran_on = r && r->nodes[0] ? r->nodes : sj->node;
        char msg[300];
        snprintf(msg, sizeof msg, "Slurm job %" PRIu32 ": %s%s%s%s%s", sj->slurm_id, r ? r->state : "gone",
                 r && r->exit_status[0] ? ", wait status " : "", r ? r->exit_status : "", ran_on[0] ? "; ran on " : "",
                 ran_on);
        (void) gw_store_job_event(d->store, id, dj->job->state, "slurm", msg);
        /* The attempt's evidence when lost: Slurm's word, and the node it names. */
        char why[400];
        if (!r)
                snprintf(why, sizeof why, "Slurm job %" PRIu32 " is gone from squeue", sj->slurm_id);
        else
                snprintf(why, sizeof why, "Slurm job %" PRIu32 ": %s%s%s", sj->slurm_id, r->state,
                         r->nodes[0] || sj->node[0] ? " on " : "", r->nodes[0] ? r->nodes : sj->node);
        end.why = end.kind == GW_EXEC_LOST ? why : NULL;
        if (r) {
                const char *node = r->nodes[0] ? r->nodes : sj->node;
                struct gw_slurm_jobx *x = gw_slurm_jobx_of(dj);
                x->last_oom = st.cls == GW_FAILURE_HOST_OOM;
                snprintf(x->last_node, sizeof x->last_node, "%s", node);
                /* The node failed, not the job: its next attempt goes elsewhere. */
                if (st.cls == GW_FAILURE_LOST && node[0])
                        gw_slurm_avoid_node(d, dj, node, why);
        }
        gw_slurm_ended_keep(s, sj->slurm_id, id);
        gw_slurm_job_forget(s, id);
        d->exec->ended(d, dj, &end);
}

/* squeue has exited and its output is read: apply it, if it succeeded. */
static void poll_done(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        bool ok = WIFEXITED(s->poll_status) && WEXITSTATUS(s->poll_status) == 0;
        if (!ok) {
                log_warn("backend slurm: squeue failed (status %d): %.200s", s->poll_status,
                         s->poll_out ? s->poll_out : "");
                poll_stop(d);
                return;
        }
        size_t cap = 16, n = 0;
        _cleanup_free_ struct gw_slurm_squeue_row *rows = gw_xmalloc(cap * sizeof *rows);
        for (char *line = s->poll_out; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                if (n == cap)
                        rows = gw_xrealloc(rows, (cap *= 2) * sizeof *rows);
                if (gw_slurm_squeue_parse(line, strlen(line), &rows[n]) == 0)
                        n++;
                line = nl ? nl + 1 : NULL;
        }
        /* Ending a job changes the table: walk a copy of its ids. */
        size_t m = s->n_jobs;
        _cleanup_free_ int64_t *ids = gw_xmalloc((m + 1) * sizeof *ids);
        for (size_t i = 0; i < m; i++)
                ids[i] = s->jobs[i].id;
        for (size_t i = 0; i < m; i++)
                apply_one(d, ids[i], rows, n);
        poll_stop(d);
}

void gw_slurm_poll_ready(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        while (s->poll_fd >= 0 && !s->poll_eof) {
                if (s->poll_cap - s->poll_len < 4096) {
                        s->poll_cap = s->poll_cap ? 2 * s->poll_cap : 16384;
                        s->poll_out = gw_xrealloc(s->poll_out, s->poll_cap);
                }
                ssize_t k = read(s->poll_fd, s->poll_out + s->poll_len, s->poll_cap - s->poll_len - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k > 0)
                        s->poll_len += (size_t) k;
                s->poll_out[s->poll_len] = '\0';
                if (k <= 0) { /* the end (or an error): nothing more to wait for on the pipe */
                        s->poll_eof = true;
                        (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, s->poll_fd, NULL);
                        (void) close(s->poll_fd);
                        s->poll_fd = -1;
                }
        }
        if (s->poll_eof && s->poll_reaped)
                poll_done(d);
}

bool gw_slurm_poll_reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (pid != s->poll_pid || pid <= 0)
                return false;
        s->poll_pid = 0;
        s->poll_status = status;
        s->poll_reaped = true;
        gw_slurm_poll_ready(d); /* what is left in the pipe; done if it has ended */
        return true;
}

/* Whether a job this daemon submitted (not one adopted at a restart) is still waiting for its
 * start, a few seconds after its submission at most. */
static bool any_starting(const struct gw_exec_slurm *s, gw_usec_t now) {
        for (size_t i = 0; i < s->n_jobs; i++) {
                const struct gw_slurm_job *sj = &s->jobs[i];
                if (sj->pending_in_slurm && sj->submitted && now - sj->submitted < STARTING_FOR_USEC)
                        return true;
        }
        return false;
}

gw_usec_t gw_slurm_poll_tick(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (s->poll_pid > 0) {
                if (d->now - s->poll_started < POLL_TIMEOUT_USEC)
                        return s->poll_started + POLL_TIMEOUT_USEC;
                log_warn("backend slurm: squeue (pid %d) did not answer in %d s; killed", (int) s->poll_pid,
                         (int) (POLL_TIMEOUT_USEC / GW_USEC_PER_SEC));
                (void) kill(s->poll_pid, SIGKILL);
                gw_slurm_kid_add(s, s->poll_pid); /* reaped by the loop, its output ignored */
                s->poll_pid = 0;
                poll_stop(d);
        }
        if (s->n_jobs == 0)
                return GW_USEC_INFINITY;
        if (d->now < s->poll_next)
                return s->poll_next;
        s->poll_next = d->now + (any_starting(s, d->now) ? POLL_STARTING_USEC : POLL_EVERY_USEC);
        poll_start(d);
        return s->poll_next;
}

void gw_slurm_poll_close(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (s->poll_pid > 0) {
                (void) kill(s->poll_pid, SIGKILL);
                (void) waitpid(s->poll_pid, NULL, 0);
                s->poll_pid = 0;
        }
        poll_stop(d);
        free(s->poll_out);
}
