/* The local executor (exec_shim.h): its table of operations (executor.h), its start, signal,
 * loop plumbing and set-up.  The supervisors' reports: exec_shim_report.c; the launcher's
 * answers: exec_shim_launch.c; adoption at a restart: exec_shim_adopt.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/failure.h"
#include "daemon/exec/exec_shim.h"
#include "daemon/exec/launch_server.h"

static void pending_unlink(struct gw_exec_job *x) {
        if (!x->pending_pprev)
                return;
        *x->pending_pprev = x->pending_next;
        if (x->pending_next)
                x->pending_next->pending_pprev = x->pending_pprev;
        x->pending_next = NULL;
        x->pending_pprev = NULL;
}

static void job_free(struct gw_djob *dj) {
        struct gw_exec_job *x = dj->exec;
        if (!x)
                return;
        pending_unlink(x);
        if (x->pidfd >= 0)
                (void) close(x->pidfd);
        if (x->report_fd >= 0)
                (void) close(x->report_fd);
        if (x->shim_chan >= 0)
                (void) close(x->shim_chan);
        free(x);
        dj->exec = NULL;
}

struct gw_exec_job *gw_exec_shim_job(struct gw_djob *dj) {
        if (!dj->exec) {
                struct gw_exec_job *x = gw_xcalloc(1, sizeof *x);
                x->pidfd = x->report_fd = x->shim_chan = -1;
                x->dj = dj;
                dj->exec = x;
                dj->exec_free = job_free;
        }
        return dj->exec;
}

void gw_exec_shim_set_pending(struct gw_daemon *d, struct gw_djob *dj, bool pending) {
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        struct gw_exec_shim *s = exec_shim_of(d);
        x->launch_pending = pending;
        pending_unlink(x);
        if (!pending)
                return;
        x->pending_next = s->pending;
        if (s->pending)
                s->pending->pending_pprev = &x->pending_next;
        x->pending_pprev = &s->pending;
        s->pending = x;
}

/* Before the start is recorded: its cgroup (v2: from the pool of emptied ones), named in the
 * record so that a restarted daemon finds it. */
static void prepare(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_shim *s = exec_shim_of(d);
        struct gw_job *j = dj->job;
        int r = s->cg.mode == GW_CGROUP_V2     ? gw_cgroup_pool_take(&s->cg, &s->cg_pool, &j->cgroup)
                : s->cg.mode != GW_CGROUP_NONE ? gw_cgroup_create(&s->cg, j->id, j->attempt, &j->cgroup)
                                               : 0;
        if (r < 0)
                log_warn("job %lld: cannot create its cgroup; tracking it by process tree", (long long) j->id);
}

static int host_oom_count(const struct gw_exec_shim *s, uint64_t *ret) {
        return s->vmstat_fd >= 0 ? gw_proc_counter_fd(s->vmstat_fd, "oom_kill", ret)
                                 : gw_proc_counter("/proc/vmstat", "oom_kill", ret);
}

/* A read of the host's oom_kill count this young is taken for a start's, rather than read
 * again (below). */
#define HOST_OOM_REUSE_USEC (50 * GW_USEC_PER_MSEC)

/* Without a memory cgroup of its own, whether the OOM killer struck during the attempt is
 * told by the host's count, whoever it killed (failure.c says so: "while the kernel's OOM
 * killer was killing").  The kernel formats all of /proc/vmstat for it (~20 us here, on the
 * one CPU that a job's end, the daemon, the supervisor and the next job's exec share), so
 * starts reuse a read up to 50 ms old: a window that may begin that much before the attempt,
 * beside one that spans all of it.  Read as a start is sent, while its supervisor forks. */
static void host_oom_at_start(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_exec_shim *s = exec_shim_of(d);
        struct gw_exec_job *x = gw_exec_shim_job(dj);
        x->host_oom_known = false;
        if (s->cg.memory && dj->job->cgroup)
                return;
        if (!s->host_oom_at || d->now < s->host_oom_at || d->now - s->host_oom_at >= HOST_OOM_REUSE_USEC) {
                s->host_oom_r = host_oom_count(s, &s->host_oom);
                s->host_oom_at = d->now;
        }
        x->host_oom_known = s->host_oom_r == 0;
        x->host_oom_start = s->host_oom;
}

