/* The local executor's watch over an attempt's supervisor: the job's pid and its end come on
 * the report pipe; the supervisor's pidfd (when it is not our child) or SIGCHLD tells that it
 * is gone; the exits journal has the end when the pipe did not bring it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/text.h"
#include "daemon/exec/exec_shim.h"
#include "daemon/exec/launch_server.h"
#include "daemon/base/jobclock.h"
#include "shim/shim.h"

static void report_watch(struct gw_daemon *d, struct gw_djob *dj, int fd) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        x->report_fd = fd;
        x->report_src = (struct gw_source){ GW_SRC_EXEC, dj };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &x->report_src };
        if (fd >= 0 && epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                log_warn("job %lld: cannot watch for its pid: %s", (long long) dj->job->id, strerror(errno));
}

static void report_close(struct gw_daemon *d, struct gw_djob *dj);

/* The report pipe closed: with its exit on record the supervisor has closed it as its last
 * act for this attempt and waits for another job (it may not exit, so its pidfd is no
 * signal); without it, it died. */
static void attempt_closed(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        int chan = x->shim_chan;
        pid_t shim = dj->job->shim_pid;
        uint64_t start = dj->job->shim_start;
        x->shim_chan = -1;
        if (gw_exec_shim_exited(d, dj))
                gw_warm_put(&exec_shim_of(d)->warm, chan, shim, start, d->now / GW_USEC_PER_SEC);
        else if (chan >= 0)
                (void) close(chan); /* it died, or could not record: it ends */
}

void gw_exec_shim_launched(struct gw_daemon *d, struct gw_djob *dj, const struct gw_launched *run) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        struct gw_job *j = dj->job;
        if (run->report_fd != x->report_fd) {
                /* A new pipe is a new supervisor's (spawned after the launcher died): what
                 * the old one said no longer counts. */
                report_close(d, dj);
                report_watch(d, dj, run->report_fd);
                x->report_closed = false;
                x->reported_end = (struct gw_exit_report){ .known = false };
        }
        if (run->job > 0) {
                j->pid = run->job;
                (void) gw_proc_start_time(j->pid, &j->pid_start);
        }
        gw_exec_shim_set_pending(d, dj, run->pending);
        if (run->pending)
                return; /* the launcher's answer brings the supervisor (exec_shim_launch.c) */
        j->shim_pid = run->shim;
        if (x->shim_chan >= 0)
                (void) close(x->shim_chan);
        x->shim_chan = run->chan;
        j->shim_start = run->shim_start;
        if (!j->shim_start)
                (void) gw_proc_start_time(j->shim_pid, &j->shim_start);
        /* While the report pipe lives, its EOF is the end, the supervisor's death included
         * (its end of the pipe closes with it); a reused supervisor does not exit at all. */
        if (run->pidfd >= 0 && x->report_fd >= 0 && !x->report_closed)
                (void) close(run->pidfd);
        else if (run->pidfd >= 0)
                gw_exec_shim_watch_pidfd(d, dj, run->pidfd);
        char gpus[256];
        log_info("job %lld: started on GPU %s, supervisor pid %d", (long long) j->id,
                 gw_gpu_mask_format(j->gpu_mask, gpus, sizeof gpus), (int) j->shim_pid);
        if (x->report_closed) {
                /* A short job ended before the launcher's answer was read. */
                x->report_closed = false;
                attempt_closed(d, dj);
                return;
        }
        /* A stop asked for while the supervisor was unknown reaches it now. */
        if (dj->terminating)
                (void) d->exec->signal(d, dj, SIGTERM, 0);
}

static void report_close(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        if (x->report_fd < 0)
                return;
        (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, x->report_fd, NULL);
        (void) close(x->report_fd);
        x->report_fd = -1;
}

void gw_exec_shim_reported(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        pid_t pid;
        char why[SHIM_REPORT_LINE_MAX] = "";
        struct gw_exit_report end = { .known = false };
        int r = gw_launch_read_report(x->report_fd, &pid, &end, why, sizeof why);
        if (end.known)
                x->reported_end = end; /* taken when the pipe closes (gw_exec_shim_exited) */
        if (why[0]) {
                /* Its output file or directory, its cgroup...: said where `gpuward show` shows it. */
                log_info("job %lld: could not be set up: %s", (long long) dj->job->id, why);
                /* It names the job's directory, output file or program: for its owner and
                 * admins only (base/text.h), as guests see none of them on the job. */
                char said[SHIM_REPORT_LINE_MAX + 2];
                (void) gw_store_job_event(d->store, dj->job->id, dj->job->state, "setup",
                                          gw_text_private_wrap(said, sizeof said, why));
        }
        if (r == -EAGAIN)
                return;
        if (r == 0 && dj->job->pid != pid) {
                dj->job->pid = pid;
                /* A job whose end came with its pid is reaped: /proc has it no more, or has
                 * another process under its pid. */
                if (!end.known)
                        (void) gw_proc_start_time(pid, &dj->job->pid_start);
                log_debug("job %lld: process %d", (long long) dj->job->id, (int) pid);
                if (x->signal_held) { /* its whole group: it made one (setsid) before its exec */
                        int sig = x->signal_held;
                        x->signal_held = 0;
                        if (kill(-pid, sig) < 0)
                                (void) kill(pid, sig);
                        log_info("job %lld: %s sent before its process started, delivered now", (long long) dj->job->id,
                                 strsignal(sig));
                }
        }
        if (r == 0)
                return; /* the supervisor closes the pipe once the attempt's end is told */
        if (r == -EIO)
                return; /* no job started (its vfork failed): the exit line and the EOF follow */
        /* Closed (or unreadable, which no supervisor causes): the end is in the exits journal,
         * or the supervisor died.  While the launcher's answer is awaited, the end is taken
         * when that answer comes (gw_exec_shim_launched). */
        report_close(d, dj); /* read to its end: nothing is left to drain */
        if (!x->launch_pending && dj->job->shim_pid > 0)
                attempt_closed(d, dj);
        else
                x->report_closed = true;
}

