#include "daemon/exec/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/exec/proc.h"

#define TRASH_RETRY_USEC GW_USEC_PER_SEC
#define TRASH_TRIES 60

const char *gw_cgroup_mode_name(enum gw_cgroup_mode m) {
        return m == GW_CGROUP_V2 ? "v2" : m == GW_CGROUP_V1 ? "v1" : "none";
}

static bool exists(const char *dir, const char *file) {
        char p[640];
        snprintf(p, sizeof p, "%s/%s", dir, file);
        return access(p, F_OK) == 0;
}

static int write_file(const char *dir, const char *file, const char *text) {
        char p[640];
        snprintf(p, sizeof p, "%s/%s", dir, file);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        return n == (ssize_t) strlen(text) ? 0 : -errno;
}

/* Each daemon gets its own directory, named after its state dir, so that two daemons on
 * one host (tests, a second instance) never share a job's cgroup. */
static bool try_base(const char *root, const char *probe, const char *instance, struct gw_cgroups *ret) {
        if (!exists(root, probe))
                return false;
        snprintf(ret->base, sizeof ret->base, "%s/gpuward", root);
        if (mkdir(ret->base, 0755) < 0 && errno != EEXIST)
                return false;
        size_t l = strlen(ret->base);
        snprintf(ret->base + l, sizeof ret->base - l, "/%s", instance);
        if (mkdir(ret->base, 0755) < 0 && errno != EEXIST)
                return false;
        return access(ret->base, W_OK) == 0;
}

/* Job cgroups count their OOM kills only with the memory controller enabled for them: asked
 * for on gpuward's directory and on base, which hold no process (best effort: where the
 * host's root does not delegate it, the count is unknown and the host-wide one is used).
 * The controller only accounts: no limit is set. */
static bool enable_memory(const char *base) {
        char parent[512];
        snprintf(parent, sizeof parent, "%s", base);
        char *slash = strrchr(parent, '/');
        if (slash)
                *slash = '\0';
        (void) write_file(parent, "cgroup.subtree_control", "+memory");
        (void) write_file(base, "cgroup.subtree_control", "+memory");
        char p[640], line[256] = "";
        snprintf(p, sizeof p, "%s/cgroup.subtree_control", base);
        _cleanup_fclose_ FILE *f = fopen(p, "re");
        if (!f || !fgets(line, sizeof line, f))
                return false;
        /* A space-separated list ("cpu io memory pids"). */
        for (const char *w = line; (w = strstr(w, "memory")); w += 6)
                if ((w == line || w[-1] == ' ') && (w[6] == ' ' || w[6] == '\n' || !w[6]))
                        return true;
        return false;
}

void gw_cgroup_detect(const char *want, const char *state_dir, struct gw_cgroups *ret, char *note, size_t notelen) {
        memset(ret, 0, sizeof *ret);
        char instance[64];
        struct stat st;
        if (stat(state_dir, &st) == 0)
                snprintf(instance, sizeof instance, "state-%llx-%llx", (unsigned long long) st.st_dev,
                         (unsigned long long) st.st_ino);
        else
                snprintf(instance, sizeof instance, "state-unknown");
        note[0] = '\0';
        if (!strcmp(want, "none")) {
                snprintf(note, notelen, "off by config");
                return;
        }
        if (strcmp(want, "v1")) {
                const char *roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
                for (size_t i = 0; i < ELEMENTSOF(roots); i++)
                        if (try_base(roots[i], "cgroup.controllers", instance, ret) &&
                            exists(ret->base, "cgroup.kill")) {
                                ret->mode = GW_CGROUP_V2;
                                ret->memory = enable_memory(ret->base);
                                return;
                        }
        }
        if (strcmp(want, "v2") && try_base("/sys/fs/cgroup/freezer", "freezer.state", instance, ret)) {
                ret->mode = GW_CGROUP_V1;
                return;
        }
        memset(ret, 0, sizeof *ret);
        snprintf(note, notelen,
                 "no writable cgroup v2 (with cgroup.kill) or v1 freezer hierarchy%s; "
                 "jobs are tracked by process group and subreaper tree",
                 geteuid() ? " (not root)" : "");
}

int gw_cgroup_create(const struct gw_cgroups *cg, int64_t job_id, int attempt, char **ret_dir) {
        if (cg->mode == GW_CGROUP_NONE)
                return -EOPNOTSUPP;
        char dir[700];
        snprintf(dir, sizeof dir, "%s/job-%lld.%d", cg->base, (long long) job_id, attempt);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        *ret_dir = gw_xstrdup(dir);
        return 0;
}

#define POOL_SLOTS_MAX 64
#define POOL_NAME_TRIES 1000

/* Whether dir is a directory right under base whose name begins with prefix. */
static bool under_base(const struct gw_cgroups *cg, const char *dir, const char *prefix) {
        size_t l = strlen(cg->base);
        return l && !strncmp(dir, cg->base, l) && dir[l] == '/' && !strncmp(dir + l + 1, prefix, strlen(prefix)) &&
               !strchr(dir + l + 1, '/');
}

