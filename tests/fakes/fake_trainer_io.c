/* gw-fake-trainer's formats: the Ultralytics-style command line, the checkpoint (a stored ZIP
 * with a protocol-2 pickle, as torch.save writes a zip), and the small file helpers. */
#include "fake_trainer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAD_BYTES (64 * 1024)
#define MAX_CKPT_BYTES (256L * 1024 * 1024)

/* ---------------------------------------------------------------- small helpers */

void ft_out(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        (void) vfprintf(stdout, fmt, ap);
        va_end(ap);
        (void) fflush(stdout); /* a log follower must see every redraw live */
}

bool ft_copy_str(char *dst, size_t n, const char *src) {
        int r = snprintf(dst, n, "%s", src);
        return r >= 0 && (size_t) r < n;
}

bool ft_parse_long(const char *s, long lo, long hi, long *ret) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
                return false;
        *ret = v;
        return true;
}

bool ft_parse_double(const char *s, double lo, double hi, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
                return false;
        *ret = v;
        return true;
}

static bool parse_bool(const char *s, bool *ret) {
        static const char *yes[] = { "True", "true", "1", "yes" }, *no[] = { "False", "false", "0", "no" };
        for (size_t i = 0; i < 4; i++) {
                if (strcmp(s, yes[i]) == 0 || strcmp(s, no[i]) == 0) {
                        *ret = strcmp(s, yes[i]) == 0;
                        return true;
                }
        }
        return false;
}

