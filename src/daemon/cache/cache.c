/* The dataset cache, the loop's side (cache.h).  Layout under cache_dir, all root's:
 *   entries/KEY/source        the --dataset path (KEY: the first 16 hex of its SHA-256)
 *   entries/KEY/vN/manifest   version N's files (core/cache.h), written once it is verified
 *   entries/KEY/vN/data/      the copy, modes as the source's
 *   yaml/JOB.yaml             a job's rewritten data YAML, its user's
 *   trash/                    what is being removed
 * cache_dir, entries/ and each entry's folder are 0711: a job reaches its copy by its path,
 * nobody lists what others staged.  A version is in use while a queued or running job
 * holds it (pins); eviction takes whole entries that nobody uses, least recently used first. */
#include "daemon/cache/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/sha256.h"
#include "base/userdb.h"
#include "core/cache.h"
#include "core/jobrec.h"
#include "core/retry.h"
#include "core/sched.h"
#include "daemon/cache/cache_int.h"
#include "daemon/base/config.h"
#include "daemon/exec/executor.h"
#include "daemon/life/jobs.h"

#define TICK (200 * GW_USEC_PER_MSEC)

static void stage_waiting(struct gw_daemon *d);

char *gw_cache_path(const struct gw_cache *c, const struct gw_cache_entry *e, int v, const char *tail) {
        char *p;
        if (asprintf(&p, "%s/entries/%s/v%d%s%s", c->dir, e->key, v, tail ? "/" : "", tail ? tail : "") < 0)
                abort();
        return p;
}

