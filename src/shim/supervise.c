/* The supervision of one job attempt (see shim.h): become a child subreaper, fork the job
 * into a new session as the submitting user, report its pid on fd 3, wait for it, kill what
 * it left behind, then tell how and when it ended: on fd 3 to the daemon, and appended to
 * the exits journal for a daemon that is not there to read it.  A log under the
 * state dir with a cap or a reserve (--log-max, --log-reserve) gets the job's output through
 * a pipe, copied by the supervisor while it waits (logcap.h); otherwise the job writes the
 * file itself.  An interactive job (--tty SOCKET) gets a terminal instead, relayed to its
 * user's client (tty.h), and its log is the session. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/types.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/cgfork.h"
#include "shim/logcap.h"
#include "shim/shim.h"
#include "shim/tty.h"

#define MAX_GROUPS 1024

struct shim_opts {
        long long job_id;
        int attempt;
        const char *exits, *log, *cwd, *cgroup;
        const char *tty; /* the session's socket (interactive); NULL: none */
        struct shim_tty *term; /* its terminal, made before the job starts */
        const char *term_failed; /* why the terminal could not be made, or NULL */
        int term_errno;
        bool log_private, drop;
        uint64_t log_max, log_reserve; /* bytes; 0: none */
        uid_t uid;
        gid_t gid;
        gid_t groups[MAX_GROUPS];
        int ngroups;
        char **argv;
};

static int parse_groups(const char *v, struct shim_opts *o) {
        for (const char *p = v; *p && o->ngroups < MAX_GROUPS;) {
                char *end;
                unsigned long g = strtoul(p, &end, 10);
                if (end == p)
                        return -EINVAL;
                o->groups[o->ngroups++] = (gid_t) g;
                p = *end == ',' ? end + 1 : end;
        }
        return 0;
}

static int parse(int argc, char **argv, struct shim_opts *o) {
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (!strcmp(a, "--")) {
                        o->argv = argv + i + 1;
                        return o->argv[0] && o->exits && o->log && o->cwd ? 0 : -EINVAL;
                }
                if (!strcmp(a, "--log-private")) {
                        o->log_private = true;
                        continue;
                }
                if (!v)
                        return -EINVAL;
                i++;
                if (!strcmp(a, "--job"))
                        o->job_id = strtoll(v, NULL, 10);
                else if (!strcmp(a, "--attempt"))
                        o->attempt = (int) strtol(v, NULL, 10);
                else if (!strcmp(a, "--exits"))
                        o->exits = v;
                else if (!strcmp(a, "--log"))
                        o->log = v;
                else if (!strcmp(a, "--log-max"))
                        o->log_max = strtoull(v, NULL, 10);
                else if (!strcmp(a, "--log-reserve"))
                        o->log_reserve = strtoull(v, NULL, 10);
                else if (!strcmp(a, "--cwd"))
                        o->cwd = v;
                else if (!strcmp(a, "--cgroup"))
                        o->cgroup = v;
                else if (!strcmp(a, "--tty"))
                        o->tty = v;
                else if (!strcmp(a, "--user")) {
                        unsigned long u, g;
                        if (sscanf(v, "%lu:%lu", &u, &g) != 2)
                                return -EINVAL;
                        o->drop = true;
                        o->uid = (uid_t) u;
                        o->gid = (gid_t) g;
                } else if (!strcmp(a, "--groups")) {
                        if (parse_groups(v, o) < 0)
                                return -EINVAL;
                } else
                        return -EINVAL;
        }
        return -EINVAL;
}

/* Runs in the vfork()ed child, which shares the supervisor's memory: no stdio, no malloc. */
static _Noreturn void fail(const char *what, const char *arg, int err, int code) {
        char msg[4600];
        int n = snprintf(msg, sizeof msg, "gpuward: %s%s%s%s: %s\n", what, arg ? " '" : "", arg ? arg : "",
                         arg ? "'" : "", strerror(err));
        size_t len = n <= 0 ? 0 : (size_t) n < sizeof msg ? (size_t) n : sizeof msg - 1;
        (void) !write(STDERR_FILENO, msg, len);
        /* The daemon too, on the report pipe (still open here), ahead of the pid: with a
         * user-chosen output file that could not be opened, stderr is /dev/null. */
        if (len > 0 && len <= SHIM_REPORT_LINE_MAX)
                (void) !write(SHIM_REPORT_FD, msg, len);
        _exit(code);
}