const char *gw_exec_shim_tty(const struct gw_daemon *d, struct gw_job *j) {
        if (!j->interactive)
                return NULL;
        if (!j->tty_socket) {
                char path[4300];
                snprintf(path, sizeof path, "%s/tty/%lld.sock", d->loop.run_dir, (long long) j->id);
                j->tty_socket = gw_xstrdup(path);
        }
        return j->tty_socket;
}

/* The start goes to an idle supervisor, else the resident launcher (its answer comes later,
 * exec_shim_launch.c), else a spawned gpuward-shim. */
static int start(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_start *how, char *err, size_t errlen) {
        struct gw_exec_shim *s = exec_shim_of(d);
        struct gw_job *j = dj->job;
        const struct gw_account *account = how->account;
        struct gw_launch l = {
                .argv = how->argv,
                .envp = how->envp,
                .cwd = j->cwd,
                .drop_privileges = d->loop.euid == 0 && j->uid != 0,
                .uid = j->uid,
                .gid = j->gid,
                .groups = account ? account->groups : NULL,
                .n_groups = account ? account->n_groups : 0,
                .log_path = j->log_path,
                .log_is_private = !j->output,
                .log_max = d->cfg->log_max,
                .log_reserve = d->cfg->state_reserve,
                .cgroup_dir = j->cgroup,
                .exits_path = s->exits_path,
                .job_id = j->id,
                .attempt = j->attempt,
                .tty_path = gw_exec_shim_tty(d, j),
        };
        struct gw_launched run;
        gw_exec_shim_job(dj)->signal_held = 0; /* an earlier attempt's stop is not this one's */
        gw_exec_shim_job(dj)->cgroup_reusable = false;
        int r = gw_launch_start(&l, &s->warm, s->launcher, &run, err, errlen);
        if (r < 0)
                return r;
        host_oom_at_start(d, dj);
        gw_exec_shim_job(dj)->report_fd = -1;
        gw_exec_shim_job(dj)->report_closed = false;
        gw_exec_shim_launched(d, dj, &run);
        return 0;
}

void gw_exec_shim_trim_exits(struct gw_daemon *d) {
        /* No job running means no shim can be appending: the journal may start afresh.  Not
         * while recovering: jobs not yet loaded may have their lines in it; and never once an
         * end could not be written: the next daemon reads that end from the journal. */
        if (d->jobs.n_running == 0 && !d->jobs.recovering && !d->jobs.in_batch && !d->jobs.keep_exits)
                gw_exits_reset(exec_shim_of(d)->exits);
}

/* Every process of the attempt: its process group, its cgroup, its supervisor's subreaper
 * tree (what left the group); or its main process alone. */
