/* Checkpoint snapshots: when a run's weights/last.pt or best.pt changes and
 * is complete (the same size and mtime for two samples, and a whole ZIP archive as torch.save
 * writes it), it is copied to STATE_DIR/snapshots/JOB/ with its sha256, the epoch it holds and
 * that epoch's mAP50-95, and recorded in the store.  The copy advances COPY_CHUNK bytes per
 * sample, so that a checkpoint of gigabytes never stalls the event loop, and keeps the
 * source's holes (and leaves zero blocks unwritten): a sparse checkpoint costs its data, not
 * its size.  Retention, after each copy and so also when the job has ended: per job the
 * newest snapshot_keep_last copies of each kind (default 3); under snapshot_cap (default 50G,
 * all snapshots) and snapshot_cap_user (default 20G, each user's), counted in blocks on disk,
 * the oldest copies removed first and each job's newest best.pt last; core/snap_retain.h makes
 * these choices.  Before a copy, room is made for it under both caps; one that alone would
 * not fit is refused, with an event on the job.  The rows of pruned copies stay.  best.pt and
 * last.pt of the same epoch hold the same bytes (Ultralytics 8.1 serialises once): the second
 * copy is a hard link to the first.
 *
 * Restore is training_restore.c's. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/ckpt.h"
#include "core/snap_retain.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/training/training_int.h"
#include "daemon/base/userfile.h"
#include "daemon/joblog/joblog.h"
#include "daemon/training/training.h"
#include "store/snapshots.h"

#define COPY_CHUNK (64u << 20) /* bytes copied per sample */
#define BUF_SIZE (1u << 20)
#define SNAP_MAX ((int64_t) 64 << 30) /* larger checkpoints are not copied */
#define CAP_EVERY (60 * GW_USEC_PER_SEC) /* the cap is also checked this often (a changed config) */

static const char *const file_names[_TRAIN_FILES] = { [TRAIN_LAST] = "last.pt", [TRAIN_BEST] = "best.pt" };
static const char *const kind_names[_TRAIN_FILES] = { [TRAIN_LAST] = "last", [TRAIN_BEST] = "best" };

void gw_train_copy_abort(struct gw_train *t) {
        struct train_copy *c = t->copy;
        if (!c)
                return;
        if (c->src >= 0)
                (void) close(c->src);
        if (c->dst >= 0)
                (void) close(c->dst);
        (void) unlink(c->tmp_path);
        free(c);
        t->copy = NULL;
}

bool gw_train_ckpt_settled(const struct gw_train *t) {
        const struct train_file *last = &t->files[TRAIN_LAST], *best = &t->files[TRAIN_BEST];
        return last->seen && last->stable >= 1 && t->results_seen && last->mtime >= t->results_mtime &&
               (!best->seen || best->stable >= 1);
}

/* Whether the file's last bytes make a whole ZIP archive (core/ckpt.h). */
static bool complete(int fd, const struct stat *st) {
        size_t len = (uint64_t) st->st_size < GW_CKPT_TAIL_LEN ? (size_t) st->st_size : GW_CKPT_TAIL_LEN;
        _cleanup_free_ uint8_t *buf = gw_xmalloc(len ? len : 1);
        if (pread(fd, buf, len, st->st_size - (off_t) len) != (ssize_t) len)
                return false;
        return gw_ckpt_check(buf, len, (uint64_t) st->st_size, NULL, 0) >= 0;
}