static bool is_slot(const struct gw_cgroups *cg, const char *dir) { return under_base(cg, dir, "slot-"); }

bool gw_cgroup_is_job(const struct gw_cgroups *cg, const char *dir) {
        return cg->mode != GW_CGROUP_NONE && dir && (is_slot(cg, dir) || under_base(cg, dir, "job-"));
}

static void slot_close(struct gw_cgroup_slot *c) {
        if (c->dir_fd >= 0)
                (void) close(c->dir_fd);
        if (c->events_fd >= 0)
                (void) close(c->events_fd);
        if (c->memory_fd >= 0)
                (void) close(c->memory_fd);
        free(c->dir);
}

/* Takes slot i out of the table (its directory stays: the caller removes it). */
static void slot_drop(struct gw_cgroup_pool *p, size_t i) {
        slot_close(&p->v[i]);
        p->v[i] = p->v[--p->n];
}

/* A "key value" line of one of the slot's files, kept open after its first read: each
 * give-back then costs one pread instead of an open, a read and a close. */
static int slot_counter(const struct gw_cgroup_slot *c, int *fd, const char *file, const char *key, uint64_t *ret) {
        if (*fd < 0 && c->dir_fd >= 0)
                *fd = openat(c->dir_fd, file, O_RDONLY | O_CLOEXEC);
        return *fd < 0 ? -ENOENT : gw_proc_counter_fd(*fd, key, ret);
}

int gw_cgroup_pool_take(const struct gw_cgroups *cg, struct gw_cgroup_pool *p, char **ret_dir) {
        if (cg->mode != GW_CGROUP_V2)
                return -EOPNOTSUPP;
        for (size_t i = p->n; i-- > 0;)
                if (p->v[i].idle) {
                        p->v[i].idle = false;
                        *ret_dir = gw_xstrdup(p->v[i].dir);
                        return 0;
                }
        /* A slot-N an earlier daemon left may hold an adopted job: never shared (EEXIST). */
        for (unsigned i = 0; i < POOL_NAME_TRIES; i++) {
                char dir[700];
                snprintf(dir, sizeof dir, "%s/slot-%u", cg->base, ++p->next);
                if (mkdir(dir, 0755) < 0) {
                        if (errno != EEXIST)
                                return -errno;
                        continue;
                }
                *ret_dir = gw_xstrdup(dir);
                if (p->n == POOL_SLOTS_MAX) /* beyond: used once, removed at its end */
                        return 0;
                if (p->n == p->cap) {
                        p->cap = p->cap ? 2 * p->cap : 8;
                        p->v = gw_xrealloc(p->v, p->cap * sizeof *p->v);
                }
                p->v[p->n++] = (struct gw_cgroup_slot){ .dir = gw_xstrdup(dir),
                                                        .dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
                                                        .events_fd = -1,
                                                        .memory_fd = -1 };
                return 0;
        }
        return -EEXIST;
}

bool gw_cgroup_pool_give_back(const struct gw_cgroups *cg, struct gw_cgroup_pool *p, const char *dir) {
        if (cg->mode != GW_CGROUP_V2 || !is_slot(cg, dir))
                return false;
        size_t i = 0;
        while (i < p->n && (p->v[i].idle || strcmp(p->v[i].dir, dir)))
                i++;
        if (i == p->n)
                return false; /* an earlier daemon's, or one beyond the table */
        struct gw_cgroup_slot *c = &p->v[i];
        if (c->spoiled) {
                slot_drop(p, i);
                return false;
        }
        uint64_t v;
        struct stat st;
        /* A cgroup made inside it (by a job run as root) would outlive the attempt in the next
         * one's: a directory's link count is 2 plus its subdirectories, a cgroup's too. */
        bool reusable =
                slot_counter(c, &c->events_fd, "cgroup.events", "populated", &v) == 0 && v == 0 &&
                fstat(c->dir_fd, &st) == 0 && st.st_nlink == 2 &&
                (!cg->memory || (slot_counter(c, &c->memory_fd, "memory.events", "oom_kill", &v) == 0 && v == 0));
        if (reusable)
                c->idle = true;
        else
                slot_drop(p, i);
        return reusable;
}

void gw_cgroup_pool_spoil(struct gw_cgroup_pool *p, const char *dir) {
        for (size_t i = 0; dir && i < p->n; i++)
                if (!p->v[i].idle && !strcmp(p->v[i].dir, dir))
                        p->v[i].spoiled = true;
}

void gw_cgroup_pool_free(struct gw_cgroup_pool *p) {
        for (size_t i = 0; i < p->n; i++) {
                if (p->v[i].idle)
                        (void) rmdir(p->v[i].dir);
                slot_close(&p->v[i]);
        }
        free(p->v);
        *p = (struct gw_cgroup_pool){ 0 };
}

