/* The scratch feature's copying helper (scratch_int.h): a forked process that becomes the
 * job's user and copies between the job's node-local folder and its shared one.
 *
 * Everything below the two roots is reached through descriptors, each folder and file opened
 * O_NOFOLLOW relative to its parent: a link a user (or someone sharing the folder) put there
 * is reported and left, never followed, and the kernel judges every access as the user's.
 * A destination file is replaced only by renaming a whole copy over it, so that a reader of
 * the shared folder (a retry on another node) never sees half a checkpoint. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/time.h"
#include "core/ckpt.h"
#include "core/scratch.h"
#include "daemon/base/helper.h"
#include "daemon/scratch/scratch_int.h"

#define BUF_SIZE (1u << 20)
#define REL_MAX 4096
#define HEAD_LEN 4096

/* Set by SIGTERM: the daemon stops a look (the attempt ended, or the daemon stops); the copy
 * under way is dropped, its temporary file removed, so no half copy is left behind. */
static volatile sig_atomic_t stopping;

static void on_term(int sig) {
        (void) sig;
        stopping = 1;
}

struct walk {
        const struct gw_scratch_copy *c;
        uint64_t files, bytes, left, visited, copies;
        bool csv_pass; /* a look's second walk, for results.csv (walk_look) */
        char rel[REL_MAX];
        char tmp[64]; /* the temporary name of a copy in its destination folder */
        uint8_t *buf;
};

/* A destination folder, made and opened only once a file is copied into it, so that a look
 * that copies nothing leaves nothing behind. */
struct dst_dir {
        struct dst_dir *parent;
        const char *name;
        int fd; /* -1: not opened yet */
};

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...) {
        char buf[REL_MAX + 256];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (n <= 0)
                return;
        size_t len = (size_t) n < sizeof buf ? (size_t) n : sizeof buf - 1;
        /* A file's name may hold a newline: one report is one line. */
        for (size_t i = 0; i + 1 < len; i++)
                if (buf[i] == '\n' || buf[i] == '\r')
                        buf[i] = '?';
        if (buf[len - 1] != '\n')
                buf[len - 1] = '\n';
        (void) !write(fd, buf, len);
}

static struct gw_scratch_stamp stamp_of(const struct stat *st) {
        return (struct gw_scratch_stamp){ .exists = true,
                                          .size = (uint64_t) st->st_size,
                                          .mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec };
}