static void drop_privileges(const struct shim_opts *o) {
        gid_t only = o->gid;
        if (setgroups(o->ngroups ? (size_t) o->ngroups : 1, o->ngroups ? o->groups : &only) < 0)
                fail("setgroups", NULL, errno, 126);
        if (setgid(o->gid) < 0)
                fail("setgid", NULL, errno, 126);
        if (setuid(o->uid) < 0)
                fail("setuid", NULL, errno, 126);
}

/* The signals not at their default in this supervisor, found once by its first job: only
 * those need resetting in each job's child.  The supervisor changes none after that but
 * SIGPIPE (ignored, and always in the set); it installs no handler. */
static sigset_t not_default;
static bool not_default_known;

static void signals_not_default_find(void) {
        if (not_default_known)
                return;
        sigemptyset(&not_default);
        for (int sig = 1; sig < NSIG; sig++) {
                struct sigaction old;
                if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_DFL)
                        (void) sigaddset(&not_default, sig);
        }
        (void) sigaddset(&not_default, SIGPIPE);
        not_default_known = true;
}

/* Every signal at its default and none blocked, whatever the daemon inherited: a daemon
 * started in a shell's background has SIGINT and SIGQUIT ignored, and an ignored signal
 * stays ignored across exec (Ctrl-C would do nothing in a session, a shell could not trap
 * INT, and --signal INT would reach nothing).  Only the ones found not at their default are
 * reset: a sigaction for each of the 64 took 25-35 us of every start, in the vfork child,
 * with the supervisor waiting. */
static void signals_default(void) {
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        for (int sig = 1; sig < NSIG; sig++)
                if (sigismember(&not_default, sig) == 1)
                        (void) sigaction(sig, &dfl, NULL);
        /* glibc's posix_spawn (how the daemon starts the shim) leaves its two internal
         * signals (32, 33: below SIGRTMIN) ignored, and sigaction() refuses them: the kernel's
         * call, with an all-zero action, which is SIG_DFL, no flags, an empty mask on every
         * architecture's layout. */
        uint64_t zero[8] = { 0 };
        for (int sig = 32; sig < SIGRTMIN; sig++)
                (void) syscall(SYS_rt_sigaction, sig, zero, NULL, sizeof(uint64_t));
        sigset_t none;
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
}

static _Noreturn void run_job(const struct shim_opts *o, int log_fd, int null_fd, bool in_cgroup) {
        signals_default();
        (void) setsid();
        if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)
                _exit(126);
        if (o->term_failed)
                fail(o->term_failed, o->tty, o->term_errno, 126);
        int r = o->term ? shim_tty_attach(o->term) : 0;
        if (r < 0)
                fail("cannot attach the session's terminal", NULL, -r, 126);
        if (o->cgroup && !in_cgroup) {
                char path[4200];
                snprintf(path, sizeof path, "%s/cgroup.procs", o->cgroup);
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1)
                        fail("cannot join cgroup", o->cgroup, errno, 126);
                (void) close(fd);
        }
        if (o->drop)
                drop_privileges(o);
        /* As the user now: the names held at the supervisor's start are the job's again (the
         * entry's own bytes, no allocation in this vfork child). */
        for (char **e = environ; *e; e++)
                if (!strncmp(*e, SHIM_HELD_PREFIX, strlen(SHIM_HELD_PREFIX)))
                        *e += strlen(SHIM_HELD_PREFIX);
        if (!o->log_private && !o->term) {
                /* A user-chosen output file is opened as the user, never as root. */
                int fd = open(o->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd < 0)
                        fail("cannot open output file", o->log, errno, 126);
                if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(126);
        }
        if (chdir(o->cwd) < 0)
                fail("cannot enter working directory", o->cwd, errno, 126);
        (void) close_range(3, ~0U, 0);
        execvp(o->argv[0], o->argv);
        fail("cannot execute", o->argv[0], errno, errno == ENOENT ? 127 : 126);
}

struct job_child {
        const struct shim_opts *o;
        int log_fd, null_fd;
};

static void job_child(void *p) {
        const struct job_child *c = p;
        run_job(c->o, c->log_fd, c->null_fd, true);
}

/* Where the kernel has refused to start a child in a cgroup (v1, an old kernel, another
 * architecture), every later job joins its cgroup by a write instead. */
static bool into_cgroup_refused;

/* The job's child, born in its cgroup where the kernel can (cgfork.h), else vfork()ed to join
 * it itself.  vfork: the child only sets itself up and execs, and copying the supervisor's
 * address space for that costs more than the rest of a start on some virtual machines. */
