/* The dataset cache's copying helper (cache_int.h).  Two processes, so that nothing of the
 * source is read with root's rights and nothing of the cache is written with the user's:
 *   the reader, the user's: walks the source, opens each file (O_NOFOLLOW) and streams it;
 *   the writer, root's: decides what to copy, writes the new version through descriptors it
 *     created (O_EXCL|O_NOFOLLOW below a folder it made), verifies it, writes its manifest.
 * The reader's stream comes in batches of COPY_BATCH entries: their manifest lines
 * (core/cache.h) and "M"; the writer answers the batch at once, a byte a file ('y': wanted,
 * 'n': the previous version's copy serves); the reader sends each wanted file as "F" and its
 * bytes; after the last batch, "E".  A round trip a batch, not a file: a copy of thousands
 * of small files must not wait on two processes taking turns.  A user could take over their
 * own reader (ptrace), so the writer trusts nothing of the stream: the lines are parsed as a manifest, the paths
 * stay below the new version, set-id bits are dropped and the owner is the job's user
 * unless the source's owner is. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/cache.h"
#include "core/datayaml.h"
#include "daemon/base/helper.h"
#include "daemon/cache/cache_int.h"

#define COPY_BUF (1u << 20)
#define MAX_FILES 2000000
#define COPY_BATCH 256 /* files answered at once (descriptors the reader holds open) */

/* ---- the reader (the user's) ---- */

/* nftw takes no context: the reader is a process of its own, and this is its list. */
static struct gw_cache_file *walk_list;
static size_t walk_n, walk_cap;
static size_t walk_root_len;
static char walk_root[GW_DATAYAML_MAX_PATH]; /* the source's folder (a data YAML's path:) */
static int walk_err;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) ftw;
        if (type == FTW_DNR || type == FTW_NS) {
                walk_err = errno ? errno : EACCES;
                return 1;
        }
        /* Links and special files are not data: not copied (docs/API.md says so). */
        if (type != FTW_D && !(type == FTW_F && S_ISREG(st->st_mode)))
                return 0;
        if (walk_n >= MAX_FILES) {
                walk_err = EFBIG;
                return 1;
        }
        if (walk_n == walk_cap) {
                walk_cap = walk_cap ? walk_cap * 2 : 1024;
                walk_list = gw_xrealloc(walk_list, walk_cap * sizeof *walk_list);
        }
        struct gw_cache_file *f = &walk_list[walk_n];
        const char *rel = path + walk_root_len;
        rel += *rel == '/';
        if (strlen(rel) >= GW_CACHE_MAX_REL)
                return 0;
        *f = (struct gw_cache_file){
                .dir = type == FTW_D,
                .size = type == FTW_D ? 0 : (uint64_t) st->st_size,
                .mtime_ns = type == FTW_D ? 0 : (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                .mode = st->st_mode & 0777,
                .uid = st->st_uid,
                .gid = st->st_gid
        };
        snprintf(f->rel, sizeof f->rel, "%s", rel);
        walk_n++;
        return 0;
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...) {
        char buf[GW_CACHE_LINE_MAX + 64];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (n > 0)
                (void) !write(fd, buf, (size_t) n < sizeof buf ? (size_t) n : sizeof buf - 1);
}

static bool write_all(int fd, const void *p, size_t n) {
        while (n) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return false;
                p = (const char *) p + w;
                n -= (size_t) w;
        }
        return true;
}

/* The data YAML's text into buf, and its root. */
static int read_yaml(const char *path, char *buf, size_t *len, char *root, int out) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                int e = fd < 0 ? errno : EINVAL;
                say(out, "X %d cannot read %s: %s\n", e, path, fd < 0 ? strerror(e) : "not a regular file");
                return -1;
        }
        ssize_t n = read(fd, buf, GW_DATAYAML_MAX_SIZE + 1);
        (void) close(fd);
        char why[512];
        if (n < 0 || gw_datayaml_root(buf, (size_t) n, root, GW_DATAYAML_MAX_PATH, why, sizeof why) < 0) {
                int e = n < 0 ? errno : EINVAL;
                say(out, "X %d %s: %s\n", e, path, n < 0 ? strerror(e) : why);
                return -1;
        }
        *len = (size_t) n;
        return 0;
}