static int mkdir_root(const char *p) {
        if (mkdir(p, 0711) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        /* Made by someone else first: not ours to trust. */
        if (st.st_uid != geteuid())
                return -EPERM;
        return fchmod(fd, 0711) < 0 ? -errno : 0;
}

/* Moves dir out of the way and removes it in a child: a copy of 10,000 files is not removed
 * inside the loop. */
static void trash(struct gw_cache *c, const char *dir) {
        static unsigned seq;
        char *t;
        if (asprintf(&t, "%s/trash/%d-%u", c->dir, (int) getpid(), ++seq) < 0)
                abort();
        if (rename(dir, t) == 0)
                (void) gw_cache_remove_spawn(t);
        free(t);
}

static void trash_version(struct gw_cache *c, struct gw_cache_entry *e, struct gw_cache_ver *v) {
        for (struct gw_cache_ver **p = &e->vers; *p; p = &(*p)->next)
                if (*p == v) {
                        *p = v->next;
                        break;
                }
        _cleanup_free_ char *p = gw_cache_path(c, e, v->v, NULL);
        trash(c, p);
        free(v);
}

/* Older versions nobody pins any more. */
void gw_cache_trash_unpinned_old(struct gw_cache *c, struct gw_cache_entry *e) {
        for (struct gw_cache_ver *v = e->vers ? e->vers->next : NULL, *nx; v; v = nx) {
                nx = v->next;
                if (!v->pins)
                        trash_version(c, e, v);
        }
}

static void entry_key(const char *source, char key[17]) {
        char hex[GW_SHA256_HEX_SIZE];
        gw_sha256_hex(source, strlen(source), hex);
        memcpy(key, hex, 16);
        key[16] = '\0';
}

static struct gw_cache_entry *entry_find(struct gw_cache *c, const char *source) {
        for (struct gw_cache_entry *e = c->entries; e; e = e->next)
                if (!strcmp(e->source, source))
                        return e;
        return NULL;
}

/* The version's size and file count from its manifest; -1 if it has none (incomplete). */
static int read_manifest_size(const char *vdir, uint64_t *size, uint64_t *files) {
        char p[4200];
        snprintf(p, sizeof p, "%s/manifest", vdir);
        _cleanup_fclose_ FILE *f = fopen(p, "re");
        if (!f)
                return -1;
        char line[GW_CACHE_LINE_MAX];
        struct gw_cache_file cf;
        *size = *files = 0;
        while (fgets(line, sizeof line, f)) {
                size_t l = strcspn(line, "\n");
                if (gw_cache_manifest_parse(line, l, &cf) == 0 && !cf.dir) {
                        *size += cf.size;
                        (*files)++;
                }
        }
        return 0;
}

/* "v12" is 12; anything else 0. */
static int version_of(const char *name) {
        if (name[0] != 'v')
                return 0;
        char *end;
        long v = strtol(name + 1, &end, 10);
        return *end || v <= 0 || v > 1000000000 ? 0 : (int) v;
}

/* An entry as the last daemon left it: each complete version (one with a manifest) kept,
 * for a job still running may read an older one (the first tick, once the restart's running
 * jobs pinned theirs, trashes the rest); versions cut short by a stop go at once. */
static void load_entry(struct gw_cache *c, const char *key) {
        char p[4200], src[4200];
        snprintf(p, sizeof p, "%s/entries/%s/source", c->dir, key);
        _cleanup_fclose_ FILE *f = fopen(p, "re");
        if (!f || !fgets(src, sizeof src, f) || src[0] != '/')
                return;
        src[strcspn(src, "\n")] = '\0';
        struct gw_cache_entry *e = gw_xcalloc(1, sizeof *e);
        snprintf(e->key, sizeof e->key, "%s", key);
        e->source = gw_xstrdup(src);
        snprintf(p, sizeof p, "%s/entries/%s", c->dir, key);
        DIR *dir = opendir(p);
        int best = 0;
        for (struct dirent *de; dir && (de = readdir(dir));) {
                int v = version_of(de->d_name);
                if (v <= 0)
                        continue;
                best = v > best ? v : best;
                _cleanup_free_ char *vd = gw_cache_path(c, e, v, NULL);
                uint64_t size, files;
                if (read_manifest_size(vd, &size, &files) < 0) {
                        trash(c, vd);
                        continue;
                }
                struct gw_cache_ver *n = gw_xcalloc(1, sizeof *n), **at = &e->vers;
                *n = (struct gw_cache_ver){ .v = v, .size = size, .files = files };
                while (*at && (*at)->v > v) /* newest first */
                        at = &(*at)->next;
                n->next = *at;
                *at = n;
        }
        if (dir)
                closedir(dir);
        e->next_v = best + 1;
        if (e->vers) { /* a daemon before the use file: the newest version's making is its last use */
                struct stat st;
                _cleanup_free_ char *m = gw_cache_path(c, e, e->vers->v, "manifest");
                if (stat(m, &st) == 0)
                        e->last_use = (gw_usec_t) st.st_mtim.tv_sec * GW_USEC_PER_SEC;
        }
        gw_cache_use_load(c, e);
        e->next = c->entries;
        c->entries = e;
}

int gw_cache_open(struct gw_daemon *d) {
        if (!d->cfg->cache_dir || !*d->cfg->cache_dir)
                return 0;
        struct gw_cache *c = gw_xcalloc(1, sizeof *c);
        c->dir = gw_xstrdup(d->cfg->cache_dir);
        c->scan = true;
        d->cache = c;
        /* What the last daemon left in trash/ is removed in the background, under a new name. */
        char p[600], old[640];
        snprintf(p, sizeof p, "%s/trash", c->dir);
        snprintf(old, sizeof old, "%s/trash.%d", c->dir, (int) getpid());
        if (rename(p, old) == 0)
                (void) gw_cache_remove_spawn(old);
        static const char *const sub[] = { "", "/entries", "/yaml", "/trash" };
        for (size_t i = 0; i < ELEMENTSOF(sub); i++) {
                snprintf(p, sizeof p, "%s%s", c->dir, sub[i]);
                int r = mkdir_root(p);
                if (r < 0) {
                        log_err("cache_dir: %s: %s", p, strerror(-r));
                        return r;
                }
        }
        snprintf(p, sizeof p, "%s/entries", c->dir);
        DIR *dir = opendir(p);
        for (struct dirent *de; dir && (de = readdir(dir));)
                if (strlen(de->d_name) == 16)
                        load_entry(c, de->d_name);
        if (dir)
                closedir(dir);
        return 0;
}

static struct gw_cache_job *cjob_free(struct gw_cache_job *cj) {
        if (!cj)
                return NULL;
        if (cj->rfd >= 0)
                (void) close(cj->rfd);
        if (cj->gofd >= 0)
                (void) close(cj->gofd);
        free(cj->data_dir);
        free(cj->yaml);
        free(cj);
        return NULL;
}

/* An entry in memory and its versions (the files on disk are the caller's business). */
static void entry_free(struct gw_cache_entry *e) {
        for (struct gw_cache_ver *v = e->vers, *vn; v; v = vn) {
                vn = v->next;
                free(v);
        }
        for (size_t i = 0; i < e->n_users; i++)
                free(e->users[i]);
        free(e->saved);
        free(e->source);
        free(e);
}

void gw_cache_close(struct gw_daemon *d) {
        struct gw_cache *c = d->cache;
        if (!c)
                return;
        for (struct gw_cache_job *f = c->flight, *nx; f; f = nx) {
                nx = f->next;
                (void) kill(-f->pid, SIGKILL);
                if (f->dj)
                        f->dj->cache = NULL;
                cjob_free(f);
        }
        for (struct gw_cache_entry *e = c->entries, *nx; e; e = nx) {
                nx = e->next;
                entry_free(e);
        }
        free(c->dir);
        free(c);
        d->cache = NULL;
}

static int refuse(struct gw_submit_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct gw_submit_error *err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        err->status = 400;
        snprintf(err->field, sizeof err->field, "dataset");
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

int gw_cache_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        (void) ahead;
        if (!j->dataset)
                return 0;
        if (!d->cache)
                return refuse(err, "dataset: this host has no dataset cache (cache_dir is none in gpuward.conf)");
        if (gw_backend_placement(d) != GW_EXEC_PLACE_HERE)
                return refuse(err, "dataset: staging is done on this host only; this daemon's jobs run elsewhere");
        if (!gw_cache_source_allowed(d->cfg->cache_sources, j->dataset))
                return refuse(err, "dataset: %.120s is not under cache_sources (%.80s)", j->dataset,
                              *d->cfg->cache_sources ? d->cfg->cache_sources : "empty: none allowed");
        return 0;
}

static void set_waiting(struct gw_daemon *d, struct gw_djob *dj, const char *detail) {
        struct gw_job *j = dj->job;
        if (j->state == GW_JOB_PENDING && (j->wait_reason == GW_REASON_NONE || j->wait_reason == GW_REASON_RESOURCES ||
                                           j->wait_reason == GW_REASON_PRIORITY || j->wait_reason == GW_REASON_STAGING))
                j->wait_reason = GW_REASON_STAGING;
        gw_job_text_set(&j->wait_detail, detail);
        (void) d;
}

static struct gw_cache_entry *entry_get(struct gw_cache *c, const char *source) {
        struct gw_cache_entry *e = entry_find(c, source);
        if (e)
                return e;
        e = gw_xcalloc(1, sizeof *e);
        entry_key(source, e->key);
        e->source = gw_xstrdup(source);
        e->next_v = 1;
        char p[4200];
        snprintf(p, sizeof p, "%s/entries/%s", c->dir, e->key);
        (void) mkdir_root(p);
        snprintf(p, sizeof p, "%s/entries/%s/source", c->dir, e->key);
        (void) unlink(p);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
                (void) !write(fd, source, strlen(source));
        e->next = c->entries;
        c->entries = e;
        return e;
}

/* Starts the helper for dj's copy, unless another job's copy of the same dataset is under
 * way: then it waits for that one and walks the source after it (which links everything). */
static void stage(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_cache *c = d->cache;
        struct gw_cache_job *cj = dj->cache;
        if (cj->pid > 0 || cj->ready || cj->retry_at)
                return;
        /* One copy of an entry at a time: the next one links what this one copies. */
        if (cj->e->staging) {
                set_waiting(d, dj, "waiting for another job's copy of the same dataset");
                return;
        }
        /* Copies share the source's server and the node's disk: more at once are no faster. */
        if (c->n_flight >= (size_t) d->cfg->cache_copies) {
                set_waiting(d, dj, "waiting for a copy slot");
                return;
        }
        const struct gw_job *j = dj->job;
        const struct gw_account *a = gw_userdb_uid(d->users, (uint32_t) j->uid, d->now);
        int rp[2], gp[2];
        if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) < 0)
                return;
        if (pipe2(gp, O_CLOEXEC) < 0) {
                (void) close(rp[0]), (void) close(rp[1]);
                return;
        }
        struct gw_cache_entry *e = cj->e;
        cj->newv = e->next_v++;
        _cleanup_free_ char *newd = gw_cache_path(c, e, cj->newv, NULL);
        _cleanup_free_ char *prevd = e->vers ? gw_cache_path(c, e, e->vers->v, NULL) : NULL;
        free(cj->yaml);
        cj->yaml = NULL;
        struct stat st;
        if (stat(j->dataset, &st) < 0 || !S_ISDIR(st.st_mode)) { /* a data YAML, or to be told */
                if (asprintf(&cj->yaml, "%s/yaml/%lld.yaml", c->dir, (long long) j->id) < 0)
                        abort();
        }
        uint32_t gid = (uint32_t) j->gid;
        struct gw_cache_copy args = {
                .source = j->dataset,
                .sources = d->cfg->cache_sources,
                .uid = (uid_t) j->uid,
                .gid = (gid_t) j->gid,
                .groups = a ? a->groups : &gid,
                .n_groups = a ? a->n_groups : 1,
                .prev_dir = prevd,
                .new_dir = newd,
                .yaml_out = cj->yaml,
                .report_fd = rp[1],
                .go_fd = gp[0],
        };
        pid_t pid = gw_cache_copy_spawn(&args);
        (void) close(rp[1]);
        (void) close(gp[0]);
        if (pid < 0) {
                (void) close(rp[0]), (void) close(gp[1]);
                log_warn("job %lld: cannot fork the dataset copy: %s", (long long) j->id, strerror(-pid));
                return;
        }
        cj->pid = pid;
        cj->rfd = rp[0];
        cj->gofd = gp[1];
        cj->nbuf = 0;
        cj->told_total = false;
        cj->done = cj->total = cj->reserved = 0;
        cj->result[0] = '\0'; /* a copy before this one failed: its word is not this one's */
        if (e->vers)
                e->vers->pins++; /* its files are linked from: not evicted meanwhile */
        cj->pin = e->vers;
        e->staging = cj;
        cj->next = c->flight;
        c->flight = cj;
        c->n_flight++;
        dj->job->dataset_state = "copying";
        set_waiting(d, dj, "listing the source as its user");
        log_info("job %lld: staging %s into the cache as %s (helper pid %d)", (long long) j->id, j->dataset, j->user,
                 (int) pid);
}

