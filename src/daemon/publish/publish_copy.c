/* One publication, made on a thread of its own (publish.h): the run's files are read as root
 * but only when they are the job's user's (userfile.h: no symlink, no one else's file), copied
 * into a temporary folder inside the model's folder of the store, each file and then the
 * folder synced, and the folder renamed to vN in one step: a reader sees a whole version or
 * none.  Whatever fails on the way (a full disk) removes the temporary folder.
 *
 * One publication at a time (publish.c queues them), so N = the highest version + 1 is not
 * raced by another copy of ours; the rename refuses to replace a folder that appeared anyway. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/sha256.h"
#include "core/model.h"
#include "core/progress.h"
#include "daemon/publish/publish.h"
#include "daemon/base/userfile.h"

#define RESULTS_MAX ((size_t) 64 << 20) /* a results.csv past this is not one */
#define BUF_SIZE (1u << 20)
#define MANIFEST_MAX ((size_t) 1 << 20)

static const char *const run_files[] = { "weights/best.pt", "results.csv", "args.yaml" };
static const char *const file_names[] = { "best.pt", "results.csv", "args.yaml" };
enum { F_BEST, F_RESULTS, F_ARGS, _F_MAX };

struct pub_file {
        bool present;
        uint64_t size;
        char sha256[GW_SHA256_HEX_SIZE];
};

static bool store_dir_safe(int fd, char *why, size_t n, const char *what) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
                snprintf(why, n, "cannot read %s: %s", what, strerror(errno));
                return false;
        }
        /* Others who may write in it could swap a version for their own files. */
        if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                snprintf(why, n, "%s is not gpuwardd's own (owned by uid %u, mode %03o): refusing to publish into it",
                         what, (unsigned) st.st_uid, (unsigned) (st.st_mode & 0777));
                return false;
        }
        return true;
}

int gw_publish_open_model(const char *store, const char *name, bool create, char *why, size_t n) {
        _cleanup_close_ int sfd = open(store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0) {
                int e = errno;
                snprintf(why, n, "model_store %.200s: %s", store, strerror(e));
                return -e;
        }
        char what[300];
        snprintf(what, sizeof what, "model_store %.200s", store);
        if (!store_dir_safe(sfd, why, n, what))
                return -EPERM;
        bool made = create && mkdirat(sfd, name, 0755) == 0;
        if (create && !made && errno != EEXIST) {
                int e = errno;
                snprintf(why, n, "cannot make %.64s in the model store: %s", name, strerror(e));
                return -e;
        }
        int fd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                snprintf(why, n, e == ENOENT ? "no model %.64s" : "model %.64s: %s", name, strerror(e));
                return -e;
        }
        snprintf(what, sizeof what, "the model store's %.64s", name);
        if (!store_dir_safe(fd, why, n, what)) {
                (void) close(fd);
                return -EPERM;
        }
        if (made)
                (void) fsync(sfd); /* the new name survives a crash with the version in it */
        return fd;
}

long gw_publish_latest(int dirfd) {
        int fd = dup(dirfd);
        DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
        if (!dp) {
                if (fd >= 0)
                        (void) close(fd);
                return 0;
        }
        rewinddir(dp); /* a dup shares the offset: an earlier listing left it at the end */
        long max = 0;
        for (struct dirent *e; (e = readdir(dp));) {
                long v = gw_model_version_of(e->d_name);
                if (v > max)
                        max = v;
        }
        (void) closedir(dp);
        return max;
}

json_t *gw_publish_read_manifest(int dirfd, long v) {
        char path[64];
        snprintf(path, sizeof path, "v%ld/manifest.json", v);
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t) st.st_size > MANIFEST_MAX)
                return NULL;
        json_error_t e;
        return json_loadfd(fd, JSON_REJECT_DUPLICATES, &e);
}

/* Writes n bytes to a new file name in dir, hashing them; synced. */
static int write_new(int dir, const char *name, const void *buf, size_t n, struct pub_file *f) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        int r = gw_write_all(fd, buf, n);
        if (r < 0)
                return r;
        if (fsync(fd) < 0)
                return -errno;
        uint8_t digest[GW_SHA256_DIGEST_SIZE];
        gw_sha256(buf, n, digest);
        gw_hex_encode(digest, sizeof digest, f->sha256);
        f->size = n;
        f->present = true;
        return 0;
}