/* A file of the list, opened as the user (O_NOFOLLOW); -1 (said on out) when it cannot be,
 * or when it is no longer a plain file. */
static int open_source(const struct gw_cache_file *f, struct stat *st, int out) {
        char path[GW_DATAYAML_MAX_PATH + GW_CACHE_MAX_REL + 2];
        snprintf(path, sizeof path, "%s/%s", walk_root, f->rel);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0 || fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
                /* Replaced while copied: the source changes under it, which a later try may not meet. */
                int e = fd < 0 ? errno : EAGAIN;
                say(out, "X %d cannot read %s: %s\n", e, path, fd < 0 ? strerror(e) : "replaced while copied");
                if (fd >= 0)
                        (void) close(fd);
                return -1;
        }
        return fd;
}

/* A batch's manifest lines, [from, to) of the walk, then "M"; each file opened as the user
 * first (that open is the check that the user may read it, a warm hit included) and kept
 * open in fds[] for the second pass. */
static int send_list(size_t from, size_t to, int *fds, int out) {
        char line[GW_CACHE_LINE_MAX];
        for (size_t i = from; i < to; i++) {
                struct gw_cache_file *f = &walk_list[i];
                if (!f->dir) {
                        struct stat st;
                        if ((fds[i - from] = open_source(f, &st, out)) < 0)
                                return -1;
                        f->size = (uint64_t) st.st_size;
                        f->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
                        f->mode = st.st_mode & 0777;
                }
                size_t n = gw_cache_manifest_line(f, line, sizeof line);
                if (!write_all(out, line, n))
                        return -1;
        }
        return write_all(out, "M\n", 2) ? 0 : -1;
}

/* The writer's answer to a batch: one byte a file, in order, 'y' for the files it wants. */
static int read_answers(int in, unsigned char *want, size_t n) {
        for (size_t got = 0; got < n;) {
                ssize_t r = read(in, want + got, n - got);
                if (r <= 0)
                        return -1;
                got += (size_t) r;
        }
        return 0;
}

/* A batch's wanted files, each as "F" and its bytes, read from the descriptor its line was
 * made from; one whose size or time changed since fails the copy rather than mixing two
 * versions of it. */
