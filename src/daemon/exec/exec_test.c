/* The tests' backend (gpuwardd --backend test): the smallest backend that runs real jobs, to
 * show that the daemon asks the table (executor.h) and never which backend runs.  It places
 * jobs on this host's GPUs through gpuward's scheduler, lets the calendar hold bookings,
 * preempts, and names the node its jobs run on "test"; it runs each attempt as a plain
 * child of the daemon, in a session of its own, with its output appended to the job's log:
 * no supervisor, no cgroup, no exits journal.  So it does not outlive the daemon: at a
 * restart an attempt it started is stopped and told lost.  A daemon running as root runs
 * each job as its user, as the shim does. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/userdb.h"
#include "daemon/daemon.h"
#include "daemon/exec/exec_test.h"
#include "daemon/exec/proc.h"

/* Its state of a job: the running attempt's process, 0 when none. */
struct gw_exec_job {
        pid_t pid;
};

struct exec_test {
        struct gw_executor ops;
        struct gw_djob **running; /* the attempts it started, to match SIGCHLD to */
        size_t n_running, cap_running;
};

static struct exec_test *test_of(const struct gw_daemon *d) { return d->exec->state; }

static void job_free(struct gw_djob *dj) {
        free(dj->exec);
        dj->exec = NULL;
}

static void running_add(struct exec_test *t, struct gw_djob *dj) {
        if (t->n_running == t->cap_running) {
                t->cap_running = t->cap_running ? t->cap_running * 2 : 16;
                t->running = gw_xrealloc(t->running, t->cap_running * sizeof *t->running);
        }
        t->running[t->n_running++] = dj;
}

static void running_forget(struct exec_test *t, const struct gw_djob *dj) {
        for (size_t i = 0; i < t->n_running; i++)
                if (t->running[i] == dj) {
                        t->running[i] = t->running[--t->n_running];
                        return;
                }
}

/* An absolute path for argv0 from the daemon's PATH, found before the fork: the child of a
 * threaded daemon calls only what is safe between fork and exec. */
static int resolve(const char *argv0, char *out, size_t n) {
        if (strchr(argv0, '/')) {
                snprintf(out, n, "%s", argv0);
                return 0;
        }
        const char *path = getenv("PATH");
        if (!path || !*path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path; *p;) {
                size_t l = strcspn(p, ":");
                if (l && (size_t) snprintf(out, n, "%.*s/%s", (int) l, p, argv0) < n && access(out, X_OK) == 0)
                        return 0;
                p += l + (p[l] == ':');
        }
        return -ENOENT;
}

/* What the child needs, all found before the fork: the child of a threaded daemon calls only
 * what is safe between fork and exec. */
struct test_child {
        const char *exe;
        const struct gw_exec_start *how;
        const struct gw_job *job;
        bool drop; /* root runs it as its user */
        gid_t groups[GW_USERDB_MAX_GROUPS];
        size_t n_groups;
        int log_fd; /* the log under the state dir, opened by the daemon; -1: j->output */
};

/* Opens a log the user chose as the user (after the drop): the daemon never creates a file
 * where the user could have put a link. */
static int child_log(const struct test_child *c) {
        if (c->log_fd >= 0)
                return c->log_fd;
        return open(c->job->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0644);
}

/* The child: its own session (its pid is its process group, which signal reaches), the
 * signals the daemon blocks or ignores given back, its user's identity, stdin from
 * /dev/null, stdout and stderr appended to the log, its cwd.  Never returns. */
static void child(const struct test_child *c) {
        sigset_t none;
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        (void) signal(SIGPIPE, SIG_DFL);
        (void) setsid();
        if (c->drop && (setgroups(c->n_groups, c->groups) < 0 || setgid(c->job->gid) < 0 || setuid(c->job->uid) < 0))
                _exit(126);
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC), log = child_log(c);
        if (in < 0 || log < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 ||
            (c->job->cwd && chdir(c->job->cwd) < 0))
                _exit(127);
        execve(c->exe, c->how->argv, c->how->envp);
        _exit(127);
}