/* Copies the open source src (whose fstat was *st) to a new file name in dir, hashing it;
 * synced.  -ESTALE when the source changed meanwhile. */
static int copy_new(int src, const struct stat *st, int dir, const char *name, struct pub_file *f) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *buf = gw_xmalloc(BUF_SIZE);
        struct gw_sha256 sha;
        gw_sha256_init(&sha);
        uint64_t done = 0;
        for (;;) {
                ssize_t got = pread(src, buf, BUF_SIZE, (off_t) done);
                if (got < 0)
                        return -errno;
                if (got == 0)
                        break;
                int r = gw_write_all(fd, buf, (size_t) got);
                if (r < 0)
                        return r;
                gw_sha256_update(&sha, buf, (size_t) got);
                done += (uint64_t) got;
        }
        struct stat now;
        if (fstat(src, &now) < 0 || now.st_size != st->st_size || now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
            now.st_mtim.tv_nsec != st->st_mtim.tv_nsec || done != (uint64_t) st->st_size)
                return -ESTALE;
        if (fsync(fd) < 0)
                return -errno;
        uint8_t digest[GW_SHA256_DIGEST_SIZE];
        gw_sha256_final(&sha, digest);
        gw_hex_encode(digest, sizeof digest, f->sha256);
        f->size = done;
        f->present = true;
        return 0;
}

