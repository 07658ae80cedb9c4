/* The model store's copy beside a database backup (models_copy.h), made on a thread.
 *
 * A version folder is never changed once renamed into place (publish_copy.c), so copying the
 * store's vN folders one by one gives whole versions without stopping publications; the
 * .tmp-* folders of publications under way are not versions and are left out.  Only what a
 * version's manifest lists is copied, with the manifest, and every file's sha256 is checked
 * against it: a copy that does not match is no backup.
 *
 * The destination's folder may be one others write in (a sticky one like /tmp), so, as for
 * the database, nothing is looked up there by name after it is made: a fresh private folder is
 * made through the folder's descriptor, everything is created inside it with O_EXCL and
 * written through the descriptors that created it, and the whole is renamed to its name in
 * one step at the end (never replacing one). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/sha256.h"
#include "core/model.h"
#include "daemon/backup/models_copy.h"
#include "daemon/publish/publish.h"

#define BUF_SIZE (1u << 20)

struct copy_ctx {
        struct gw_models_copy *c;
        char *buf;
};

/* why = the formatted what and r's reason; r. */
__attribute__((format(printf, 3, 4))) static int failf(struct gw_models_copy *c, int r, const char *fmt, ...) {
        char what[600];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        snprintf(c->why, sizeof c->why, "%s: %s", what, strerror(-r));
        return r;
}