void ft_sleep(double s) {
        if (!(s > 0))
                return;
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        double whole, frac = modf(s, &whole);
        ts.tv_sec += (time_t) whole;
        ts.tv_nsec += (long) (frac * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static int write_all(int fd, const void *p, size_t n) {
        const char *c = p;
        while (n > 0) {
                ssize_t w = write(fd, c, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return w < 0 ? -errno : -EIO;
                c += w;
                n -= (size_t) w;
        }
        return 0;
}

/* Writes the whole file in place (O_TRUNC, no rename, like Python's write_bytes); spread over
 * `seconds` in 8 chunks so that a test can stop the writer half-way. */
int ft_write_file(const char *path, const void *p, size_t n, int flags, double seconds) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
        if (fd < 0)
                return -errno;
        int r = 0;
        size_t chunk = seconds > 0 ? n / 8 + 1 : n;
        for (size_t off = 0; off < n && r == 0; off += chunk) {
                r = write_all(fd, (const char *) p + off, n - off < chunk ? n - off : chunk);
                if (seconds > 0)
                        ft_sleep(seconds / 8);
        }
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

int ft_dig_holes(const char *path) {
        enum { BLOCK = 64 * 1024 };
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        static unsigned char b[BLOCK], zero[BLOCK];
        ssize_t n;
        for (off_t off = 0; (n = pread(fd, b, BLOCK, off)) == BLOCK; off += BLOCK)
                if (!memcmp(b, zero, BLOCK))
                        (void) fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, BLOCK);
        return close(fd) < 0 ? -errno : 0;
}

int ft_mkdir_p(const char *path) {
        char p[PATH_MAX];
        if (!ft_copy_str(p, sizeof p, path))
                return -ENAMETOOLONG;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Path.parent: "a/b" -> "a", "b" -> ".", "/b" -> "/". */
void ft_parent_dir(char *p) {
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/')
                p[--n] = '\0';
        char *slash = strrchr(p, '/');
        if (!slash)
                (void) ft_copy_str(p, 2, ".");
        else if (slash == p)
                p[1] = '\0';
        else
                *slash = '\0';
}

/* ---------------------------------------------------------------- byte buffers, ZIP, pickle */

struct buf {
        unsigned char *p;
        size_t len, cap;
        bool oom; /* sticky: checked once at the end */
};

static void buf_put(struct buf *b, const void *d, size_t n) {
        if (b->oom)
                return;
        if (b->len + n > b->cap) {
                size_t cap = (b->cap ? b->cap * 2 : 4096) + n;
                unsigned char *np = realloc(b->p, cap);
                if (!np) {
                        b->oom = true;
                        return;
                }
                b->p = np;
                b->cap = cap;
        }
        memcpy(b->p + b->len, d, n);
        b->len += n;
}

static void buf_u8(struct buf *b, unsigned v) {
        unsigned char c = (unsigned char) v;
        buf_put(b, &c, 1);
}
static void buf_u16(struct buf *b, unsigned v) {
        buf_u8(b, v & 0xff);
        buf_u8(b, (v >> 8) & 0xff);
}
static void buf_u32(struct buf *b, uint32_t v) {
        buf_u16(b, v & 0xffff);
        buf_u16(b, v >> 16);
}
static uint16_t rd16(const unsigned char *p) { return (uint16_t) (p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t) rd16(p) | (uint32_t) rd16(p + 2) << 16; }

static uint32_t crc32_of(const unsigned char *p, size_t n) {
        static uint32_t table[256];
        if (!table[1]) {
                for (uint32_t i = 0; i < 256; i++) {
                        uint32_t c = i;
                        for (int k = 0; k < 8; k++)
                                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
                        table[i] = c;
                }
        }
        uint32_t c = 0xFFFFFFFFu;
        for (size_t i = 0; i < n; i++)
                c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
        return c ^ 0xFFFFFFFFu;
}

struct zip {
        struct buf body, cd;
        unsigned entries, dos_time, dos_date;
};

/* Appends a stored (uncompressed) entry: local header + data, and its central header. */
static void zip_add(struct zip *z, const char *name, const void *data, size_t n) {
        uint32_t crc = crc32_of(data, n), off = (uint32_t) z->body.len;
        size_t nlen = strlen(name);
        buf_u32(&z->body, 0x04034b50);
        buf_u16(&z->body, 20);
        buf_u16(&z->body, 0); /* flags */
        buf_u16(&z->body, 0); /* method: stored */
        buf_u16(&z->body, z->dos_time);
        buf_u16(&z->body, z->dos_date);
        buf_u32(&z->body, crc);
        buf_u32(&z->body, (uint32_t) n);
        buf_u32(&z->body, (uint32_t) n);
        buf_u16(&z->body, (unsigned) nlen);
        buf_u16(&z->body, 0);
        buf_put(&z->body, name, nlen);
        buf_put(&z->body, data, n);

        buf_u32(&z->cd, 0x02014b50);
        buf_u16(&z->cd, 0x0314); /* made by: Unix, 2.0 */
        buf_u16(&z->cd, 20);
        buf_u16(&z->cd, 0);
        buf_u16(&z->cd, 0);
        buf_u16(&z->cd, z->dos_time);
        buf_u16(&z->cd, z->dos_date);
        buf_u32(&z->cd, crc);
        buf_u32(&z->cd, (uint32_t) n);
        buf_u32(&z->cd, (uint32_t) n);
        buf_u16(&z->cd, (unsigned) nlen);
        buf_u16(&z->cd, 0); /* extra */
        buf_u16(&z->cd, 0); /* comment */
        buf_u16(&z->cd, 0); /* disk */
        buf_u16(&z->cd, 0); /* internal attributes */
        buf_u32(&z->cd, 0100644u << 16);
        buf_u32(&z->cd, off);
        buf_put(&z->cd, name, nlen);
        z->entries++;
}

static void zip_finish(struct zip *z) {
        uint32_t cd_off = (uint32_t) z->body.len, cd_len = (uint32_t) z->cd.len;
        if (z->cd.oom)
                z->body.oom = true;
        buf_put(&z->body, z->cd.p, z->cd.len);
        buf_u32(&z->body, 0x06054b50);
        buf_u16(&z->body, 0);
        buf_u16(&z->body, 0);
        buf_u16(&z->body, z->entries);
        buf_u16(&z->body, z->entries);
        buf_u32(&z->body, cd_len);
        buf_u32(&z->body, cd_off);
        buf_u16(&z->body, 0);
}

/* Finds the entry whose name ends with `suffix` ("/gpuward_epoch": the archive folder is
 * "last" for last.pt but may be anything), checks its CRC.  0, -EBADMSG or -ENOENT. */
static int zip_find(const unsigned char *z, size_t n, const char *suffix, const unsigned char **ret, size_t *ret_len) {
        if (n < 22)
                return -EBADMSG;
        size_t e = n - 22, stop = e > 65535 ? e - 65535 : 0;
        while (rd32(z + e) != 0x06054b50) {
                if (e == stop)
                        return -EBADMSG;
                e--;
        }
        size_t count = rd16(z + e + 10), cd_len = rd32(z + e + 12), p = rd32(z + e + 16);
        size_t cd_end = p + cd_len, slen = strlen(suffix);
        if (cd_end > e)
                return -EBADMSG;
        for (size_t k = 0; k < count; k++) {
                if (p + 46 > cd_end || rd32(z + p) != 0x02014b50)
                        return -EBADMSG;
                size_t nlen = rd16(z + p + 28), next = p + 46 + nlen + rd16(z + p + 30) + rd16(z + p + 32);
                size_t csize = rd32(z + p + 20), loff = rd32(z + p + 42);
                if (next > cd_end)
                        return -EBADMSG;
                if (nlen >= slen && memcmp(z + p + 46 + nlen - slen, suffix, slen) == 0) {
                        if (rd16(z + p + 10) != 0 || loff + 30 > n || rd32(z + loff) != 0x04034b50)
                                return -EBADMSG;
                        size_t d = loff + 30 + rd16(z + loff + 26) + rd16(z + loff + 28);
                        if (d + csize > n || crc32_of(z + d, csize) != rd32(z + p + 16))
                                return -EBADMSG;
                        *ret = z + d;
                        *ret_len = csize;
                        return 0;
                }
                p = next;
        }
        return -ENOENT;
}

/* A protocol-2 pickle, so that Python's pickle.loads(zip.read("last/data.pkl")) gives a dict
 * shaped like Ultralytics' checkpoint (without the tensors). */
static void pk_str(struct buf *b, const char *s) {
        buf_u8(b, 'X');
        buf_u32(b, (uint32_t) strlen(s));
        buf_put(b, s, strlen(s));
}
/* As Python's pickler picks: BININT1, BININT2, else BININT (4 bytes, signed). */
static void pk_int(struct buf *b, long v) {
        if (v >= 0 && v <= 0xff) {
                buf_u8(b, 'K');
                buf_u8(b, (unsigned) v);
        } else if (v >= 0 && v <= 0xffff) {
                buf_u8(b, 'M');
                buf_u16(b, (unsigned) v);
        } else {
                buf_u8(b, 'J');
                buf_u32(b, (uint32_t) (int32_t) v);
        }
}
static void pk_float(struct buf *b, double v) {
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        buf_u8(b, 'G');
        for (int i = 7; i >= 0; i--)
                buf_u8(b, (unsigned) (bits >> (i * 8)) & 0xff);
}

static void pickle_ckpt(struct buf *b, const struct ft_ckpt *c, const char *date) {
        buf_put(b, "\x80\x02}(", 4); /* PROTO 2, EMPTY_DICT, MARK */
        pk_str(b, "date"), pk_str(b, date);
        pk_str(b, "version"), pk_str(b, "8.1.0");
        pk_str(b, "epoch"), pk_int(b, c->stripped ? -1 : c->epoch);
        pk_str(b, "best_fitness"), pk_float(b, c->best_fitness);
        pk_str(b, "model"), buf_u8(b, 'N');
        pk_str(b, "ema"), buf_u8(b, 'N');
        pk_str(b, "updates"), pk_int(b, (c->epoch + 1) * TRAIN_BATCHES);
        pk_str(b, "optimizer"), buf_u8(b, 'N');
        pk_str(b, "train_args"), buf_put(b, "}(", 2);
        pk_str(b, "task"), pk_str(b, "detect");
        pk_str(b, "mode"), pk_str(b, "train");
        pk_str(b, "model"), pk_str(b, c->model);
        pk_str(b, "data"), pk_str(b, c->data);
        pk_str(b, "epochs"), pk_int(b, c->epochs);
        pk_str(b, "batch"), pk_int(b, c->batch);
        pk_str(b, "imgsz"), pk_int(b, c->imgsz);
        pk_str(b, "project"), pk_str(b, c->project);
        pk_str(b, "name"), pk_str(b, c->name);
        buf_put(b, "uu.", 3); /* SETITEMS (train_args), SETITEMS (outer), STOP */
}

/* torch.save names the entries after the file's stem ("last/").  The padding depends on the
 * epoch, so every epoch's file has a different content hash. */
int ft_ckpt_encode(const struct ft_ckpt *c, const char *prefix, size_t zero_bytes, unsigned char **ret,
                   size_t *ret_len) {
        time_t t = time(NULL);
        struct tm tm;
        (void) localtime_r(&t, &tm);
        char date[64], name[300], text[PATH_MAX * 2 + 1024];
        (void) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
        struct zip z = { .dos_time = (unsigned) (tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2),
                         .dos_date = (unsigned) ((tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday) };
        struct buf pk = { 0 };
        pickle_ckpt(&pk, c, date);
        (void) snprintf(name, sizeof name, "%s/data.pkl", prefix);
        zip_add(&z, name, pk.p, pk.len);
        (void) snprintf(name, sizeof name, "%s/gpuward_epoch", prefix);
        int tn = snprintf(text, sizeof text, "%ld", c->epoch);
        zip_add(&z, name, text, (size_t) tn);
        tn = snprintf(text, sizeof text,
                      "epochs=%ld\nimgsz=%ld\nbatch=%ld\nbest_fitness=%.17g\nbest_epoch=%ld\nstripped=%d\n"
                      "name=%s\nproject=%s\nmodel=%s\ndata=%s\n",
                      c->epochs, c->imgsz, c->batch, c->best_fitness, c->best_epoch, c->stripped ? 1 : 0, c->name,
                      c->project, c->model, c->data);
        (void) snprintf(name, sizeof name, "%s/gpuward_args", prefix);
        zip_add(&z, name, text, tn < 0 ? 0 : (size_t) tn < sizeof text ? (size_t) tn : sizeof text - 1);
        unsigned char *pad = malloc(PAD_BYTES);
        if (pad) {
                uint32_t x = 2463534242u ^ (uint32_t) (c->epoch * 2654435761u) ^ (c->stripped ? 0x5a5a : 0);
                for (size_t i = 0; i < PAD_BYTES; i++) {
                        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                        pad[i] = (unsigned char) x;
                }
                (void) snprintf(name, sizeof name, "%s/data/0", prefix);
                zip_add(&z, name, pad, PAD_BYTES);
        }
        /* A tensor of zeros: a sparse checkpoint once its holes are dug. */
        unsigned char *zeros = zero_bytes ? calloc(1, zero_bytes) : NULL;
        if (zeros) {
                (void) snprintf(name, sizeof name, "%s/data/1", prefix);
                zip_add(&z, name, zeros, zero_bytes);
                free(zeros);
        }
        (void) snprintf(name, sizeof name, "%s/version", prefix);
        zip_add(&z, name, "3\n", 2);
        zip_finish(&z);
        bool oom = !pad || pk.oom || z.body.oom;
        free(pad);
        free(pk.p);
        free(z.cd.p);
        if (oom) {
                free(z.body.p);
                return -ENOMEM;
        }
        *ret = z.body.p;
        *ret_len = z.body.len;
        return 0;
}

int ft_ckpt_read(const char *path, struct ft_ckpt *c) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_CKPT_BYTES) {
                (void) close(fd);
                return -EBADMSG;
        }
        size_t n = (size_t) st.st_size, got = 0;
        unsigned char *z = malloc(n + 1);
        if (!z) {
                (void) close(fd);
                return -ENOMEM;
        }
        while (got < n) {
                ssize_t r = read(fd, z + got, n - got);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                got += (size_t) r;
        }
        (void) close(fd);
        const unsigned char *d;
        size_t dn;
        char text[PATH_MAX * 2 + 1024];
        int r = zip_find(z, got, "/gpuward_epoch", &d, &dn);
        if (r == 0 && dn < 32) {
                (void) snprintf(text, sizeof text, "%.*s", (int) dn, (const char *) d);
                if (!ft_parse_long(text, -1, 100000000, &c->epoch))
                        r = -EBADMSG;
        }
        if (r == 0)
                r = zip_find(z, got, "/gpuward_args", &d, &dn);
        if (r == 0) {
                (void) snprintf(text, sizeof text, "%.*s", (int) (dn < sizeof text ? dn : sizeof text - 1),
                                (const char *) d);
                for (char *line = text, *nl; line && *line; line = nl) {
                        nl = strchr(line, '\n');
                        if (nl)
                                *nl++ = '\0';
                        char *v = strchr(line, '=');
                        if (!v)
                                continue;
                        *v++ = '\0';
                        long stripped = 0;
                        if (strcmp(line, "epochs") == 0)
                                (void) ft_parse_long(v, 1, 1000000, &c->epochs);
                        else if (strcmp(line, "imgsz") == 0)
                                (void) ft_parse_long(v, 1, 100000, &c->imgsz);
                        else if (strcmp(line, "batch") == 0)
                                (void) ft_parse_long(v, -1, 100000, &c->batch);
                        else if (strcmp(line, "best_fitness") == 0)
                                (void) ft_parse_double(v, -1e9, 1e9, &c->best_fitness);
                        else if (strcmp(line, "best_epoch") == 0)
                                (void) ft_parse_long(v, -1, 100000000, &c->best_epoch);
                        else if (strcmp(line, "stripped") == 0 && ft_parse_long(v, 0, 1, &stripped))
                                c->stripped = stripped == 1;
                        else if (strcmp(line, "name") == 0)
                                (void) ft_copy_str(c->name, sizeof c->name, v);
                        else if (strcmp(line, "project") == 0)
                                (void) ft_copy_str(c->project, sizeof c->project, v);
                        else if (strcmp(line, "model") == 0)
                                (void) ft_copy_str(c->model, sizeof c->model, v);
                        else if (strcmp(line, "data") == 0)
                                (void) ft_copy_str(c->data, sizeof c->data, v);
                }
        }
        free(z);
        return r == -ENOENT ? -ENODATA : r;
}

/* ---------------------------------------------------------------- arguments */

enum kind { K_BOOL, K_LONG, K_DOUBLE, K_STR };
struct flag {
        const char *name;
        enum kind kind;
        size_t off, size;
        double lo, hi;
};
#define FLAG(n, k, f, lo, hi) \
        { n, k, offsetof(struct ft_opts, f), sizeof(((struct ft_opts *) 0)->f), lo, hi }
static const struct flag FLAGS[] = {
        FLAG("--epoch-seconds", K_DOUBLE, epoch_seconds, 0, 86400),
        FLAG("--mem-mib", K_LONG, mem_mib, 0, 1 << 24),
        FLAG("--util", K_LONG, util, 0, 100),
        FLAG("--hang-after-epoch", K_LONG, hang_after, 0, 1e6),
        FLAG("--hang-after-validation", K_LONG, hang_after_val, 1, 1e6),
        FLAG("--ignore-sigterm", K_BOOL, ignore_sigterm, 0, 0),
        FLAG("--crash-at-epoch", K_LONG, crash_at, 1, 1e6),
        FLAG("--crash-after-row", K_LONG, crash_after_row, 1, 1e6),
        FLAG("--crash-msg", K_STR, crash_msg, 0, 0),
        FLAG("--exit-code", K_LONG, exit_code, 0, 255),
        FLAG("--oom-at-epoch", K_LONG, oom_at, 1, 1e6),
        FLAG("--xid-at-epoch", K_LONG, xid_at, 1, 1e6),
        FLAG("--xid", K_LONG, xid, 0, 1e4),
        FLAG("--ckpt-zero-mib", K_LONG, ckpt_zero_mib, 0, 1 << 16),
        FLAG("--leak-mib-per-epoch", K_LONG, leak_mib, 0, 1 << 20),
        FLAG("--leak-first-gpu-only", K_BOOL, leak_first_only, 0, 0),
        FLAG("--slow-io", K_BOOL, slow_io, 0, 0),
        FLAG("--long-validation", K_DOUBLE, long_validation, 0, 1e6),
        FLAG("--fork-children", K_LONG, fork_children, 0, MAX_CHILDREN),
        FLAG("--child-mem-mib", K_LONG, child_mem_mib, 0, 1 << 24),
        FLAG("--child-max-seconds", K_DOUBLE, child_max_seconds, 0, 1e6),
        FLAG("--sleep-forever", K_BOOL, sleep_forever, 0, 0),
        FLAG("--save-delay", K_DOUBLE, save_delay, 0, 1e6),
        FLAG("--save-seconds", K_DOUBLE, save_seconds, 0, 1e6),
        FLAG("--fault-once", K_STR, fault_once, 0, 0),
        FLAG("--fault-attempt", K_LONG, fault_attempt, 0, 1e9),
        FLAG("--traceback-stderr", K_BOOL, traceback_stderr, 0, 0),
        FLAG("--ultralytics", K_STR, ul_version, 0, 0),
        FLAG("--crash-in-final-val", K_BOOL, crash_final, 0, 0),
        FLAG("--help", K_BOOL, help, 0, 0),
        FLAG("-h", K_BOOL, help, 0, 0),
};

static const char USAGE[] =
        "usage: gw-fake-trainer [train] [epochs=N] [name=NAME] [project=DIR] [exist_ok=True] [batch=B]\n"
        "                       [imgsz=S] [model=M] [data=D] [task=T] [resume [model=RUN/weights/last.pt]]\n"
        "                       [resume=RUN/weights/last.pt] [--flags]\n";

void ft_help(void) {
        ft_out("%s\nA stand-in for `yolo train` (Ultralytics YOLOv8 8.1) for gpuward's tests.\n\n"
               "  --epoch-seconds S      time per epoch, 80%% train 20%% validation (0.2)\n"
               "  --mem-mib M            simulated memory per GPU (2000)\n"
               "  --util U               SM utilisation while training (90; validation 3/4 of it)\n"
               "  --hang-after-epoch N   after epoch N (0: before the first): util 0, write nothing, sleep\n"
               "  --hang-after-validation N  right after epoch N's validation results line (\"all ...\"),\n"
               "                         before its results.csv row and checkpoints: util 0, write nothing, sleep\n"
               "  --ignore-sigterm       SIG_IGN for SIGTERM (otherwise: die of it, like yolo; procs file removed)\n"
               "  --crash-at-epoch N     during epoch N: traceback ending in --crash-msg TEXT, exit --exit-code C\n"
               "                         (\"RuntimeError: CUDA error: an illegal memory access was encountered\", 1)\n"
               "  --crash-after-row N    right after epoch N's results.csv row, before its last.pt: the\n"
               "                         --crash-at-epoch traceback (last.pt still holds epoch N-1)\n"
               "  --oom-at-epoch N       during epoch N: torch.OutOfMemoryError traceback, exit 1\n"
               "  --xid-at-epoch N       during epoch N: append 'gpu=G xid=X' to $GPUWARD_FAKE_NVML_DIR/events\n"
               "  --xid X                (first visible GPU; X default 79), CUDA error traceback, exit 1\n"
               "  --fault-once PATH      hang/crash/oom/xid fire only if PATH is absent (then create it)\n"
               "  --fault-attempt A      hang/crash/oom/xid fire only when GPUWARD_ATTEMPT=A\n"
               "  --leak-mib-per-epoch M memory grows by M after each validation (--leak-first-gpu-only)\n"
               "  --ckpt-zero-mib N      each checkpoint holds N MiB of zeros more, written as holes\n"
               "  --slow-io              util 1%% but epochs still finish\n"
               "  --long-validation S    validation lasts S more seconds at util 2%%, the log stands still\n"
               "  --save-delay S         S seconds between the results.csv row and last.pt (util 3%%)\n"
               "  --save-seconds S       last.pt is written over S seconds (a kill tears it)\n"
               "  --fork-children K      K children, each setsid() + SIGTERM ignored, sleeping up to\n"
               "                         --child-max-seconds (900); each logs 'gw-fake-trainer: child pid=P';\n"
               "                         --child-mem-mib M makes each report M MiB on the job's GPUs\n"
               "  --sleep-forever        after start (and children), hold memory at util 0 (or --util) and sleep\n"
               "  --traceback-stderr     tracebacks to stderr (as Python does) instead of stdout\n"
               "  --crash-in-final-val   in the final validation of best.pt, after the optimizer was stripped\n"
               "                         from both checkpoints: traceback ending in --crash-msg, exit --exit-code\n"
               "  --ultralytics V        the release to act as: 8.0 (results.csv epochs 0-based, to 8.0.159),\n"
               "                         8.1 (default: padded fields, epochs 1-based), 8.3 (8.3.9 on: no padding,\n"
               "                         a time column), 8.4 (as 8.3; a bare resume of a finished checkpoint\n"
               "                         starts a new training in a new run, 8.4.29 on)\n"
               "  task=T / T             detect (default), segment, pose, obb, classify: results.csv columns,\n"
               "                         validation lines and the default project runs/T\n\n"
               "Exit: 0 done, 1 failure (crash/oom/xid/resume errors), 2 usage; SIGTERM: killed by it.\n",
               USAGE);
}

static void note_unknown(struct ft_opts *o, const char *arg) {
        if (o->n_unknown < (int) (sizeof o->unknown / sizeof o->unknown[0]))
                o->unknown[o->n_unknown++] = arg;
}

static bool word_in(const char *w, const char *list) {
        char pat[64];
        return snprintf(pat, sizeof pat, " %s ", w) < (int) sizeof pat && strstr(list, pat);
}

/* Returns 0, or 2 after printing the usage line. */
int ft_parse_args(int argc, char **argv, struct ft_opts *o) {
        static const char *ignored[] = { "device",        "workers",    "patience", "seed",        "optimizer",
                                         "lr0",           "lrf",        "cache",    "pretrained",  "amp",
                                         "val",           "plots",      "save",     "save_period", "verbose",
                                         "deterministic", "single_cls", "rect",     "cos_lr",      "close_mosaic",
                                         "fraction",      "freeze",     "time",     "mode",        "momentum",
                                         "weight_decay" };
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *eq = strchr(a, '=');
                if (a[0] == '-') {
                        size_t nlen = eq ? (size_t) (eq - a) : strlen(a);
                        const struct flag *f = NULL;
                        for (size_t k = 0; k < sizeof FLAGS / sizeof FLAGS[0] && !f; k++)
                                if (strlen(FLAGS[k].name) == nlen && strncmp(FLAGS[k].name, a, nlen) == 0)
                                        f = &FLAGS[k];
                        if (!f) {
                                (void) fprintf(stderr, "gw-fake-trainer: unknown option '%s'\n%s", a, USAGE);
                                return 2;
                        }
                        char *field = (char *) o + f->off;
                        if (f->kind == K_BOOL) {
                                *(bool *) field = true;
                                continue;
                        }
                        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
                        long l;
                        bool ok = v != NULL;
                        if (ok && f->kind == K_LONG && (ok = ft_parse_long(v, (long) f->lo, (long) f->hi, &l)))
                                *(long *) field = l;
                        else if (ok && f->kind == K_DOUBLE)
                                ok = ft_parse_double(v, f->lo, f->hi, (double *) field);
                        else if (ok && f->kind == K_STR)
                                ok = ft_copy_str(field, f->size, v);
                        if (!ok) {
                                (void) fprintf(stderr, "gw-fake-trainer: bad value for %.*s\n%s", (int) nlen, a, USAGE);
                                return 2;
                        }
                        continue;
                }
                if (!eq) {
                        if (strcmp(a, "resume") == 0)
                                o->resume = true;
                        else if (ft_task_known(a))
                                (void) ft_copy_str(o->task, sizeof o->task, a);
                        else if (!word_in(a, " train yolo "))
                                note_unknown(o, a);
                        continue;
                }
                char key[64];
                const char *v = eq + 1;
                if ((size_t) (eq - a) >= sizeof key)
                        key[0] = '\0';
                else
                        (void) snprintf(key, sizeof key, "%.*s", (int) (eq - a), a);
                bool ok = true, known = true;
                if (strcmp(key, "epochs") == 0)
                        ok = ft_parse_long(v, 1, 1000000, &o->epochs);
                else if (strcmp(key, "batch") == 0)
                        ok = ft_parse_long(v, -1, 100000, &o->batch);
                else if (strcmp(key, "imgsz") == 0)
                        ok = ft_parse_long(v, 1, 100000, &o->imgsz);
                else if (strcmp(key, "exist_ok") == 0)
                        ok = parse_bool(v, &o->exist_ok);
                else if (strcmp(key, "name") == 0)
                        ok = *v && ft_copy_str(o->name, sizeof o->name, v);
                else if (strcmp(key, "project") == 0)
                        ok = *v && ft_copy_str(o->project, sizeof o->project, v);
                else if (strcmp(key, "model") == 0)
                        ok = ft_copy_str(o->model, sizeof o->model, v);
                else if (strcmp(key, "data") == 0)
                        ok = ft_copy_str(o->data, sizeof o->data, v);
                else if (strcmp(key, "task") == 0)
                        ok = ft_task_known(v) && ft_copy_str(o->task, sizeof o->task, v);
                else if (strcmp(key, "resume") == 0) {
                        if (!parse_bool(v, &o->resume)) /* resume=path/to/last.pt */
                                ok = o->resume = o->resume_path = ft_copy_str(o->model, sizeof o->model, v);
                } else {
                        known = false;
                        for (size_t k = 0; k < sizeof ignored / sizeof ignored[0]; k++)
                                known = known || strcmp(key, ignored[k]) == 0;
                        if (!known)
                                note_unknown(o, a);
                }
                if (!ok) {
                        (void) fprintf(stderr, "TypeError: '%s' is of invalid type or value.\n%s", a, USAGE);
                        return 2;
                }
        }
        if (o->ul_version[0]) {
                static const struct {
                        const char *v;
                        long ul;
                } rel[] = { { "8.0", 80 }, { "8.1", 81 }, { "8.3", 83 }, { "8.4", 84 } };
                o->ul = 0;
                for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++)
                        if (strcmp(o->ul_version, rel[k].v) == 0)
                                o->ul = rel[k].ul;
                if (!o->ul) {
                        (void) fprintf(stderr, "gw-fake-trainer: --ultralytics: 8.0, 8.1, 8.3 or 8.4\n%s", USAGE);
                        return 2;
                }
        }
        return 0;
}