static int dst_open(struct dst_dir *d) {
        if (d->fd >= 0)
                return d->fd;
        if (!d->parent)
                return -EBADF;
        int pfd = dst_open(d->parent);
        if (pfd < 0)
                return pfd;
        if (mkdirat(pfd, d->name, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(pfd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -ENOTDIR : -errno;
        d->fd = fd;
        return fd;
}

static bool read_at(int fd, uint8_t *p, size_t n, off_t off) {
        while (n > 0) {
                ssize_t r = pread(fd, p, n, off);
                if (r <= 0)
                        return false;
                p += r, n -= (size_t) r, off += r;
        }
        return true;
}

/* Whether the file behind fd (size bytes) is a whole checkpoint. */
static bool pt_whole(int fd, uint64_t size, uint8_t *buf) {
        size_t head = size < HEAD_LEN ? (size_t) size : HEAD_LEN;
        size_t tail = size < GW_CKPT_TAIL_LEN ? (size_t) size : GW_CKPT_TAIL_LEN;
        uint8_t *t = buf + HEAD_LEN;
        if (!read_at(fd, buf, head, 0) || !read_at(fd, t, tail, (off_t) (size - tail)))
                return false;
        return gw_scratch_pt_whole(buf, head, t, tail, size, NULL, 0);
}

static bool copy_bytes(int from, int to, uint8_t *buf, uint64_t *ret_n) {
        ssize_t n = 0;
        uint64_t total = 0;
        while (!stopping && (n = read(from, buf, BUF_SIZE)) > 0) {
                for (ssize_t done = 0; done < n;) {
                        ssize_t w = write(to, buf + done, (size_t) (n - done));
                        if (w <= 0)
                                return false;
                        done += w;
                }
                total += (uint64_t) n;
        }
        *ret_n = total;
        return !stopping && n == 0;
}

/* Copies the whole of sfd (stat st) to tmp in dfd and renames it to name: 1 copied, 0 not
 * whole or changed meanwhile (left for the next look), -errno. */
static int copy_whole(struct walk *w, int sfd, const struct stat *st, int dfd, const char *name,
                      enum gw_scratch_kind kind) {
        int tfd = openat(dfd, w->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st->st_mode & 0777);
        if (tfd < 0 && errno == EEXIST) { /* a helper killed mid-copy left it: ours to drop */
                (void) unlinkat(dfd, w->tmp, 0);
                tfd = openat(dfd, w->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st->st_mode & 0777);
        }
        if (tfd < 0)
                return -errno;
        uint64_t n = 0;
        struct stat after;
        bool ok = copy_bytes(sfd, tfd, w->buf, &n) && fstat(sfd, &after) == 0;
        struct gw_scratch_stamp b = stamp_of(st), a = ok ? stamp_of(&after) : (struct gw_scratch_stamp){ 0 };
        int r = ok ? 1 : -EIO;
        if (ok && (!gw_scratch_stable(&b, &a) || n != b.size))
                r = 0; /* written meanwhile: the next look takes it */
        /* The bytes copied are what is judged, not the source, which may change again. */
        if (r == 1 && kind == GW_SCRATCH_PT && !pt_whole(tfd, n, w->buf))
                r = 0;
        struct timespec times[2] = { st->st_atim, st->st_mtim };
        if (r == 1 && (futimens(tfd, times) < 0 || fsync(tfd) < 0))
                r = -errno;
        if (close(tfd) < 0 && r == 1)
                r = -EIO;
        if (r == 1 && renameat(dfd, w->tmp, dfd, name) < 0)
                r = -errno;
        if (r != 1)
                (void) unlinkat(dfd, w->tmp, 0);
        return r;
}

static void copy_one(struct walk *w, int sdir, struct dst_dir *dd, const char *name, const struct stat *st) {
        const struct gw_scratch_copy *c = w->c;
        enum gw_scratch_kind kind = gw_scratch_kind_of(name);
        if (c->mode == GW_SCRATCH_LOOK && (kind == GW_SCRATCH_OTHER || (kind == GW_SCRATCH_CSV) != w->csv_pass ||
                                           (kind == GW_SCRATCH_PT && w->copies >= GW_SCRATCH_COPIES_PER_LOOK)))
                return;
        int dfd = dst_open(dd);
        if (dfd < 0) {
                say(c->report_fd, "S %s its folder in the destination is not a folder (a link is not followed)\n",
                    w->rel);
                return;
        }
        struct stat dst;
        struct gw_scratch_stamp ds = { 0 }, ss = stamp_of(st);
        if (fstatat(dfd, name, &dst, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISREG(dst.st_mode)) {
                        say(c->report_fd, "S %s the destination is not a regular file (a link is not followed)\n",
                            w->rel);
                        return;
                }
                ds = stamp_of(&dst);
        }
        if (!gw_scratch_differs(&ss, &ds))
                return;
        int sfd = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat now;
        if (sfd < 0 || fstat(sfd, &now) < 0 || !S_ISREG(now.st_mode)) {
                if (sfd >= 0)
                        (void) close(sfd);
                return; /* gone or swapped since the listing: the next look sees it */
        }
        /* Not worth reading a checkpoint being written: its end records are missing. */
        if (kind == GW_SCRATCH_PT && (now.st_size == 0 || !pt_whole(sfd, (uint64_t) now.st_size, w->buf))) {
                (void) close(sfd);
                return;
        }
        int r = copy_whole(w, sfd, &now, dfd, name, c->mode == GW_SCRATCH_LOOK ? kind : GW_SCRATCH_OTHER);
        (void) close(sfd);
        if (r < 0) {
                say(c->report_fd, "S %s %s\n", w->rel, strerror(-r));
                return;
        }
        if (r == 0)
                return;
        w->files++, w->copies++;
        w->bytes += (uint64_t) now.st_size;
        if (c->mode == GW_SCRATCH_LOOK)
                say(c->report_fd, "C %" PRIu64 " %s\n", (uint64_t) now.st_size, w->rel);
}

static void walk(struct walk *w, int sdir, struct dst_dir *dd, int depth) {
        int dup_fd = dup(sdir);
        DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!dir) {
                if (dup_fd >= 0)
                        (void) close(dup_fd);
                return;
        }
        rewinddir(dir); /* the duplicate shares the position of any listing before */
        size_t base = strlen(w->rel);
        struct dirent *de;
        while (!stopping && (de = readdir(dir))) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strncmp(de->d_name, ".gpuward-part.", 14))
                        continue;
                if (++w->visited > GW_SCRATCH_VISIT_MAX) {
                        w->left++;
                        continue;
                }
                int l = snprintf(w->rel + base, sizeof w->rel - base, "%s%s", base ? "/" : "", de->d_name);
                struct stat st;
                if (l < 0 || (size_t) l >= sizeof w->rel - base ||
                    fstatat(sdir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        w->rel[base] = '\0';
                        continue;
                }
                if (S_ISDIR(st.st_mode) && depth < GW_SCRATCH_DEPTH_MAX) {
                        int cfd = openat(sdir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd >= 0) {
                                struct dst_dir child = { .parent = dd, .name = de->d_name, .fd = -1 };
                                walk(w, cfd, &child, depth + 1);
                                if (child.fd >= 0)
                                        (void) close(child.fd);
                                (void) close(cfd);
                        }
                } else if (S_ISDIR(st.st_mode)) {
                        w->left++;
                } else if (S_ISREG(st.st_mode)) {
                        copy_one(w, sdir, dd, de->d_name, &st);
                } else if (S_ISLNK(st.st_mode) && w->c->mode == GW_SCRATCH_SYNC) {
                        say(w->c->report_fd, "S %s a symbolic link, not followed\n", w->rel);
                }
                w->rel[base] = '\0';
        }
        closedir(dir);
}

/* A look copies the checkpoints first and results.csv after them. Ultralytics appends an
 * epoch's row before it writes that epoch's last.pt, so a results.csv read after a checkpoint
 * holds the checkpoint's own row: a node that dies mid-look leaves rows past the checkpoint
 * (set aside when the retry resumes), never a checkpoint whose row was lost. */
static void walk_look(struct walk *w, int sdir, struct dst_dir *dd) {
        walk(w, sdir, dd, 0);
        uint64_t left = w->left;
        w->visited = 0;
        w->csv_pass = true;
        walk(w, sdir, dd, 0);
        w->left = left;
}

/* Removes everything below dir, links as links. */
static void empty_dir(int dir, int depth) {
        int dup_fd = dup(dir);
        DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!d) {
                if (dup_fd >= 0)
                        (void) close(dup_fd);
                return;
        }
        rewinddir(d); /* after the sync's listing of the same folder */
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (unlinkat(dir, de->d_name, 0) == 0 || errno != EISDIR || depth >= 64)
                        continue;
                int cfd = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd >= 0) {
                        empty_dir(cfd, depth + 1);
                        (void) close(cfd);
                }
                (void) unlinkat(dir, de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

/* Opens root, then sub's components below it without following a link: a descriptor or -errno. */
static int open_below(const char *root, const char *sub) {
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !sub)
                return fd < 0 ? -errno : fd;
        char part[REL_MAX];
        for (const char *p = sub; *p;) {
                size_t l = strcspn(p, "/");
                if (l == 0 || l >= sizeof part) {
                        p += l + (p[l] == '/');
                        continue;
                }
                memcpy(part, p, l);
                part[l] = '\0';
                int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int e = errno;
                (void) close(fd);
                if (next < 0)
                        return -e;
                fd = next;
                p += l + (p[l] == '/');
        }
        return fd;
}