static int send_wanted(size_t from, size_t to, const int *fds, const unsigned char *want, int out) {
        static char buf[COPY_BUF];
        size_t k = 0;
        for (size_t i = from; i < to; i++) {
                const struct gw_cache_file *f = &walk_list[i];
                if (f->dir || want[k++] != 'y')
                        continue;
                int fd = fds[i - from];
                struct stat st;
                if (fstat(fd, &st) < 0 || (uint64_t) st.st_size != f->size ||
                    (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != f->mtime_ns) {
                        say(out, "X %d cannot read %s/%s: changed while copied\n", EAGAIN, walk_root, f->rel);
                        return -1;
                }
                if (!write_all(out, "F\n", 2))
                        return -1;
                for (uint64_t left = f->size; left;) {
                        ssize_t r = read(fd, buf, left < sizeof buf ? (size_t) left : sizeof buf);
                        if (r <= 0 || !write_all(out, buf, (size_t) r)) /* shrunk while read: the */
                                return -1; /* writer sees it cut */
                        left -= (uint64_t) r;
                }
        }
        return 0;
}

/* The walk in batches of COPY_BATCH: the writer answers a batch at once, so that a copy of
 * many small files costs a round trip between the two processes per batch, not per file,
 * with at most a batch's descriptors open. */
static int send_batches(int in, int out) {
        int fds[COPY_BATCH];
        unsigned char want[COPY_BATCH];
        for (size_t from = 0; from < walk_n; from += COPY_BATCH) {
                size_t to = walk_n - from < COPY_BATCH ? walk_n : from + COPY_BATCH, files = 0;
                for (size_t i = from; i < to; i++) {
                        fds[i - from] = -1;
                        files += !walk_list[i].dir;
                }
                int r = send_list(from, to, fds, out);
                if (r == 0)
                        r = read_answers(in, want, files);
                if (r == 0)
                        r = send_wanted(from, to, fds, want, out);
                for (size_t i = 0; i < to - from; i++)
                        if (fds[i] >= 0)
                                (void) close(fds[i]);
                if (r < 0)
                        return -1;
        }
        return 0;
}

static int reader(const struct gw_cache_copy *c, int out, int in) {
        if (geteuid() == 0 && c->uid != 0) {
                gid_t g[GW_CACHE_MAX_GROUPS];
                int ng = c->n_groups < GW_CACHE_MAX_GROUPS ? c->n_groups : GW_CACHE_MAX_GROUPS;
                for (int i = 0; i < ng; i++)
                        g[i] = c->groups[i];
                if (setgroups((size_t) ng, g) < 0 || setgid(c->gid) < 0 || setuid(c->uid) < 0) {
                        say(out, "X 0 cannot become uid %u: %s\n", (unsigned) c->uid,
                            strerror(errno)); /* ours, not theirs */
                        return 1;
                }
        }
        struct stat st;
        if (stat(c->source, &st) < 0) {
                int e = errno;
                say(out, "X %d source %s: %s\n", e, c->source, strerror(e));
                return 1;
        }
        char *root = walk_root;
        snprintf(root, sizeof walk_root, "%s", c->source);
        if (S_ISREG(st.st_mode)) {
                static char yaml[GW_DATAYAML_MAX_SIZE + 1];
                size_t len;
                if (read_yaml(c->source, yaml, &len, root, out) < 0)
                        return 1;
                if (!gw_cache_source_allowed(c->sources, root)) {
                        say(out, "X %d the data YAML's path: %s is not under cache_sources\n", EINVAL, root);
                        return 1;
                }
                say(out, "Y %zu\n", len);
                if (!write_all(out, yaml, len))
                        return 1;
        } else if (!S_ISDIR(st.st_mode)) {
                say(out, "X %d source %s is neither a directory nor a data YAML\n", EINVAL, c->source);
                return 1;
        }
        walk_root_len = strlen(root);
        if (nftw(root, walk_one, 32, FTW_PHYS) != 0 || walk_err) {
                int e = walk_err ? walk_err : errno;
                say(out, "X %d cannot list %s: %s\n", e, root, strerror(e));
                return 1;
        }
        if (!walk_n || !walk_list[0].dir) {
                say(out, "X %d source %s is not a directory\n", ENOTDIR, root);
                return 1;
        }
        uint64_t total = 0;
        for (size_t i = 0; i < walk_n; i++)
                total += walk_list[i].size;
        say(out, "T %" PRIu64 " %zu\n", total, walk_n);
        char go;
        if (read(in, &go, 1) != 1 || go != 'g')
                return 1;
        if (send_batches(in, out) < 0)
                return 1;
        say(out, "E\n");
        return 0;
}

/* ---- the writer (root's) ---- */

struct writer {
        const struct gw_cache_copy *c;
        FILE *in; /* the reader's stream */
        int ans; /* answers to the reader */
        int data; /* new_dir/data, once made */
        int prev_data; /* prev_dir/data, or -1 */
        struct gw_cache_file *prev; /* prev_dir's manifest, sorted by rel */
        size_t n_prev;
        struct gw_cache_file *files; /* what this version holds, in the reader's order */
        unsigned char *want; /* for each of files: 'y' its bytes wanted, 'n' linked, 0 a folder */
        size_t steps; /* files listed and copied, for the progress's pace */
        uint64_t wanted, granted; /* bytes of the files to copy; the room the daemon made */
        size_t n_files, cap_files;
        uint64_t done, copied, reported;
        size_t linked;
        bool changed; /* a file or folder not as in prev */
        int err; /* what failed it, for its class (gw_cache_failure_class): the
                                    * reader's errno, EINVAL for the data YAML, else 0 (the node's) */
        char why[GW_CACHE_LINE_MAX];
};

static int rel_cmp(const void *a, const void *b) {
        return strcmp(((const struct gw_cache_file *) a)->rel, ((const struct gw_cache_file *) b)->rel);
}

static int fail(struct writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct writer *w, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->why, sizeof w->why, fmt, ap);
        va_end(ap);
        return -1;
}