/* The attempt's supervisor is gone: stop watching it (a retry gets new ones). */
void gw_exec_shim_detach(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        report_close(d, dj);
        if (x->shim_chan >= 0) {
                (void) close(x->shim_chan);
                x->shim_chan = -1;
        }
        if (x->pidfd >= 0) {
                (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, x->pidfd, NULL);
                (void) close(x->pidfd);
                x->pidfd = -1;
        }
}

/* What the supervisor wrote before its pipe closed, read before the pipe is: its end may be
 * there still unread (the supervisor was reaped, or its pidfd woke us, first).  Bounded: a
 * supervisor writes a few lines. */
static void report_drain(struct gw_djob *dj) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        for (int i = 0; i < 8 && x->report_fd >= 0; i++) {
                pid_t pid;
                struct gw_exit_report end = { .known = false };
                int r = gw_launch_read_report(x->report_fd, &pid, &end, NULL, 0);
                if (end.known)
                        x->reported_end = end;
                if (r == -EAGAIN && !end.known)
                        break;
                if (r < 0 && r != -EAGAIN && r != -EIO)
                        break;
        }
}

/* When the attempt ended, labelled on the job's clock (jobclock.c): its start + the monotonic
 * time it ran up to the supervisor's monotonic instant just after the job's wait (the same
 * clock for every process of the machine).  An instant that does not fit the attempt is
 * another boot's (the journal outlives a reboot; the supervisor wrote it as the host went
 * down): the supervisor's wall clock then, kept within the attempt, as without a monotonic
 * start.  Up to now when the supervisor told no time (an older one's journal line). */
static gw_usec_t attempt_end_time(const struct gw_daemon *d, const struct gw_djob *dj,
                                  const struct gw_exit_report *end) {
        const struct gw_job *j = dj->job;
        /* The bounds are fresh reads: the supervisor's instant may come after the loop read its
         * clocks (a report read later in this iteration) and is then still a true one.  Up to
         * now is the loop's instant, as for every other end. */
        gw_usec_t mono = gw_now_mono(), wall = gw_now_wall();
        if (dj->start_mono && end->mono && end->mono >= dj->start_mono && end->mono <= mono)
                return gw_job_clock_label(d, dj, end->mono);
        if (end->wall && end->wall <= wall)
                return end->wall < j->start_time ? j->start_time : end->wall;
        return dj->start_mono ? gw_job_clock_label(d, dj, d->now) : d->now_wall;
}

/* By its cgroup, which holds every process of the attempt (the pid is recorded lazily, and
 * may be unknown), else by its recorded process group. */
void gw_exec_shim_kill_orphans(struct gw_daemon *d, const struct gw_job *j) {
        const struct gw_cgroups *cg = &exec_shim_of(d)->cg;
        if (gw_cgroup_is_job(cg, j->cgroup) && gw_cgroup_populated(j->cgroup) > 0) {
                char msg[700];
                snprintf(msg, sizeof msg, "attempt %d lived on with its supervisor gone: its processes in %s killed",
                         j->attempt, j->cgroup);
                log_info("job %lld: %s", (long long) j->id, msg);
                (void) gw_cgroup_signal(cg->mode, j->cgroup, SIGKILL, 0);
                gw_cgroup_pool_spoil(&exec_shim_of(d)->cg_pool, j->cgroup);
                (void) gw_store_job_event(d->store, j->id, j->state, "killed", msg);
        }
        if (gw_proc_is(j->pid, j->pid_start))
                (void) kill(-j->pid, SIGKILL);
}

bool gw_exec_shim_exited(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        struct gw_job *j = dj->job;
        report_drain(dj);
        struct gw_exit_report end = x->reported_end, journal;
        x->reported_end = (struct gw_exit_report){ .known = false };
        gw_exec_shim_detach(d, dj);
        /* The journal's copy goes either way: the pipe's, when it came, is the same end. */
        if (gw_exits_take(exec_shim_of(d)->exits, j->id, j->attempt, &journal) == 0 && !end.known)
                end = journal;
        x->cgroup_reusable = end.known;
        if (end.pid > 0 && j->pid <= 0)
                j->pid = end.pid; /* reaped: no /proc look for its start time */
        if (!end.known) {
                gw_exec_shim_kill_orphans(d, j);
                d->exec->ended(d, dj, &(struct gw_exec_end){ .kind = GW_EXEC_LOST });
                return false;
        }
        d->exec->ended(d, dj,
                       &(struct gw_exec_end){ .kind = GW_EXEC_EXITED,
                                              .status = end.status,
                                              .at = attempt_end_time(d, dj, &end) });
        return true;
}

/* The shim is not our child (the launcher forked it, or an earlier daemon started it): its
 * pidfd turns readable when it exits. */
int gw_exec_shim_watch_pidfd(struct gw_daemon *d, struct gw_djob *dj, int fd) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        x->pidfd = fd;
        x->pidfd_src = (struct gw_source){ GW_SRC_EXEC, dj };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &x->pidfd_src };
        if (epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                int r = -errno;
                log_warn("job %lld: cannot watch its supervisor: %s", (long long) dj->job->id, strerror(-r));
                return r;
        }
        return 0;
}
