/* The model store as the API shows it (publish.h): the models, each model's versions, one
 * version's manifest and the files it lists.  What is read is the store's own: the folders
 * vN that a publication renamed into place whole (never a temporary one, whose name starts
 * with '.'), and their manifest.json. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/model.h"
#include "daemon/publish/publish.h"

#define LIST_MAX 10000 /* models, or versions of one, listed at most */

static int no_store(struct gw_daemon *d, char *why, size_t n) {
        if (d->cfg->model_store && d->cfg->model_store[0])
                return 0;
        snprintf(why, n, "this gpuwardd has no model store (model_store = none in its settings)");
        return 404;
}

/* What a listing shows of a version: its manifest without the metrics of each column. */
static json_t *summary(const json_t *m) {
        json_t *o = json_object();
        static const char *const keys[] = { "version", "job", "user", "commit", "time", "best_epoch", "metric" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                json_t *v = json_object_get(m, keys[i]);
                json_object_set(o, keys[i], v ? v : json_null());
        }
        return o;
}

static int version_cmp(const void *a, const void *b) {
        long x = *(const long *) a, y = *(const long *) b;
        return (x > y) - (x < y);
}

/* The versions of the model in dirfd, ascending, at most LIST_MAX: a malloc'ed array. */
static long *versions(int dirfd, size_t *ret_n) {
        *ret_n = 0;
        int fd = dup(dirfd);
        DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
        if (!dp) {
                if (fd >= 0)
                        (void) close(fd);
                return NULL;
        }
        rewinddir(dp); /* a dup shares the offset: an earlier listing left it at the end */
        long *v = NULL;
        size_t n = 0, cap = 0;
        for (struct dirent *e; (e = readdir(dp)) && n < LIST_MAX;) {
                long x = gw_model_version_of(e->d_name);
                if (x <= 0)
                        continue;
                if (n == cap)
                        v = gw_xrealloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
                v[n++] = x;
        }
        (void) closedir(dp);
        if (n)
                qsort(v, n, sizeof *v, version_cmp);
        *ret_n = n;
        return v;
}

static int open_model(struct gw_daemon *d, const char *name, const char **ret_field, char *why, size_t n) {
        char err[600];
        if (gw_model_name_check(name, err, sizeof err) < 0) {
                *ret_field = "name";
                snprintf(why, n, "name: '%.64s' is not a model's name", name);
                return -EINVAL;
        }
        int fd = gw_publish_open_model(d->cfg->model_store, name, false, err, sizeof err);
        if (fd < 0) {
                *ret_field = fd == -ENOENT ? "name" : NULL;
                snprintf(why, n, "%s", err);
        }
        return fd;
}