/* A line of at most GW_CACHE_LINE_MAX bytes from the reader, without its '\n'. */
static int read_line(struct writer *w, char *buf, size_t *len) {
        if (!fgets(buf, GW_CACHE_LINE_MAX, w->in))
                return fail(w, "the reader stopped: the source changed while it was copied, or could not be read");
        *len = strlen(buf);
        if (!*len || buf[*len - 1] != '\n')
                return fail(w, "the reader sent a line too long");
        buf[--*len] = '\0';
        return 0;
}

/* "X ERRNO WHY": the reader's failure, its errno kept for its class. */
static int reader_failed(struct writer *w, const char *line) {
        int e = 0, at = 0;
        if (sscanf(line, "X %d %n", &e, &at) < 1 || at == 0)
                return fail(w, "%s", line + 1 + (line[1] == ' '));
        w->err = e > 0 && e < 4096 ? e : 0;
        return fail(w, "%s", line + at);
}

static int load_prev(struct writer *w) {
        w->prev_data = -1;
        if (!w->c->prev_dir)
                return 0;
        char p[4200];
        snprintf(p, sizeof p, "%s/manifest", w->c->prev_dir);
        _cleanup_fclose_ FILE *f = fopen(p, "re");
        snprintf(p, sizeof p, "%s/data", w->c->prev_dir);
        w->prev_data = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (!f || w->prev_data < 0)
                return 0; /* copied whole, then */
        char line[GW_CACHE_LINE_MAX];
        size_t cap = 0;
        while (fgets(line, sizeof line, f)) {
                size_t l = strlen(line);
                if (l && line[l - 1] == '\n')
                        line[--l] = '\0';
                if (w->n_prev == cap) {
                        cap = cap ? cap * 2 : 256;
                        w->prev = gw_xrealloc(w->prev, cap * sizeof *w->prev);
                }
                if (gw_cache_manifest_parse(line, l, &w->prev[w->n_prev]) == 0)
                        w->n_prev++;
        }
        qsort(w->prev, w->n_prev, sizeof *w->prev, rel_cmp);
        return 0;
}

/* The owner a copy gets: the source's when that is the job's user or a group of theirs,
 * else the job's own (the reader's word on owners is not trusted). */
static void owner(const struct writer *w, const struct gw_cache_file *f, uid_t *u, gid_t *g) {
        *u = w->c->uid;
        *g = w->c->gid;
        for (int i = 0; i < w->c->n_groups; i++)
                if (w->c->groups[i] == f->gid)
                        *g = f->gid;
}

static int copy_bytes(struct writer *w, int fd, uint64_t size, const char *rel) {
        static char buf[COPY_BUF];
        for (uint64_t left = size; left;) {
                size_t want = left < sizeof buf ? (size_t) left : sizeof buf;
                size_t got = fread(buf, 1, want, w->in);
                if (got != want)
                        return fail(w, "the reader stopped in %s: the source changed while it was copied", rel);
                if (!write_all(fd, buf, got))
                        return fail(w, "writing %s into the cache: %s", rel, strerror(errno ? errno : EIO));
                left -= got;
                w->done += got;
                w->copied += got;
        }
        return 0;
}

/* A file of the list: unchanged, the previous version's copy is linked (it is immutable once
 * verified) and its answer is 'n'; else 'y', and its bytes come in the second pass. */