void gw_cache_job_queued(struct gw_daemon *d, struct gw_djob *dj) {
        if (!d->cache || !dj->job->dataset || dj->cache || dj->job->state == GW_JOB_RUNNING ||
            gw_job_state_is_final(dj->job->state))
                return;
        struct gw_cache_job *cj = gw_xcalloc(1, sizeof *cj);
        *cj = (struct gw_cache_job){ .e = entry_get(d->cache, dj->job->dataset), .dj = dj, .rfd = -1, .gofd = -1 };
        dj->cache = cj;
        dj->job->dataset_state = "waiting";
        stage(d, dj);
        d->jobs.deps_changed = true; /* a pass even when every GPU is busy: its reason */
        d->jobs.sched_dirty = true;
}

static bool entry_in_use(const struct gw_cache_entry *e) {
        if (e->staging)
                return true;
        for (const struct gw_cache_ver *v = e->vers; v; v = v->next)
                if (v->pins)
                        return true;
        return false;
}

static uint64_t entry_size(const struct gw_cache_entry *e) {
        uint64_t s = 0;
        for (const struct gw_cache_ver *v = e->vers; v; v = v->next)
                s += v->size;
        return s;
}

static void evict(struct gw_cache *c, struct gw_cache_entry *e) {
        char p[4200];
        snprintf(p, sizeof p, "%s/entries/%s", c->dir, e->key);
        trash(c, p);
        for (struct gw_cache_entry **pp = &c->entries; *pp; pp = &(*pp)->next)
                if (*pp == e) {
                        *pp = e->next;
                        break;
                }
        entry_free(e);
        c->counts.evictions++;
}

