/* The node agent's stager (cache_node.h): one process, one poll loop over the socket, the
 * askers' connections and the copying helpers' pipes.  The store and the copies are the
 * daemon's own (cache_store.c, cache_copy.c); what is the stager's is who asked, on which
 * connection, and when.  Each entry's use file (cache_use.c) keeps its last use, its users and
 * each pin as the asking process (pid and start time): a restarted agent has lost the
 * connections, so it keeps a pin while that very process lives, and so never evicts or
 * trashes what a job still running on the node reads. */
#include "daemon/cache/cache_node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/cache.h"
#include "core/failure.h"
#include "core/slurm.h"
#include "daemon/cache/cache_int.h"
#include "daemon/exec/proc.h"

#define TICK_MS 200
/* How often the pins of an agent before this one are checked for their process: a second or
 * two of an entry kept after its job ended costs nothing; /proc read more often does. */
#define HELD_CHECK (2 * GW_USEC_PER_SEC)

struct asker {
        int fd; /* -1 once its connection closed (kept until its helper is reaped) */
        uid_t uid;
        gid_t gid;
        pid_t pid; /* the process that asked (the step, which execs the job's command), 0 unknown */
        uint64_t start; /* its start time (/proc/PID/stat field 22) */
        uint32_t slurm_job;
        char user[64];
        uint32_t groups[GW_CACHE_MAX_GROUPS];
        int n_groups;
        char in[GW_CACHE_NODE_REQ_MAX];
        size_t nin;
        char *source; /* once asked */
        struct gw_cache_job cj;
        gw_usec_t asked; /* monotonic */
        int told_pct;
        bool answered;
        struct asker *next;
};

/* A pin an agent before this one recorded (the use file's "proc" line), its process still
 * alive when this one started. */
struct held {
        struct gw_cache_entry *e;
        struct gw_cache_ver *v;
        pid_t pid;
        uint64_t start;
        struct held *next;
};

struct stager {
        struct gw_cache c;
        const struct gw_cache_node_cfg *cfg;
        int lfd, out;
        struct asker *askers;
        size_t n_askers;
        unsigned seq;
        struct held *held;
        gw_usec_t next_check; /* monotonic: the held pins' next look at their processes */
};

static volatile sig_atomic_t stopping;

static void on_stop(int sig) {
        (void) sig;
        stopping = 1;
}

static void tell(struct asker *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(struct asker *a, const char *fmt, ...) {
        char buf[GW_CACHE_NODE_REQ_MAX + 600];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (a->fd >= 0 && n > 0)
                (void) !send(a->fd, buf, (size_t) n < sizeof buf ? (size_t) n : sizeof buf - 1,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Who asks: the kernel's word on the connection, and its Slurm job from its cgroup. */
static int asker_init(struct asker *a, int fd) {
        struct ucred cr;
        socklen_t l = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0)
                return -errno;
        *a = (struct asker){ .fd = fd, .uid = cr.uid, .gid = cr.gid, .pid = cr.pid, .cj = { .rfd = -1, .gofd = -1 } };
        /* Read now, while its connection is open: the pid is that process's, not a later one's. */
        if (cr.pid <= 0 || cr.pid > GW_CACHE_PID_MAX || gw_proc_start_time(cr.pid, &a->start) < 0)
                a->pid = 0;
        struct passwd pw, *pp = NULL;
        char buf[2048];
        if (getpwuid_r(cr.uid, &pw, buf, sizeof buf, &pp) != 0 || !pp)
                return -ENOENT;
        snprintf(a->user, sizeof a->user, "%s", pp->pw_name);
        gid_t g[GW_CACHE_MAX_GROUPS];
        int ng = GW_CACHE_MAX_GROUPS;
        if (getgrouplist(pp->pw_name, cr.gid, g, &ng) < 0)
                ng = GW_CACHE_MAX_GROUPS; /* more than that: the first ones */
        for (int i = 0; i < ng; i++)
                a->groups[i] = g[i];
        a->n_groups = ng;
        char path[64], text[4096];
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int) cr.pid);
        _cleanup_close_ int cfd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = cfd >= 0 ? read(cfd, text, sizeof text) : -1;
        struct gw_slurm_proc sp;
        if (n > 0 && gw_slurm_proc_from_cgroup(text, (size_t) n, &sp) == 0)
                a->slurm_job = sp.job_id;
        return 0;
}

