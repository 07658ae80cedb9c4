/* The dataset cache's entry store (cache_int.h): the entries and versions under cache_dir,
 * their pins, eviction, the trash, and the copying helper's start and end.  Nothing here
 * knows of jobs or of the daemon: the daemon's loop (cache.c) and the node agent's stager
 * (cache_node.c) each keep one store and hand it the copies they start.  Layout under cache_dir,
 * all root's:
 *   entries/KEY/source        the --dataset path (KEY: the first 16 hex of its SHA-256)
 *   entries/KEY/vN/manifest   version N's files (core/cache.h), written once it is verified
 *   entries/KEY/vN/data/      the copy, modes as the source's
 *   yaml/NAME.yaml            a copy's rewritten data YAML, its user's
 *   trash/                    what is being removed
 * cache_dir, entries/ and each entry's folder are 0711: a job reaches its copy by its path,
 * nobody lists what others staged.  A version is in use while a copy or a job holds it
 * (pins); eviction takes whole entries that nobody uses, least recently used first. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/sha256.h"
#include "core/cache.h"
#include "daemon/cache/cache_int.h"

char *gw_cache_path(const struct gw_cache *c, const struct gw_cache_entry *e, int v, const char *tail) {
        char *p;
        if (asprintf(&p, "%s/entries/%s/v%d%s%s", c->dir, e->key, v, tail ? "/" : "", tail ? tail : "") < 0)
                abort();
        return p;
}

int gw_cache_mkdir_root(const char *p) {
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
void gw_cache_trash(struct gw_cache *c, const char *dir) {
        static unsigned seq;
        char *t;
        if (asprintf(&t, "%s/trash/%d-%u", c->dir, (int) getpid(), ++seq) < 0)
                abort();
        if (rename(dir, t) == 0)
                (void) gw_cache_remove_spawn(t);
        free(t);
}

void gw_cache_trash_version(struct gw_cache *c, struct gw_cache_entry *e, struct gw_cache_ver *v) {
        for (struct gw_cache_ver **p = &e->vers; *p; p = &(*p)->next)
                if (*p == v) {
                        *p = v->next;
                        break;
                }
        _cleanup_free_ char *p = gw_cache_path(c, e, v->v, NULL);
        gw_cache_trash(c, p);
        free(v);
}

/* Older versions nobody pins any more. */
void gw_cache_trash_unpinned_old(struct gw_cache *c, struct gw_cache_entry *e) {
        for (struct gw_cache_ver *v = e->vers ? e->vers->next : NULL, *nx; v; v = nx) {
                nx = v->next;
                if (!v->pins)
                        gw_cache_trash_version(c, e, v);
        }
}

static void entry_key(const char *source, char key[17]) {
        char hex[GW_SHA256_HEX_SIZE];
        gw_sha256_hex(source, strlen(source), hex);
        memcpy(key, hex, 16);
        key[16] = '\0';
}

struct gw_cache_entry *gw_cache_entry_find(struct gw_cache *c, const char *source) {
        for (struct gw_cache_entry *e = c->entries; e; e = e->next)
                if (!strcmp(e->source, source))
                        return e;
        return NULL;
}

