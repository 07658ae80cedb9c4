#include "daemon/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"

#define MAX_GROUPS 1024

/* Everything the children need, computed before fork. */
struct prepared {
        gid_t groups[MAX_GROUPS];
        int ngroups;
        char cgroup_procs[640];
        char exit_tmp[4096];
        const char *path_env; /* PATH from the job's environment */
};

static void write_all(int fd, const char *s, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, s, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return;
                s += w;
                n -= (size_t) w;
        }
}

static void write_str(int fd, const char *s) { write_all(fd, s, strlen(s)); }

/* Async-signal-safe decimal formatting. */
static char *fmt_int(long v, char *end) {
        bool neg = v < 0;
        unsigned long u = neg ? (unsigned long) -v : (unsigned long) v;
        *--end = '\0';
        do
                *--end = (char) ('0' + u % 10);
        while ((u /= 10));
        if (neg)
                *--end = '-';
        return end;
}

static _Noreturn void child_fail(const char *what, const char *arg, int err, int code) {
        write_str(STDERR_FILENO, "gpuward: ");
        write_str(STDERR_FILENO, what);
        if (arg) {
                write_str(STDERR_FILENO, " '");
                write_str(STDERR_FILENO, arg);
                write_str(STDERR_FILENO, "'");
        }
        write_str(STDERR_FILENO, ": ");
        write_str(STDERR_FILENO, strerror(err)); /* glibc's is safe enough after fork: static table */
        write_str(STDERR_FILENO, "\n");
        _exit(code);
}

/* execve with a PATH search over the job's own PATH, not the daemon's. */
static void exec_search(const struct gw_launch *l, const struct prepared *p) {
        const char *file = l->argv[0];
        if (strchr(file, '/')) {
                execve(file, l->argv, l->envp);
                return;
        }
        const char *path = p->path_env ? p->path_env : "/usr/local/bin:/usr/bin:/bin";
        int saved = ENOENT;
        for (const char *s = path;; s++) {
                const char *e = strchr(s, ':');
                size_t dl = e ? (size_t) (e - s) : strlen(s), fl = strlen(file);
                char buf[4096];
                if (dl + fl + 2 <= sizeof buf) {
                        memcpy(buf, dl ? s : ".", dl ? dl : 1);
                        size_t o = dl ? dl : 1;
                        buf[o] = '/';
                        memcpy(buf + o + 1, file, fl + 1);
                        execve(buf, l->argv, l->envp);
                        if (errno != ENOENT && errno != ENOTDIR)
                                saved = errno;
                }
                if (!e)
                        break;
                s = e;
        }
        errno = saved;
}

static _Noreturn void run_job(const struct gw_launch *l, const struct prepared *p, int log_fd, int null_fd) {
        (void) setsid();
        if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)
                _exit(126);
        if (p->cgroup_procs[0]) {
                int fd = open(p->cgroup_procs, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1)
                        child_fail("cannot join cgroup", p->cgroup_procs, errno, 126);
                (void) close(fd);
        }
        if (l->drop_privileges) {
                if (setgroups((size_t) p->ngroups, p->groups) < 0)
                        child_fail("setgroups", NULL, errno, 126);
                if (setgid(l->gid) < 0)
                        child_fail("setgid", NULL, errno, 126);
                if (setuid(l->uid) < 0)
                        child_fail("setuid", NULL, errno, 126);
        }
        if (!l->log_is_private) {
                int fd = open(l->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd < 0)
                        child_fail("cannot open output file", l->log_path, errno, 126);
                if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(126);
        }
        if (chdir(l->cwd) < 0)
                child_fail("cannot enter working directory", l->cwd, errno, 126);
        (void) close_range(3, ~0U, 0);
        exec_search(l, p);
        child_fail("cannot execute", l->argv[0], errno, errno == ENOENT ? 127 : 126);
}

/* Kills what the job left behind: with the shim a subreaper, every orphan is its child. */
static void reap_leftovers(pid_t self) {
        char num[24], file[96], buf[4096];
        const char *n = fmt_int(self, num + sizeof num);
        const char *parts[] = { "/proc/", n, "/task/", n, "/children" };
        size_t o = 0;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                size_t len = strlen(parts[i]);
                memcpy(file + o, parts[i], len);
                o += len;
        }
        file[o] = '\0';
        for (int round = 0; round < 1000; round++) {
                int fd = open(file, O_RDONLY | O_CLOEXEC);
                ssize_t got = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (fd >= 0)
                        (void) close(fd);
                if (got <= 0)
                        return;
                buf[got] = '\0';
                for (char *s = buf; *s;) {
                        long v = 0;
                        if (*s < '0' || *s > '9') {
                                s++;
                                continue;
                        }
                        while (*s >= '0' && *s <= '9')
                                v = v * 10 + (*s++ - '0');
                        if (v > 0)
                                (void) kill((pid_t) v, SIGKILL);
                }
                struct timespec ts = { 0, 1000 * 1000 };
                (void) nanosleep(&ts, NULL);
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }
}

