/* What the dataset cache keeps across a restart (cache_int.h): each entry's use file
 * (entries/KEY/use, core/cache.h) with its last use, its users and which version each job it
 * handed a copy to reads (a node agent's stager writes the same file, its pins by process,
 * cache_node.c); and, at the daemon's restart, the running jobs' pins taken again before
 * anything may evict or trash what they read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/jobrec.h"
#include "daemon/cache/cache_int.h"
#include "daemon/exec/executor.h"

#define USE_MAX_LINES 100000 /* far above what the daemon writes: one pin a queued job */

void gw_cache_use_load(struct gw_cache *c, struct gw_cache_entry *e) {
        char p[4200];
        snprintf(p, sizeof p, "%s/entries/%s/use", c->dir, e->key);
        int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return; /* none yet: made by a daemon before it, or never used */
        /* The daemon's own file only: entries/KEY is root's 0711, this checks it anyway. */
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
                (void) close(fd);
                return;
        }
        _cleanup_fclose_ FILE *f = fdopen(fd, "re");
        if (!f) {
                (void) close(fd);
                return;
        }
        char line[GW_CACHE_USE_LINE_MAX + 2];
        size_t cap = 0;
        for (int n = 0; n < USE_MAX_LINES && fgets(line, sizeof line, f); n++) {
                struct gw_cache_use_line l;
                size_t len = strcspn(line, "\n");
                if (gw_cache_use_parse(line, len, &l) < 0)
                        continue;
                if (l.kind == GW_CACHE_USE_LAST)
                        e->last_use = l.last_use;
                else if (l.kind == GW_CACHE_USE_USER && e->n_users < GW_CACHE_MAX_USERS)
                        e->users[e->n_users++] = gw_xstrdup(l.user);
                else if (l.kind == GW_CACHE_USE_PIN || l.kind == GW_CACHE_USE_PROC) {
                        if (e->n_saved == cap) {
                                cap = cap ? cap * 2 : 8;
                                e->saved = gw_xrealloc(e->saved, cap * sizeof *e->saved);
                        }
                        e->saved[e->n_saved++] =
                                (struct gw_cache_pin){ .job = l.job, .v = l.version, .pid = l.pid, .start = l.start };
                }
        }
}

static bool put(int fd, const struct gw_cache_use_line *l) {
        char buf[GW_CACHE_USE_LINE_MAX];
        size_t n = gw_cache_use_format(l, buf, sizeof buf);
        return !n || write(fd, buf, n) == (ssize_t) n;
}

static bool put_all(int fd, const struct gw_cache_entry *e, const struct gw_cache_use_line *pins, size_t n) {
        if (!put(fd, &(struct gw_cache_use_line){ .kind = GW_CACHE_USE_LAST, .last_use = e->last_use }))
                return false;
        for (size_t i = 0; i < e->n_users; i++) {
                struct gw_cache_use_line l = { .kind = GW_CACHE_USE_USER };
                snprintf(l.user, sizeof l.user, "%s", e->users[i]);
                if (!put(fd, &l))
                        return false;
        }
        for (size_t i = 0; i < n; i++)
                if (!put(fd, &pins[i]))
                        return false;
        return true;
}

/* Written whole beside the old one, through the descriptor that made it, and renamed over it:
 * a crash leaves one or the other.  entries/KEY is root's 0711, so nobody else can put a link
 * or a file there; the open and the check after the rename say so anyway. */
int gw_cache_use_write(const struct gw_cache *c, const struct gw_cache_entry *e, const struct gw_cache_use_line *pins,
                       size_t n) {
        char tmp[4200], p[4200];
        snprintf(p, sizeof p, "%s/entries/%s/use", c->dir, e->key);
        snprintf(tmp, sizeof tmp, "%s.new", p);
        (void) unlink(tmp); /* left by a crash: never written through */
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        struct stat made, now;
        int r = 0;
        errno = 0;
        if (fd < 0 || fstat(fd, &made) < 0 || !put_all(fd, e, pins, n) || fsync(fd) < 0 || rename(tmp, p) < 0)
                r = errno ? -errno : -EIO; /* a short write sets none */
        else if (lstat(p, &now) < 0 || now.st_dev != made.st_dev || now.st_ino != made.st_ino)
                r = -EEXIST; /* what lies there now is not the file written */
        if (r < 0) {
                log_warn("cache: cannot write %s: %s; a restart forgets its last use and pins", p, strerror(-r));
                (void) unlink(tmp);
        }
        return r;
}