static int snap_dir(const struct gw_daemon *d, int64_t job_id, char *buf, size_t n) {
        snprintf(buf, n, "%s/snapshots", d->cfg->state_dir);
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                return -errno;
        snprintf(buf, n, "%s/snapshots/%lld", d->cfg->state_dir, (long long) job_id);
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* The epoch a checkpoint written at mtime holds, and its metric: the newest row's when it was
 * written after that row, else the one before (Ultralytics appends the row first). */
static void epoch_of(const struct gw_train *t, int kind, gw_usec_t mtime, long *ret_epoch, double *ret_metric) {
        bool after = mtime >= t->results_mtime;
        if (kind == TRAIN_LAST) {
                *ret_epoch = after ? t->row_epoch : t->prev_row_epoch;
                *ret_metric = after ? t->row_map : t->prev_row_map;
        } else {
                *ret_epoch = after ? t->best_epoch : t->best_epoch_before;
                *ret_metric = after ? t->best_map : t->best_map_before;
        }
}

/* Whether a copy of need bytes (blocks on disk) fits under the caps at all; if not, the job is
 * told, once a run for each file. */
static bool admit(struct gw_daemon *d, const struct gw_job *j, struct train_file *f, int kind, uint64_t need) {
        uint64_t user = d->cfg->snapshot_cap_user, total = d->cfg->snapshot_cap, free_ = 0;
        const char *over = user && need > user ? "snapshot_cap_user" : total && need > total ? "snapshot_cap" : NULL;
        /* The reserve is the database's: no copy eats into it. */
        bool low = !over && gw_state_disk_low(d, &free_);
        if (!over && !low)
                return true;
        char a[32], b[32], msg[512];
        if (low)
                snprintf(msg, sizeof msg,
                         "weights/%s not snapshotted: the state disk has %s free, under state_reserve %s",
                         file_names[kind], gw_format_size(free_, a, sizeof a),
                         gw_format_size(d->cfg->state_reserve, b, sizeof b));
        else
                snprintf(msg, sizeof msg, "weights/%s not snapshotted: it holds %s on disk, more than %s %s",
                         file_names[kind], gw_format_size(need, a, sizeof a), over,
                         gw_format_size(!strcmp(over, "snapshot_cap") ? total : user, b, sizeof b));
        log_info("job %lld: %s", (long long) j->id, msg);
        if (!f->refused_told && gw_store_job_event(d->store, j->id, j->state, "snapshot_refused", msg) < 0)
                log_warn("job %lld: cannot record a refused snapshot: %s", (long long) j->id,
                         gw_store_errmsg(d->store));
        f->refused_told = true;
        return false;
}

static void start_copy(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t, int kind) {
        const struct gw_job *j = dj->job;
        struct train_file *f = &t->files[kind];
        /* Whatever happens below, this version is dealt with; a new one gets a new try. */
        f->done_size = f->size;
        f->done_mtime = f->mtime;
        struct train_copy *c = gw_xcalloc(1, sizeof *c);
        c->kind = kind;
        c->dst = -1;
        snprintf(c->src_path, sizeof c->src_path, "%s/weights/%s", t->run_dir, file_names[kind]);
        struct stat st;
        char dir[4200];
        int r;
        /* The opened file itself must be the user's (the daemon reads as root what they control). */
        c->src = gw_user_file_open(j, c->src_path, true, O_RDONLY, &st);
        if (c->src < 0)
                c->src = -1;
        if (c->src < 0 || st.st_size != f->size || gw_file_mtime_us(&st) != f->mtime || st.st_size > SNAP_MAX ||
            !complete(c->src, &st)) {
                log_debug("job %lld: %s not snapshotted (changed, too big or incomplete)", (long long) j->id,
                          c->src_path);
                goto fail;
        }
        /* Blocks, not st_size: the copy keeps the holes. */
        uint64_t need = (uint64_t) st.st_blocks * 512;
        if (!admit(d, j, f, kind, need))
                goto fail;
        gw_train_snap_enforce_caps(d, j->uid, need);
        if ((r = snap_dir(d, j->id, dir, sizeof dir)) < 0) {
                log_warn("job %lld: cannot create %s: %s", (long long) j->id, dir, strerror(-r));
                goto fail;
        }
        snprintf(c->tmp_path, sizeof c->tmp_path, "%s/.copy-%s", dir, kind_names[kind]);
        c->dst = open(c->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (c->dst < 0) {
                log_warn("job %lld: cannot create %s: %m", (long long) j->id, c->tmp_path);
                goto fail;
        }
        c->size = st.st_size;
        c->mtime = gw_file_mtime_us(&st);
        gw_sha256_init(&c->sha);
        epoch_of(t, kind, c->mtime, &c->epoch, &c->metric);
        t->copy = c;
        return;
fail:
        t->copy = c;
        gw_train_copy_abort(t);
}

struct keep_ctx {
        struct gw_store_snapshot *v;
        size_t n;
};

static void collect(const struct gw_store_snapshot *s, void *userdata) {
        struct keep_ctx *k = userdata;
        if (s->pruned)
                return;
        k->v = gw_xrealloc(k->v, (k->n + 1) * sizeof *k->v);
        k->v[k->n++] = *s;
}

static void drop(struct gw_daemon *d, const struct gw_store_snapshot *s, const char *why) {
        (void) unlink(s->path);
        if (gw_store_snapshot_set_pruned(d->store, s->id) < 0)
                log_warn("job %lld: cannot mark snapshot %d pruned: %s", (long long) s->job_id, s->seq,
                         gw_store_errmsg(d->store));
        else
                log_debug("job %lld: snapshot %d (%s epoch %ld) removed: %s", (long long) s->job_id, s->seq, s->kind,
                          s->epoch, why);
}

/* The bytes a copy holds on disk on its own: its blocks (a sparse copy holds few), and best.pt
 * and last.pt of one epoch share theirs (a hard link), so each name counts for its share. */
static uint64_t share_of(const struct gw_store_snapshot *s) {
        struct stat st;
        if (stat(s->path, &st) < 0)
                return 0;
        return (uint64_t) st.st_blocks * 512 / (st.st_nlink ? st.st_nlink : 1);
}

/* The kept copies as core/snap_retain.h sees them; evict[] cleared, to be filled by it. */
static struct gw_snap_item *retain_items(const struct keep_ctx *k, bool with_bytes, bool **ret_evict) {
        struct gw_snap_item *items = gw_xcalloc(k->n ? k->n : 1, sizeof *items);
        for (size_t i = 0; i < k->n; i++)
                items[i] = (struct gw_snap_item){ .id = k->v[i].id,
                                                  .job_id = k->v[i].job_id,
                                                  .seq = k->v[i].seq,
                                                  .best = !strcmp(k->v[i].kind, "best"),
                                                  .time = k->v[i].time,
                                                  .bytes = with_bytes ? share_of(&k->v[i]) : 0 };
        *ret_evict = gw_xcalloc(k->n ? k->n : 1, sizeof **ret_evict);
        return items;
}

/* Removes all but the newest snapshot_keep_last copies of each kind of the job. */
static void prune(struct gw_daemon *d, int64_t job_id) {
        struct keep_ctx k = { 0 };
        if (gw_store_snapshots(d->store, job_id, collect, &k) < 0)
                return;
        _cleanup_free_ bool *evict = NULL;
        _cleanup_free_ struct gw_snap_item *items = retain_items(&k, false, &evict);
        if (gw_snap_keep_last(items, k.n, d->cfg->snapshot_keep_last, evict))
                for (size_t i = 0; i < k.n; i++)
                        if (evict[i])
                                drop(d, &k.v[i], "retention (snapshot_keep_last)");
        free(k.v);
}

/* One cap over the kept copies of uid (all of them when uid < 0) not yet gone, making room
 * for incoming bytes: those core/snap_retain.h picks are removed and marked gone. */
static void enforce(struct gw_daemon *d, const struct keep_ctx *k, const struct gw_snap_item *all, bool *gone,
                    int64_t uid, uint64_t cap, uint64_t incoming, const char *why) {
        if (!cap)
                return;
        _cleanup_free_ struct gw_snap_item *items = gw_xcalloc(k->n ? k->n : 1, sizeof *items);
        _cleanup_free_ size_t *at = gw_xcalloc(k->n ? k->n : 1, sizeof *at);
        _cleanup_free_ bool *evict = gw_xcalloc(k->n ? k->n : 1, sizeof *evict);
        size_t m = 0;
        for (size_t i = 0; i < k->n; i++)
                if (!gone[i] && (uid < 0 || k->v[i].uid == uid)) {
                        items[m] = all[i];
                        at[m++] = i;
                }
        if (gw_snap_over_cap(items, m, cap, incoming, evict))
                for (size_t i = 0; i < m; i++)
                        if (evict[i]) {
                                drop(d, &k->v[at[i]], why);
                                gone[at[i]] = true;
                        }
}

void gw_train_snap_enforce_caps(struct gw_daemon *d, int64_t uid, uint64_t incoming) {
        if (!d->cfg->snapshot_cap && !d->cfg->snapshot_cap_user)
                return;
        struct keep_ctx k = { 0 };
        if (gw_store_snapshots_kept(d->store, collect, &k) < 0)
                return;
        _cleanup_free_ bool *gone = NULL;
        _cleanup_free_ struct gw_snap_item *items = retain_items(&k, true, &gone);
        enforce(d, &k, items, gone, -1, d->cfg->snapshot_cap, incoming, "over snapshot_cap, oldest first");
        for (size_t i = 0; i < k.n; i++) {
                int64_t u = k.v[i].uid;
                bool first = true; /* each user once: the first of their copies in the list */
                for (size_t p = 0; p < i && first; p++)
                        first = k.v[p].uid != u;
                if (first && (uid < 0 || u == uid))
                        enforce(d, &k, items, gone, u, d->cfg->snapshot_cap_user, u == uid ? incoming : 0,
                                "over snapshot_cap_user, the user's oldest first");
        }
        free(k.v);
}

void gw_train_snap_housekeeping(struct gw_daemon *d, gw_usec_t mono_now) {
        static gw_usec_t next; /* one daemon per process */
        if (mono_now < next)
                return;
        next = mono_now + CAP_EVERY;
        gw_train_snap_enforce_caps(d, -1, 0);
}

static void finish_copy(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t) {
        struct train_copy *c = t->copy;
        const struct gw_job *j = dj->job;
        struct stat st;
        /* Rewritten while we copied: this copy mixes two versions. */
        if (fstat(c->src, &st) < 0 || st.st_size != c->size || gw_file_mtime_us(&st) != c->mtime) {
                log_debug("job %lld: %s changed while copied; next version", (long long) j->id, c->src_path);
                gw_train_copy_abort(t);
                return;
        }
        uint8_t digest[GW_SHA256_DIGEST_SIZE];
        struct gw_store_snapshot s = { .job_id = j->id,
                                       .epoch = c->epoch,
                                       .metric = c->metric,
                                       .size = (uint64_t) c->size,
                                       .time = d->now_wall,
                                       .src_mtime = c->mtime };
        gw_sha256_final(&c->sha, digest);
        gw_hex_encode(digest, sizeof digest, s.sha256);
        snprintf(s.kind, sizeof s.kind, "%s", kind_names[c->kind]);
        snprintf(s.source, sizeof s.source, "%s", c->src_path);
        char dir[4200], twin[4600];
        (void) snap_dir(d, j->id, dir, sizeof dir);
        snprintf(s.path, sizeof s.path, "%s/e%ld-%s-%.12s.pt", dir, c->epoch, s.kind, s.sha256);
        snprintf(twin, sizeof twin, "%s/e%ld-%s-%.12s.pt", dir, c->epoch, kind_names[!c->kind], s.sha256);
        /* A trailing hole (or zeros) was never written: the copy gets the whole size. */
        if (ftruncate(c->dst, c->size) < 0) {
                log_warn("job %lld: cannot size snapshot %s: %m", (long long) j->id, c->tmp_path);
                gw_train_copy_abort(t);
                return;
        }
        (void) close(c->dst);
        c->dst = -1;
        (void) unlink(s.path);
        /* The same bytes under the other name: link, do not keep them twice. */
        if (link(twin, s.path) == 0 || rename(c->tmp_path, s.path) == 0) {
                (void) unlink(c->tmp_path);
                if (gw_store_snapshot_add(d->store, &s) < 0)
                        log_warn("job %lld: cannot record snapshot %s: %s", (long long) j->id, s.path,
                                 gw_store_errmsg(d->store));
                else {
                        log_debug("job %lld: snapshot %d: %s epoch %ld (%s)", (long long) j->id, s.seq, s.kind, s.epoch,
                                  s.sha256);
                        prune(d, j->id);
                        gw_train_snap_enforce_caps(d, j->uid, 0);
                }
        } else
                log_warn("job %lld: cannot keep snapshot %s: %m", (long long) j->id, s.path);
        gw_train_copy_abort(t);
}

static bool all_zero(const char *p, size_t n) { return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1)); }