/* Room for more bytes of cj's copy under cache_size: LRU entries nobody uses go, or false
 * (why says so).  What every copy in flight was granted counts as taken. */
static bool make_room(struct gw_daemon *d, struct gw_cache_job *cj, uint64_t more, char *why, size_t n) {
        struct gw_cache *c = d->cache;
        size_t ne = 0;
        uint64_t used = 0;
        for (struct gw_cache_entry *e = c->entries; e; e = e->next, ne++)
                used += entry_size(e);
        for (struct gw_cache_job *f = c->flight; f; f = f->next)
                used += f->reserved;
        _cleanup_free_ struct gw_cache_slot *slots = gw_xcalloc(ne + 1, sizeof *slots);
        _cleanup_free_ struct gw_cache_entry **ents = gw_xcalloc(ne + 1, sizeof *ents);
        _cleanup_free_ size_t *victims = gw_xcalloc(ne + 1, sizeof *victims);
        size_t i = 0;
        for (struct gw_cache_entry *e = c->entries; e; e = e->next, i++) {
                ents[i] = e;
                slots[i] = (struct gw_cache_slot){ .size = entry_size(e),
                                                   .last_use = e->last_use,
                                                   .in_use = entry_in_use(e) };
        }
        int k = gw_cache_evict_pick(slots, ne, used, d->cfg->cache_size, more, victims);
        if (k < 0) {
                char need[32], cap[32];
                snprintf(need, sizeof need, "%.1f MB", (double) (cj->reserved + more) / 1e6);
                snprintf(cap, sizeof cap, "%.1f MB", (double) d->cfg->cache_size / 1e6);
                snprintf(why, n,
                         "dataset: out of space: it needs %s and cache_size is %s, of which queued or running "
                         "jobs' datasets hold the rest",
                         need, cap);
                return false;
        }
        for (int v = 0; v < k; v++) {
                log_info("cache: evicting %s (%" PRIu64 " bytes, least recently used) for job %lld",
                         ents[victims[v]]->source, slots[victims[v]].size, cj->dj ? (long long) cj->dj->job->id : 0LL);
                evict(c, ents[victims[v]]);
        }
        cj->reserved += more;
        return true;
}