static char take_file(struct writer *w, const struct gw_cache_file *f) {
        struct gw_cache_file key;
        snprintf(key.rel, sizeof key.rel, "%s", f->rel);
        const struct gw_cache_file *old =
                w->n_prev ? bsearch(&key, w->prev, w->n_prev, sizeof *w->prev, rel_cmp) : NULL;
        if (old && !old->dir && gw_cache_file_same(old, f) && linkat(w->prev_data, f->rel, w->data, f->rel, 0) == 0) {
                w->linked++;
                w->done += f->size;
                return 'n';
        }
        w->changed = true;
        w->wanted += f->size;
        return 'y';
}

static int copy_file(struct writer *w, const struct gw_cache_file *f) {
        char line[GW_CACHE_LINE_MAX];
        size_t len;
        if (read_line(w, line, &len) < 0)
                return -1;
        if (line[0] == 'X')
                return reader_failed(w, line);
        if (strcmp(line, "F"))
                return fail(w, "the reader sent '%.40s'", line);
        int fd = openat(w->data, f->rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return fail(w, "creating %s in the cache: %s", f->rel, strerror(errno));
        int r = copy_bytes(w, fd, f->size, f->rel);
        uid_t u;
        gid_t g;
        owner(w, f, &u, &g);
        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
                                  { .tv_sec = f->mtime_ns / 1000000000, .tv_nsec = f->mtime_ns % 1000000000 } };
        if (r == 0 &&
            ((geteuid() == 0 && fchown(fd, u, g) < 0) || fchmod(fd, f->mode & 0777) < 0 || futimens(fd, ts) < 0))
                r = fail(w, "setting %s's mode in the cache: %s", f->rel, strerror(errno));
        if (close(fd) < 0 && r == 0)
                r = fail(w, "writing %s into the cache: %s", f->rel, strerror(errno));
        return r;
}

static int take_dir(struct writer *w, const struct gw_cache_file *f) {
        uid_t u;
        gid_t g;
        owner(w, f, &u, &g);
        struct gw_cache_file key;
        snprintf(key.rel, sizeof key.rel, "%s", f->rel);
        const struct gw_cache_file *old =
                w->n_prev ? bsearch(&key, w->prev, w->n_prev, sizeof *w->prev, rel_cmp) : NULL;
        if (!old || !old->dir || old->mode != f->mode)
                w->changed = true;
        if (!*f->rel) {
                char p[4200];
                snprintf(p, sizeof p, "%s/data", w->c->new_dir);
                if (mkdir(p, 0700) < 0 || (w->data = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0)
                        return fail(w, "making %s: %s", p, strerror(errno));
                if ((geteuid() == 0 && fchown(w->data, u, g) < 0) || fchmod(w->data, f->mode & 0777) < 0)
                        return fail(w, "setting the mode of %s: %s", p, strerror(errno));
                return 0;
        }
        if (w->data < 0)
                return fail(w, "the reader named %s before its root", f->rel);
        if (mkdirat(w->data, f->rel, 0700) < 0)
                return fail(w, "making %s in the cache: %s", f->rel, strerror(errno));
        _cleanup_close_ int fd = openat(w->data, f->rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || (geteuid() == 0 && fchown(fd, u, g) < 0) || fchmod(fd, f->mode & 0777) < 0)
                return fail(w, "setting the mode of %s in the cache: %s", f->rel, strerror(errno));
        return 0;
}

static void progress(struct writer *w, bool force) {
        if (force || w->done - w->reported >= (8u << 20) || (++w->steps & 255) == 0) {
                say(w->c->report_fd, "P %" PRIu64 "\n", w->done);
                w->reported = w->done;
        }
}

/* The copy against what the reader said: each folder and file there, of its kind, size and
 * time.  The bytes are not hashed: the copy was read from the stream just written. */
static int verify(struct writer *w) {
        for (size_t i = 0; i < w->n_files; i++) {
                const struct gw_cache_file *f = &w->files[i];
                struct stat st;
                int r = *f->rel ? fstatat(w->data, f->rel, &st, AT_SYMLINK_NOFOLLOW) : fstat(w->data, &st);
                int64_t mt = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
                if (r < 0 || (f->dir ? !S_ISDIR(st.st_mode)
                                     : (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != f->size || mt != f->mtime_ns)))
                        return fail(w, "the copy of %s does not match the source's manifest", *f->rel ? f->rel : "/");
        }
        return 0;
}

static int write_text(const char *path, const char *text, size_t len, mode_t mode, uid_t u, gid_t g) {
        (void) unlink(path); /* a file left by an earlier attempt: never written through */
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 || !write_all(fd, text, len) || (geteuid() == 0 && fchown(fd, u, g) < 0))
                return -errno;
        return 0;
}

