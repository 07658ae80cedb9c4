/* Around a job's stop: signals, a stop recorded by an earlier daemon taken up again, and
 * the warning ahead of a time limit.  The stop itself (cancel, timeout, reclaim) is a
 * transition of the lifecycle (lifecycle_stop.c), and so is keeping and writing again an
 * end the store refused (lifecycle.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/text.h"
#include "base/parse.h"
#include "core/limitwarn.h"
#include "daemon/daemon.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/jobs.h"

void gw_job_signal(struct gw_daemon *d, struct gw_djob *dj, int sig) { (void) d->exec->signal(d, dj, sig, 0); }

/* A stop recorded before the daemon went down: the attempt ends as that stop says, however
 * its processes turn out to have ended. */
void gw_job_stop_restore(struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        dj->terminating = true;
        dj->end_state = j->stop_state;
        dj->end_reason = gw_xstrdup(j->stop_reason ? j->stop_reason : gw_job_state_name(j->stop_state));
}

/* When the attempt's stop was recorded and the grace period it announced: the first
 * "terminate" event of the attempt ("...: SIGTERM to every process of the job, SIGKILL in
 * Ns", written by terminate() with the stop).  Later ones are this function's own repeats.
 * -ENOENT when the events do not say (then a whole grace period from now). */
static int recorded_stop(const struct gw_job_event *ev, size_t n, gw_usec_t *ret_at, gw_usec_t *ret_grace) {
        for (size_t i = 0; i < n; i++) {
                if (strcmp(ev[i].kind, "terminate"))
                        continue;
                const char *k = NULL;
                for (const char *p = ev[i].message; (p = strstr(p, "SIGKILL in ")); p++)
                        k = p;
                long long secs;
                if (!k || sscanf(k, "SIGKILL in %llds", &secs) != 1 || secs < 0)
                        return -ENOENT;
                *ret_at = ev[i].time;
                *ret_grace = secs * GW_USEC_PER_SEC;
                return 0;
        }
        return -ENOENT;
}

/* Its processes outlived the daemon: stopped again, SIGKILL due at the recorded stop plus its
 * grace period.  Not a whole new grace period: a daemon restarted over and over would
 * otherwise put SIGKILL off for ever.  Without a recorded time, a whole grace period. */
void gw_job_stop_again(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        gw_usec_t stopped = 0, grace = d->cfg->grace, left = grace;
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        if (gw_store_job_attempt_events(d->store, j->id, &ev, &n) == 0 && recorded_stop(ev, n, &stopped, &grace) == 0)
                left = stopped + grace - d->now_wall;
        gw_job_events_free(ev, n);
        if (left < 0)
                left = 0;
        char msg[512];
        if (left > 0)
                snprintf(msg, sizeof msg, "%s: the daemon restarted while stopping it: SIGTERM again, SIGKILL in %llds",
                         dj->end_reason, (long long) ((left + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC));
        else
                snprintf(msg, sizeof msg, "%s: the daemon restarted while stopping it: its grace period is over",
                         dj->end_reason);
        /* Due now at the latest: the loop's tick sends SIGKILL and records it. */
        dj->kill_at = d->now + left;
        (void) gw_store_job_event(d->store, j->id, j->state, "terminate", msg);
        log_info("job %lld: %s", (long long) j->id, msg);
        if (left > 0)
                gw_job_signal(d, dj, SIGTERM);
}

/* The warning's event starts so, and gw_job_limit_warned_restore reads it back by it. */
#define LIMIT_WARN_START "the job ends at "

/* The job's warning, on the loop's monotonic clock (core/limitwarn.h has the rules): its
 * start is the attempt's monotonic start, so that the halfway point of a short limit is
 * halfway through the time the job has, not through what is left at some later look. */
static gw_usec_t limit_warn_at(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        struct gw_limit_warn w = {
                .start = d->now - gw_job_ran(dj, d->now),
                .end = dj->limit_at,
                .by_booking = dj->limit_by_booking,
                .signal = j->warn_signal != 0,
                .before = j->warn_before,
                .notice = d->cfg->time_limit_warn,
        };
        return gw_limit_warn_at(&w);
}

static void limit_warn(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        char when[32], a[32], sent[96] = "", msg[400];
        gw_usec_t wall = d->now_wall;
        gw_format_local_time(wall + (dj->limit_at - d->now), wall, when, sizeof when, NULL);
        dj->limit_warned = true;
        int r = j->warn_signal ? d->exec->signal(d, dj, j->warn_signal, GW_EXEC_SIGNAL_MAIN) : -ESRCH;
        char pid[32] = ""; /* a job on a cluster node: its pid is not known here */
        if (j->pid > 0)
                snprintf(pid, sizeof pid, " (pid %d)", (int) j->pid);
        if (r == 0)
                snprintf(sent, sizeof sent, "; SIG%s sent to its main process%s now, as --signal asked",
                         gw_signal_name(j->warn_signal), pid);
        else if (r != -ESRCH)
                snprintf(sent, sizeof sent, "; SIG%s could not be sent: %s", gw_signal_name(j->warn_signal),
                         strerror(-r));
        if (dj->limit_by_booking)
                snprintf(msg, sizeof msg, LIMIT_WARN_START "%s, when its booking ends%s", when, sent);
        else
                snprintf(msg, sizeof msg, LIMIT_WARN_START "%s, its time limit %s: SIGTERM then, SIGKILL %llds later%s",
                         when, gw_format_duration(j->time_limit, a, sizeof a),
                         (long long) (d->cfg->grace / GW_USEC_PER_SEC), sent);
        log_info("job %lld: %s", (long long) j->id, msg);
        (void) gw_store_job_event(d->store, j->id, j->state, "warn", msg);
        gw_job_log_note(d, dj, msg);
}

gw_usec_t gw_job_limit_warn_tick(struct gw_daemon *d, struct gw_djob *dj) {
        if (dj->terminating || dj->limit_warned)
                return GW_USEC_INFINITY;
        gw_usec_t at = limit_warn_at(d, dj);
        if (at == GW_USEC_INFINITY)
                return GW_USEC_INFINITY;
        if (d->now < at)
                return at;
        limit_warn(d, dj);
        return GW_USEC_INFINITY;
}

void gw_job_limit_warned_restore(struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strcmp(ev[i].kind, "warn") && !strncmp(ev[i].message, LIMIT_WARN_START, strlen(LIMIT_WARN_START)))
                        dj->limit_warned = true;
}