int gw_publish_models_json(struct gw_daemon *d, json_t **ret, char *why, size_t n) {
        int status = no_store(d, why, n);
        if (status)
                return status;
        _cleanup_close_ int sfd = open(d->cfg->model_store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *dp = sfd >= 0 ? fdopendir(dup(sfd)) : NULL;
        if (!dp) {
                snprintf(why, n, "model_store %.200s: %s", d->cfg->model_store, strerror(errno));
                return 503;
        }
        json_t *list = json_array();
        char err[8];
        for (struct dirent *e; (e = readdir(dp)) && json_array_size(list) < LIST_MAX;) {
                if (gw_model_name_check(e->d_name, err, sizeof err) < 0)
                        continue;
                _cleanup_close_ int mfd = openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (mfd < 0)
                        continue;
                size_t nv;
                _cleanup_free_ long *v = versions(mfd, &nv);
                json_t *latest = nv ? gw_publish_read_manifest(mfd, v[nv - 1]) : NULL;
                json_array_append_new(list, json_pack("{s:s,s:I,s:o}", "name", e->d_name, "versions", (json_int_t) nv,
                                                      "latest", latest ? summary(latest) : json_null()));
                json_decref(latest);
        }
        (void) closedir(dp);
        *ret = json_pack("{s:o}", "models", list);
        return 200;
}

int gw_publish_model_json(struct gw_daemon *d, const char *name, json_t **ret, const char **ret_field, char *why,
                          size_t n) {
        *ret_field = NULL;
        int status = no_store(d, why, n);
        if (status)
                return status;
        _cleanup_close_ int mfd = open_model(d, name, ret_field, why, n);
        if (mfd < 0)
                return mfd == -ENOENT || mfd == -EINVAL ? 404 : 503;
        size_t nv;
        _cleanup_free_ long *v = versions(mfd, &nv);
        json_t *list = json_array();
        for (size_t i = 0; i < nv; i++) {
                json_t *m = gw_publish_read_manifest(mfd, v[i]);
                if (m)
                        json_array_append_new(list, summary(m));
                json_decref(m);
        }
        *ret = json_pack("{s:s,s:o}", "name", name, "versions", list);
        return 200;
}

/* The manifest of name's version ("latest" or "vN"); its folder's descriptor in *ret_dir. */
static int manifest_of(struct gw_daemon *d, const char *name, const char *version, json_t **ret, int *ret_dir,
                       long *ret_v, const char **ret_field, char *why, size_t n) {
        *ret_field = NULL;
        int status = no_store(d, why, n);
        if (status)
                return status;
        int mfd = open_model(d, name, ret_field, why, n);
        if (mfd < 0)
                return mfd == -ENOENT || mfd == -EINVAL ? 404 : 503;
        long v = !strcmp(version, "latest") ? gw_publish_latest(mfd) : gw_model_version_of(version);
        json_t *m = v > 0 ? gw_publish_read_manifest(mfd, v) : NULL;
        if (!m) {
                *ret_field = "version";
                if (v < 0)
                        snprintf(why, n, "version: '%.32s' is not latest or vN", version);
                else if (v == 0)
                        snprintf(why, n, "model %s has no version yet", name);
                else
                        snprintf(why, n, "model %s has no version v%ld", name, v);
                (void) close(mfd);
                return 404;
        }
        *ret = m;
        *ret_dir = mfd;
        *ret_v = v;
        return 200;
}

int gw_publish_manifest_json(struct gw_daemon *d, const char *name, const char *version, json_t **ret,
                             const char **ret_field, char *why, size_t n) {
        int mfd = -1;
        long v;
        int status = manifest_of(d, name, version, ret, &mfd, &v, ret_field, why, n);
        if (mfd >= 0)
                (void) close(mfd);
        return status;
}

/* Whether file is one of the names the manifest lists. */
static bool listed(const json_t *m, const char *file) {
        size_t i;
        const json_t *f;
        json_array_foreach (json_object_get(m, "files"), i, f) {
                const char *s = json_string_value(json_object_get(f, "name"));
                if (s && !strcmp(s, file))
                        return true;
        }
        return false;
}

int gw_publish_file_open(struct gw_daemon *d, const char *name, const char *version, const char *file, int *ret_fd,
                         uint64_t *ret_size, const char **ret_field, char *why, size_t n) {
        json_t *m = NULL;
        int mfd = -1;
        long v;
        int status = manifest_of(d, name, version, &m, &mfd, &v, ret_field, why, n);
        if (status != 200)
                return status;
        bool ok = listed(m, file);
        json_decref(m);
        if (!ok) {
                (void) close(mfd);
                *ret_field = "file";
                snprintf(why, n, "file: v%ld of %s has no file '%.64s' (its manifest lists them)", v, name, file);
                return 404;
        }
        char path[128];
        snprintf(path, sizeof path, "v%ld/%s", v, file);
        int fd = openat(mfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        (void) close(mfd);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(why, n, "v%ld/%s of %s cannot be read: %s", v, file, name, strerror(fd < 0 ? errno : EINVAL));
                if (fd >= 0)
                        (void) close(fd);
                return 503;
        }
        *ret_fd = fd;
        *ret_size = (uint64_t) st.st_size;
        return 200;
}