static pid_t job_start(const struct shim_opts *o, int log_fd, int null_fd) {
        int cg = o->cgroup && !into_cgroup_refused ? open(o->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (cg >= 0) {
                size_t argc = 0;
                while (o->argv[argc])
                        argc++;
                struct job_child c = { o, log_fd, null_fd };
                pid_t pid = shim_fork_into_cgroup(cg, argc, job_child, &c);
                (void) close(cg);
                if (pid >= 0)
                        return pid;
                /* Refused for good (no such call, not a cgroup v2 directory, a kernel that will
                 * not); else for this job only.  The write below says why, if the cgroup cannot
                 * be joined at all (a directory that could not be opened, too). */
                if (pid == -ENOSYS || pid == -EINVAL || pid == -EBADF || pid == -E2BIG || pid == -EOPNOTSUPP)
                        into_cgroup_refused = true;
        }
        pid_t job = vfork();
        if (job == 0)
                run_job(o, log_fd, null_fd, false);
        return job;
}

/* Kills what the job left behind: with the shim a subreaper, every orphan is its child. */
static void kill_leftovers(void) {
        /* No child left at all (most jobs): nothing to look for in /proc. */
        siginfo_t si;
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
                return;
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int) getpid(), (int) getpid());
        for (int round = 0; round < 1000; round++) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (fd >= 0)
                        (void) close(fd);
                if (n <= 0)
                        return;
                buf[n] = '\0';
                for (char *s = buf, *end; *s; s = end) {
                        long pid = strtol(s, &end, 10);
                        if (end == s)
                                break;
                        if (pid > 0)
                                (void) kill((pid_t) pid, SIGKILL);
                }
                struct timespec ts = { 0, 1000 * 1000 };
                (void) nanosleep(&ts, NULL);
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }
}

