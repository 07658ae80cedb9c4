#include "core/cache.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool must_escape(unsigned char c) { return c <= ' ' || c == '%' || c == 0x7f; }

size_t gw_cache_manifest_line(const struct gw_cache_file *f, char *buf, size_t n) {
        int k = f->dir ? snprintf(buf, n, "d %o %" PRIu32 " %" PRIu32 " /", f->mode, f->uid, f->gid)
                       : snprintf(buf, n, "f %" PRIu64 " %" PRId64 " %o %" PRIu32 " %" PRIu32 " /", f->size,
                                  f->mtime_ns, f->mode, f->uid, f->gid);
        size_t len = k > 0 ? (size_t) k : 0;
        static const char hex[] = "0123456789ABCDEF";
        for (const unsigned char *p = (const unsigned char *) f->rel; *p && len + 5 < n; p++) {
                if (must_escape(*p)) {
                        buf[len++] = '%';
                        buf[len++] = hex[*p >> 4];
                        buf[len++] = hex[*p & 15];
                } else
                        buf[len++] = (char) *p;
        }
        buf[len++] = '\n';
        buf[len] = '\0';
        return len;
}

static int hexval(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

/* The path after the fields: "/" then the escaped relative path. */
static int parse_rel(const char *p, const char *end, char *rel) {
        if (p >= end || *p != '/')
                return -EINVAL;
        size_t k = 0;
        for (p++; p < end; p++) {
                char c = *p;
                if (must_escape((unsigned char) c) && c != '%')
                        return -EINVAL;
                if (c == '%') {
                        if (end - p < 3 || hexval(p[1]) < 0 || hexval(p[2]) < 0)
                                return -EINVAL;
                        c = (char) (hexval(p[1]) << 4 | hexval(p[2]));
                        if (!c)
                                return -EINVAL;
                        p += 2;
                }
                if (k + 1 >= GW_CACHE_MAX_REL)
                        return -EINVAL;
                rel[k++] = c;
        }
        rel[k] = '\0';
        /* Only names below the root: no absolute path, no "..", no empty component. */
        if (rel[0] == '/' || (k && rel[k - 1] == '/') || strstr(rel, "//"))
                return -EINVAL;
        for (const char *s = rel; *s;) {
                size_t l = strcspn(s, "/");
                if ((l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
                        return -EINVAL;
                s += l + (s[l] == '/');
        }
        return 0;
}

int gw_cache_manifest_parse(const char *line, size_t len, struct gw_cache_file *f) {
        char head[160];
        const char *slash = memchr(line, '/', len);
        if (len < 2 || !slash || (size_t) (slash - line) >= sizeof head)
                return -EINVAL;
        memcpy(head, line, (size_t) (slash - line));
        head[slash - line] = '\0';
        struct gw_cache_file g = { .dir = line[0] == 'd' };
        int used = 0;
        unsigned long long size = 0;
        long long mtime = 0;
        unsigned mode = 0, uid = 0, gid = 0;
        int k = g.dir ? sscanf(head, "d %o %u %u %n", &mode, &uid, &gid, &used)
                      : sscanf(head, "f %llu %lld %o %u %u %n", &size, &mtime, &mode, &uid, &gid, &used);
        if (k != (g.dir ? 3 : 5) || head[used] || (line[0] != 'd' && line[0] != 'f') || mode > 07777)
                return -EINVAL;
        g.size = size;
        g.mtime_ns = mtime;
        g.mode = mode;
        g.uid = uid;
        g.gid = gid;
        if (parse_rel(slash, line + len, g.rel) < 0)
                return -EINVAL;
        *f = g;
        return 0;
}

bool gw_cache_file_same(const struct gw_cache_file *old, const struct gw_cache_file *new) {
        return old->dir == new->dir && old->size == new->size && old->mtime_ns == new->mtime_ns &&
               old->mode == new->mode && old->uid == new->uid && old->gid == new->gid;
}

int gw_cache_evict_pick(const struct gw_cache_slot *slots, size_t n, uint64_t used, uint64_t cap, uint64_t need,
                        size_t *victims) {
        if (need > cap)
                return -ENOSPC;
        size_t k = 0;
        uint64_t freed = 0;
        /* n is the number of entries (hundreds at most): a selection by age, no sort, no copy. */
        while (used - freed > cap - need) {
                size_t best = n;
                for (size_t i = 0; i < n; i++) {
                        bool taken = false;
                        for (size_t v = 0; v < k && !taken; v++)
                                taken = victims[v] == i;
                        if (taken || slots[i].in_use)
                                continue;
                        if (best == n || slots[i].last_use < slots[best].last_use)
                                best = i;
                }
                if (best == n)
                        return -ENOSPC;
                victims[k++] = best;
                freed += slots[best].size < used - freed ? slots[best].size : used - freed;
        }
        return (int) k;
}

void gw_cache_progress_text(uint64_t done, uint64_t total, char *buf, size_t n) {
        static const struct {
                uint64_t div;
                const char *unit;
        } units[] = { { 1000000000, "GB" }, { 1000000, "MB" }, { 1000, "kB" }, { 1, "bytes" } };
        size_t u = 0;
        while (u + 1 < sizeof units / sizeof units[0] && total < units[u].div)
                u++;
        unsigned pct = total ? (unsigned) (done >= total ? 100 : done * 100 / total) : 100;
        if (units[u].div == 1)
                snprintf(buf, n, "dataset %" PRIu64 " of %" PRIu64 " bytes, %u%%", done, total, pct);
        else
                snprintf(buf, n, "dataset %.1f of %.1f %s, %u%%", (double) done / (double) units[u].div,
                         (double) total / (double) units[u].div, units[u].unit, pct);
}

bool gw_cache_source_allowed(const char *list, const char *path) {
        for (const char *p = list; p && *p;) {
                size_t l = strcspn(p, ",");
                size_t rl = l;
                while (rl > 1 && p[rl - 1] == '/')
                        rl--;
                if (rl && p[0] == '/' && !strncmp(path, p, rl) && (path[rl] == '\0' || path[rl] == '/' || (rl == 1)))
                        return true;
                p += l + (p[l] == ',');
        }
        return false;
}

enum gw_failure_class gw_cache_failure_class(int err) {
        switch (err) {
        case EACCES:
        case EPERM:
        case EINVAL:
        case ENOTDIR:
        case ELOOP:
        case EFBIG:
        case ENAMETOOLONG:
                return GW_FAILURE_USER_ERROR;
        default:
                return GW_FAILURE_LOST;
        }
}

static bool user_name_ok(const char *u) {
        size_t l = strlen(u);
        if (!l || l >= GW_CACHE_USER_MAX)
                return false;
        for (size_t i = 0; i < l; i++)
                if ((unsigned char) u[i] <= ' ' || u[i] == 0x7f)
                        return false;
        return true;
}

size_t gw_cache_use_format(const struct gw_cache_use_line *l, char *buf, size_t n) {
        int r = 0;
        switch (l->kind) {
        case GW_CACHE_USE_LAST:
                r = snprintf(buf, n, "last_use %lld\n", (long long) l->last_use);
                break;
        case GW_CACHE_USE_USER:
                if (!user_name_ok(l->user))
                        return 0;
                r = snprintf(buf, n, "user %s\n", l->user);
                break;
        case GW_CACHE_USE_PIN:
                r = snprintf(buf, n, "pin %lld %d\n", (long long) l->job, l->version);
                break;
        case GW_CACHE_USE_PROC:
                r = snprintf(buf, n, "proc %d %llu %d\n", (int) l->pid, (unsigned long long) l->start, l->version);
                break;
        }
        return r > 0 && (size_t) r < n ? (size_t) r : 0;
}

/* "PID START VERSION", digits only: sscanf alone would take a sign or a blank before each. */
static int proc_line(const char *t, size_t len, struct gw_cache_use_line *l) {
        unsigned long long pid, start, v;
        int end = 0;
        for (size_t i = 0; i < len; i++)
                if (!isdigit((unsigned char) t[i]) && !(t[i] == ' ' && i && t[i - 1] != ' '))
                        return -EINVAL;
        if (sscanf(t, "%llu %llu %llu%n", &pid, &start, &v, &end) != 3 || (size_t) end != len || !pid ||
            pid > GW_CACHE_PID_MAX || !v || v > 1000000000 || start > INT64_MAX)
                return -EINVAL;
        *l = (struct gw_cache_use_line){ .kind = GW_CACHE_USE_PROC,
                                         .pid = (int32_t) pid,
                                         .start = start,
                                         .version = (int) v };
        return 0;
}

int gw_cache_use_parse(const char *line, size_t len, struct gw_cache_use_line *out) {
        char text[GW_CACHE_USE_LINE_MAX], word[GW_CACHE_USER_MAX + 1];
        if (len >= sizeof text || memchr(line, '\0', len))
                return -EINVAL;
        memcpy(text, line, len);
        text[len] = '\0';
        struct gw_cache_use_line l = { 0 };
        long long a, b;
        int end = 0;
        if (sscanf(text, "last_use %lld%n", &a, &end) == 1 && (size_t) end == len && a >= 0 &&
            !isspace((unsigned char) text[9]))
                l = (struct gw_cache_use_line){ .kind = GW_CACHE_USE_LAST, .last_use = a };
        else if (sscanf(text, "pin %lld %lld%n", &a, &b, &end) == 2 && (size_t) end == len && a > 0 && b > 0 &&
                 b <= 1000000000 && !isspace((unsigned char) text[4]))
                l = (struct gw_cache_use_line){ .kind = GW_CACHE_USE_PIN, .job = a, .version = (int) b };
        else if (!strncmp(text, "user ", 5) && sscanf(text + 5, "%33s%n", word, &end) == 1 && (size_t) end + 5 == len &&
                 user_name_ok(word)) {
                l.kind = GW_CACHE_USE_USER;
                snprintf(l.user, sizeof l.user, "%s", word);
        } else if (!strncmp(text, "proc ", 5) && !proc_line(text + 5, len - 5, &l))
                ;
        else
                return -EINVAL;
        *out = l;
        return 0;
}