/* The helper asks for room (its first ask, at the source's size, or more once it knows what
 * changed): granted, it goes on; else it is told to stop, and the job's reason says why. */
static void grant(struct gw_daemon *d, struct gw_cache_job *cj, uint64_t need) {
        char why[300], line[40];
        bool ok = cj->dj && (need <= cj->reserved || make_room(d, cj, need - cj->reserved, why, sizeof why));
        int len =
                ok ? snprintf(line, sizeof line, "g %" PRIu64 "\n", cj->reserved) : snprintf(line, sizeof line, "n\n");
        (void) !write(cj->gofd, line, (size_t) len);
        if (!ok && cj->dj)
                snprintf(cj->result, sizeof cj->result, "ERR lost %s", why + strlen("dataset: "));
}

/* What the first ask must make room for: the files the newest version holds are linked, not
 * copied, when they did not change, so they are not counted; the copy asks for more if more
 * of them changed. */
static uint64_t first_need(const struct gw_cache_job *cj) {
        uint64_t linked = cj->pin ? cj->pin->size : 0;
        return cj->total > linked ? cj->total - linked : 0;
}

static void take_line(struct gw_daemon *d, struct gw_cache_job *cj, char *line) {
        unsigned long long a = 0, b = 0;
        if (sscanf(line, "T %llu %llu", &a, &b) == 2 && !cj->told_total) {
                cj->total = a;
                cj->told_total = true;
                grant(d, cj, first_need(cj));
        } else if (sscanf(line, "R %llu", &a) == 1 && cj->told_total) {
                grant(d, cj, a);
        } else if (sscanf(line, "P %llu", &a) == 1)
                cj->done = a;
        else if (!strncmp(line, "OK", 2) || !strcmp(line, "SAME") || !strncmp(line, "ERR ", 4)) {
                if (strncmp(cj->result, "ERR", 3)) /* the first error stays */
                        snprintf(cj->result, sizeof cj->result, "%s", line);
        }
        if (cj->dj && !cj->ready && cj->told_total) {
                char detail[128];
                gw_cache_progress_text(cj->done, cj->total, detail, sizeof detail);
                set_waiting(d, cj->dj, detail);
        }
}