/* The pins of e: its askers' that were answered and still hold theirs, and the held ones. */
static size_t pins_of(const struct stager *s, const struct gw_cache_entry *e, struct gw_cache_use_line *out) {
        size_t k = 0;
        for (const struct asker *a = s->askers; a; a = a->next)
                if (a->cj.e == e && a->cj.ready && a->cj.pin && a->pid > 0) {
                        if (out)
                                out[k] = (struct gw_cache_use_line){ .kind = GW_CACHE_USE_PROC,
                                                                     .pid = a->pid,
                                                                     .start = a->start,
                                                                     .version = a->cj.pin->v };
                        k++;
                }
        for (const struct held *h = s->held; h; h = h->next)
                if (h->e == e) {
                        if (out)
                                out[k] = (struct gw_cache_use_line){ .kind = GW_CACHE_USE_PROC,
                                                                     .pid = h->pid,
                                                                     .start = h->start,
                                                                     .version = h->v->v };
                        k++;
                }
        return k;
}

/* e's use file, as the daemon's cache keeps it: its last use, its users, its pins. */
static void use_save(const struct stager *s, const struct gw_cache_entry *e) {
        size_t n = pins_of(s, e, NULL);
        _cleanup_free_ struct gw_cache_use_line *pins = gw_xcalloc(n + 1, sizeof *pins);
        n = pins_of(s, e, pins);
        (void) gw_cache_use_write(&s->c, e, pins, n);
}

static void record(struct stager *s, struct asker *a, bool ok, bool hit, uint64_t bytes) {
        char line[128];
        int n = snprintf(line, sizeof line, "S %" PRIu32 " %lld %d %d %" PRIu64 "\n", a->slurm_job,
                         (long long) (gw_clock_mono() - a->asked), ok, hit, bytes);
        (void) !write(s->out, line, (size_t) n);
        a->answered = true;
}

/* "ERR data WHY" for what the asker's request or dataset is the cause of (the step exits as
 * the dataset's error), "ERR node WHY" for this node's own trouble (the step fails as the node's,
 * and the job is tried on another node). */
static void fail(struct stager *s, struct asker *a, bool node, const char *why) {
        tell(a, "ERR %s %s\n", node ? "node" : "data", why);
        log_info("stager: %s (uid %u, Slurm job %" PRIu32 "): %s", a->source ? a->source : "?", (unsigned) a->uid,
                 a->slurm_job, why);
        if (a->source)
                record(s, a, false, false, 0);
        if (a->fd >= 0) {
                (void) close(a->fd);
                a->fd = -1;
        }
}

static void take(void *ctx, struct gw_cache_job *cj, char *line) {
        struct stager *s = ctx;
        struct asker *a = (struct asker *) (void *) ((char *) cj - offsetof(struct asker, cj));
        char whom[64];
        snprintf(whom, sizeof whom, "Slurm job %" PRIu32, a->slurm_job);
        if (!gw_cache_helper_ask(&s->c, cj, line, s->cfg->size, whom, a->fd < 0))
                gw_cache_helper_line(cj, line);
        int pct = cj->total ? (int) (cj->done * 100 / cj->total) : 0;
        if (cj->told_total && (pct != a->told_pct || !cj->done)) {
                tell(a, "P %" PRIu64 " %" PRIu64 "\n", cj->done, cj->total);
                a->told_pct = pct;
        }
}

