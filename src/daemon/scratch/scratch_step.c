/* gpuwardd --scratch-run DIR SECONDS RESTORE COMMAND [ARG...] (scratch.h): what the batch
 * script of a --scratch job runs on the node Slurm picked, as the job's user, in its shared
 * folder (sbatch --chdir).  The controller cannot copy on a node, so the step does what
 * scratch.c does on one host, with the same copier (scratch_copy.c, `gpuwardd --helper
 * scratch-copy`): it makes DIR (the user's, 0700), restores RESTORE (a run folder of the
 * shared one, "-": none) into it for a retry, runs the command as its child with
 * GPUWARD_SCRATCH=DIR, copies whole checkpoints back every SECONDS while it runs, and at its
 * end syncs the rest back, removes DIR and ends as the command did.  Each copy is a line of
 * the job's output, where the controller's user reads it.
 *
 * Signals.  The step is the batch script's process: a signal gpuward sends (scancel --batch)
 * reaches only it, and so does Slurm's own (a time limit, scancel) where Slurm signals a
 * step's tasks alone (proctrack/cgroup signals the children of slurmstepd, but for SIGKILL):
 * the step passes each on to the command's process group.  A signal meant for the command's
 * main process only (a --signal warning, preemption's checkpoint request) comes as a relay
 * signal, SIGRTMIN + k (core/scratch.h), which the step sends to the process it started as
 * the signal it stands for.  What comes before the command started (while the folder is made
 * or restored) is passed on as soon as it runs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/time.h"
#include "core/failure.h"
#include "core/jobrec.h"
#include "core/scratch.h"
#include "daemon/scratch/scratch.h"
#include "daemon/scratch/scratch_int.h"
#include "daemon/training/resume.h"

/* What the job ends with when the step could not start it: the backend reads it as the
 * job's exit (as --stage-run's). */
#define EXIT_USAGE 2
#define EXIT_NODE GW_FAILURE_NODE_EXIT /* no scratch folder could be made on this node (EX_UNAVAILABLE) */
#define INTERVAL_MAX (24 * 3600)
#define STOP_WAIT (5 * GW_USEC_PER_SEC)
/* How long a restore or the final sync may take before its copier is stopped: a hung shared
 * mount must not hold the allocation's GPUs until the time limit. */
#define SYNC_MAX (10 * 60 * GW_USEC_PER_SEC)

struct step {
        const char *dir, *restore;
        char parent[PATH_MAX];
        const char *name; /* DIR's last component, in parent */
        int pfd; /* parent */
        char cwd[PATH_MAX]; /* the shared folder */
        gw_usec_t interval;
        uint32_t groups[GW_SCRATCH_MAX_GROUPS];
        int n_groups;
        int sfd; /* signalfd of the blocked signals */
        pid_t cmd; /* the command, 0 once reaped */
        int cmd_status;
        pid_t look; /* a look in flight, 0 none */
        int look_fd;
        struct gw_scratch_report report; /* the look's, as it arrives */
        gw_usec_t next_look;
};

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("gpuward: scratch: ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
        fflush(stdout);
}

/* The node's failure, told on the line the failure classifier reads as such (core/failure.h):
 * the attempt is lost and retried elsewhere, not the user's error. */