static void drain(struct gw_daemon *d, struct gw_cache_job *cj) {
        for (;;) {
                ssize_t r = read(cj->rfd, cj->buf + cj->nbuf, sizeof cj->buf - 1 - cj->nbuf);
                if (r <= 0)
                        return;
                cj->nbuf += (size_t) r;
                char *nl;
                while ((nl = memchr(cj->buf, '\n', cj->nbuf))) {
                        *nl = '\0';
                        take_line(d, cj, cj->buf);
                        size_t used = (size_t) (nl - cj->buf) + 1;
                        memmove(cj->buf, nl + 1, cj->nbuf - used);
                        cj->nbuf -= used;
                }
                if (cj->nbuf == sizeof cj->buf - 1)
                        cj->nbuf = 0; /* a line too long: not the helper's */
        }
}

/* The copies whose backoff is over start again; the next backoff's end, or next. */
static gw_usec_t retries_due(struct gw_daemon *d, gw_usec_t next) {
        bool due = false;
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_cache_job *cj = d->jobs.queue[i]->cache;
                if (!cj || !cj->retry_at)
                        continue;
                if (cj->retry_at > d->now) {
                        next = cj->retry_at < next ? cj->retry_at : next;
                        continue;
                }
                cj->retry_at = 0;
                d->cache->n_retrying--;
                d->jobs.queue[i]->job->dataset_state = "waiting";
                due = true;
        }
        if (due)
                stage_waiting(d); /* in queue order, as far as the slots go */
        return next;
}

gw_usec_t gw_cache_tick(struct gw_daemon *d) {
        struct gw_cache *c = d->cache;
        if (!c)
                return GW_USEC_INFINITY;
        if (c->scan) { /* the restart's recovery is over: queued jobs from before it get their copies */
                c->scan = false;
                gw_cache_recovery_done(c);
                for (size_t i = 0; i < d->jobs.n_queue; i++)
                        gw_cache_job_queued(d, d->jobs.queue[i]);
        }
        for (struct gw_cache_job *f = c->flight; f; f = f->next)
                if (f->rfd >= 0)
                        drain(d, f);
        gw_usec_t next = c->flight ? d->now + TICK : GW_USEC_INFINITY;
        if (c->n_retrying)
                next = retries_due(d, next);
        return next;
}

static void flight_remove(struct gw_cache *c, struct gw_cache_job *cj) {
        for (struct gw_cache_job **p = &c->flight; *p; p = &(*p)->next)
                if (*p == cj) {
                        *p = cj->next;
                        c->n_flight--;
                        return;
                }
}

static void add_user(struct gw_cache_entry *e, const char *user) {
        for (size_t i = 0; i < e->n_users; i++)
                if (!strcmp(e->users[i], user))
                        return;
        if (e->n_users < GW_CACHE_MAX_USERS)
                e->users[e->n_users++] = gw_xstrdup(user);
}

/* The copy is verified (OK: a new version; SAME: the one before serves): the job may start. */
static void ready(struct gw_daemon *d, struct gw_cache_job *cj, bool same) {
        struct gw_cache *c = d->cache;
        struct gw_cache_entry *e = cj->e;
        struct gw_djob *dj = cj->dj;
        if (!same) {
                struct gw_cache_ver *v = gw_xcalloc(1, sizeof *v);
                _cleanup_free_ char *vd = gw_cache_path(c, e, cj->newv, NULL);
                (void) read_manifest_size(vd, &v->size, &v->files);
                v->v = cj->newv;
                v->next = e->vers;
                e->vers = v;
                if (cj->pin)
                        cj->pin->pins--;
                v->pins++;
                cj->pin = v;
                gw_cache_trash_unpinned_old(c, e);
                c->counts.misses++;
        } else {
                _cleanup_free_ char *vd = gw_cache_path(c, e, cj->newv, NULL);
                trash(c, vd); /* links only */
                c->counts.hits++;
        }
        unsigned long long copied = 0;
        if (sscanf(cj->result, "OK %llu", &copied) == 1)
                c->counts.bytes_copied += copied;
        e->last_use = d->now_wall;
        add_user(e, dj->job->user);
        cj->ready = true;
        free(cj->data_dir);
        cj->data_dir = gw_cache_path(c, e, cj->pin->v, "data");
        dj->job->dataset_dir = cj->data_dir;
        dj->job->data_yaml = cj->yaml;
        dj->job->dataset_state = "ready";
        gw_cache_use_save(d, e); /* its last use, its users and this job's pin outlive a restart */
        if (dj->job->wait_reason == GW_REASON_STAGING)
                dj->job->wait_reason = GW_REASON_RESOURCES;
        gw_job_text_set(&dj->job->wait_detail, NULL);
        log_info("job %lld: dataset %s ready in the cache (%s, %llu bytes copied)", (long long) dj->job->id,
                 dj->job->dataset, same ? "unchanged: the cached copy serves" : "new version", copied);
}

