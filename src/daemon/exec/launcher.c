#include "daemon/exec/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "daemon/exec/launch_server.h"
#include "daemon/exec/proc.h"
#include "daemon/exec/warm.h"
#include "shim/shim.h"

struct shim_args {
        char job[32], attempt[32], user[64], groups[8192], log_max[32], log_reserve[32];
};

/* Where gpuward-shim is: beside the daemon binary (build tree, bin/), or ../lib/gpuward.
 * Looked up once: the binary does not move while the daemon runs. */
const char *gw_launch_shim_path(void) {
        static char path[4200];
        if (path[0])
                return path;
        char exe[4096];
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (l <= 0)
                return NULL;
        exe[l] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash)
                return NULL;
        *slash = '\0';
        const char *rel[] = { "gpuward-shim", "../lib/gpuward/gpuward-shim", "../libexec/gpuward-shim" };
        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                snprintf(path, sizeof path, "%s/%s", exe, rel[i]);
                if (access(path, X_OK) == 0)
                        return path;
        }
        path[0] = '\0';
        return NULL;
}

/* "G1,G2,..." of the user's groups, looked up by the daemon so the shim needs no NSS. */
static void user_groups(const struct gw_launch *l, char *buf, size_t n) {
        size_t used = 0;
        if (l->n_groups <= 0)
                snprintf(buf, n, "%u", (unsigned) l->gid);
        for (int i = 0; i < l->n_groups && used + 12 < n; i++)
                used += (size_t) snprintf(buf + used, n - used, "%s%u", i ? "," : "", (unsigned) l->groups[i]);
}

/* The supervisor's argv (shim.h); its strings live in *a. */
static char **shim_argv(const struct gw_launch *l, const char *shim, struct shim_args *a) {
        snprintf(a->job, sizeof a->job, "%lld", (long long) l->job_id);
        snprintf(a->attempt, sizeof a->attempt, "%d", l->attempt);
        snprintf(a->user, sizeof a->user, "%u:%u", (unsigned) l->uid, (unsigned) l->gid);
        size_t n_args = 0;
        while (l->argv[n_args])
                n_args++;
        char **argv = gw_xcalloc(n_args + 32, sizeof(char *)); /* the options above, and NULL */
        size_t k = 0;
        argv[k++] = (char *) shim;
        const char *opts[][2] = { { "--job", a->job },
                                  { "--attempt", a->attempt },
                                  { "--exits", l->exits_path },
                                  { "--log", l->log_path },
                                  { "--cwd", l->cwd } };
        for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
                argv[k++] = (char *) opts[i][0];
                argv[k++] = (char *) opts[i][1];
        }
        if (l->log_is_private) {
                argv[k++] = (char *) "--log-private";
                snprintf(a->log_max, sizeof a->log_max, "%llu", (unsigned long long) l->log_max);
                snprintf(a->log_reserve, sizeof a->log_reserve, "%llu", (unsigned long long) l->log_reserve);
                argv[k++] = (char *) "--log-max";
                argv[k++] = a->log_max;
                argv[k++] = (char *) "--log-reserve";
                argv[k++] = a->log_reserve;
        }
        if (l->drop_privileges) {
                argv[k++] = (char *) "--user";
                argv[k++] = a->user;
                user_groups(l, a->groups, sizeof a->groups);
                argv[k++] = (char *) "--groups";
                argv[k++] = a->groups;
        }
        if (l->cgroup_dir) {
                argv[k++] = (char *) "--cgroup";
                argv[k++] = (char *) l->cgroup_dir;
        }
        if (l->tty_path) {
                argv[k++] = (char *) "--tty";
                argv[k++] = (char *) l->tty_path;
        }
        argv[k++] = (char *) "--";
        for (size_t i = 0; i < n_args; i++)
                argv[k++] = l->argv[i];
        argv[k] = NULL;
        return argv;
}

int gw_launch_spawn(const char *path, char *const *argv, char *const *envp, int fd3, pid_t *ret_pid) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        (void) posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDWR, 0);
        (void) posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_RDWR, 0);
        (void) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_RDWR, 0);
        (void) posix_spawn_file_actions_adddup2(&fa, fd3, 3);
        /* The job gets an empty signal mask and default dispositions, and its own session. */
        sigset_t none, defaults;
        sigemptyset(&none);
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGPIPE);
        (void) posix_spawnattr_setsigmask(&attr, &none);
        (void) posix_spawnattr_setsigdefault(&attr, &defaults);
        (void) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
        int r = posix_spawn(ret_pid, path, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return -r;
}