/* How many bytes from c->copied on are a hole of the source (0: data there, or no way to
 * tell), at most max. */
static uint64_t hole_ahead(const struct train_copy *c, uint64_t max) {
        off_t data = lseek(c->src, (off_t) c->copied, SEEK_DATA);
        if (data < 0)
                /* ENXIO: only a hole to the end; else SEEK_DATA is not supported: data. */
                data = errno == ENXIO ? (off_t) c->size : (off_t) c->copied;
        uint64_t hole = (uint64_t) data - c->copied;
        return hole < max ? hole : max;
}

/* One step: at most COPY_CHUNK bytes of the source (holes count too: their zeros are hashed).
 * The copy keeps the source's holes and leaves zero blocks unwritten (finish_copy sets the
 * size), so a sparse checkpoint's copy holds only its data. */
static void advance_copy(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t) {
        struct train_copy *c = t->copy;
        _cleanup_free_ char *buf = gw_xmalloc(BUF_SIZE);
        for (uint64_t this_step = 0; this_step < COPY_CHUNK && c->copied < (uint64_t) c->size;) {
                uint64_t left = (uint64_t) c->size - c->copied, want = left < BUF_SIZE ? left : BUF_SIZE;
                uint64_t hole = hole_ahead(c, want);
                if (hole) {
                        memset(buf, 0, (size_t) hole);
                        gw_sha256_update(&c->sha, buf, (size_t) hole);
                        c->copied += hole;
                        this_step += hole;
                        continue;
                }
                ssize_t n = pread(c->src, buf, (size_t) want, (off_t) c->copied);
                bool zero = n > 0 && all_zero(buf, (size_t) n);
                if (n <= 0 || (!zero && pwrite(c->dst, buf, (size_t) n, (off_t) c->copied) != n)) {
                        log_debug("job %lld: copying %s failed", (long long) dj->job->id, c->src_path);
                        gw_train_copy_abort(t);
                        return;
                }
                gw_sha256_update(&c->sha, buf, (size_t) n);
                c->copied += (uint64_t) n;
                this_step += (uint64_t) n;
        }
        if (c->copied == (uint64_t) c->size)
                finish_copy(d, dj, t);
}