/* The queue's jobs whose copy waits (for a slot, or for another job's copy of the same
 * dataset) start theirs, first come first, as far as the slots go. */
static void stage_waiting(struct gw_daemon *d) {
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_djob *q = d->jobs.queue[i];
                if (q->cache && !q->cache->ready && q->cache->pid <= 0 && !q->cache->retry_at)
                        stage(d, q);
        }
}

/* The helper's "ERR CLASS WHY" as a verdict; a helper that died says nothing: lost. */
static void failure_verdict(const struct gw_cache_job *cj, struct gw_failure_verdict *v, const char **why) {
        *v = (struct gw_failure_verdict){ .cls = GW_FAILURE_LOST };
        *why = "the copying helper died";
        if (strncmp(cj->result, "ERR ", 4))
                return;
        char cls[32];
        int at = 0;
        *why = cj->result + 4;
        if (sscanf(cj->result + 4, "%31s %n", cls, &at) == 1 && at > 0 && gw_failure_class_from_name(cls) >= 0) {
                v->cls = gw_failure_class_from_name(cls);
                *why += at;
        }
}

/* A copy failed: the job's retry policy decides, as for a failed attempt (core/retry.h), with
 * the copies made so far as its attempts.  Retried: the job waits out the backoff, still
 * queued, holding no GPU; else it fails with the copy's reason. */
static void copy_failed(struct gw_daemon *d, struct gw_cache_job *cj) {
        struct gw_djob *dj = cj->dj;
        struct gw_job *j = dj->job;
        struct gw_failure_verdict v;
        const char *why;
        failure_verdict(cj, &v, &why);
        snprintf(v.evidence, sizeof v.evidence, "%s", why);
        struct gw_retry_policy p;
        gw_job_retry_policy(d, j, &p);
        struct gw_retry_state st = { .attempts = ++cj->failures };
        struct gw_retry_decision dec;
        char reason[700];
        snprintf(reason, sizeof reason, "dataset %s: %s", j->dataset, why);
        if (gw_retry_decide(&p, &st, &v, d->now_wall, &dec) == 0 && dec.retry) {
                char wait[32], detail[900];
                gw_format_duration(dec.backoff, wait, sizeof wait);
                snprintf(detail, sizeof detail, "copy failed (%s); retry %u/%u in %s", why, dec.retry_no, p.max_retries,
                         wait);
                cj->retry_at = d->now + dec.backoff;
                d->cache->n_retrying++;
                j->dataset_state = "retrying";
                set_waiting(d, dj, detail);
                log_info("job %lld: %s; %s", (long long) j->id, reason, dec.reason);
                size_t l = strlen(reason);
                snprintf(reason + l, sizeof reason - l, "; copy retry %u/%u in %s", dec.retry_no, p.max_retries, wait);
                (void) gw_store_job_event(d->store, j->id, j->state, "dataset", reason);
                return;
        }
        if (dec.why == GW_RETRY_WHY_EXHAUSTED) {
                size_t l = strlen(reason);
                snprintf(reason + l, sizeof reason - l, "; %s", dec.reason);
        }
        log_info("job %lld: %s", (long long) j->id, reason);
        dj->cache = cjob_free(cj);
        j->dataset_state = NULL;
        (void) gw_job_end(d, dj, GW_JOB_FAILED, reason, "dataset");
}