static int become_user(const struct gw_scratch_copy *c) {
        if (geteuid() != 0 || c->uid == 0)
                return 0;
        gid_t g[GW_SCRATCH_MAX_GROUPS];
        int ng = c->n_groups < GW_SCRATCH_MAX_GROUPS ? c->n_groups : GW_SCRATCH_MAX_GROUPS;
        for (int i = 0; i < ng; i++)
                g[i] = c->groups[i];
        /* Groups, then gid, then uid: after setuid nothing else can be dropped. */
        if (setgroups((size_t) ng, g) < 0 || setgid(c->gid) < 0 || setuid(c->uid) < 0 || setuid(0) == 0)
                return -EPERM;
        return 0;
}

static int helper(const struct gw_scratch_copy *c) {
        if (become_user(c) < 0) {
                say(c->report_fd, "E %d cannot become uid %u\n", EPERM, (unsigned) c->uid);
                return 1;
        }
        umask(022);
        int sfd = open_below(c->src, c->sub);
        if (sfd < 0) {
                say(c->report_fd, "E %d %s%s%s: %s\n", -sfd, c->src, c->sub ? "/" : "", c->sub ? c->sub : "",
                    strerror(-sfd));
                return 1;
        }
        if (!c->dst) { /* only to be emptied: a folder a daemon that died left */
                empty_dir(sfd, 0);
                say(c->report_fd, "D 0 0 0\n");
                return 0;
        }
        int dfd = open(c->dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                int e = errno;
                say(c->report_fd, "E %d %s: %s\n", e, c->dst, strerror(e));
                return 1;
        }
        /* The chain of sub's folders in the destination, made as the first file needs them. */
        struct dst_dir chain[GW_SCRATCH_DEPTH_MAX + 1] = { { .parent = NULL, .name = NULL, .fd = dfd } };
        char subcopy[REL_MAX];
        size_t depth = 0;
        snprintf(subcopy, sizeof subcopy, "%s", c->sub ? c->sub : "");
        for (char *save = NULL, *p = strtok_r(subcopy, "/", &save); p && depth < GW_SCRATCH_DEPTH_MAX;
             p = strtok_r(NULL, "/", &save)) {
                depth++;
                chain[depth] = (struct dst_dir){ .parent = &chain[depth - 1], .name = p, .fd = -1 };
        }
        struct walk w = { .c = c };
        snprintf(w.tmp, sizeof w.tmp, ".gpuward-part.%d", (int) getpid());
        snprintf(w.rel, sizeof w.rel, "%s", c->sub ? c->sub : "");
        w.buf = malloc(BUF_SIZE > HEAD_LEN + GW_CKPT_TAIL_LEN ? BUF_SIZE : HEAD_LEN + GW_CKPT_TAIL_LEN);
        if (!w.buf) {
                say(c->report_fd, "E %d out of memory\n", ENOMEM);
                return 1;
        }
        if (c->mode == GW_SCRATCH_LOOK)
                walk_look(&w, sfd, &chain[depth]);
        else
                walk(&w, sfd, &chain[depth], 0);
        for (size_t i = 1; i <= depth; i++)
                if (chain[i].fd >= 0)
                        (void) close(chain[i].fd);
        if (c->empty_src)
                empty_dir(sfd, 0);
        say(c->report_fd, "D %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", w.files, w.bytes, w.left);
        free(w.buf);
        return 0;
}