/* Pids listed in the cgroup, at most cap. */
static size_t read_procs(const char *dir, pid_t *buf, size_t cap) {
        char p[640];
        snprintf(p, sizeof p, "%s/cgroup.procs", dir);
        _cleanup_fclose_ FILE *f = fopen(p, "re");
        size_t n = 0;
        long v;
        while (f && n < cap && fscanf(f, "%ld", &v) == 1)
                buf[n++] = (pid_t) v;
        return n;
}

int gw_cgroup_signal(enum gw_cgroup_mode mode, const char *dir, int sig, pid_t skip_group) {
        if (mode == GW_CGROUP_V2 && sig == SIGKILL)
                return write_file(dir, "cgroup.kill", "1");
        bool frozen = mode == GW_CGROUP_V1 && write_file(dir, "freezer.state", "FROZEN") == 0;
        pid_t pids[4096];
        size_t n = read_procs(dir, pids, ELEMENTSOF(pids));
        for (size_t i = 0; i < n; i++)
                if (skip_group <= 0 || getpgid(pids[i]) != skip_group)
                        (void) kill(pids[i], sig);
        if (frozen)
                (void) write_file(dir, "freezer.state", "THAWED");
        return (int) n;
}

int gw_cgroup_populated(const char *dir) {
        pid_t pid;
        return read_procs(dir, &pid, 1) > 0;
}

int gw_cgroup_remove(const char *dir) { return rmdir(dir) < 0 ? -errno : 0; }

static bool kept(const char *dir, char *const *keep, size_t n_keep) {
        for (size_t i = 0; i < n_keep; i++)
                if (keep[i] && !strcmp(keep[i], dir))
                        return true;
        return false;
}

size_t gw_cgroup_sweep(const struct gw_cgroups *cg, char *const *keep, size_t n_keep) {
        if (cg->mode == GW_CGROUP_NONE)
                return 0;
        DIR *dir = opendir(cg->base);
        size_t gone = 0;
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
                char path[800];
                if ((strncmp(e->d_name, "job-", 4) && strncmp(e->d_name, "slot-", 5)) ||
                    snprintf(path, sizeof path, "%s/%s", cg->base, e->d_name) >= (int) sizeof path ||
                    kept(path, keep, n_keep))
                        continue;
                gone += rmdir(path) == 0;
        }
        if (dir)
                (void) closedir(dir);
        return gone;
}

void gw_cgroup_release(struct gw_cgroups *cg) {
        if (cg->mode != GW_CGROUP_NONE)
                (void) rmdir(cg->base); /* only succeeds when no job cgroup is left */
}

void gw_cgroup_trash_add(struct gw_cgroup_trash *t, const char *dir) {
        int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return; /* gone already (the start's sweep, or its attempt's own end) */
        if (t->n == t->cap) {
                t->cap = t->cap ? 2 * t->cap : 16;
                t->v = gw_xrealloc(t->v, t->cap * sizeof *t->v);
        }
        t->v[t->n++] = (struct gw_cgroup_doomed){ gw_xstrdup(dir), 0, fd };
}

static void doomed_free(struct gw_cgroup_doomed *c) {
        (void) close(c->fd);
        free(c->dir);
}

/* Removes the directory if it is still the one put in the trash: 0 once that one is gone. */
static int doomed_remove(const struct gw_cgroup_doomed *c) {
        struct stat now, then;
        if (stat(c->dir, &now) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(c->fd, &then) < 0 || now.st_dev != then.st_dev || now.st_ino != then.st_ino)
                return 0; /* another directory of that name now: not this one to remove */
        return gw_cgroup_remove(c->dir);
}

gw_usec_t gw_cgroup_trash_sweep(struct gw_cgroup_trash *t, gw_usec_t now) {
        bool retry_due = now >= t->retry_at;
        size_t kept_n = 0;
        for (size_t i = 0; i < t->n; i++) {
                struct gw_cgroup_doomed *c = &t->v[i];
                if (c->tries > 0 && !retry_due) {
                        t->v[kept_n++] = *c;
                        continue;
                }
                int r = doomed_remove(c);
                if (r == 0 || r == -ENOENT) {
                        doomed_free(c);
                        continue;
                }
                if (++c->tries >= TRASH_TRIES) {
                        log_warn("cgroup %s still cannot be removed after %d s (%s); the next start of gpuwardd "
                                 "removes it once it is empty",
                                 c->dir, TRASH_TRIES * (int) (TRASH_RETRY_USEC / GW_USEC_PER_SEC), strerror(-r));
                        doomed_free(c);
                        continue;
                }
                t->v[kept_n++] = *c;
        }
        t->n = kept_n;
        if (t->n == 0)
                return GW_USEC_INFINITY;
        if (retry_due || t->retry_at == 0)
                t->retry_at = now + TRASH_RETRY_USEC;
        return t->retry_at;
}

void gw_cgroup_trash_free(struct gw_cgroup_trash *t) {
        for (size_t i = 0; i < t->n; i++)
                doomed_free(&t->v[i]);
        free(t->v);
        *t = (struct gw_cgroup_trash){ 0 };
}