/* A folder name in dir opened as a folder, never through a symlink; -errno. */
static int open_dir(int dir, const char *name) {
        int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* A new folder name in dir (0700), opened; -errno. */
static int make_dir(int dir, const char *name) {
        if (mkdirat(dir, name, 0700) < 0)
                return -errno;
        return open_dir(dir, name);
}

/* Copies name from src to a new file in dst with its mode, synced; the bytes' sha256 in hex. */
static int copy_file(struct copy_ctx *x, int src, int dst, const char *name, char hex[GW_SHA256_HEX_SIZE]) {
        _cleanup_close_ int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (in < 0 || fstat(in, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        _cleanup_close_ int out =
                openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777);
        if (out < 0)
                return -errno;
        if (fchmod(out, st.st_mode & 0777) < 0) /* the umask is not the store's */
                return -errno;
        struct gw_sha256 sha;
        gw_sha256_init(&sha);
        for (off_t off = 0;;) {
                ssize_t got = pread(in, x->buf, BUF_SIZE, off);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        return -errno;
                if (got == 0)
                        break;
                int r = gw_write_all(out, x->buf, (size_t) got);
                if (r < 0)
                        return r;
                gw_sha256_update(&sha, x->buf, (size_t) got);
                off += got;
                x->c->bytes += (uint64_t) got;
        }
        if (fsync(out) < 0)
                return -errno;
        uint8_t digest[GW_SHA256_DIGEST_SIZE];
        gw_sha256_final(&sha, digest);
        gw_hex_encode(digest, sizeof digest, hex);
        return 0;
}

/* Version ver (vN) of model in mdir, copied into a new folder of dst. */
static int copy_version(struct copy_ctx *x, const char *model, int mdir, long v, int dst) {
        char ver[32], hex[GW_SHA256_HEX_SIZE];
        snprintf(ver, sizeof ver, "v%ld", v);
        json_t *m = gw_publish_read_manifest(mdir, v);
        if (!m) {
                snprintf(x->c->why, sizeof x->c->why, "%.64s %s: its manifest.json cannot be read", model, ver);
                return -EIO;
        }
        _cleanup_close_ int src = open_dir(mdir, ver);
        _cleanup_close_ int out = src < 0 ? src : make_dir(dst, ver);
        int r = out < 0 ? out : 0;
        if (r < 0)
                failf(x->c, r, "%.64s %s", model, ver);
        size_t i;
        json_t *f;
        json_array_foreach (json_object_get(m, "files"), i, f) {
                const char *name = json_string_value(json_object_get(f, "name"));
                const char *want = json_string_value(json_object_get(f, "sha256"));
                if (r < 0)
                        break;
                if (!name || !want || strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, ".")) {
                        snprintf(x->c->why, sizeof x->c->why, "%.64s %s: its manifest.json lists a bad file", model,
                                 ver);
                        r = -EINVAL;
                } else if ((r = copy_file(x, src, out, name, hex)) < 0)
                        failf(x->c, r, "copying %.64s %.200s", model, name);
                else if (strcmp(hex, want)) {
                        snprintf(x->c->why, sizeof x->c->why,
                                 "%.64s %s: %.100s does not match its sha256 in manifest.json", model, ver, name);
                        r = -EIO;
                } else
                        x->c->files++;
        }
        json_decref(m);
        if (r == 0 && (r = copy_file(x, src, out, "manifest.json", hex)) < 0)
                failf(x->c, r, "copying %.64s %s manifest.json", model, ver);
        if (r == 0 && fsync(out) < 0)
                r = failf(x->c, -errno, "syncing %.64s %s", model, ver);
        if (r == 0)
                x->c->versions++;
        return r;
}

/* Every whole version of the model name in the store sfd, into a new folder of dst. */
static int copy_model(struct copy_ctx *x, int sfd, const char *name, int dst) {
        _cleanup_close_ int mdir = open_dir(sfd, name);
        if (mdir == -ENOTDIR || mdir == -ELOOP)
                return 0; /* not a model's folder */
        if (mdir < 0)
                return failf(x->c, mdir, "the model store's %.64s", name);
        _cleanup_close_ int out = make_dir(dst, name);
        if (out < 0)
                return failf(x->c, out, "making %.64s in the copy", name);
        long latest = gw_publish_latest(mdir);
        /* Versions are numbered from 1 with none removed by gpuwardd; a gap an admin made is
         * skipped. */
        for (long v = 1; v <= latest; v++) {
                char ver[32];
                struct stat st;
                snprintf(ver, sizeof ver, "v%ld", v);
                if (fstatat(mdir, ver, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                int r = copy_version(x, name, mdir, v, out);
                if (r < 0)
                        return r;
        }
        if (fsync(out) < 0)
                return failf(x->c, -errno, "syncing %.64s", name);
        return 0;
}

static int copy_store(struct copy_ctx *x, int dst) {
        _cleanup_close_ int sfd = open(x->c->store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
                return failf(x->c, -errno, "model_store %.200s", x->c->store);
        int lfd = dup(sfd);
        DIR *dp = lfd >= 0 ? fdopendir(lfd) : NULL;
        if (!dp) {
                if (lfd >= 0)
                        (void) close(lfd);
                return failf(x->c, -errno, "listing model_store %.200s", x->c->store);
        }
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(dp));) {
                char why[8];
                /* A model's folder has a model's name: ".", "..", and anything else are not ones. */
                if (gw_model_name_check(e->d_name, why, sizeof why) == 0)
                        r = copy_model(x, sfd, e->d_name, dst);
        }
        (void) closedir(dp);
        return r;
}

/* Removes the private folder name of dir and what the copy made in it (three levels). */
static void remove_tree(int dir, const char *name, int depth) {
        int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
        if (dp) {
                for (struct dirent *e; (e = readdir(dp));) {
                        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                                continue;
                        if (unlinkat(dirfd(dp), e->d_name, 0) < 0 && errno == EISDIR && depth < 3)
                                remove_tree(dirfd(dp), e->d_name, depth + 1);
                }
                (void) closedir(dp);
        } else if (fd >= 0)
                (void) close(fd);
        (void) unlinkat(dir, name, AT_REMOVEDIR);
}

/* The private folder in dir_fd, made through the descriptor and checked ours and 0700. */
static int make_private(struct gw_models_copy *c, char *name, size_t n) {
        char tmpl[128];
        snprintf(tmpl, sizeof tmpl, "/proc/self/fd/%d/.gpuward-models-XXXXXX", c->dir_fd);
        if (!mkdtemp(tmpl))
                return failf(c, -errno, "making a folder for the copy of the model store");
        snprintf(name, n, "%s", strrchr(tmpl, '/') + 1);
        int fd = open_dir(c->dir_fd, name);
        struct stat st;
        /* Ours and private, or replaced by someone who may move names in a sticky folder. */
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                if (fd >= 0)
                        (void) close(fd);
                snprintf(c->why, sizeof c->why, "the folder made for the copy of the model store was replaced");
                name[0] = '\0';
                return -EPERM;
        }
        return fd;
}

void gw_models_copy_run(struct gw_models_copy *c) {
        char priv[64] = "";
        struct copy_ctx x = { .c = c, .buf = gw_xmalloc(BUF_SIZE) };
        int pfd = make_private(c, priv, sizeof priv);
        int r = pfd < 0 ? pfd : copy_store(&x, pfd);
        if (r == 0 && fsync(pfd) < 0)
                r = failf(c, -errno, "syncing the copy of the model store");
        if (r == 0 && renameat2(c->dir_fd, priv, c->dir_fd, c->name, RENAME_NOREPLACE) < 0) {
                r = -errno;
                if (r == -EEXIST)
                        snprintf(c->why, sizeof c->why, "path: %.200s exists now (made while the copy was written)",
                                 c->name);
                else
                        failf(c, r, "naming the copy of the model store %.200s", c->name);
        }
        if (r == 0)
                (void) fsync(c->dir_fd);
        else if (priv[0])
                remove_tree(c->dir_fd, priv, 0);
        if (pfd >= 0)
                (void) close(pfd);
        free(x.buf);
        c->r = r;
}