static int write_manifest(struct writer *w) {
        char p[4200], line[GW_CACHE_LINE_MAX];
        snprintf(p, sizeof p, "%s/manifest", w->c->new_dir);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return fail(w, "writing the manifest: %s", strerror(errno));
        for (size_t i = 0; i < w->n_files; i++) {
                size_t n = gw_cache_manifest_line(&w->files[i], line, sizeof line);
                if (!write_all(fd, line, n))
                        return fail(w, "writing the manifest: %s", strerror(errno));
        }
        return fsync(fd) < 0 ? fail(w, "writing the manifest: %s", strerror(errno)) : 0;
}

/* A batch of the reader's list, up to "M" (1 at the reader's "E": no more): folders made,
 * unchanged files linked, the others wanted. */
static int take_list(struct writer *w) {
        char line[GW_CACHE_LINE_MAX];
        size_t len;
        for (size_t in_batch = 0;; in_batch++) {
                if (read_line(w, line, &len) < 0)
                        return -1;
                if (!strcmp(line, "M") || !strcmp(line, "E"))
                        return line[0] == 'E';
                if (line[0] == 'X')
                        return reader_failed(w, line);
                if (w->n_files == w->cap_files) {
                        w->cap_files = w->cap_files ? w->cap_files * 2 : 1024;
                        w->files = gw_xrealloc(w->files, w->cap_files * sizeof *w->files);
                        w->want = gw_xrealloc(w->want, w->cap_files);
                }
                struct gw_cache_file *f = &w->files[w->n_files];
                if (gw_cache_manifest_parse(line, len, f) < 0 || w->n_files >= MAX_FILES || in_batch >= COPY_BATCH)
                        return fail(w, "the reader sent '%.40s'", line);
                w->want[w->n_files] = 0;
                if (f->dir && take_dir(w, f) < 0)
                        return -1;
                if (!f->dir)
                        w->want[w->n_files] = (unsigned char) take_file(w, f);
                w->n_files++;
                progress(w, false);
        }
}

/* The batch's answers from files[from], at once: the reader reads them only once it has sent
 * its whole batch. */
static int send_answers(struct writer *w, size_t from) {
        char a[COPY_BATCH];
        size_t n = 0;
        for (size_t i = from; i < w->n_files; i++)
                if (!w->files[i].dir)
                        a[n++] = (char) w->want[i];
        return write_all(w->ans, a, n) ? 0 : fail(w, "the reader went away");
}

static int copy_wanted(struct writer *w, size_t from) {
        for (size_t i = from; i < w->n_files; i++) {
                if (w->want[i] != 'y')
                        continue;
                if (copy_file(w, &w->files[i]) < 0)
                        return -1;
                progress(w, false);
        }
        return 0;
}

/* The daemon's go line: "g GRANTED", the bytes this copy may write into the cache, or "n". */
static int await_go(struct writer *w) {
        char line[48];
        size_t n = 0;
        while (n < sizeof line - 1 && read(w->c->go_fd, line + n, 1) == 1 && line[n] != '\n')
                n++;
        line[n] = '\0';
        unsigned long long granted;
        if (sscanf(line, "g %llu", &granted) != 1)
                return fail(w, "stopped by the daemon");
        w->granted = granted;
        return 0;
}

/* The files wanted so far must fit in the room granted; past it, the daemon is asked for
 * more (it evicts what it may) before any of them is copied. */