static long long clock_us(clockid_t id) {
        struct timespec ts;
        if (clock_gettime(id, &ts) < 0)
                return 0;
        return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static struct shim_end end_now(int status) {
        return (struct shim_end){ status, clock_us(CLOCK_REALTIME), clock_us(CLOCK_MONOTONIC) };
}

static int cmp_int(const void *a, const void *b) { return *(const int *) a - *(const int *) b; }

/* Closes every fd from lo up but the n in keep (-1: none; sorted here). */
static void close_from_but(int lo, int *keep, size_t n) {
        qsort(keep, n, sizeof *keep, cmp_int);
        for (size_t i = 0; i < n; i++) {
                if (keep[i] < lo)
                        continue;
                if (keep[i] > lo)
                        (void) close_range((unsigned) lo, (unsigned) keep[i] - 1, 0);
                lo = keep[i] + 1;
        }
        (void) close_range((unsigned) lo, ~0U, 0);
}

int64_t shim_mono_ms(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool shim_reap_some(pid_t job, struct shim_end *end) {
        bool seen = false;
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0)
                if (w == job) {
                        *end = end_now(st);
                        seen = true;
                        kill_leftovers();
                }
        return seen;
}

/* Copies the job's output from the pipe out into the log while waiting for it.  Returns when
 * the output has ended (all its writers gone) and, once the job has exited, at the latest
 * OUTPUT_GRACE_MS later; true when the job's exit was reaped here (its end in *end). */
static bool pump(int out, struct logcap *cap, pid_t job, struct shim_end *end) {
        int sfd = shim_chld_fd();
        static char buf[64 << 10];
        bool exited = false;
        int64_t until = 0;
        for (;;) {
                /* A SIGCHLD from before the signalfd is not in it: look each time. */
                if (!exited && shim_reap_some(job, end)) {
                        exited = true;
                        until = shim_mono_ms() + OUTPUT_GRACE_MS;
                }
                int64_t left = exited ? until - shim_mono_ms() : -1;
                if (exited && left <= 0)
                        break;
                struct pollfd p[2] = { { out, POLLIN, 0 }, { sfd, POLLIN, 0 } };
                /* Without a signalfd, exits are looked for every 100 ms. */
                int wait = sfd < 0 && (left < 0 || left > 100) ? 100 : (int) left;
                int r = poll(p, sfd >= 0 ? 2 : 1, wait);
                if (r < 0 && errno != EINTR)
                        break;
                if (r > 0 && sfd >= 0 && p[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si)
                                ;
                }
                if (r > 0 && p[0].revents) {
                        ssize_t n = read(out, buf, sizeof buf);
                        if (n > 0)
                                logcap_write(cap, buf, (size_t) n);
                        else if (n == 0 || errno != EINTR)
                                break;
                }
        }
        logcap_done(cap);
        return exited;
}

/* The exits journal, opened by the supervisor's first job and kept for the next ones (they
 * name the same one: a daemon's). */
static int exits_fd = -1;
static char *exits_opened;

static int exits_open(const char *path) {
        if (exits_fd >= 0 && !strcmp(exits_opened, path))
                return exits_fd;
        if (exits_fd >= 0)
                (void) close(exits_fd);
        free(exits_opened);
        exits_opened = strdup(path);
        exits_fd = exits_opened ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
        return exits_fd;
}

/* 0, or -1 when the journal did not take the line (a full disk, a read-only state dir).  The
 * job's pid ends the line when it is still untold (> 0). */
static int record_exit(const struct shim_opts *o, const struct shim_end *e, pid_t untold) {
        char line[160];
        /* The leading newline ends whatever a torn write (a full disk, a crash) left unfinished
         * before it: glued onto that, this exit would be unreadable. */
        int n = snprintf(line, sizeof line, "\n%lld %d %d %lld %lld", o->job_id, o->attempt, e->status, e->wall_us,
                         e->mono_us);
        n += snprintf(line + n, sizeof line - (size_t) n, untold > 0 ? " %d\n" : "\n", (int) untold);
        /* One short write with O_APPEND: atomic among concurrent shims, and at the end of a
         * journal the daemon has emptied (it truncates it, never replaces it). */
        int fd = exits_open(o->exits);
        int r = fd >= 0 && write(fd, line, (size_t) n) == n ? 0 : -1;
        if (r < 0)
                fprintf(stderr, "gpuward-shim: cannot record the exit of job %lld: %s\n", o->job_id, strerror(errno));
        return r;
}

/* The end to the daemon on the report pipe (shim.h), after the job's pid when that is still
 * untold (> 0): 0 when the pipe took the whole line (one write under PIPE_BUF: the daemon
 * reads it whole); -1 when the daemon is gone. */
static int report_end(const struct shim_end *e, pid_t untold) {
        char line[128];
        int n = untold > 0 ? snprintf(line, sizeof line, "%d\n", (int) untold) : 0;
        n += snprintf(line + n, sizeof line - (size_t) n, SHIM_END_PREFIX "%d %lld %lld\n", e->status, e->wall_us,
                      e->mono_us);
        return write(SHIM_REPORT_FD, line, (size_t) n) == n ? 0 : -1;
}

/* In the journal, which the daemon reads once the pipe closes; on the pipe only when the
 * journal did not take it.  A line on the pipe would wake the daemon once more, just before
 * the close does.  0 when either took it. */
static int tell_end(const struct shim_opts *o, const struct shim_end *e, pid_t untold) {
        if (record_exit(o, e, untold) == 0)
                return 0;
        return report_end(e, untold);
}

static bool pid_may_wait;

void shim_pid_may_wait(bool may) { pid_may_wait = may; }

static void tell_pid(pid_t job) {
        char msg[32];
        int n = snprintf(msg, sizeof msg, "%d\n", (int) job);
        /* Unchecked: if the daemon is gone, the next one finds the job as our child. */
        (void) !write(SHIM_REPORT_FD, msg, (size_t) n);
}

/* Whether the job ends within SHIM_PID_TELL_MS (shim.h), told by the SIGCHLD signalfd; it is
 * not reaped here.  A SIGCHLD of another child, or one left from an earlier job, is spent. */
static bool job_ends_soon(pid_t job) {
        int sfd = shim_chld_fd();
        if (sfd < 0)
                return false;
        int64_t until = shim_mono_ms() + SHIM_PID_TELL_MS;
        for (int64_t left = SHIM_PID_TELL_MS; left > 0; left = until - shim_mono_ms()) {
                struct pollfd p = { sfd, POLLIN, 0 };
                int r = poll(&p, 1, (int) left);
                if (r < 0 && errno != EINTR)
                        return false;
                if (r <= 0)
                        continue;
                /* Spent before the look: an exit after it raises the signal again. */
                struct signalfd_siginfo si;
                (void) !read(sfd, &si, sizeof si);
                siginfo_t w = { .si_pid = 0 };
                if (waitid(P_PID, (id_t) job, &w, WEXITED | WNOHANG | WNOWAIT) == 0 && w.si_pid == job)
                        return true;
        }
        return false;
}

/* /dev/null, the job's stdin, and the SIGCHLD signalfd: made by the supervisor's first job,
 * and kept. */
static int null_fd = -1, chld_fd = -1;

int shim_chld_fd(void) { return chld_fd; }

/* What a supervisor sets up once for all its jobs. */
static void supervisor_set_up(void) {
        static bool done;
        if (!done) {
                (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
                /* The daemon may die before reading our report: a write to its pipe must not kill us. */
                (void) signal(SIGPIPE, SIG_IGN);
                signals_not_default_find(); /* before the vfork: the child only reads the set */
                sigset_t chld;
                sigemptyset(&chld);
                sigaddset(&chld, SIGCHLD);
                (void) sigprocmask(SIG_BLOCK, &chld, NULL); /* the job's child unblocks it */
                chld_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
                done = true;
        }
        if (null_fd < 0)
                null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
}

int shim_supervise(int argc, char **argv) {
        struct shim_opts o = { .attempt = 1 };
        if (parse(argc, argv, &o) < 0) {
                fprintf(stderr, "gpuward-shim: started by gpuwardd only (bad arguments)\n");
                return 2;
        }
        supervisor_set_up();
        int log_fd = null_fd, pipe_fd[2] = { -1, -1 };
        struct logcap cap;
        if (o.log_private) {
                /* Read and write: a capped log has its middle cut (logcap.c). */
                log_fd = open(o.log, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
                if (log_fd >= 0 && o.drop)
                        (void) fchown(log_fd, o.uid, o.gid);
                if (log_fd < 0)
                        log_fd = null_fd;
                /* Capped: the job writes to a pipe and we to the file (without a pipe, straight). */
                else if (!o.tty && (o.log_max || o.log_reserve) && pipe2(pipe_fd, O_CLOEXEC) == 0)
                        logcap_init(&cap, log_fd, o.log_max, o.log_reserve);
        }
        struct shim_tty term;
        if (o.tty) {
                int r = shim_tty_open(&term, o.tty, o.drop ? o.uid : geteuid(), o.drop ? o.gid : getegid(), o.drop,
                                      &o.term_failed);
                if (r < 0)
                        o.term_errno = -r; /* told by the job's child, as a start that failed */
                else
                        o.term = &term;
                /* The session's transcript, capped as any log under the state dir. */
                logcap_init(&cap, log_fd, o.log_max, o.log_reserve);
        }
        pid_t job = job_start(&o, pipe_fd[1] >= 0 ? pipe_fd[1] : log_fd, null_fd);
        if (pipe_fd[1] >= 0)
                (void) close(pipe_fd[1]);
        if (o.term) {
                (void) close(term.slave); /* the job's now: its last close is the output's end */
                term.slave = -1;
        }
        /* Keeps the channel to the launcher (fd 4), if any: the next job may come on it. */
        int keep[7] = { pipe_fd[0], pipe_fd[0] >= 0 || o.term ? log_fd : -1, null_fd, chld_fd, exits_fd, -1, -1 };
        if (o.term)
                shim_tty_fds(o.term, keep + 5);
        close_from_but(SHIM_CHANNEL_FD + 1, keep, 7);
        /* A session's pid at once: its client waits on the terminal, not on us; and the pid of
         * a job the launcher's answer may not bring (shim_pid_may_wait). */
        pid_t untold = 0;
        if (job < 0 || o.term || !pid_may_wait || !job_ends_soon(job))
                tell_pid(job);
        else
                untold = job;
        if (job < 0) {
                if (o.term)
                        shim_tty_close(o.term);
                if (pipe_fd[0] >= 0) {
                        (void) close(pipe_fd[0]);
                        (void) close(log_fd);
                }
                struct shim_end e = end_now(127 << 8);
                (void) tell_end(&o, &e, 0);
                return 1;
        }
        struct shim_end e = end_now(0);
        int st;
        bool exited = false;
        if (pipe_fd[0] >= 0) {
                exited = pump(pipe_fd[0], &cap, job, &e);
                (void) close(pipe_fd[0]);
                (void) close(log_fd);
        } else if (o.term) {
                exited = shim_tty_pump(o.term, &cap, job, &e);
                if (log_fd != null_fd)
                        (void) close(log_fd); /* kept across the clean-up for the transcript */
        }
        pid_t w;
        while ((w = waitpid(-1, &st, 0)) != -1 || errno == EINTR)
                if (w == job && !exited) {
                        /* Its end is now, not once its leftovers are gone (up to a second). */
                        e = end_now(st);
                        kill_leftovers();
                }
        /* Told nowhere: the caller closes the channel first, then the exit closes the pipe. */
        int told = tell_end(&o, &e, untold);
        /* After the end is told: a client that sees its session close finds the job ended. */
        if (o.term)
                shim_tty_close(o.term);
        if (told < 0)
                return 1;
        /* The end is told: closing the pipe tells the daemon now, not after our own exit,
         * which tears down an address space first (milliseconds on some virtual machines). */
        (void) close(SHIM_REPORT_FD);
        return 0;
}