/* Removes the temporary folder tmp of dir and what is in it (only files are made there). */
static void remove_tmp(int dir, const char *tmp) {
        int fd = openat(dir, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
        if (dp) {
                for (struct dirent *e; (e = readdir(dp));)
                        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                                (void) unlinkat(dirfd(dp), e->d_name, 0);
                (void) closedir(dp);
        } else if (fd >= 0)
                (void) close(fd);
        (void) unlinkat(dir, tmp, AT_REMOVEDIR);
}

static json_t *number_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* Every column of row but the epoch, by name. */
static json_t *row_json(const struct gw_results *r, size_t row) {
        json_t *o = json_object();
        for (size_t c = 0; c < r->n_cols; c++)
                if (c != r->epoch_col)
                        json_object_set_new(o, r->cols[c].name, number_or_null(gw_results_value(r, row, c)));
        return o;
}

/* The metric a version is listed by: --publish-if-better's, else the run's first mAP50-95
 * (or top-1 accuracy) column; -1 none. */
static long listed_metric(const struct gw_results *r, const char *asked) {
        if (asked)
                return gw_model_metric_col(r, asked);
        if (r->map50_95_col >= 0)
                return r->map50_95_col;
        for (size_t c = 0; c < r->n_cols; c++)
                if (r->cols[c].kind == GW_RESULTS_COL_TOP1)
                        return (long) c;
        return -1;
}

static json_t *manifest(const struct gw_pub_task *t, long version, const struct gw_results *r, long best,
                        const struct pub_file *files) {
        long col = listed_metric(r, t->metric);
        json_t *metric = col >= 0 ? json_pack("{s:s,s:o}", "name", r->cols[col].name, "value",
                                              number_or_null(gw_results_value(r, (size_t) best, (size_t) col)))
                                  : json_null();
        json_t *list = json_array();
        for (int i = 0; i < _F_MAX; i++)
                if (files[i].present)
                        json_array_append_new(list, json_pack("{s:s,s:I,s:s}", "name", file_names[i], "size",
                                                              (json_int_t) files[i].size, "sha256", files[i].sha256));
        return json_pack("{s:s,s:I,s:I,s:s,s:I,s:o,s:f,s:I,s:o,s:o,s:o,s:o,s:b}", "name", t->name, "version",
                         (json_int_t) version, "job", (json_int_t) t->job_id, "user", t->user, "uid",
                         (json_int_t) t->uid, "commit", t->commit ? json_string(t->commit) : json_null(), "time",
                         (double) t->time / 1e6, "best_epoch", (json_int_t) gw_results_epoch1(r, (size_t) best),
                         "metric", metric ? metric : json_null(), "metrics", row_json(r, (size_t) best), "last",
                         row_json(r, r->n_rows - 1), "files", list, "if_better", t->metric != NULL);
}

/* results.csv's bytes, read once: the same bytes are parsed and published. */
static char *read_results(const struct gw_job *owner, const char *path, size_t *ret_len, char *why, size_t n) {
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(owner, path, true, O_RDONLY, &st);
        if (fd < 0) {
                snprintf(why, n, "cannot read %.300s: %s", path, strerror(-fd));
                return NULL;
        }
        if ((size_t) st.st_size > RESULTS_MAX) {
                snprintf(why, n, "%.300s is larger than 64 MiB", path);
                return NULL;
        }
        char *buf = gw_xmalloc((size_t) st.st_size + 1);
        ssize_t got = pread(fd, buf, (size_t) st.st_size, 0);
        if (got < 0) {
                snprintf(why, n, "cannot read %.300s: %s", path, strerror(errno));
                free(buf);
                return NULL;
        }
        buf[got] = '\0';
        *ret_len = (size_t) got;
        return buf;
}

/* --publish-if-better: whether value beats the latest version's; false with why when not. */
static bool better(const struct gw_pub_task *t, int mdir, double value, char *why, size_t n, char *how, size_t hn) {
        long latest = gw_publish_latest(mdir);
        json_t *m = latest ? gw_publish_read_manifest(mdir, latest) : NULL;
        const json_t *v = json_object_get(json_object_get(m, "metrics"), t->metric);
        bool known = json_is_number(v);
        double old = known ? json_number_value(v) : NAN;
        json_decref(m);
        switch (gw_model_compare(t->metric, value, known, old)) {
        case GW_MODEL_FIRST:
                snprintf(how, hn, "; %s %.6g, the first version with it", t->metric, value);
                return true;
        case GW_MODEL_BETTER:
                snprintf(how, hn, "; %s %.6g beats v%ld's %.6g", t->metric, value, latest, old);
                return true;
        case GW_MODEL_NO_VALUE:
                snprintf(why, n, "not published as %s: its best epoch has no value of %s in results.csv", t->name,
                         t->metric);
                return false;
        default:
                snprintf(why, n, "not published as %s: %s %.6g does not beat v%ld's %.6g", t->name, t->metric, value,
                         latest, old);
                return false;
        }
}

/* Copies the run's files into tmp (made in mdir); -errno with why. */
static int fill_tmp(const struct gw_pub_task *t, int tdir, const char *csv, size_t csv_len, struct pub_file *files,
                    char *why, size_t n) {
        struct gw_job owner = { .uid = t->uid };
        char path[4400];
        for (int i = 0; i < _F_MAX; i++) {
                int r;
                if (i == F_RESULTS)
                        r = write_new(tdir, file_names[i], csv, csv_len, &files[i]);
                else {
                        struct stat st;
                        snprintf(path, sizeof path, "%s/%s", t->run_dir, run_files[i]);
                        _cleanup_close_ int src = gw_user_file_open(&owner, path, true, O_RDONLY, &st);
                        if (src == -ENOENT && i == F_ARGS)
                                continue; /* an older trainer's run: published without it */
                        if (src < 0) {
                                snprintf(why, n, "not published as %s: cannot read %.300s: %s", t->name, path,
                                         strerror(-src));
                                return src;
                        }
                        r = copy_new(src, &st, tdir, file_names[i], &files[i]);
                }
                if (r < 0) {
                        snprintf(why, n, "not published as %s: %s %s: %s", t->name,
                                 r == -ESTALE ? "the run rewrote" : "writing", file_names[i],
                                 r == -ESTALE ? "while it was copied" : strerror(-r));
                        return r;
                }
        }
        return 0;
}

/* why says what was not published and why ("not published as NAME: ..."), or only why. */
static void fail(struct gw_pub_task *t, const char *why) {
        t->outcome = GW_PUB_NOT_PUBLISHED;
        if (!strncmp(why, "not published", 13))
                snprintf(t->msg, sizeof t->msg, "%s", why);
        else
                snprintf(t->msg, sizeof t->msg, "not published as %s: %s", t->name, why);
}

/* The copy proper, once the run's numbers are known: temp folder, files, manifest, rename. */
static void publish_into(struct gw_pub_task *t, int mdir, const char *csv, size_t csv_len, const struct gw_results *r,
                         long best, const char *how) {
        char tmp[64], ver[32], why[900];
        struct pub_file files[_F_MAX] = { 0 };
        long version = gw_publish_latest(mdir) + 1;
        snprintf(tmp, sizeof tmp, ".tmp-%lld", (long long) t->job_id);
        snprintf(ver, sizeof ver, "v%ld", version);
        remove_tmp(mdir, tmp); /* one a daemon stopped in the middle of left */
        if (mkdirat(mdir, tmp, 0700) < 0) {
                snprintf(why, sizeof why, "not published as %s: cannot make a folder in the model store: %s", t->name,
                         strerror(errno));
                fail(t, why);
                return;
        }
        _cleanup_close_ int tdir = openat(mdir, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int rr = tdir < 0 ? -errno : fill_tmp(t, tdir, csv, csv_len, files, why, sizeof why);
        if (rr == 0) {
                json_t *m = manifest(t, version, r, best, files);
                _cleanup_free_ char *text = m ? json_dumps(m, JSON_INDENT(2)) : NULL;
                json_decref(m);
                struct pub_file mf;
                rr = text ? write_new(tdir, "manifest.json", text, strlen(text), &mf) : -ENOMEM;
                if (rr < 0)
                        snprintf(why, sizeof why, "not published as %s: writing manifest.json: %s", t->name,
                                 strerror(-rr));
        }
        /* The folder's entries are on disk before its name is: no version without its files. */
        if (rr == 0 && (fchmod(tdir, 0755) < 0 || fsync(tdir) < 0)) {
                rr = -errno;
                snprintf(why, sizeof why, "not published as %s: syncing: %s", t->name, strerror(-rr));
        }
        if (rr == 0 && renameat2(mdir, tmp, mdir, ver, RENAME_NOREPLACE) < 0) {
                rr = -errno;
                snprintf(why, sizeof why, "not published as %s: cannot name it %s: %s", t->name, ver, strerror(-rr));
        }
        if (rr < 0) {
                remove_tmp(mdir, tmp);
                fail(t, why);
                return;
        }
        (void) fsync(mdir);
        t->outcome = GW_PUB_PUBLISHED;
        t->version = version;
        snprintf(t->msg, sizeof t->msg, "published as %s %s (best epoch %ld of %ld, %llu bytes of best.pt)%s", t->name,
                 ver, gw_results_epoch1(r, (size_t) best), gw_results_epoch1(r, r->n_rows - 1),
                 (unsigned long long) files[F_BEST].size, how);
}

void gw_publish_run(struct gw_pub_task *t) {
        char why[900], path[4400], how[300] = "";
        struct gw_job owner = { .uid = t->uid };
        struct stat st;
        snprintf(path, sizeof path, "%s/weights/best.pt", t->run_dir);
        /* No best.pt: nothing to publish, whatever else the run left. */
        if (!gw_user_file_stat(&owner, path, &st)) {
                snprintf(why, sizeof why, "not published as %s: the run %.300s has no weights/best.pt", t->name,
                         t->run_dir);
                fail(t, why);
                return;
        }
        size_t csv_len = 0;
        snprintf(path, sizeof path, "%s/results.csv", t->run_dir);
        _cleanup_free_ char *csv = read_results(&owner, path, &csv_len, why, sizeof why);
        if (!csv) {
                fail(t, why);
                return;
        }
        struct gw_results r;
        long best = gw_results_parse(csv, csv_len, &r) == 0 ? gw_model_best_row(&r) : -2;
        if (best < 0) {
                snprintf(why, sizeof why, "not published as %s: %.300s holds no epoch", t->name, path);
                if (best == -1)
                        gw_results_free(&r);
                fail(t, why);
                return;
        }
        char err[600];
        _cleanup_close_ int mdir = gw_publish_open_model(t->store, t->name, true, err, sizeof err);
        if (mdir < 0) {
                snprintf(why, sizeof why, "not published as %s: %s", t->name, err);
                gw_results_free(&r);
                fail(t, why);
                return;
        }
        if (t->metric) {
                long col = gw_model_metric_col(&r, t->metric);
                double value = col >= 0 ? gw_results_value(&r, (size_t) best, (size_t) col) : NAN;
                if (!better(t, mdir, value, why, sizeof why, how, sizeof how)) {
                        gw_results_free(&r);
                        fail(t, why);
                        return;
                }
        }
        publish_into(t, mdir, csv, csv_len, &r, best, how);
        gw_results_free(&r);
}