/* The launcher died between taking a request and answering it: whether it forked the
 * supervisor first shows on the report pipe, whose write ends are all closed now but the
 * supervisor's: its job's pid arrives (or arrived: job), or EOF says there is none (-ESRCH). */
static int launched_anyway(int report_fd, pid_t job, struct gw_launched *ret) {
        if (job <= 0) {
                struct pollfd p = { report_fd, POLLIN, 0 };
                if (report_fd < 0)
                        return -ESRCH;
                if (poll(&p, 1, 5000) <= 0)
                        return -ETIMEDOUT;
                int r = gw_launch_read_report(report_fd, &job, NULL, NULL, 0);
                if (r == -EPIPE)
                        return -ESRCH;
                if (r < 0)
                        return r;
        }
        pid_t shim = gw_proc_parent(job);
        int fd = shim > 0 ? (int) syscall(SYS_pidfd_open, shim, 0) : -1;
        if (fd < 0)
                return errno == ESRCH ? -ETIMEDOUT : -errno;
        *ret = (struct gw_launched){ .shim = shim, .pidfd = fd, .report_fd = -1, .job = job, .chan = -1 };
        return 0;
}

static int report_pipe(int pfd[2], char *err, size_t errlen) {
        if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) == 0)
                return 0;
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -errno;
}

/* envp with the names a root process must not read at its start held (shim.h); malloc'ed,
 * its held entries too (listed in *ret_held, NULL-terminated, for freeing). */
static char **held_environment(char *const *envp, char ***ret_held) {
        size_t n = 0, h = 0;
        while (envp[n])
                n++;
        char **out = gw_xcalloc(n + 1, sizeof *out), **held = gw_xcalloc(n + 1, sizeof *held);
        for (size_t i = 0; i < n; i++) {
                if (!shim_env_held_at_start(envp[i])) {
                        out[i] = envp[i];
                        continue;
                }
                size_t len = strlen(SHIM_HELD_PREFIX) + strlen(envp[i]) + 1;
                out[i] = held[h++] = gw_xmalloc(len);
                snprintf(out[i], len, "%s%s", SHIM_HELD_PREFIX, envp[i]);
        }
        *ret_held = held;
        return out;
}

/* Spawns the supervisor: the daemon's child, reaped on SIGCHLD. */
static int spawn_supervisor(const char *shim, char *const *argv, char *const *envp, struct gw_launched *ret, char *err,
                            size_t errlen) {
        int pfd[2];
        int r = report_pipe(pfd, err, errlen);
        if (r < 0)
                return r;
        *ret = (struct gw_launched){ .pidfd = -1, .report_fd = pfd[0], .chan = -1 };
        char **held;
        _cleanup_free_ char **env = held_environment(envp, &held);
        r = gw_launch_spawn(shim, argv, env, pfd[1], &ret->shim);
        for (size_t i = 0; held[i]; i++)
                free(held[i]);
        free(held);
        (void) close(pfd[1]);
        if (r < 0) {
                (void) close(pfd[0]);
                snprintf(err, errlen, "cannot start %s: %s", shim, strerror(-r));
        }
        return r;
}

/* Sends the start to an idle supervisor: 0 with *ret, or -1 when none took it. */
static int start_in_idle(struct gw_warm *warm, const char *request, size_t len, struct gw_launched *ret, char *err,
                         size_t errlen) {
        int pfd[2];
        if (!warm || !warm->n || report_pipe(pfd, err, errlen) < 0)
                return -1;
        struct gw_warm_one one;
        bool sent = gw_warm_send(warm, request, len, pfd[1], &one);
        (void) close(pfd[1]);
        if (!sent) {
                (void) close(pfd[0]);
                return -1;
        }
        *ret = (struct gw_launched){ .shim = one.pid,
                                     .pidfd = -1,
                                     .report_fd = pfd[0],
                                     .chan = one.chan,
                                     .shim_start = one.start };
        return 0;
}

/* Asks the launcher to fork a supervisor: 0 with *ret pending its answer; it keeps the
 * request (to start it itself should the launcher die) unless it refused it. */