static int start(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_start *how, char *err, size_t errlen) {
        struct gw_job *j = dj->job;
        char exe[4096];
        if (!how->argv || !how->argv[0] || resolve(how->argv[0], exe, sizeof exe) < 0) {
                snprintf(err, errlen, "backend test: %s: command not found",
                         how->argv && how->argv[0] ? how->argv[0] : "");
                return -ENOENT;
        }
        struct test_child c = { .exe = exe,
                                .how = how,
                                .job = j,
                                .drop = d->loop.euid == 0 && j->uid != 0,
                                .log_fd = -1 };
        for (int i = 0; how->account && i < how->account->n_groups && i < GW_USERDB_MAX_GROUPS; i++)
                c.groups[c.n_groups++] = (gid_t) how->account->groups[i];
        if (!c.n_groups)
                c.groups[c.n_groups++] = j->gid;
        _cleanup_close_ int log_fd = -1;
        if (!j->output) {
                log_fd = open(j->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
                if (log_fd < 0) {
                        int r = -errno;
                        snprintf(err, errlen, "backend test: cannot open the log %s: %s", j->log_path, strerror(-r));
                        return r;
                }
                c.log_fd = log_fd;
        }
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                snprintf(err, errlen, "backend test: fork: %s", strerror(-r));
                return r;
        }
        if (pid == 0)
                child(&c);
        if (!dj->exec) {
                dj->exec = gw_xcalloc(1, sizeof *dj->exec);
                dj->exec_free = job_free;
        }
        dj->exec->pid = pid;
        j->pid = pid;
        (void) gw_proc_start_time(pid, &j->pid_start);
        running_add(test_of(d), dj);
        log_info("job %lld: started by the test backend, pid %d", (long long) j->id, (int) pid);
        return 0;
}

static int signal_job(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags) {
        pid_t pid = dj->exec ? dj->exec->pid : 0;
        if (pid <= 0)
                return -ESRCH;
        /* Our child until reaped: its pid cannot have gone to another process. */
        if (kill((flags & GW_EXEC_SIGNAL_MAIN) ? pid : -pid, sig) < 0)
                return -errno;
        return 0;
}

static bool reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct exec_test *t = test_of(d);
        for (size_t i = 0; i < t->n_running; i++) {
                struct gw_djob *dj = t->running[i];
                if (dj->exec->pid != pid)
                        continue;
                dj->exec->pid = 0;
                running_forget(t, dj);
                /* What the attempt's process group left behind goes with it, as the shim's
                 * supervisor would see to. */
                (void) kill(-pid, SIGKILL);
                d->exec->ended(d, dj, &(struct gw_exec_end){ .kind = GW_EXEC_EXITED, .status = status });
                return true;
        }
        return false;
}

static int adopt_begin(struct gw_daemon *d) { return 0; }

/* Not our child any more: its end could not be told.  What is left of it is stopped. */
static int adopt(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        if (j->pid > 0 && gw_proc_is(j->pid, j->pid_start))
                (void) kill(-j->pid, SIGKILL);
        d->exec->ended(d, dj, &(struct gw_exec_end){ .kind = GW_EXEC_LOST });
        return 0;
}

static void release(struct gw_daemon *d, struct gw_djob *dj, bool started) {
        if (dj->exec && dj->exec->pid == 0)
                running_forget(test_of(d), dj);
}

static const char *node_of(struct gw_daemon *d, int64_t id) { return "test"; }

static void nothing(struct gw_daemon *d) {}

static void no_fd(struct gw_daemon *d, struct gw_source *src) {}

static gw_usec_t no_tick(struct gw_daemon *d) { return GW_USEC_INFINITY; }

static void no_prepare(struct gw_daemon *d, struct gw_djob *dj) {}

static void no_end_facts(struct gw_daemon *d, const struct gw_djob *dj, struct gw_failure_input *in) {}

/* Running attempts are left running, as every backend leaves them (the next daemon stops them). */
static void close_test(struct gw_daemon *d) {
        struct exec_test *t = test_of(d);
        free(t->running);
        free(t);
        d->exec = NULL;
}

int gw_exec_test_open(struct gw_daemon *d) {
        struct exec_test *t = gw_xcalloc(1, sizeof *t);
        t->ops = (struct gw_executor){
                .name = "test",
                .state = t,
                .placement = GW_EXEC_PLACE_HERE,
                .preempts = true,
                .book = NULL, /* the calendar */
                .node_of = node_of,
                .prepare = no_prepare,
                .start = start,
                .signal = signal_job,
                .adopt_begin = adopt_begin,
                .adopt = adopt,
                .adopt_end = nothing,
                .ready = no_fd,
                .reaped = reaped,
                .tick = no_tick,
                .release = release,
                .sync = nothing,
                .end_facts = no_end_facts,
                .close = close_test,
        };
        d->exec = &t->ops;
        log_info("backend test: jobs run as children of gpuwardd, on this host's GPUs");
        return 0;
}