static int room_for_wanted(struct writer *w) {
        if (w->wanted <= w->granted)
                return 0;
        say(w->c->report_fd, "R %" PRIu64 "\n", w->wanted);
        if (await_go(w) < 0 || w->wanted > w->granted)
                return fail(w, "out of space in the cache: the changed files need %" PRIu64 " bytes", w->wanted);
        return 0;
}

/* The batches, until the reader's "E". */
static int take_batches(struct writer *w) {
        for (;;) {
                size_t from = w->n_files;
                int r = take_list(w);
                if (r != 0)
                        return r < 0 ? -1 : 0;
                if (room_for_wanted(w) < 0 || send_answers(w, from) < 0 || copy_wanted(w, from) < 0)
                        return -1;
        }
}

static int take_stream(struct writer *w, char **yaml, size_t *yaml_len) {
        char line[GW_CACHE_LINE_MAX];
        size_t len;
        if (read_line(w, line, &len) < 0)
                return -1;
        if (line[0] == 'Y') {
                unsigned long long n = strtoull(line + 2, NULL, 10);
                if (n > GW_DATAYAML_MAX_SIZE)
                        return fail(w, "the reader sent a data YAML too long");
                *yaml = gw_xmalloc(n + 1);
                if (fread(*yaml, 1, n, w->in) != n)
                        return fail(w, "the reader stopped in the data YAML");
                (*yaml)[n] = '\0';
                *yaml_len = n;
                if (read_line(w, line, &len) < 0)
                        return -1;
        }
        if (line[0] == 'X')
                return reader_failed(w, line);
        unsigned long long total = 0, nfiles = 0;
        if (sscanf(line, "T %llu %llu", &total, &nfiles) != 2)
                return fail(w, "the reader sent '%.40s'", line);
        say(w->c->report_fd, "T %llu %llu\n", total, nfiles);
        if (await_go(w) < 0 || !write_all(w->ans, "g", 1))
                return -1;
        return take_batches(w);
}

/* The helper is a process of its own, but returns through main(): what it took goes back,
 * so that a leak check at its exit finds only real leaks. */
static void writer_free(struct writer *w) {
        free(w->files);
        free(w->want);
        free(w->prev);
        if (w->in)
                (void) fclose(w->in);
        if (w->data >= 0)
                (void) close(w->data);
        if (w->prev_data >= 0)
                (void) close(w->prev_data);
}

static int writer(const struct gw_cache_copy *c, int from_reader, int to_reader) {
        _cleanup_(writer_free) struct writer w = { .c = c, .ans = to_reader, .data = -1, .prev_data = -1 };
        w.in = fdopen(from_reader, "r");
        umask(0);
        if (!w.in || mkdir(c->new_dir, 0711) < 0) {
                say(c->report_fd, "ERR lost making %s: %s\n", c->new_dir, strerror(errno));
                return 1;
        }
        _cleanup_free_ char *yaml = NULL;
        size_t yaml_len = 0;
        (void) load_prev(&w);
        int r = take_stream(&w, &yaml, &yaml_len);
        progress(&w, true);
        /* Nothing new and nothing gone: the previous version serves. */
        bool same = r == 0 && c->prev_dir && !w.changed && w.n_files == w.n_prev;
        if (r == 0 && !same && verify(&w) == 0)
                r = write_manifest(&w);
        else if (r == 0 && !same)
                r = -1;
        if (r == 0 && yaml) {
                char local[4200], why[512];
                snprintf(local, sizeof local, "%s/data", same ? c->prev_dir : c->new_dir);
                _cleanup_free_ char *out = NULL;
                if (gw_datayaml_rewrite(yaml, yaml_len, local, &out, why, sizeof why) < 0) {
                        w.err = EINVAL;
                        r = fail(&w, "the data YAML: %s", why);
                } else if (write_text(c->yaml_out, out, strlen(out), 0600, c->uid, c->gid) < 0)
                        r = fail(&w, "writing the job's data YAML: %s", strerror(errno));
        }
        if (r < 0) {
                say(c->report_fd, "ERR %s %s\n", gw_failure_class_name(gw_cache_failure_class(w.err)), w.why);
                return 1;
        }
        say(c->report_fd, same ? "SAME\n" : "OK %" PRIu64 "\n", w.copied);
        return 0;
}