static _Noreturn void run_shim(const struct gw_launch *l, const struct prepared *p, int report_fd) {
        (void) setsid();
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        int log_fd = -1;
        if (l->log_is_private) {
                log_fd = open(l->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
                if (log_fd >= 0 && l->drop_privileges)
                        (void) fchown(log_fd, l->uid, l->gid);
        }
        if (log_fd < 0)
                log_fd = null_fd;
        pid_t job = fork();
        if (job == 0)
                run_job(l, p, log_fd, null_fd);
        write_all(report_fd, (const char *) &job, sizeof job);
        /* From here on the shim holds nothing of the daemon's: no sockets, no database. */
        (void) dup2(null_fd, STDIN_FILENO);
        (void) dup2(null_fd, STDOUT_FILENO);
        (void) dup2(null_fd, STDERR_FILENO);
        (void) close_range(3, ~0U, 0);
        if (job < 0)
                _exit(1);
        int status = 0, st;
        pid_t w;
        while ((w = waitpid(-1, &st, 0)) != -1 || errno == EINTR) {
                if (w == job) {
                        status = st;
                        reap_leftovers(getpid());
                }
        }
        int fd = open(p->exit_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
                char num[32];
                write_str(fd, fmt_int(status, num + sizeof num));
                write_str(fd, "\n");
                (void) close(fd);
                (void) rename(p->exit_tmp, l->exit_path);
        }
        _exit(0);
}

static int prepare(const struct gw_launch *l, struct prepared *p, char *err, size_t errlen) {
        memset(p, 0, sizeof *p);
        if (l->drop_privileges) {
                struct passwd pw, *pwp = NULL;
                char buf[16384];
                p->ngroups = MAX_GROUPS;
                if (getpwuid_r(l->uid, &pw, buf, sizeof buf, &pwp) != 0 || !pwp ||
                    getgrouplist(pw.pw_name, l->gid, p->groups, &p->ngroups) < 0) {
                        p->groups[0] = l->gid;
                        p->ngroups = 1;
                }
        }
        if (l->cgroup_dir)
                snprintf(p->cgroup_procs, sizeof p->cgroup_procs, "%s/cgroup.procs", l->cgroup_dir);
        if ((size_t) snprintf(p->exit_tmp, sizeof p->exit_tmp, "%s.tmp", l->exit_path) >= sizeof p->exit_tmp) {
                snprintf(err, errlen, "exit file path too long");
                return -ENAMETOOLONG;
        }
        for (char *const *e = l->envp; *e; e++)
                if (!strncmp(*e, "PATH=", 5))
                        p->path_env = *e + 5;
        return 0;
}

int gw_launch_start(const struct gw_launch *l, pid_t *ret_shim, pid_t *ret_job, char *err, size_t errlen) {
        struct prepared *p = gw_xmalloc(sizeof *p);
        int r = prepare(l, p, err, errlen);
        if (r < 0) {
                free(p);
                return r;
        }
        (void) unlink(l->exit_path);
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0) {
                r = -errno;
                snprintf(err, errlen, "pipe: %s", strerror(errno));
                free(p);
                return r;
        }
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t shim = fork();
        if (shim == 0) {
                /* The job gets default dispositions and an empty mask, not the daemon's. */
                for (int s = 1; s < NSIG; s++)
                        if (s != SIGKILL && s != SIGSTOP)
                                (void) signal(s, SIG_DFL);
                sigset_t none;
                sigemptyset(&none);
                pthread_sigmask(SIG_SETMASK, &none, NULL);
                (void) close(pfd[0]);
                run_shim(l, p, pfd[1]);
        }
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        (void) close(pfd[1]);
        free(p);
        if (shim < 0) {
                (void) close(pfd[0]);
                snprintf(err, errlen, "fork: %s", strerror(e));
                return -e;
        }
        pid_t job = -1;
        ssize_t n;
        do
                n = read(pfd[0], &job, sizeof job);
        while (n < 0 && errno == EINTR);
        (void) close(pfd[0]);
        if (n != sizeof job || job <= 0) {
                snprintf(err, errlen, "the job could not be forked");
                *ret_shim = shim;
                *ret_job = 0;
                return -ECHILD;
        }
        *ret_shim = shim;
        *ret_job = job;
        return 0;
}

int gw_launch_read_exit(const char *exit_path, int *ret_status) {
        _cleanup_fclose_ FILE *f = fopen(exit_path, "re");
        if (!f)
                return -errno;
        int st;
        if (fscanf(f, "%d", &st) != 1)
                return -EIO;
        *ret_status = st;
        return 0;
}