static int node_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int node_failed(const char *fmt, ...) {
        va_list ap;
        fflush(stdout);
        fputs(GW_FAILURE_NODE_MARK "scratch: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_NODE;
}

static void copy_init(const struct step *s, struct gw_scratch_copy *c, enum gw_scratch_mode mode) {
        *c = (struct gw_scratch_copy){ .mode = mode,
                                       .uid = getuid(),
                                       .gid = getgid(),
                                       .groups = s->groups,
                                       .n_groups = s->n_groups };
}

/* The "D FILES BYTES LEFT" of a report: 0, or -EIO with the copier's own reason in why. */
static int report_done(int r, const char *report, unsigned long long *files, unsigned long long *bytes,
                       unsigned long long *left, char *why, size_t n) {
        const char *d = strstr(report, "D ");
        int e = 0;
        if (r == 0 && d && sscanf(d, "D %llu %llu %llu", files, bytes, left) == 3)
                return 0;
        snprintf(why, n, "%s", sscanf(report, "E %d", &e) == 1 && e > 0 ? strerror(e) : "the copy failed");
        return -EIO;
}

static int parse_args(struct step *s, char **argv) {
        long long secs;
        s->dir = argv[2];
        s->restore = argv[4];
        const char *slash = strrchr(s->dir, '/');
        if (s->dir[0] != '/' || strstr(s->dir, "/..") || !slash || !slash[1] ||
            (size_t) (slash - s->dir) >= sizeof s->parent) {
                fprintf(stderr, "gpuward: --scratch-run: DIR %s is not an absolute folder path\n", s->dir);
                return -EINVAL;
        }
        if (gw_parse_int(argv[3], 1, INTERVAL_MAX, &secs) < 0) {
                fprintf(stderr, "gpuward: --scratch-run: SECONDS %s is not 1 to %d\n", argv[3], INTERVAL_MAX);
                return -EINVAL;
        }
        if (strcmp(s->restore, "-") &&
            (s->restore[0] == '/' || !strncmp(s->restore, "..", 2) || strstr(s->restore, "/.."))) {
                fprintf(stderr, "gpuward: --scratch-run: RESTORE %s is not a folder below the job's\n", s->restore);
                return -EINVAL;
        }
        memcpy(s->parent, s->dir, (size_t) (slash - s->dir));
        s->parent[slash - s->dir] = '\0';
        if (!s->parent[0])
                snprintf(s->parent, sizeof s->parent, "/");
        s->name = slash + 1;
        s->interval = secs * GW_USEC_PER_SEC;
        return 0;
}

/* Makes DIR in its parent, the user's, 0700: 0, or -errno.  A folder of the user's already
 * there (a step of this attempt that died) is emptied and taken; anything else is not. */
static int make_dir(struct step *s) {
        s->pfd = open(s->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->pfd < 0)
                return -errno;
        struct stat st, again;
        if (mkdirat(s->pfd, s->name, 0700) < 0) {
                if (errno != EEXIST)
                        return -errno;
                if (fstatat(s->pfd, s->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (!S_ISDIR(st.st_mode) || st.st_uid != getuid())
                        return -EEXIST;
                char report[256];
                struct gw_scratch_copy c;
                copy_init(s, &c, GW_SCRATCH_SYNC);
                c.src = s->dir; /* no dst: only emptied */
                (void) gw_scratch_copy_run(&c, SYNC_MAX, report, sizeof report);
        }
        int fd = openat(s->pfd, s->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -EEXIST : -errno;
        /* The folder is the one under the name, ours: nothing was swapped in meanwhile. */
        int r = 0;
        if (fstat(fd, &st) < 0 || fstatat(s->pfd, s->name, &again, AT_SYMLINK_NOFOLLOW) < 0)
                r = -errno;
        else if (st.st_dev != again.st_dev || st.st_ino != again.st_ino || st.st_uid != getuid())
                r = -EEXIST;
        else if (fchmod(fd, 0700) < 0)
                r = -errno;
        (void) close(fd);
        return r;
}

static void restore(struct step *s) {
        char report[GW_SCRATCH_REPORT_MAX], why[256], size[32];
        unsigned long long files = 0, bytes = 0, left = 0;
        struct gw_scratch_copy c;
        copy_init(s, &c, GW_SCRATCH_SYNC);
        c.src = s->cwd, c.dst = s->dir, c.sub = s->restore;
        int r = gw_scratch_copy_run(&c, SYNC_MAX, report, sizeof report);
        if (report_done(r, report, &files, &bytes, &left, why, sizeof why) < 0)
                out("could not restore %s/%s into %s: %s", s->cwd, s->restore, s->dir, why);
        else
                out("restored %s from %s into %s: %llu files, %s", s->restore, s->cwd, s->dir, files,
                    gw_format_size(bytes, size, sizeof size));
}

/* "copied runs/x/weights/last.pt (epoch 3) back to /shared/job", as the controller words it
 * on one host. */
static void tell_copied(const struct step *s, const char *line) {
        unsigned long long bytes;
        int off = 0;
        if (sscanf(line, "C %llu %n", &bytes, &off) != 1 || off <= 0)
                return;
        const char *rel = line + off;
        char path[PATH_MAX + 8], why[256], size[32];
        struct gw_job me = { .uid = getuid(), .gid = getgid() };
        long done;
        snprintf(path, sizeof path, "%s/%s", s->cwd, rel);
        if (gw_scratch_kind_of(rel) == GW_SCRATCH_PT && gw_resume_ckpt_epoch(&me, path, &done, why, sizeof why) == 0)
                out("copied %s (epoch %ld) back to %s", rel, done, s->cwd);
        else
                out("copied %s (%s) back to %s", rel, gw_format_size(bytes, size, sizeof size), s->cwd);
}

static void look_line(char *line, void *ctx) {
        struct step *s = ctx;
        if (line[0] == 'C')
                tell_copied(s, line);
        else if (line[0] == 'E' || line[0] == 'S')
                out("not copied back: %s", line + 2);
}

static void read_look(struct step *s) { gw_scratch_report_read(&s->report, s->look_fd, look_line, s); }

static void look_done(struct step *s) {
        if (s->look_fd >= 0) {
                read_look(s);
                (void) close(s->look_fd);
        }
        s->look_fd = -1;
        s->look = 0;
        s->report.n = 0;
}

static void start_look(struct step *s) {
        struct gw_scratch_copy c;
        copy_init(s, &c, GW_SCRATCH_LOOK);
        c.src = s->dir, c.dst = s->cwd;
        int fd;
        pid_t pid = gw_scratch_copy_start(&c, &fd);
        if (pid < 0)
                return;
        s->look = pid;
        s->look_fd = fd;
}

/* The command ended: a look in flight is stopped (its half copy dropped), then waited for. */
static void stop_look(struct step *s) {
        if (s->look <= 0)
                return;
        (void) kill(-s->look, SIGTERM);
        gw_usec_t deadline = gw_clock_mono() + STOP_WAIT;
        int status;
        while (waitpid(s->look, &status, WNOHANG) == 0) {
                if (gw_clock_mono() >= deadline) {
                        (void) kill(-s->look, SIGKILL);
                        (void) waitpid(s->look, &status, 0);
                        break;
                }
                (void) poll(NULL, 0, 10);
        }
        look_done(s);
}

static void reap(struct step *s) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                if (pid == s->cmd) {
                        s->cmd = 0;
                        s->cmd_status = status;
                } else if (pid == s->look)
                        look_done(s);
        }
}

/* The signals that came: a relay to the command's main process as the signal it stands for,
 * any other to its process group (data loaders, a shell's children). */
static void take_signals(struct step *s) {
        struct signalfd_siginfo si;
        while (read(s->sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                int sig = (int) si.ssi_signo, relayed = gw_scratch_relayed(sig);
                if (sig == SIGCHLD)
                        reap(s);
                else if (s->cmd > 0)
                        (void) kill(relayed > 0 ? s->cmd : -s->cmd, relayed > 0 ? relayed : sig);
        }
}

static pid_t start_cmd(char **argv, const sigset_t *blocked) {
        pid_t pid = fork();
        if (pid > 0)
                (void) setpgid(pid, pid); /* as the child does: one passed on at once finds its group */
        if (pid != 0)
                return pid < 0 ? -errno : pid;
        /* Its own process group: a signal passed on reaches all its processes (data loaders). */
        (void) setpgid(0, 0);
        (void) sigprocmask(SIG_UNBLOCK, blocked, NULL);
        execvp(argv[0], argv);
        fprintf(stderr, "gpuward: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
}

/* Runs the command to its end, looking for checkpoints every interval. */
static void supervise(struct step *s) {
        while (s->cmd > 0) {
                gw_usec_t now = gw_clock_mono();
                if (s->look <= 0 && now >= s->next_look) {
                        start_look(s);
                        s->next_look = now + s->interval;
                }
                struct pollfd p[2] = { { .fd = s->sfd, .events = POLLIN }, { .fd = s->look_fd, .events = POLLIN } };
                gw_usec_t wait = s->look > 0 ? -1 : (s->next_look - now) / 1000 + 1;
                if (poll(p, s->look_fd >= 0 ? 2 : 1, (int) wait) < 0 && errno != EINTR)
                        break;
                if (s->look_fd >= 0 && (p[1].revents & POLLIN))
                        read_look(s);
                take_signals(s);
        }
}

static void final_sync(struct step *s) {
        stop_look(s);
        char report[GW_SCRATCH_REPORT_MAX], why[256], size[32];
        unsigned long long files = 0, bytes = 0, left = 0;
        struct gw_scratch_copy c;
        copy_init(s, &c, GW_SCRATCH_SYNC);
        c.src = s->dir, c.dst = s->cwd, c.empty_src = true;
        int r = gw_scratch_copy_run(&c, SYNC_MAX, report, sizeof report);
        bool removed = unlinkat(s->pfd, s->name, AT_REMOVEDIR) == 0;
        if (report_done(r, report, &files, &bytes, &left, why, sizeof why) < 0) {
                out("the sync back from %s to %s did not finish: %s", s->dir, s->cwd, why);
                return;
        }
        for (const char *p = report; *p;) { /* what it left: a link, a folder in the way */
                size_t l = strcspn(p, "\n");
                if (p[0] == 'S' && p[1] == ' ')
                        out("not copied back: %.*s", (int) (l - 2), p + 2);
                p += l + (p[l] == '\n');
        }
        out("synced back to %s: %llu files, %s%s%s%s", s->cwd, files, gw_format_size(bytes, size, sizeof size),
            left ? "; some entries past the limits not looked at" : "", removed ? "; removed " : "",
            removed ? s->dir : "");
}

/* Ends as the command did: its exit status, or its signal again (Slurm records the batch
 * script's wait status, which gpuward reads as the job's). */
static int end_as(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        int sig = WTERMSIG(status);
        struct rlimit none = { 0, 0 };
        (void) setrlimit(RLIMIT_CORE, &none); /* the command dumped its core, if any; not us */
        (void) signal(sig, SIG_DFL);
        sigset_t one;
        (void) sigemptyset(&one);
        (void) sigaddset(&one, sig);
        (void) sigprocmask(SIG_UNBLOCK, &one, NULL);
        (void) raise(sig);
        return 128 + sig;
}

int gw_scratch_step_main(int argc, char **argv) {
        if (argc < 2 || strcmp(argv[1], "--scratch-run"))
                return -1;
        if (argc < 6) {
                fputs("Usage: gpuwardd --scratch-run DIR SECONDS RESTORE COMMAND [ARG...]\n"
                      "(the batch script of a Slurm job with --scratch runs it; see docs/CLUSTER.md)\n",
                      stderr);
                return EXIT_USAGE;
        }
        struct step s = { .pfd = -1, .sfd = -1, .look_fd = -1 };
        if (parse_args(&s, argv) < 0)
                return EXIT_USAGE;
        gid_t g[GW_SCRATCH_MAX_GROUPS];
        int ng = getgroups(GW_SCRATCH_MAX_GROUPS, g);
        s.n_groups = ng > 0 ? ng : 0;
        for (int i = 0; i < s.n_groups; i++)
                s.groups[i] = g[i];
        if (!getcwd(s.cwd, sizeof s.cwd)) {
                return node_failed("cannot tell the job's folder: %s", strerror(errno));
        }
        /* Blocked from the start: a cancel while the folder is made or restored is passed on
         * to the command as soon as it runs, and the folder still synced and removed. */
        sigset_t blocked;
        (void) sigemptyset(&blocked);
        (void) sigaddset(&blocked, SIGCHLD);
        for (int k = 0; k < GW_SCRATCH_RELAYS; k++) {
                int sig = gw_scratch_relay_signal(k), relay = gw_scratch_relay_of(sig);
                (void) sigaddset(&blocked, sig);
                if (relay > 0)
                        (void) sigaddset(&blocked, relay);
        }
        (void) sigprocmask(SIG_BLOCK, &blocked, NULL);
        int r = make_dir(&s);
        if (r < 0) {
                return node_failed("cannot make %s on this node: %s (scratch_dir must be on each node, a folder users "
                                   "may make their folders in, mode 1777)",
                                   s.dir, r == -EEXIST ? "another's file or folder is in its place" : strerror(-r));
        }
        out("%s is this attempt's folder (GPUWARD_SCRATCH)", s.dir);
        if (setenv("GPUWARD_SCRATCH", s.dir, 1) < 0)
                return node_failed("cannot set GPUWARD_SCRATCH: %s", strerror(errno));
        if (strcmp(s.restore, "-"))
                restore(&s);

        s.sfd = signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK);
        pid_t pid = s.sfd >= 0 ? start_cmd(argv + 5, &blocked) : -errno;
        if (pid < 0) {
                final_sync(&s);
                return node_failed("cannot start the command: %s", strerror((int) -pid));
        }
        s.cmd = pid;
        s.next_look = gw_clock_mono() + s.interval;
        supervise(&s);
        final_sync(&s);
        return end_as(s.cmd_status);
}