pid_t gw_cache_copy_spawn(const struct gw_cache_copy *c) {
        struct gw_helper_args a = { 0 };
        gw_helper_arg(&a, "SOURCE", "%s", c->source);
        gw_helper_arg(&a, "SOURCES", "%s", c->sources ? c->sources : "");
        gw_helper_arg_user(&a, c->uid, c->gid, c->groups, c->n_groups);
        gw_helper_arg(&a, "PREV", "%s", c->prev_dir ? c->prev_dir : "");
        gw_helper_arg(&a, "NEW", "%s", c->new_dir);
        gw_helper_arg(&a, "YAML", "%s", c->yaml_out ? c->yaml_out : "");
        gw_helper_arg(&a, "REPORT", "%d", c->report_fd);
        gw_helper_arg(&a, "GO", "%d", c->go_fd);
        int keep[2] = { c->report_fd, c->go_fd };
        return gw_helper_spawn("cache-copy", &a, keep, 2);
}

pid_t gw_cache_remove_spawn(const char *dir) {
        struct gw_helper_args a = { 0 };
        gw_helper_arg(&a, "DIR", "%s", dir);
        return gw_helper_spawn("cache-remove", &a, NULL, 0);
}

/* The copying helper, in its own image: the writer, and the reader it forks (this process
 * has one thread, so the reader's fork is safe). */
static int copy_main(const struct gw_cache_copy *c) {
        signal(SIGPIPE, SIG_IGN);
        int up[2], down[2];
        if (pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0) {
                say(c->report_fd, "ERR lost pipe: %s\n", strerror(errno));
                return 1;
        }
        pid_t rd = fork();
        if (rd == 0) {
                (void) close(up[0]);
                (void) close(down[1]);
                (void) close(c->go_fd);
                (void) close(c->report_fd);
                _exit(reader(c, up[1], down[0]));
        }
        (void) close(up[1]);
        (void) close(down[0]);
        if (rd < 0) {
                say(c->report_fd, "ERR lost fork: %s\n", strerror(errno));
                return 1;
        }
        int r = writer(c, up[0], down[1]);
        (void) close(down[1]);
        if (r)
                (void) kill(rd, SIGKILL);
        (void) waitpid(rd, NULL, 0);
        return r;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st, (void) ftw;
        (void) (type == FTW_DP ? rmdir(path) : unlink(path));
        return 0;
}

static int remove_main(void) {
        const char *dir = gw_helper_get("DIR");
        if (dir)
                (void) nftw(dir, remove_one, 32, FTW_DEPTH | FTW_PHYS);
        return dir ? 0 : 2;
}

int gw_cache_helper_main(const char *kind) {
        if (!strcmp(kind, "cache-remove"))
                return remove_main();
        if (strcmp(kind, "cache-copy"))
                return -1;
        static uint32_t groups[GW_CACHE_MAX_GROUPS];
        struct gw_cache_copy c = {
                .source = gw_helper_get("SOURCE"),
                .sources = gw_helper_get("SOURCES"),
                .prev_dir = gw_helper_get("PREV"),
                .new_dir = gw_helper_get("NEW"),
                .yaml_out = gw_helper_get("YAML"),
                .report_fd = gw_helper_get_fd("REPORT"),
                .go_fd = gw_helper_get_fd("GO"),
                .groups = groups,
        };
        if (c.report_fd < 0 || c.go_fd < 0 || !c.source || !c.new_dir ||
            gw_helper_get_user("USER", &c.uid, &c.gid, groups, GW_CACHE_MAX_GROUPS, &c.n_groups) < 0) {
                fputs("gpuwardd: --helper is the daemon's own, not to be run by hand\n", stderr);
                return 2;
        }
        return copy_main(&c);
}