/* The askers whose entry is free start their copy, as far as --cache-copies goes. */
static void start_waiting(struct stager *s) {
        for (struct asker *a = s->askers; a; a = a->next) {
                struct gw_cache_job *cj = &a->cj;
                if (!a->source || a->fd < 0 || cj->ready || cj->pid > 0 || a->answered)
                        continue;
                if (cj->e->staging || s->c.n_flight >= s->cfg->copies)
                        continue;
                struct stat st;
                free(cj->yaml);
                cj->yaml = NULL;
                if (stat(a->source, &st) < 0 || !S_ISDIR(st.st_mode)) /* a data YAML, or to be told */
                        if (asprintf(&cj->yaml, "%s/yaml/node-%d-%" PRIu64 "-%u.yaml", s->c.dir, (int) a->pid, a->start,
                                     ++s->seq) < 0)
                                abort();
                struct gw_cache_copy args = { .source = a->source,
                                              .sources = s->cfg->sources,
                                              .uid = a->uid,
                                              .gid = a->gid,
                                              .groups = a->groups,
                                              .n_groups = a->n_groups,
                                              .yaml_out = cj->yaml };
                int r = gw_cache_helper_start(&s->c, cj, &args);
                if (r < 0) {
                        char why[128];
                        snprintf(why, sizeof why, "cannot start the copy: %s", strerror(-r));
                        fail(s, a, true, why);
                }
        }
}

/* "STAGE PATH": the path checked as the daemon checks a --dataset, then its copy queued. */
static void ask(struct stager *s, struct asker *a, char *line) {
        size_t l = strlen(line);
        if (strncmp(line, "STAGE ", 6) || line[6] != '/' || l - 6 > 4096)
                return fail(s, a, false, "the request is not 'STAGE /absolute/path'");
        /* cache_sources is a prefix of the text: a ".." could climb out of it. */
        if (strstr(line + 6, "/../") || !strcmp(line + l - 3, "/.."))
                return fail(s, a, false, "dataset: a path with '..' in it is not asked for");
        if (!gw_cache_source_allowed(s->cfg->sources, line + 6)) {
                char why[GW_CACHE_NODE_REQ_MAX + 200];
                snprintf(why, sizeof why, "dataset: %.4096s is not under this node's cache_sources (%.200s)", line + 6,
                         *s->cfg->sources ? s->cfg->sources : "empty: none allowed");
                return fail(s, a, false, why);
        }
        a->source = gw_xstrdup(line + 6);
        a->asked = gw_clock_mono();
        a->told_pct = -1;
        a->cj.e = gw_cache_entry_get(&s->c, a->source);
        log_info("stager: %s asked by %s for Slurm job %" PRIu32, a->source, a->user, a->slurm_job);
        start_waiting(s);
}

static void asker_read(struct stager *s, struct asker *a) {
        ssize_t r = recv(a->fd, a->in + a->nin, sizeof a->in - 1 - a->nin, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                (void) close(a->fd);
                a->fd = -1;
                return;
        }
        if (r < 0 || a->source)
                return; /* one request a connection: the rest is ignored */
        a->nin += (size_t) r;
        char *nl = memchr(a->in, '\n', a->nin);
        if (nl) {
                *nl = '\0';
                ask(s, a, a->in);
        } else if (a->nin == sizeof a->in - 1)
                fail(s, a, false, "the request is too long");
}

static void asker_free(struct stager *s, struct asker *a) {
        for (struct asker **p = &s->askers; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        break;
                }
        s->n_askers--;
        if (a->cj.pin)
                gw_cache_unpin(&s->c, &a->cj, true);
        if (a->cj.ready)
                use_save(s, a->cj.e); /* its pin is no longer the next agent's to keep */
        if (a->cj.yaml)
                (void) unlink(a->cj.yaml);
        free(a->cj.yaml);
        free(a->source);
        free(a);
}

/* The helper's "ERR CLASS WHY" as the words the step prints; *ret_node: not the dataset's
 * fault (its class is not user_error: out of space, an I/O error, a helper that died). */