static int signal_job(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags) {
        const struct gw_job *j = dj->job;
        bool main_alive = j->pid > 0 && gw_proc_is(j->pid, j->pid_start);
        if (flags & GW_EXEC_SIGNAL_MAIN) {
                if (!main_alive)
                        return -ESRCH;
                return kill(j->pid, sig) < 0 ? -errno : 0;
        }
        /* Each process gets the signal once: a second SIGTERM a moment after the first ends
         * what the first one's handler has just started (a shell trap's command, a child
         * saving a checkpoint).  The job's process group first, at once by the kernel; then
         * what left the group, through the cgroup where the job has one, else (and always
         * for SIGKILL) by the shim's process tree. */
        pid_t group = 0;
        if (main_alive && kill(-j->pid, sig) == 0)
                group = j->pid;
        int r = group ? 0 : -ESRCH;
        /* An empty cgroup reached nobody: a job just launched may not have joined it yet, and
         * is then the shim's child, which the tree below reaches. */
        bool by_cgroup = j->cgroup && gw_cgroup_signal(exec_shim_of(d)->cg.mode, j->cgroup, sig, group) > 0;
        if (j->cgroup && sig == SIGKILL) /* through cgroup.kill (v2): never another job's */
                gw_cgroup_pool_spoil(&exec_shim_of(d)->cg_pool, j->cgroup);
        if (by_cgroup)
                r = 0;
        if ((!by_cgroup || sig == SIGKILL) && j->shim_pid > 0 && gw_proc_is(j->shim_pid, j->shim_start) &&
            gw_proc_signal_descendants(j->shim_pid, sig, group) > 0)
                r = 0;
        /* Sent before the supervisor has started the job (its pid not reported yet), it reached
         * nobody: kept for the job, or a stop right after a start waited for the SIGKILL. */
        struct gw_exec_job *x = dj->exec ? gw_exec_shim_job(dj) : NULL;
        bool launching = x && (x->launch_pending || (x->report_fd >= 0 && !x->report_closed));
        if (r < 0 && launching && j->pid <= 0 && (x->signal_held != SIGKILL || sig == SIGKILL)) {
                x->signal_held = sig;
                r = 0;
        }
        return r;
}

/* An attempt's end comes by its report pipe or its pidfd, often both in one batch: the first
 * detaches the other (fd -1).  The job itself is freed at the end of the iteration. */
static void ready(struct gw_daemon *d, struct gw_source *src) {
        struct gw_exec_shim *s = exec_shim_of(d);
        if (src == &s->launcher_src) {
                gw_exec_shim_launch_answers(d, true);
                return;
        }
        struct gw_djob *dj = src->ptr;
        struct gw_exec_job *x = dj->exec;
        if (dj->dead || !x)
                return;
        if (src == &x->pidfd_src && x->pidfd >= 0)
                (void) gw_exec_shim_exited(d, dj);
        else if (src == &x->report_src && x->report_fd >= 0)
                gw_exec_shim_reported(d, dj);
}

static bool reaped(struct gw_daemon *d, pid_t pid, int status) {
        gw_launch_server_reaped(exec_shim_of(d)->launcher, pid);
        for (size_t i = 0; i < d->jobs.n_running; i++)
                if (d->jobs.running[i]->job->shim_pid == pid) {
                        (void) gw_exec_shim_exited(d, d->jobs.running[i]);
                        return true;
                }
        return false;
}

/* Answers already read (a send reads those waiting; a launcher that died hands back what it
 * left unanswered); idle supervisors unused for their minute end on time; ended jobs'
 * cgroups go (work that waits until the next jobs have started). */
static gw_usec_t tick(struct gw_daemon *d) {
        struct gw_exec_shim *s = exec_shim_of(d);
        gw_exec_shim_launch_answers(d, false);
        gw_usec_t next = gw_cgroup_trash_sweep(&s->cg_trash, d->now);
        int64_t warm_due = gw_warm_tick(&s->warm, d->now / GW_USEC_PER_SEC);
        if (warm_due != INT64_MAX && warm_due * GW_USEC_PER_SEC < next)
                next = warm_due * GW_USEC_PER_SEC;
        return next;
}

/* A start not launched leaves its cgroup untouched; a launched one's comes back only once its
 * supervisor reported its end (exec_shim_report.c), and is otherwise removed. */
static void release(struct gw_daemon *d, struct gw_djob *dj, bool started) {
        struct gw_exec_shim *s = exec_shim_of(d);
        struct gw_job *j = dj->job;
        const struct gw_exec_job *x = dj->exec;
        if (!started) {
                if (j->cgroup && !gw_cgroup_pool_give_back(&s->cg, &s->cg_pool, j->cgroup))
                        (void) gw_cgroup_remove(j->cgroup);
                return;
        }
        gw_exec_shim_detach(d, dj); /* told already, or ended by the daemon: a retry gets new ones */
        gw_exec_shim_trim_exits(d);
        if (j->cgroup && !(x && x->cgroup_reusable))
                gw_cgroup_pool_spoil(&s->cg_pool, j->cgroup);
        if (j->cgroup && !gw_cgroup_pool_give_back(&s->cg, &s->cg_pool, j->cgroup))
                gw_cgroup_trash_add(&s->cg_trash, j->cgroup);
}