void gw_train_snap_step(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t, gw_usec_t now) {
        if (!t->run_dir)
                return;
        for (int k = 0; k < _TRAIN_FILES; k++) {
                struct train_file *f = &t->files[k];
                char path[4400];
                struct stat st;
                snprintf(path, sizeof path, "%s/weights/%s", t->run_dir, file_names[k]);
                if (!gw_user_file_stat(dj->job, path, &st)) {
                        f->seen = false;
                        f->stable = 0;
                        continue;
                }
                if (f->seen && st.st_size == f->size && gw_file_mtime_us(&st) == f->mtime)
                        f->stable++;
                else
                        *f = (struct train_file){ .seen = true,
                                                  .size = st.st_size,
                                                  .mtime = gw_file_mtime_us(&st),
                                                  .done_size = f->done_size,
                                                  .done_mtime = f->done_mtime,
                                                  .refused_told = f->refused_told };
        }
        /* One step of the copy in flight, then of each file that is due (both change in the
         * same epoch: one at a time, one could starve the other). */
        for (int round = 0; round < 2 * _TRAIN_FILES; round++) {
                if (t->copy) {
                        advance_copy(d, dj, t);
                        if (t->copy)
                                return;
                        continue;
                }
                int due = -1;
                for (int k = 0; k < _TRAIN_FILES && due < 0; k++) {
                        const struct train_file *f = &t->files[k];
                        if (f->seen && f->stable >= 1 && (f->size != f->done_size || f->mtime != f->done_mtime))
                                due = k;
                }
                if (due < 0)
                        return;
                start_copy(d, dj, t, due);
        }
}

