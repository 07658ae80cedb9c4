/* The launcher's answers.  A start sends its request and goes on: the daemon does not wait
 * the few hundred microseconds the launcher takes to fork (on a busy host most of the time
 * of a start), and serves other jobs' ends meanwhile.  The answer, read here when the
 * launcher's socket turns readable, brings the supervisor's pid and pidfd to the job.  A
 * launcher that dies with requests unanswered is handled per request: the supervisor it may
 * have forked is found through the job's report, else one is spawned. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/launch_server.h"

static void watch_socket(struct gw_daemon *d) {
        int fd = gw_launch_server_fd(d->launcher);
        if (fd == d->launcher_watched)
                return;
        /* A closed socket left epoll by itself; a restarted launcher has a new one. */
        d->launcher_watched = -1;
        if (fd < 0)
                return;
        d->launcher_src = (struct gw_source) { GW_SRC_LAUNCHER, NULL };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->launcher_src };
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST) {
                log_err("cannot watch the job launcher: %s", strerror(errno));
                return;
        }
        d->launcher_watched = fd;
}

static void answer_one(struct gw_daemon *d, struct gw_launch_answer *a) {
        struct gw_djob *dj = gw_jobmap_get(&d->map, a->job_id);
        if (!dj || dj->job->attempt != a->attempt || !dj->launch_pending) {
                log_warn("job %lld: the job launcher answered for attempt %d, which no longer waits for it",
                         (long long) a->job_id, a->attempt);
                if (a->pidfd >= 0)
                        (void) close(a->pidfd);
                if (a->chan >= 0)
                        (void) close(a->chan);
                return;
        }
        char err[256] = "";
        struct gw_launched run = { .shim = a->pid, .pidfd = a->pidfd, .report_fd = dj->report_fd, .chan = a->chan };
        int r = 0;
        if (a->lost) {
                r = gw_launch_recover(a, dj->report_fd, dj->job->pid, &run, err, sizeof err);
                if (r == 0 && run.report_fd < 0 && run.job <= 0)
                        run.job = dj->job->pid;
        } else if (a->pid <= 0) {
                r = (int) a->pid;
                snprintf(err, sizeof err, "the job launcher could not start its supervisor: %s", strerror(-r));
        }
        if (r < 0) {
                dj->launch_pending = false;
                log_err("job %lld: cannot launch: %s", (long long) a->job_id, err);
                gw_job_end(d, dj, GW_JOB_FAILED, err, "launch");
                return;
        }
        gw_job_launched(d, dj, &run);
}

void gw_launch_answers(struct gw_daemon *d, bool readable) {
        if (!d->launcher)
                return;
        if (readable && gw_launch_server_waiting(d->launcher))
                gw_launch_server_poll(d->launcher);
        struct gw_launch_answer a;
        while (gw_launch_server_next(d->launcher, &a)) {
                answer_one(d, &a);
                free(a.request);
        }
        watch_socket(d);
}