/* The pins of jobs (running or queued) that were handed a version of e, into out (NULL: only
 * counted); how many. */
static size_t job_pins(struct gw_djob *const *jobs, size_t n, const struct gw_cache_entry *e,
                       struct gw_cache_use_line *out) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                const struct gw_cache_job *cj = jobs[i]->cache;
                if (!cj || cj->e != e || !cj->ready || !cj->pin)
                        continue;
                if (out)
                        out[k] = (struct gw_cache_use_line){ .kind = GW_CACHE_USE_PIN,
                                                             .job = jobs[i]->job->id,
                                                             .version = cj->pin->v };
                k++;
        }
        return k;
}

void gw_cache_use_save(struct gw_daemon *d, struct gw_cache_entry *e) {
        size_t n = job_pins(d->jobs.running, d->jobs.n_running, e, NULL) +
                   job_pins(d->jobs.queue, d->jobs.n_queue, e, NULL);
        _cleanup_free_ struct gw_cache_use_line *pins = gw_xcalloc(n + 1, sizeof *pins);
        n = job_pins(d->jobs.running, d->jobs.n_running, e, pins);
        n += job_pins(d->jobs.queue, d->jobs.n_queue, e, pins + n);
        (void) gw_cache_use_write(d->cache, e, pins, n);
}

static struct gw_cache_ver *saved_version(const struct gw_cache_entry *e, int64_t job) {
        for (size_t i = 0; i < e->n_saved; i++)
                if (e->saved[i].job == job)
                        for (struct gw_cache_ver *v = e->vers; v; v = v->next)
                                if (v->v == e->saved[i].v)
                                        return v;
        return NULL;
}

void gw_cache_job_recovered(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_cache *c = d->cache;
        struct gw_job *j = dj->job;
        if (!c || !j->dataset || dj->cache || gw_backend_placement(d) != GW_EXEC_PLACE_HERE)
                return;
        struct gw_cache_entry *e = c->entries;
        while (e && strcmp(e->source, j->dataset))
                e = e->next;
        /* Without its pin in the use file (a daemon before it), the newest version is the
         * best guess: the one any job since its making was handed. */
        struct gw_cache_ver *v = e ? saved_version(e, j->id) : NULL;
        if (!v && e)
                v = e->vers;
        if (!v) {
                log_warn("job %lld: its dataset %s is no longer in the cache", (long long) j->id, j->dataset);
                return;
        }
        struct gw_cache_job *cj = gw_xcalloc(1, sizeof *cj);
        *cj = (struct gw_cache_job){ .e = e, .pin = v, .dj = dj, .rfd = -1, .gofd = -1, .ready = true };
        v->pins++;
        cj->data_dir = gw_cache_path(c, e, v->v, "data");
        char y[4200];
        snprintf(y, sizeof y, "%s/yaml/%lld.yaml", c->dir, (long long) j->id);
        if (access(y, F_OK) == 0)
                cj->yaml = gw_xstrdup(y);
        dj->cache = cj;
        j->dataset_dir = cj->data_dir;
        j->data_yaml = cj->yaml;
        j->dataset_state = "ready";
        log_info("job %lld: still reads version %d of %s in the cache: kept", (long long) j->id, v->v, e->source);
}

void gw_cache_recovery_done(struct gw_cache *c) {
        for (struct gw_cache_entry *e = c->entries; e; e = e->next) {
                free(e->saved);
                e->saved = NULL;
                e->n_saved = 0;
                gw_cache_trash_unpinned_old(c, e);
        }
}