/* ---- JSON ----------------------------------------------------------------------------- */

static json_t *snap_json(const struct gw_store_snapshot *s) {
        json_t *o = json_pack("{s:i,s:s,s:o,s:o,s:s,s:I,s:f,s:o,s:b}", "seq", s->seq, "kind", s->kind, "epoch",
                              s->epoch >= 0 ? json_integer(s->epoch) : json_null(), "metric",
                              isfinite(s->metric) ? json_real(s->metric) : json_null(), "sha256", s->sha256, "size",
                              (json_int_t) s->size, "time", (double) s->time / 1e6, "source", json_string(s->source),
                              "pruned", s->pruned);
        return o ? o : json_object();
}

struct list_ctx {
        json_t *arr;
        bool all;
        json_t *best, *last;
};

static void list_cb(const struct gw_store_snapshot *s, void *userdata) {
        struct list_ctx *l = userdata;
        if (s->pruned && !l->all)
                return;
        if (l->arr)
                json_array_append_new(l->arr, snap_json(s));
        else if (!s->pruned) {
                json_t **slot = !strcmp(s->kind, "best") ? &l->best : &l->last;
                json_decref(*slot);
                *slot = snap_json(s);
        }
}

json_t *gw_train_snapshots_json(struct gw_daemon *d, int64_t job_id, bool all) {
        struct list_ctx l = { .arr = json_array(), .all = all };
        if (gw_store_snapshots(d->store, job_id, list_cb, &l) < 0) {
                json_decref(l.arr);
                return NULL;
        }
        return l.arr;
}

json_t *gw_train_snapshots_summary(struct gw_daemon *d, int64_t job_id) {
        struct list_ctx l = { 0 };
        if (gw_store_snapshots(d->store, job_id, list_cb, &l) < 0 || (!l.best && !l.last)) {
                json_decref(l.best);
                json_decref(l.last);
                return NULL;
        }
        return json_pack("{s:o,s:o}", "best", l.best ? l.best : json_null(), "last", l.last ? l.last : json_null());
}