static const char *helper_why(const struct gw_cache_job *cj, bool *ret_node) {
        *ret_node = true;
        if (strncmp(cj->result, "ERR ", 4))
                return "the copying helper died";
        const char *w = cj->result + 4;
        size_t l = strcspn(w, " ");
        char class[32];
        snprintf(class, sizeof class, "%.*s", (int) (l < sizeof class ? l : sizeof class - 1), w);
        *ret_node = gw_failure_class_from_name(class) != GW_FAILURE_USER_ERROR;
        w += l;
        return *w ? w + 1 : w;
}

static void reaped(struct stager *s, struct asker *a, int status) {
        struct gw_cache_job *cj = &a->cj;
        gw_cache_helper_drain(cj, take, s);
        int got = gw_cache_helper_reaped(&s->c, cj, status);
        if (!got || a->fd < 0) {
                char why[700];
                bool node;
                snprintf(why, sizeof why, "dataset %s: %s", a->source, helper_why(cj, &node));
                gw_cache_helper_drop(&s->c, cj);
                if (a->fd >= 0)
                        fail(s, a, node, why);
                return;
        }
        gw_cache_helper_keep(&s->c, cj, got == 2, gw_clock_wall());
        gw_cache_add_user(cj->e, a->user);
        use_save(s, cj->e); /* its last use, its users and this asker's pin outlive a restart */
        unsigned long long copied = 0;
        (void) sscanf(cj->result, "OK %llu", &copied);
        _cleanup_free_ char *data = gw_cache_path(&s->c, cj->e, cj->pin->v, "data");
        if (cj->yaml)
                tell(a, "Y %s\n", cj->yaml);
        tell(a, "OK %s\n", data);
        record(s, a, true, got == 2, copied);
        log_info("stager: %s ready for Slurm job %" PRIu32 " (%s, %llu bytes copied)", a->source, a->slurm_job,
                 got == 2 ? "unchanged: the cached copy serves" : "new version", copied);
}

static void reap(struct stager *s) {
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid <= 0)
                        return;
                for (struct asker *a = s->askers; a; a = a->next)
                        if (a->cj.pid == pid) {
                                reaped(s, a, status);
                                break;
                        }
        }
}

static void accept_one(struct stager *s) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
                return;
        struct asker *a = gw_xcalloc(1, sizeof *a);
        if (s->n_askers >= GW_CACHE_NODE_CLIENTS || asker_init(a, fd) < 0) {
                (void) !send(fd, "ERR the stager is busy or cannot tell who asks\n", 47, MSG_NOSIGNAL);
                (void) close(fd);
                free(a);
                return;
        }
        a->next = s->askers;
        s->askers = a;
        s->n_askers++;
}

static struct gw_cache_ver *version(const struct gw_cache_entry *e, int v) {
        struct gw_cache_ver *x = e->vers;
        while (x && x->v != v)
                x = x->next;
        return x;
}

/* Removes the rewritten data YAMLs (yaml/node-PID-START-SEQ.yaml) whose asker is gone: those
 * of steps still connected when an agent before this one stopped, whose connection's close
 * never came to remove them.  An asker that still lives may still read its own. */
/* Whether name is the YAML of an asker this stager serves (one whose pid is unknown has 0). */
static bool asker_yaml(const struct stager *s, const char *name) {
        for (const struct asker *a = s->askers; a; a = a->next) {
                const char *base = a->cj.yaml ? strrchr(a->cj.yaml, '/') : NULL;
                if (base && !strcmp(base + 1, name))
                        return true;
        }
        return false;
}

static void yaml_sweep(struct stager *s) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/yaml", s->c.dir) < 0)
                abort();
        DIR *dir = opendir(path);
        if (!dir)
                return;
        struct dirent *de;
        while ((de = readdir(dir))) {
                int pid, end = 0;
                uint64_t start;
                unsigned seq;
                if (sscanf(de->d_name, "node-%d-%" SCNu64 "-%u.yaml%n", &pid, &start, &seq, &end) != 3 ||
                    de->d_name[end] || (pid > 0 && gw_proc_is(pid, start)) || asker_yaml(s, de->d_name))
                        continue;
                if (unlinkat(dirfd(dir), de->d_name, 0) < 0 && errno != ENOENT)
                        log_warn("stager: cannot remove %s/%s: %s", path, de->d_name, strerror(errno));
        }
        closedir(dir);
}