pid_t gw_scratch_copy_spawn(const struct gw_scratch_copy *c) {
        struct gw_helper_args a = { 0 };
        gw_helper_arg(&a, "MODE", "%s", c->mode == GW_SCRATCH_SYNC ? "sync" : "look");
        gw_helper_arg(&a, "SRC", "%s", c->src);
        gw_helper_arg(&a, "DST", "%s", c->dst ? c->dst : "");
        gw_helper_arg(&a, "SUB", "%s", c->sub ? c->sub : "");
        gw_helper_arg(&a, "EMPTY", "%d", c->empty_src ? 1 : 0);
        gw_helper_arg_user(&a, c->uid, c->gid, c->groups, c->n_groups);
        gw_helper_arg(&a, "REPORT", "%d", c->report_fd);
        return gw_helper_spawn("scratch-copy", &a, &c->report_fd, 1);
}

pid_t gw_scratch_copy_start(struct gw_scratch_copy *c, int *ret_fd) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        c->report_fd = p[1];
        pid_t pid = gw_scratch_copy_spawn(c);
        (void) close(p[1]);
        if (pid < 0) {
                (void) close(p[0]);
                return pid;
        }
        (void) fcntl(p[0], F_SETFL, O_NONBLOCK);
        *ret_fd = p[0];
        return pid;
}