/* The version's size and file count from its manifest; -1 if it has none (incomplete). */
int gw_cache_manifest_size(const char *vdir, uint64_t *size, uint64_t *files) {
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
                if (gw_cache_manifest_size(vd, &size, &files) < 0) {
                        gw_cache_trash(c, vd);
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

/* An entry in memory and its versions (the files on disk are the caller's business). */
void gw_cache_entry_free(struct gw_cache_entry *e) {
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

struct gw_cache_entry *gw_cache_entry_get(struct gw_cache *c, const char *source) {
        struct gw_cache_entry *e = gw_cache_entry_find(c, source);
        if (e)
                return e;
        e = gw_xcalloc(1, sizeof *e);
        entry_key(source, e->key);
        e->source = gw_xstrdup(source);
        e->next_v = 1;
        char p[4200];
        snprintf(p, sizeof p, "%s/entries/%s", c->dir, e->key);
        (void) gw_cache_mkdir_root(p);
        snprintf(p, sizeof p, "%s/entries/%s/source", c->dir, e->key);
        (void) unlink(p);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
                (void) !write(fd, source, strlen(source));
        e->next = c->entries;
        c->entries = e;
        return e;
}

bool gw_cache_entry_in_use(const struct gw_cache_entry *e) {
        if (e->staging)
                return true;
        for (const struct gw_cache_ver *v = e->vers; v; v = v->next)
                if (v->pins)
                        return true;
        return false;
}

uint64_t gw_cache_entry_size(const struct gw_cache_entry *e) {
        uint64_t s = 0;
        for (const struct gw_cache_ver *v = e->vers; v; v = v->next)
                s += v->size;
        return s;
}

void gw_cache_evict(struct gw_cache *c, struct gw_cache_entry *e) {
        char p[4200];
        snprintf(p, sizeof p, "%s/entries/%s", c->dir, e->key);
        gw_cache_trash(c, p);
        for (struct gw_cache_entry **pp = &c->entries; *pp; pp = &(*pp)->next)
                if (*pp == e) {
                        *pp = e->next;
                        break;
                }
        gw_cache_entry_free(e);
        c->counts.evictions++;
}

void gw_cache_flight_remove(struct gw_cache *c, struct gw_cache_job *cj) {
        for (struct gw_cache_job **p = &c->flight; *p; p = &(*p)->next)
                if (*p == cj) {
                        *p = cj->next;
                        c->n_flight--;
                        return;
                }
}

void gw_cache_add_user(struct gw_cache_entry *e, const char *user) {
        for (size_t i = 0; i < e->n_users; i++)
                if (!strcmp(e->users[i], user))
                        return;
        if (e->n_users < GW_CACHE_MAX_USERS)
                e->users[e->n_users++] = gw_xstrdup(user);
}

int gw_cache_store_open(struct gw_cache *c, const char *dir) {
        c->dir = gw_xstrdup(dir);
        /* What the last one left in trash/ is removed in the background, under a new name. */
        char p[600], old[640];
        snprintf(p, sizeof p, "%s/trash", c->dir);
        snprintf(old, sizeof old, "%s/trash.%d", c->dir, (int) getpid());
        if (rename(p, old) == 0)
                (void) gw_cache_remove_spawn(old);
        static const char *const sub[] = { "", "/entries", "/yaml", "/trash" };
        for (size_t i = 0; i < ELEMENTSOF(sub); i++) {
                snprintf(p, sizeof p, "%s%s", c->dir, sub[i]);
                int r = gw_cache_mkdir_root(p);
                if (r < 0) {
                        log_err("cache_dir: %s: %s", p, strerror(-r));
                        return r;
                }
        }
        snprintf(p, sizeof p, "%s/entries", c->dir);
        DIR *d = opendir(p);
        for (struct dirent *de; d && (de = readdir(d));)
                if (strlen(de->d_name) == 16)
                        load_entry(c, de->d_name);
        if (d)
                closedir(d);
        return 0;
}

void gw_cache_store_done(struct gw_cache *c) {
        for (struct gw_cache_entry *e = c->entries, *nx; e; e = nx) {
                nx = e->next;
                gw_cache_entry_free(e);
        }
        c->entries = NULL;
        free(c->dir);
        c->dir = NULL;
}

int gw_cache_helper_start(struct gw_cache *c, struct gw_cache_job *cj, struct gw_cache_copy *args) {
        int rp[2], gp[2];
        if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        if (pipe2(gp, O_CLOEXEC) < 0) {
                int r = -errno;
                (void) close(rp[0]), (void) close(rp[1]);
                return r;
        }
        struct gw_cache_entry *e = cj->e;
        cj->newv = e->next_v++;
        _cleanup_free_ char *newd = gw_cache_path(c, e, cj->newv, NULL);
        _cleanup_free_ char *prevd = e->vers ? gw_cache_path(c, e, e->vers->v, NULL) : NULL;
        args->prev_dir = prevd;
        args->new_dir = newd;
        args->report_fd = rp[1];
        args->go_fd = gp[0];
        pid_t pid = gw_cache_copy_spawn(args);
        (void) close(rp[1]);
        (void) close(gp[0]);
        if (pid < 0) {
                (void) close(rp[0]), (void) close(gp[1]);
                return (int) pid;
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
        return 0;
}

void gw_cache_helper_drain(struct gw_cache_job *cj, void (*take)(void *ctx, struct gw_cache_job *cj, char *line),
                           void *ctx) {
        for (;;) {
                ssize_t r = read(cj->rfd, cj->buf + cj->nbuf, sizeof cj->buf - 1 - cj->nbuf);
                if (r <= 0)
                        return;
                cj->nbuf += (size_t) r;
                char *nl;
                while ((nl = memchr(cj->buf, '\n', cj->nbuf))) {
                        *nl = '\0';
                        take(ctx, cj, cj->buf);
                        size_t used = (size_t) (nl - cj->buf) + 1;
                        memmove(cj->buf, nl + 1, cj->nbuf - used);
                        cj->nbuf -= used;
                }
                if (cj->nbuf == sizeof cj->buf - 1)
                        cj->nbuf = 0; /* a line too long: not the helper's */
        }
}

void gw_cache_helper_line(struct gw_cache_job *cj, const char *line) {
        unsigned long long a = 0;
        if (sscanf(line, "P %llu", &a) == 1)
                cj->done = a;
        else if (!strncmp(line, "OK", 2) || !strcmp(line, "SAME") || !strncmp(line, "ERR ", 4)) {
                if (strncmp(cj->result, "ERR", 3)) /* the first error stays */
                        snprintf(cj->result, sizeof cj->result, "%s", line);
        }
}

int gw_cache_helper_reaped(struct gw_cache *c, struct gw_cache_job *cj, int status) {
        gw_cache_flight_remove(c, cj);
        cj->e->staging = NULL;
        cj->pid = 0;
        (void) close(cj->rfd);
        (void) close(cj->gofd);
        cj->rfd = cj->gofd = -1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return 0;
        return !strcmp(cj->result, "SAME") ? 2 : !strncmp(cj->result, "OK", 2) ? 1 : 0;
}

void gw_cache_helper_keep(struct gw_cache *c, struct gw_cache_job *cj, bool same, gw_usec_t now_wall) {
        struct gw_cache_entry *e = cj->e;
        if (!same) {
                struct gw_cache_ver *v = gw_xcalloc(1, sizeof *v);
                _cleanup_free_ char *vd = gw_cache_path(c, e, cj->newv, NULL);
                (void) gw_cache_manifest_size(vd, &v->size, &v->files);
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
                gw_cache_trash(c, vd); /* links only */
                c->counts.hits++;
        }
        unsigned long long copied = 0;
        if (sscanf(cj->result, "OK %llu", &copied) == 1)
                c->counts.bytes_copied += copied;
        e->last_use = now_wall;
        cj->ready = true;
}

void gw_cache_helper_drop(struct gw_cache *c, struct gw_cache_job *cj) {
        _cleanup_free_ char *vd = gw_cache_path(c, cj->e, cj->newv, NULL);
        gw_cache_trash(c, vd);
        if (cj->pin)
                cj->pin->pins--;
        cj->pin = NULL;
}

void gw_cache_ver_release(struct gw_cache *c, struct gw_cache_entry *e, struct gw_cache_ver *v, bool ended) {
        if (--v->pins == 0 && v != e->vers && ended)
                gw_cache_trash_version(c, e, v);
}

void gw_cache_unpin(struct gw_cache *c, struct gw_cache_job *cj, bool ended) {
        if (cj->pin)
                gw_cache_ver_release(c, cj->e, cj->pin, ended);
        cj->pin = NULL;
}

int gw_cache_room(struct gw_cache *c, struct gw_cache_job *cj, uint64_t more, uint64_t cap, const char *for_whom,
                  char *why, size_t n) {
        size_t ne = 0;
        uint64_t used = 0;
        for (struct gw_cache_entry *e = c->entries; e; e = e->next, ne++)
                used += gw_cache_entry_size(e);
        for (struct gw_cache_job *f = c->flight; f; f = f->next)
                used += f->reserved;
        _cleanup_free_ struct gw_cache_slot *slots = gw_xcalloc(ne + 1, sizeof *slots);
        _cleanup_free_ struct gw_cache_entry **ents = gw_xcalloc(ne + 1, sizeof *ents);
        _cleanup_free_ size_t *victims = gw_xcalloc(ne + 1, sizeof *victims);
        size_t i = 0;
        for (struct gw_cache_entry *e = c->entries; e; e = e->next, i++) {
                ents[i] = e;
                slots[i] = (struct gw_cache_slot){ .size = gw_cache_entry_size(e),
                                                   .last_use = e->last_use,
                                                   .in_use = gw_cache_entry_in_use(e) };
        }
        int k = gw_cache_evict_pick(slots, ne, used, cap, more, victims);
        if (k < 0) {
                char need[32], capt[32];
                snprintf(need, sizeof need, "%.1f MB", (double) (cj->reserved + more) / 1e6);
                snprintf(capt, sizeof capt, "%.1f MB", (double) cap / 1e6);
                snprintf(why, n,
                         "dataset: out of space: it needs %s and cache_size is %s, of which queued or running "
                         "jobs' datasets hold the rest",
                         need, capt);
                return -ENOSPC;
        }
        for (int v = 0; v < k; v++) {
                log_info("cache: evicting %s (%" PRIu64 " bytes, least recently used) for %s", ents[victims[v]]->source,
                         slots[victims[v]].size, for_whom);
                gw_cache_evict(c, ents[victims[v]]);
        }
        cj->reserved += more;
        return 0;
}

/* The helper asks for room (its first ask, or more once it knows what changed): granted, it
 * goes on; else it is told to stop, and its result says why. */
static void grant(struct gw_cache *c, struct gw_cache_job *cj, uint64_t need, uint64_t cap, const char *for_whom,
                  bool stop) {
        char why[300] = "", line[40];
        bool ok = !stop && (need <= cj->reserved ||
                            gw_cache_room(c, cj, need - cj->reserved, cap, for_whom, why, sizeof why) == 0);
        int len =
                ok ? snprintf(line, sizeof line, "g %" PRIu64 "\n", cj->reserved) : snprintf(line, sizeof line, "n\n");
        (void) !write(cj->gofd, line, (size_t) len);
        if (!ok && why[0])
                snprintf(cj->result, sizeof cj->result, "ERR lost %s", why + strlen("dataset: "));
}

/* What the first ask must make room for: the files the newest version holds are linked, not
 * copied, when they did not change, so they are not counted; the copy asks for more if more
 * of them changed. */
static uint64_t first_need(const struct gw_cache_job *cj) {
        uint64_t linked = cj->pin ? cj->pin->size : 0;
        return cj->total > linked ? cj->total - linked : 0;
}

bool gw_cache_helper_ask(struct gw_cache *c, struct gw_cache_job *cj, const char *line, uint64_t cap,
                         const char *for_whom, bool stop) {
        unsigned long long a = 0, b = 0;
        if (sscanf(line, "T %llu %llu", &a, &b) == 2 && !cj->told_total) {
                cj->total = a;
                cj->told_total = true;
                grant(c, cj, first_need(cj), cap, for_whom, stop);
                return true;
        }
        if (sscanf(line, "R %llu", &a) == 1 && cj->told_total) {
                grant(c, cj, a, cap, for_whom, stop);
                return true;
        }
        return false;
}