/* The use files' pins of processes, an agent's before this one: each kept while its process
 * (the same pid with the same start time) lives; then the versions nobody pins go, as at the
 * daemon's restart.  Before any asker is heard, so nothing they hold is evicted meanwhile. */
static void recover(struct stager *s) {
        for (struct gw_cache_entry *e = s->c.entries; e; e = e->next) {
                bool had = e->n_saved > 0;
                for (size_t i = 0; i < e->n_saved; i++) {
                        const struct gw_cache_pin *p = &e->saved[i];
                        struct gw_cache_ver *v = p->pid > 0 ? version(e, p->v) : NULL;
                        if (!v || !gw_proc_is(p->pid, p->start))
                                continue;
                        struct held *h = gw_xcalloc(1, sizeof *h);
                        *h = (struct held){ .e = e, .v = v, .pid = p->pid, .start = p->start, .next = s->held };
                        s->held = h;
                        v->pins++;
                        log_info("stager: %s: version %d still read by process %d (asked before the restart): kept",
                                 e->source, v->v, (int) p->pid);
                }
                free(e->saved);
                e->saved = NULL;
                e->n_saved = 0;
                gw_cache_trash_unpinned_old(&s->c, e);
                if (had)
                        use_save(s, e); /* the pins of processes gone are forgotten */
        }
        s->next_check = gw_clock_mono() + HELD_CHECK;
        yaml_sweep(s);
}

/* The held pins whose process is gone let go of their version, now and then. */
static void check_held(struct stager *s) {
        gw_usec_t now = gw_clock_mono();
        if (!s->held || now < s->next_check)
                return;
        s->next_check = now + HELD_CHECK;
        bool released = false;
        for (struct held **p = &s->held, *h; (h = *p);) {
                if (gw_proc_is(h->pid, h->start)) {
                        p = &h->next;
                        continue;
                }
                *p = h->next;
                int v = h->v->v; /* the release may free it */
                gw_cache_ver_release(&s->c, h->e, h->v, true);
                use_save(s, h->e); /* first: the line below says it is done */
                log_info("stager: %s: process %d, which read version %d since before the restart, is gone: released",
                         h->e->source, (int) h->pid, v);
                free(h);
                released = true;
        }
        if (released) /* its YAML too */
                yaml_sweep(s);
}

static void loop(struct stager *s) {
        while (!stopping) {
                struct pollfd p[1 + 2 * GW_CACHE_NODE_CLIENTS];
                struct asker *who[1 + 2 * GW_CACHE_NODE_CLIENTS];
                size_t n = 0;
                p[n] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
                who[n++] = NULL;
                for (struct asker *a = s->askers; a; a = a->next) {
                        if (a->fd >= 0) {
                                p[n] = (struct pollfd){ .fd = a->fd, .events = POLLIN };
                                who[n++] = a;
                        }
                        if (a->cj.rfd >= 0) {
                                p[n] = (struct pollfd){ .fd = a->cj.rfd, .events = POLLIN };
                                who[n++] = a;
                        }
                }
                if (poll(p, (nfds_t) n, TICK_MS) < 0 && errno != EINTR)
                        return;
                for (size_t i = 1; i < n; i++)
                        if (p[i].revents) {
                                if (p[i].fd == who[i]->cj.rfd)
                                        gw_cache_helper_drain(&who[i]->cj, take, s);
                                else if (p[i].fd == who[i]->fd)
                                        asker_read(s, who[i]);
                        }
                if (p[0].revents & POLLIN)
                        accept_one(s);
                reap(s);
                for (struct asker *a = s->askers, *nx; a; a = nx) {
                        nx = a->next;
                        if (a->fd < 0 && a->cj.pid > 0 && !a->answered) { /* gone while copied */
                                (void) kill(-a->cj.pid, SIGKILL);
                                record(s, a, false, false, 0);
                        }
                        if (a->fd < 0 && a->cj.pid <= 0)
                                asker_free(s, a);
                }
                check_held(s);
                start_waiting(s);
        }
        for (struct asker *a = s->askers; a; a = a->next)
                if (a->cj.pid > 0)
                        (void) kill(-a->cj.pid, SIGKILL);
}