int gw_scratch_copy_run(struct gw_scratch_copy *c, gw_usec_t max, char *out, size_t n) {
        int fd;
        out[0] = '\0';
        pid_t pid = gw_scratch_copy_start(c, &fd);
        if (pid < 0)
                return (int) pid;
        size_t len = 0;
        gw_usec_t deadline = gw_clock_mono() + max;
        for (;;) {
                gw_usec_t left = deadline - gw_clock_mono();
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                if (left <= 0 || poll(&pfd, 1, (int) (left / 1000 + 1)) == 0) {
                        (void) kill(-pid, SIGKILL);
                        break;
                }
                char buf[4096];
                ssize_t r = read(fd, buf, sizeof buf);
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (r <= 0)
                        break;
                size_t take = (size_t) r < n - 1 - len ? (size_t) r : n - 1 - len;
                memcpy(out + len, buf, take);
                len += take;
        }
        out[len] = '\0';
        (void) close(fd);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -ECHILD;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

int gw_scratch_helper_main(const char *kind) {
        if (strcmp(kind, "scratch-copy"))
                return -1;
        static uint32_t groups[GW_SCRATCH_MAX_GROUPS];
        const char *mode = gw_helper_get("MODE"), *empty = gw_helper_get("EMPTY");
        struct gw_scratch_copy c = {
                .mode = mode && !strcmp(mode, "sync") ? GW_SCRATCH_SYNC : GW_SCRATCH_LOOK,
                .src = gw_helper_get("SRC"),
                .dst = gw_helper_get("DST"),
                .sub = gw_helper_get("SUB"),
                .empty_src = empty && !strcmp(empty, "1"),
                .groups = groups,
                .report_fd = gw_helper_get_fd("REPORT"),
        };
        if (!mode || !c.src || c.report_fd < 0 ||
            gw_helper_get_user("USER", &c.uid, &c.gid, groups, GW_SCRATCH_MAX_GROUPS, &c.n_groups) < 0) {
                fputs("gpuwardd: --helper is the daemon's own, not to be run by hand\n", stderr);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        struct sigaction sa = { .sa_handler = on_term };
        (void) sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGTERM, &sa, NULL);
        return helper(&c);
}

void gw_scratch_report_read(struct gw_scratch_report *r, int fd, void (*each)(char *line, void *ctx), void *ctx) {
        for (;;) {
                if (r->n == sizeof r->buf - 1)
                        r->n = 0; /* longer than any line the helper writes: dropped */
                ssize_t got = read(fd, r->buf + r->n, sizeof r->buf - 1 - r->n);
                if (got <= 0)
                        return;
                r->n += (size_t) got;
                r->buf[r->n] = '\0';
                char *p = r->buf, *nl;
                while ((nl = strchr(p, '\n'))) {
                        *nl = '\0';
                        each(p, ctx);
                        p = nl + 1;
                }
                r->n -= (size_t) (p - r->buf);
                memmove(r->buf, p, r->n);
        }
}