bool gw_cache_reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_cache *c = d->cache;
        struct gw_cache_job *cj = c ? c->flight : NULL;
        while (cj && cj->pid != pid)
                cj = cj->next;
        if (!cj)
                return false;
        drain(d, cj);
        flight_remove(c, cj);
        struct gw_cache_entry *e = cj->e;
        e->staging = NULL;
        cj->pid = 0;
        (void) close(cj->rfd);
        (void) close(cj->gofd);
        cj->rfd = cj->gofd = -1;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        bool same = ok && !strcmp(cj->result, "SAME");
        if (!cj->dj) { /* its job went while it copied: what it made goes too */
                _cleanup_free_ char *vd = gw_cache_path(c, e, cj->newv, NULL);
                trash(c, vd);
                if (cj->pin)
                        cj->pin->pins--;
                cjob_free(cj);
        } else if (ok && (same || !strncmp(cj->result, "OK", 2)))
                ready(d, cj, same);
        else {
                _cleanup_free_ char *vd = gw_cache_path(c, e, cj->newv, NULL);
                trash(c, vd);
                if (cj->pin)
                        cj->pin->pins--;
                cj->pin = NULL;
                copy_failed(d, cj);
        }
        stage_waiting(d);
        d->jobs.deps_changed = true;
        d->jobs.sched_dirty = true;
        return true;
}

void gw_cache_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n) {
        if (!d->cache)
                return;
        for (size_t i = 0; i < n; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                if (!dj->job->dataset || (dj->cache && dj->cache->ready))
                        continue;
                if (!pending[i].blocked)
                        pending[i].blocked = GW_REASON_STAGING;
        }
}

void gw_cache_job_freed(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_cache_job *cj = dj->cache;
        if (!cj)
                return;
        dj->cache = NULL;
        dj->job->dataset_dir = dj->job->data_yaml = NULL;
        dj->job->dataset_state = NULL;
        if (cj->retry_at)
                d->cache->n_retrying--;
        if (cj->yaml)
                (void) unlink(cj->yaml);
        if (cj->pid > 0) { /* reaped later (gw_cache_reaped) */
                (void) kill(-cj->pid, SIGKILL);
                cj->dj = NULL;
                return;
        }
        /* Let go at the daemon's stop, a running job keeps reading its copy: its pin stays
         * in the use file and its version on disk for the next daemon (cache_use.c). */
        struct gw_cache *c = d->cache;
        bool ended = gw_job_state_is_final(dj->job->state);
        if (c && cj->pin && --cj->pin->pins == 0 && cj->pin != cj->e->vers && ended)
                trash_version(c, cj->e, cj->pin);
        if (c && cj->ready && ended)
                gw_cache_use_save(d, cj->e);
        cjob_free(cj);
}

size_t gw_cache_rows(struct gw_daemon *d, const char *user, bool admin, struct gw_cache_row **ret) {
        struct gw_cache *c = d->cache;
        size_t n = 0, k = 0;
        for (struct gw_cache_entry *e = c ? c->entries : NULL; e; e = e->next)
                n++;
        struct gw_cache_row *rows = gw_xcalloc(n + 1, sizeof *rows);
        for (struct gw_cache_entry *e = c ? c->entries : NULL; e; e = e->next) {
                if (!e->vers && !e->staging) /* a first copy that failed: nothing cached */
                        continue;
                bool mine = admin;
                for (size_t i = 0; i < e->n_users && !mine; i++)
                        mine = !strcmp(e->users[i], user);
                if (!mine)
                        continue;
                rows[k++] = (struct gw_cache_row){
                        .source = e->source,
                        .size = entry_size(e),
                        .files = e->vers ? e->vers->files : 0,
                        .version = e->vers ? e->vers->v : 0,
                        .last_use = e->last_use,
                        .users = (const char *const *) e->users,
                        .n_users = e->n_users,
                        .in_use = entry_in_use(e),
                        .staging = e->staging != NULL,
                };
        }
        *ret = rows;
        return k;
}

void gw_cache_counts(const struct gw_daemon *d, struct gw_cache_counts *ret) {
        *ret = d->cache ? d->cache->counts : (struct gw_cache_counts){ 0 };
}