static int listen_at(const char *path, char *why, size_t n) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path) {
                snprintf(why, n, "--stage-socket: %s is too long for a socket's path", path);
                return -ENAMETOOLONG;
        }
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        char dir[sizeof sa.sun_path];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                        snprintf(why, n, "--stage-socket: cannot make %s: %s", dir, strerror(errno));
                        return -errno;
                }
        }
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void) unlink(path); /* an agent's before this one */
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        mode_t old = umask(0);
        /* Any user's job asks: who asks is the kernel's word (SO_PEERCRED). */
        int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0 || chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
                snprintf(why, n, "--stage-socket: %s: %s", path, strerror(errno));
                if (fd >= 0)
                        (void) close(fd);
                return -EADDRINUSE;
        }
        return fd;
}

pid_t gw_cache_node_spawn(const struct gw_cache_node_cfg *cfg, int *ret_fd, char *why, size_t n) {
        static struct stager s;
        s = (struct stager){ .cfg = cfg, .lfd = -1, .out = -1 };
        if (gw_cache_store_open(&s.c, cfg->dir) < 0) {
                snprintf(why, n, "--cache-dir: cannot use %s (see above)", cfg->dir);
                gw_cache_store_done(&s.c);
                return -EPERM;
        }
        int lfd = listen_at(cfg->socket, why, n), p[2];
        if (lfd < 0 || pipe2(p, O_CLOEXEC) < 0) {
                gw_cache_store_done(&s.c);
                if (lfd >= 0)
                        (void) close(lfd);
                return lfd < 0 ? lfd : -errno;
        }
        /* Blocked across the fork until the stager has its own handler: a stop sent to it
         * sooner would run the agent's handler in it, whose flag the stager never reads, and
         * the agent would wait for it for ever. */
        sigset_t stop, old;
        (void) sigemptyset(&stop);
        (void) sigaddset(&stop, SIGTERM);
        (void) sigaddset(&stop, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &stop, &old);
        pid_t parent = getpid(), pid = fork();
        int fork_errno = errno;
        if (pid != 0) {
                (void) sigprocmask(SIG_SETMASK, &old, NULL);
                (void) close(lfd);
                (void) close(p[1]);
                gw_cache_store_done(&s.c);
                if (pid < 0) {
                        (void) close(p[0]);
                        snprintf(why, n, "cannot fork the stager: %s", strerror(fork_errno));
                        return -fork_errno;
                }
                (void) fcntl(p[0], F_SETFL, O_NONBLOCK);
                *ret_fd = p[0];
                return pid;
        }
        (void) close(p[0]);
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
                _exit(0);
        struct sigaction sa = { .sa_handler = on_stop };
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigprocmask(SIG_SETMASK, &old, NULL); /* a stop sent meanwhile comes now */
        (void) signal(SIGPIPE, SIG_IGN);
        s.lfd = lfd;
        s.out = p[1];
        log_info("stager: staging datasets into %s for the job steps that ask on %s", cfg->dir, cfg->socket);
        recover(&s);
        loop(&s);
        (void) unlink(cfg->socket);
        _exit(0);
}

int gw_cache_staged_parse(const char *line, struct gw_cache_staged *ret) {
        unsigned long job, ok, hit;
        long long usec;
        unsigned long long bytes;
        int end = 0;
        if (sscanf(line, "S %lu %lld %lu %lu %llu%n", &job, &usec, &ok, &hit, &bytes, &end) != 5 || line[end] ||
            job > UINT32_MAX || usec < 0 || ok > 1 || hit > 1)
                return -EINVAL;
        *ret = (struct gw_cache_staged){ .slurm_job = (uint32_t) job,
                                         .waited = usec,
                                         .ok = ok,
                                         .hit = hit,
                                         .bytes = bytes };
        return 0;
}
