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
#include "daemon/exec/exec_shim.h"
#include "daemon/exec/launch_server.h"

static void watch_socket(struct gw_daemon *d) {
        int fd = gw_launch_server_fd(exec_shim_of(d)->launcher);
        if (fd == exec_shim_of(d)->launcher_watched)
                return;
        /* A closed socket left epoll by itself; a restarted launcher has a new one. */
        exec_shim_of(d)->launcher_watched = -1;
        if (fd < 0)
                return;
        exec_shim_of(d)->launcher_src = (struct gw_source){ GW_SRC_EXEC, NULL };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &exec_shim_of(d)->launcher_src };
        if (epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST) {
                log_err("cannot watch the job launcher: %s", strerror(errno));
                return;
        }
        exec_shim_of(d)->launcher_watched = fd;
}

/* The job of id whose start waits for the launcher's answer, NULL none (one that ended and
 * left the daemon's map no longer waits). */
static struct gw_djob *pending_job(struct gw_daemon *d, int64_t id) {
        for (struct gw_exec_job *x = exec_shim_of(d)->pending; x; x = x->pending_next)
                if (x->dj->job->id == id && !x->dj->dead)
                        return x->dj;
        return NULL;
}

static void answer_one(struct gw_daemon *d, struct gw_launch_answer *a) {
        struct gw_djob *dj = pending_job(d, a->job_id);
        if (!dj || dj->job->attempt != a->attempt || !gw_exec_shim_job(dj)->launch_pending) {
                log_warn("job %lld: the job launcher answered for attempt %d, which no longer waits for it",
                         (long long) a->job_id, a->attempt);
                if (a->pidfd >= 0)
                        (void) close(a->pidfd);
                if (a->chan >= 0)
                        (void) close(a->chan);
                return;
        }
        char err[256] = "";
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        struct gw_launched run = { .shim = a->pid, .pidfd = a->pidfd, .report_fd = x->report_fd, .chan = a->chan };
        int r = 0;
        if (a->lost) {
                r = gw_launch_recover(a, x->report_fd, dj->job->pid, &run, err, sizeof err);
                if (r == 0 && run.report_fd < 0 && run.job <= 0)
                        run.job = dj->job->pid;
        } else if (a->pid <= 0) {
                r = (int) a->pid;
                snprintf(err, sizeof err, "the job launcher could not start its supervisor: %s", strerror(-r));
        }
        if (r < 0) {
                gw_exec_shim_set_pending(d, dj, false);
                d->exec->ended(d, dj, &(struct gw_exec_end){ .kind = GW_EXEC_NOT_STARTED, .why = err });
                return;
        }
        gw_exec_shim_launched(d, dj, &run);
}

void gw_exec_shim_launch_answers(struct gw_daemon *d, bool readable) {
        if (!exec_shim_of(d)->launcher)
                return;
        if (readable && gw_launch_server_waiting(exec_shim_of(d)->launcher))
                gw_launch_server_poll(exec_shim_of(d)->launcher);
        struct gw_launch_answer a;
        while (gw_launch_server_next(exec_shim_of(d)->launcher, &a)) {
                answer_one(d, &a);
                free(a.request);
        }
        watch_socket(d);
}