/* What is known of the kernel's OOM killer during the attempt: the job cgroup's count
 * (made for this attempt), else the host's growth since its launch; nothing after a restart. */
static void end_facts(struct gw_daemon *d, const struct gw_djob *dj, struct gw_failure_input *in) {
        const struct gw_exec_job *x = dj->exec;
        uint64_t n;
        char events[700];
        snprintf(events, sizeof events, "%s/memory.events", dj->job->cgroup ? dj->job->cgroup : "");
        if (exec_shim_of(d)->cg.memory && dj->job->cgroup && gw_proc_counter(events, "oom_kill", &n) == 0) {
                in->oom_counted = true;
                in->oom_kills = n;
        } else if (x && x->host_oom_known && host_oom_count(exec_shim_of(d), &n) == 0) {
                in->host_oom_counted = true;
                in->host_oom_kills = n >= x->host_oom_start ? n - x->host_oom_start : 0;
        }
}

static void exec_shim_close(struct gw_daemon *d) {
        struct gw_exec_shim *s = exec_shim_of(d);
        (void) gw_cgroup_trash_sweep(&s->cg_trash, d->now);
        gw_cgroup_trash_free(&s->cg_trash);
        gw_cgroup_pool_free(&s->cg_pool);
        gw_cgroup_release(&s->cg);
        s->exits = gw_exits_close(s->exits);
        s->launcher = gw_launch_server_close(s->launcher);
        gw_warm_close(&s->warm);
        if (s->vmstat_fd >= 0)
                (void) close(s->vmstat_fd);
        while (s->pending) /* a job freed later must not reach into s */
                pending_unlink(s->pending);
        free(s);
        d->exec = NULL;
}

static void serve(struct gw_daemon *d);

int gw_exec_shim_open(struct gw_daemon *d) {
        struct gw_exec_shim *s = gw_xcalloc(1, sizeof *s);
        s->launcher_watched = -1;
        s->vmstat_fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
        s->ops = (struct gw_executor){
                .name = "shim",
                .state = s,
                .placement = GW_EXEC_PLACE_HERE,
                .preempts = true,
                .serve = serve,
                .prepare = prepare,
                .start = start,
                .signal = signal_job,
                .adopt_begin = gw_exec_shim_adopt_begin,
                .adopt = gw_exec_shim_adopt,
                .adopt_end = gw_exec_shim_adopt_end,
                .ready = ready,
                .reaped = reaped,
                .tick = tick,
                .release = release,
                .sync = gw_exec_shim_trim_exits,
                .end_facts = end_facts,
                .close = exec_shim_close,
        };
        d->exec = &s->ops;
        snprintf(s->exits_path, sizeof s->exits_path, "%s/exits", d->loop.run_dir);
        int r = gw_exits_open(s->exits_path, &s->exits);
        if (r < 0) {
                log_err("cannot open %s: %s", s->exits_path, strerror(-r));
                return r;
        }
        char note[256];
        gw_cgroup_detect(d->cfg->cgroup, d->cfg->state_dir, &s->cg, note, sizeof note);
        log_info("cgroups: %s%s%s%s%s%s", gw_cgroup_mode_name(s->cg.mode), s->cg.mode ? " under " : "",
                 s->cg.mode ? s->cg.base : "", note[0] ? " (" : "", note, note[0] ? ")" : "");
        return 0;
}

/* The table's serve: the resident launcher, once the daemon is up. */
static void serve(struct gw_daemon *d) {
        struct gw_exec_shim *s = exec_shim_of(d);
        char err[512];
        s->launcher = gw_launch_server_open(s->exits_path, err, sizeof err);
        if (!s->launcher)
                log_warn("job launcher: %s; starting jobs by spawning their supervisor", err);
        gw_exec_shim_launch_answers(d, false);
}