static int start_by_launcher(struct gw_launch_server *srv, char **request, size_t len, const struct gw_launch *l,
                             struct gw_launched *ret, char *err, size_t errlen) {
        int pfd[2];
        if (!srv || report_pipe(pfd, err, errlen) < 0)
                return -1;
        int r = gw_launch_server_send(srv, *request, len, pfd[1], l->job_id, l->attempt);
        (void) close(pfd[1]);
        if (r < 0) {
                (void) close(pfd[0]);
                return -1;
        }
        *request = NULL;
        *ret = (struct gw_launched){ .pidfd = -1, .report_fd = pfd[0], .pending = true, .chan = -1 };
        return 0;
}

int gw_launch_start(const struct gw_launch *l, struct gw_warm *warm, struct gw_launch_server *srv,
                    struct gw_launched *ret, char *err, size_t errlen) {
        const char *shim = gw_launch_shim_path();
        if (!shim) {
                snprintf(err, errlen, "gpuward-shim not found beside gpuwardd");
                return -ENOENT;
        }
        struct shim_args a;
        _cleanup_free_ char **argv = shim_argv(l, shim, &a);
        size_t len;
        /* NULL when too large for one datagram: such a start is spawned with its environment. */
        _cleanup_free_ char *request = gw_launch_request_encode(argv, l->envp, &len);
        if (request && (start_in_idle(warm, request, len, ret, err, errlen) == 0 ||
                        start_by_launcher(srv, &request, len, l, ret, err, errlen) == 0))
                return 0;
        /* Also where no report pipe could be made above: this tries once more, and its error
         * (with err) is the start's. */
        return spawn_supervisor(shim, argv, l->envp, ret, err, errlen);
}

int gw_launch_recover(struct gw_launch_answer *a, int report_fd, pid_t job, struct gw_launched *ret, char *err,
                      size_t errlen) {
        int r = launched_anyway(report_fd, job, ret);
        if (r != -ESRCH) {
                if (r < 0)
                        snprintf(err, errlen, "the job launcher died while starting it: %s", strerror(-r));
                return r;
        }
        char **argv = NULL, **envp = NULL;
        r = gw_launch_request_decode(a->request, a->len, &argv, &envp);
        if (r < 0) {
                snprintf(err, errlen, "the job launcher died while starting it");
                return r;
        }
        r = spawn_supervisor(argv[0], argv, envp, ret, err, errlen);
        free(argv);
        free(envp);
        return r;
}

/* "end STATUS WALL_US MONO_US" (shim.h): 0 with *ret, else -EBADMSG. */
static int parse_end(const char *text, struct gw_exit_report *ret) {
        int status, end = 0;
        long long wall, mono;
        if (sscanf(text, "%d %lld %lld%n", &status, &wall, &mono, &end) != 3 || text[end] || wall < 0 || mono < 0)
                return -EBADMSG;
        *ret = (struct gw_exit_report){ .known = true,
                                        .status = status,
                                        .wall = (gw_usec_t) wall,
                                        .mono = (gw_usec_t) mono };
        return 0;
}

int gw_launch_read_report(int fd, pid_t *ret_job, struct gw_exit_report *ret_end, char *why, size_t whylen) {
        char buf[SHIM_REPORT_LINE_MAX + 64];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n < 0)
                return errno == EAGAIN ? -EAGAIN : -errno;
        if (n == 0)
                return -EPIPE;
        buf[n] = '\0';
        int r = -EAGAIN;
        for (char *line = buf, *next; *line; line = next) {
                next = line + strcspn(line, "\n");
                if (*next)
                        *next++ = '\0';
                if (!strncmp(line, "gpuward: ", 9)) {
                        if (why && whylen)
                                snprintf(why, whylen, "%s", line + 9);
                        continue;
                }
                if (!strncmp(line, SHIM_END_PREFIX, strlen(SHIM_END_PREFIX))) {
                        if (ret_end)
                                (void) parse_end(line + strlen(SHIM_END_PREFIX), ret_end);
                        continue;
                }
                long v = strtol(line, NULL, 10);
                if (v <= 0)
                        r = -EIO;
                else if (r != -EIO) {
                        *ret_job = (pid_t) v;
                        r = 0;
                }
        }
        return r;
}

struct exit_entry {
        int64_t job_id;
        int attempt;
        struct gw_exit_report end;
};

/* Room kept allocated past the journal's end (fallocate, its size unchanged), topped up as
 * lines come: on a full disk a supervisor's append still takes, and a daemon that stops
 * before it can write an end to the store leaves the next one that end (about 1,400 lines). */
#define EXITS_RESERVE (64 * 1024)

struct gw_exits {
        int fd;
        off_t offset;
        off_t reserved; /* allocated up to here (0: nothing reserved) */
        char partial[128]; /* an unfinished last line */
        size_t partial_len;
        struct exit_entry *v;
        size_t n, cap;
};

/* Best effort: a file system without fallocate, or already full, reserves nothing. */
static void exits_reserve(struct gw_exits *e) {
        if (e->offset + EXITS_RESERVE / 2 < e->reserved)
                return;
        if (fallocate(e->fd, FALLOC_FL_KEEP_SIZE, e->offset, EXITS_RESERVE) == 0)
                e->reserved = e->offset + EXITS_RESERVE;
}

int gw_exits_open(const char *path, struct gw_exits **ret) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        struct gw_exits *e = gw_xcalloc(1, sizeof *e);
        e->fd = fd;
        gw_exits_read(e);
        *ret = e;
        return 0;
}

struct gw_exits *gw_exits_close(struct gw_exits *e) {
        if (!e)
                return NULL;
        (void) close(e->fd);
        free(e->v);
        free(e);
        return NULL;
}

/* Empty lines separate records; a line that is not a whole record (what a torn write left)
 * is skipped, never read as one.  "ID ATTEMPT STATUS WALL_US MONO_US[ PID]", or without the
 * times (an older supervisor's): its end time is then unknown. */
static void exits_line(struct gw_exits *e, const char *line) {
        long long id, wall, mono;
        int attempt, off = 0, status, end = 0, pid;
        if (sscanf(line, "%lld %d %n", &id, &attempt, &off) != 2 || !off)
                return;
        const char *rest = line + off;
        struct gw_exit_report rep = { .known = true };
        if (sscanf(rest, "%d%n", &status, &end) == 1 && !rest[end])
                rep.status = status;
        else if (sscanf(rest, "%d %lld %lld %d%n", &status, &wall, &mono, &pid, &end) == 4 && !rest[end] && wall >= 0 &&
                 mono >= 0 && pid > 0)
                rep = (struct gw_exit_report){ .known = true,
                                               .status = status,
                                               .wall = (gw_usec_t) wall,
                                               .mono = (gw_usec_t) mono,
                                               .pid = pid };
        else if (parse_end(rest, &rep) < 0)
                return;
        if (e->n == e->cap) {
                e->cap = e->cap ? e->cap * 2 : 16;
                e->v = gw_xrealloc(e->v, e->cap * sizeof *e->v);
        }
        e->v[e->n++] = (struct exit_entry){ id, attempt, rep };
}

void gw_exits_read(struct gw_exits *e) {
        char buf[8192];
        ssize_t n;
        /* A short read is the file's end as it stands: no second read to learn it. */
        do {
                n = pread(e->fd, buf, sizeof buf, e->offset);
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] != '\n') {
                                if (e->partial_len < sizeof e->partial - 1)
                                        e->partial[e->partial_len++] = buf[i];
                                continue;
                        }
                        e->partial[e->partial_len] = '\0';
                        exits_line(e, e->partial);
                        e->partial_len = 0;
                }
                if (n > 0)
                        e->offset += n;
        } while (n == (ssize_t) sizeof buf);
        exits_reserve(e);
}

int gw_exits_take(struct gw_exits *e, int64_t job_id, int attempt, struct gw_exit_report *ret) {
        gw_exits_read(e);
        for (size_t i = e->n; i-- > 0;)
                if (e->v[i].job_id == job_id && e->v[i].attempt == attempt) {
                        if (ret)
                                *ret = e->v[i].end;
                        e->v[i] = e->v[--e->n];
                        return 0;
                }
        return -ENOENT;
}

bool gw_exits_has(struct gw_exits *e, int64_t job_id, int attempt) {
        gw_exits_read(e);
        for (size_t i = 0; i < e->n; i++)
                if (e->v[i].job_id == job_id && e->v[i].attempt == attempt)
                        return true;
        return false;
}

void gw_exits_reset(struct gw_exits *e) {
        if (ftruncate(e->fd, 0) == 0) {
                e->offset = 0;
                e->partial_len = 0;
                e->n = 0;
                e->reserved = 0; /* the truncation freed it */
                exits_reserve(e);
        }
}
